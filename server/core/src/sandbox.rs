//! The OS sandbox for commands: on Linux, Landlock confines writes to the workspace roots, a
//! private temporary directory and configured roots; reads stay allowed everywhere.
//!
//! Landlock restricts the thread that asks and every process it starts afterwards. The
//! engine therefore spawns each confined command from a fresh, short-lived thread that
//! restricts itself first, so no thread of the runtime is ever restricted.

use std::path::PathBuf;
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};
use tokio::runtime::Handle;

/// Device files every command may write.
const WRITABLE_DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

/// Where confined commands may write.
#[derive(Debug, Clone)]
pub struct SandboxPolicy {
    pub writable_roots: Vec<PathBuf>,
    /// The private temporary directory, also passed to commands as `TMPDIR`.
    pub temp_dir: PathBuf,
}

/// Spawns `command`, confined by `policy` when given. The engine only passes a policy when
/// [`available`] said the kernel enforces it.
pub(crate) fn spawn(
    mut command: tokio::process::Command,
    policy: Option<Arc<SandboxPolicy>>,
) -> std::io::Result<tokio::process::Child> {
    let Some(policy) = policy else {
        return command.spawn();
    };
    command.env("TMPDIR", &policy.temp_dir);
    let runtime = Handle::try_current().map_err(std::io::Error::other)?;
    std::thread::spawn(move || {
        let _runtime = runtime.enter();
        restrict_this_thread(&policy)?;
        command.spawn()
    })
    .join()
    .map_err(|_| std::io::Error::other("the sandbox thread panicked"))?
}

fn restrict_this_thread(policy: &SandboxPolicy) -> std::io::Result<bool> {
    let abi = ABI::V5;
    let writable = policy
        .writable_roots
        .iter()
        .chain(std::iter::once(&policy.temp_dir));
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        })
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(
                WRITABLE_DEVICES,
                AccessFs::from_all(abi),
            ))
        })
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(std::io::Error::other)?;
    Ok(status.ruleset != RulesetStatus::NotEnforced)
}

/// Whether this kernel enforces Landlock, found by restricting a throwaway thread.
pub(crate) fn available() -> bool {
    let probe = SandboxPolicy {
        writable_roots: Vec::new(),
        temp_dir: std::env::temp_dir(),
    };
    std::thread::spawn(move || restrict_this_thread(&probe).unwrap_or(false))
        .join()
        .unwrap_or(false)
}

/// A reply that looks like the sandbox stopped a write.
pub(crate) fn looks_blocked(output: &str) -> bool {
    [
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
    ]
    .iter()
    .any(|needle| output.contains(needle))
}
