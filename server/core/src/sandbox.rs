//! The OS sandbox for commands: on Linux, Landlock confines writes to the workspace roots, a
//! private temporary directory and configured roots; reads stay allowed everywhere.
//!
//! Landlock restricts the thread that asks and every process it starts afterwards. The
//! engine therefore spawns each confined command from a fresh, short-lived thread that
//! restricts itself first, so no thread of the runtime is ever restricted.
//!
//! The private temporary directory is made at the first confined command, so a session that
//! runs none leaves nothing in `/tmp` even when its process is killed; it is removed when the
//! session shuts down ([`SandboxPolicy::remove_temp_dir`]) or its policy is dropped.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// Where confined commands may write: the roots, and a private temporary directory also
/// passed to commands as `TMPDIR`.
#[derive(Debug)]
pub struct SandboxPolicy {
    pub writable_roots: Vec<PathBuf>,
    /// Made at the first confined command (`coder-XXXXXX` in the system's temporary
    /// directory); `None` until then and after [`SandboxPolicy::remove_temp_dir`].
    temp_dir: Mutex<Option<tempfile::TempDir>>,
}

impl SandboxPolicy {
    pub fn new(writable_roots: Vec<PathBuf>) -> Self {
        Self {
            writable_roots,
            temp_dir: Mutex::new(None),
        }
    }

    /// The private temporary directory, made now if there is none yet.
    pub fn temp_dir(&self) -> std::io::Result<PathBuf> {
        let mut slot = crate::engine::lock(&self.temp_dir);
        if let Some(dir) = slot.as_ref() {
            return Ok(dir.path().to_path_buf());
        }
        let dir = tempfile::Builder::new().prefix("coder-").tempdir()?;
        let path = dir.path().to_path_buf();
        *slot = Some(dir);
        Ok(path)
    }

    /// Removes the private temporary directory and what commands left in it; a later
    /// confined command makes a new one.
    pub fn remove_temp_dir(&self) {
        let dir = crate::engine::lock(&self.temp_dir).take();
        if let Some(dir) = dir
            && let Err(err) = dir.close()
        {
            tracing::warn!("cannot remove the sandbox's temporary directory: {err}");
        }
    }
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
    let temp_dir = policy.temp_dir()?;
    command.env("TMPDIR", &temp_dir);
    let runtime = Handle::try_current().map_err(std::io::Error::other)?;
    std::thread::spawn(move || {
        let _runtime = runtime.enter();
        restrict_this_thread(&policy.writable_roots, &temp_dir)?;
        command.spawn()
    })
    .join()
    .map_err(|_| std::io::Error::other("the sandbox thread panicked"))?
}

fn restrict_this_thread(writable_roots: &[PathBuf], temp_dir: &Path) -> std::io::Result<bool> {
    let abi = ABI::V5;
    let writable = writable_roots
        .iter()
        .map(PathBuf::as_path)
        .chain(std::iter::once(temp_dir));
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
    std::thread::spawn(|| restrict_this_thread(&[], &std::env::temp_dir()).unwrap_or(false))
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
