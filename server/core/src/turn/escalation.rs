//! A confined command the sandbox seems to have stopped (no network, a write outside the
//! workspace) may run again with network or without the sandbox, once a person approves.
//! Only a person: no mode or preset decides it, and a catastrophic command is never
//! offered.

use std::sync::Arc;

use serde_json::Value;

use super::tool_calls::{CANCELLED_WHILE_RUNNING, ToolRun, summarize};
use crate::permissions::{Answer, Request, Unattended, Unconfined};
use crate::tools::shell_safety::{Risk, SafetyContext, assess_line};
use crate::tools::{Tool, ToolContext, ToolOutput};
use coder_protocol::{ToolCall, ToolKind};

/// What a confined command that failed may be re-run with, once a person approves.
#[derive(Clone, Copy)]
pub(super) enum Escalation {
    /// The same confinement, with network (`sandbox.network` is `off`).
    Network,
    /// No sandbox at all.
    Unconfined,
}

impl Escalation {
    /// Why a session that approves without a person does not approve the re-run.
    fn unconfined(self) -> Unconfined {
        match self {
            Self::Network => Unconfined::RerunWithNetwork,
            Self::Unconfined => Unconfined::RerunOutsideSandbox,
        }
    }

    /// What the person is asked, with what the command does when the analysis finds it
    /// dangerous; `Err` with the call's result when the command is catastrophic, which is
    /// refused there as in every mode and never offered.
    fn question(self, risk: Option<&Risk>) -> Result<String, String> {
        let (why, offer) = match self {
            Self::Network => (
                "the sandbox has no network for commands and this one seems to need it",
                "run it again with network (still confined to the workspace)?",
            ),
            Self::Unconfined => (
                "the sandbox blocked a write outside the workspace",
                "run it again without the sandbox?",
            ),
        };
        match risk {
            Some(Risk::Catastrophic(what)) => Err(format!(
                "{}, and it is not offered: the command is catastrophic ({what})",
                self.blocked()
            )),
            Some(Risk::Dangerous(what)) => {
                Ok(format!("{why}; dangerous: {}; {offer}", what.join("; ")))
            }
            Some(Risk::ReadOnly | Risk::Normal) | None => Ok(format!("{why}; {offer}")),
        }
    }

    /// What stopped the command.
    fn blocked(self) -> &'static str {
        match self {
            Self::Network => "The sandbox (no network for commands) may have stopped this command",
            Self::Unconfined => {
                "The sandbox (writes only inside the workspace) blocked this command"
            }
        }
    }

    fn refused(self) -> String {
        let rerun = match self {
            Self::Network => "running it again with network",
            Self::Unconfined => "running it outside the sandbox",
        };
        format!("{}, and {rerun} was not approved", self.blocked())
    }
}

/// A confined command failed in a way that looks like the sandbox stopped it: for lack of
/// network first (the narrower re-run), else a blocked write.
pub(super) fn wanted(tool: &dyn Tool, ctx: &ToolContext, output: &str) -> Option<Escalation> {
    let policy = ctx.sandbox.as_ref()?;
    if tool.kind() != ToolKind::Execute || output.starts_with("Exit code: 0\n") {
        return None;
    }
    if policy.network_is_cut() && crate::sandbox::looks_offline(output) {
        Some(Escalation::Network)
    } else if crate::sandbox::looks_blocked(output) {
        Some(Escalation::Unconfined)
    } else {
        None
    }
}

/// Asks a person whether a command the sandbox stopped may run again with network or
/// outside the sandbox, and runs it so if they allow. Never without an explicit answer.
/// The dangerous-command analysis runs first, in every mode, yolo included: the question
/// says what a dangerous command does, and a catastrophic one is refused without asking.
pub(super) async fn rerun(
    tool: &dyn Tool,
    input: Value,
    ctx: &ToolContext,
    call: &ToolCall,
    run: &ToolRun<'_>,
    confined: ToolOutput,
    escalation: Escalation,
) -> Result<ToolOutput, String> {
    let safety = SafetyContext::new(
        &ctx.workspace,
        run.tools.home.as_deref(),
        ctx.sandbox.as_deref(),
    );
    let risk = tool
        .command_line(&input)
        .map(|command| assess_line(&command, &safety).risk);
    let question = match escalation.question(risk.as_ref()) {
        Ok(question) => question,
        Err(refusal) => return Ok(ToolOutput::text(format!("{}\n{refusal}", confined.content))),
    };
    let summary = summarize(tool.name(), &input, &question);
    let request = Request {
        call_id: &call.id,
        tool: tool.name(),
        kind: tool.kind(),
        locations: tool.locations(&input, &ctx.workspace),
        command: tool.command_line(&input),
        plan: None,
        input: &input,
        summary: &summary,
        reason: &question,
        diff: None,
        changes: Vec::new(),
        folder: None,
        human_required: true,
        line: None,
        unattended: Unattended::Refuse(escalation.unconfined()),
    };
    let answer = run
        .tools
        .permissions
        .ask(request, run.events, &ctx.cancel)
        .await;
    match answer {
        Answer::Allowed => {
            let sandbox = match escalation {
                Escalation::Network => ctx
                    .sandbox
                    .as_ref()
                    .map(|policy| Arc::new(policy.with_network())),
                Escalation::Unconfined => None,
            };
            let escalated = ToolContext {
                sandbox,
                ..ctx.clone()
            };
            tool.call(input, &escalated).await
        }
        Answer::Denied(reason) => Ok(ToolOutput::text(format!(
            "{}\n{}: {reason}",
            confined.content,
            escalation.refused()
        ))),
        Answer::Refused(reason) => {
            // Checkpoint 4 with the reason `refuse`: the confined run's output and the
            // refusal are the call's result, and the task ends.
            run.control.refuse();
            Ok(ToolOutput::text(format!(
                "{}\n{}: {reason}",
                confined.content,
                escalation.refused()
            )))
        }
        Answer::Cancelled => Err(CANCELLED_WHILE_RUNNING.to_owned()),
        // Only a person may allow leaving the sandbox: no mode or preset decides it again.
        Answer::Redecide => Ok(ToolOutput::text(format!(
            "{}\n{}: the request was withdrawn",
            confined.content,
            escalation.refused()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catastrophic_command_is_never_offered_a_dangerous_one_says_what_it_does() {
        let refused = Escalation::Unconfined
            .question(Some(&Risk::Catastrophic(
                "recursive delete of ~: the home directory".to_owned(),
            )))
            .unwrap_err();
        assert_eq!(
            refused,
            "The sandbox (writes only inside the workspace) blocked this command, and it is \
             not offered: the command is catastrophic (recursive delete of ~: the home \
             directory)"
        );
        assert!(
            Escalation::Network
                .question(Some(&Risk::Catastrophic("dd to a disk".to_owned())))
                .is_err()
        );
        let asked = Escalation::Unconfined
            .question(Some(&Risk::Dangerous(vec![
                "recursive chmod 777 makes files writable by everyone".to_owned(),
            ])))
            .unwrap();
        assert_eq!(
            asked,
            "the sandbox blocked a write outside the workspace; dangerous: recursive chmod 777 \
             makes files writable by everyone; run it again without the sandbox?"
        );
        assert_eq!(
            Escalation::Unconfined
                .question(Some(&Risk::Normal))
                .unwrap(),
            "the sandbox blocked a write outside the workspace; run it again without the \
             sandbox?"
        );
    }
}
