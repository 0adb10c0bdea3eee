//! What a session that approves without a person does with a call the policy asks about
//! (seed 004 section 5: with `autoApproveAsk`, `approval.interactive: false` or `coder exec
//! --auto-approve`, an ask does not block and is approved), and the few calls it refuses
//! even so: those whose approval would let something run outside the sandbox, now or later.

/// The answer of a session that approves without a person, for one call that asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unattended {
    /// Approved: what runs stays confined (a command in the sandbox, a file tool within the
    /// workspace's path rules and away from protected files).
    Approve,
    /// Refused: approving it would let something run unconfined.
    Refuse(Unconfined),
}

/// Why approving a call without a person would let something run outside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unconfined {
    /// `write`, `edit` or `apply_patch` would change a protected file. coder writes it
    /// itself, outside any sandbox, and each protected file makes programs run outside the
    /// sandbox later (git's hooks, an MCP server, an editor's tasks).
    ProtectedFileEdit,
    /// A command would change protected files that no sandbox keeps read-only: the sandbox
    /// is off or cannot enforce its read-only view on this machine, or the files are ones it
    /// does not hold (a nested project's `.mcp.json`, `.git/HEAD`).
    ProtectedFilesNotHeld,
    /// A command the sandbox stopped would run again with network: that loosens the
    /// sandbox itself.
    RerunWithNetwork,
    /// A command the sandbox stopped would run again outside it.
    RerunOutsideSandbox,
}

impl Unconfined {
    /// Why the call was refused, for the model.
    fn why(self) -> &'static str {
        match self {
            Self::ProtectedFileEdit => {
                "it changes a protected file, which coder writes itself, outside any \
                 sandbox, and which makes programs run outside the sandbox later"
            }
            Self::ProtectedFilesNotHeld => {
                "it changes protected files that no sandbox keeps read-only here, and they \
                 make programs run outside the sandbox later"
            }
            Self::RerunWithNetwork => "running it again with network loosens the sandbox",
            Self::RerunOutsideSandbox => "running it again outside the sandbox removes the sandbox",
        }
    }

    /// What the model reads for the refused call described by `summary`.
    pub(crate) fn message(self, summary: &str) -> String {
        format!(
            "{summary}: refused: this session approves calls without asking a person, and \
             it does not approve this one because {}; it was not run. Only a person can \
             allow it: tell the user what you wanted to do and why.",
            self.why()
        )
    }
}
