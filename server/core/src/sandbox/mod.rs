//! The OS sandbox for commands, on Linux, in two layers:
//!
//! - a mount namespace where everything but the writable roots (the workspace, configured
//!   roots, a private temporary directory) is read-only, metadata included, and coder's own
//!   files in the workspace are read-only too ([`namespaces`]); with `sandbox.network: off`
//!   also a network namespace with only loopback;
//! - Landlock at the ABI the kernel offers, allowing reads everywhere and writes only
//!   beneath the writable roots ([`landlock`]).
//!
//! Both are set up in the child between fork and exec, from data prepared before the fork.
//! What this machine enforces is found once per session ([`SandboxEnforcement`]); what it
//! cannot enforce is named in a `warning` at the session's first task.
//!
//! The private temporary directory is made at the first confined command, so a session that
//! runs none leaves nothing in `/tmp` even when its process is killed; it is removed when the
//! session shuts down ([`SandboxPolicy::remove_temp_dir`]) or its policy is dropped, and
//! what a killed session left is removed by the next one ([`temp_dir`]).

mod enforcement;
mod git_entries;
#[allow(unsafe_code)]
mod landlock;
#[allow(unsafe_code)]
mod namespaces;
mod protected;
pub(crate) mod temp_dir;

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use enforcement::{NetworkEnforcement, SandboxEnforcement};
pub(crate) use protected::holds_unchanged;
pub use protected::{CreationAudit, PROTECTED_PATHS};

/// `sandbox.network`: whether confined commands reach the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// Only a loopback of the command's own; a person may approve a re-run with network.
    #[default]
    Off,
    On,
}

/// Where confined commands may write: the roots, and a private temporary directory also
/// passed to commands as `TMPDIR`; and whether they reach the network.
#[derive(Debug)]
pub struct SandboxPolicy {
    /// The workspace first, then configured roots.
    pub writable_roots: Vec<PathBuf>,
    pub network: SandboxNetwork,
    enforcement: SandboxEnforcement,
    /// Made at the first confined command (`coder-sandbox-XXXXXX` in the system's
    /// temporary directory). Shared with the policy of an approved re-run with network.
    temp_dir: Arc<Mutex<TempDirSlot>>,
}

/// The private temporary directory's state.
#[derive(Debug, Default)]
enum TempDirSlot {
    /// No confined command ran yet.
    #[default]
    Unmade,
    Made(temp_dir::SessionTempDir),
    /// Removed at the session's end: a command starting after it (a race with shutdown)
    /// is refused, since nothing would remove a directory made now.
    Removed,
}

impl SandboxPolicy {
    /// A policy for `workspace` (whose protected paths commands see read-only) and further
    /// writable roots, enforced as `enforcement` found.
    pub fn new(
        workspace: &Path,
        more_writable_roots: &[PathBuf],
        network: SandboxNetwork,
        enforcement: SandboxEnforcement,
    ) -> Self {
        let mut writable_roots = vec![workspace.to_path_buf()];
        writable_roots.extend(more_writable_roots.iter().cloned());
        Self {
            writable_roots,
            network,
            enforcement,
            temp_dir: Arc::default(),
        }
    }

    /// What this policy enforces on this machine.
    pub fn enforcement(&self) -> &SandboxEnforcement {
        &self.enforcement
    }

    /// The same confinement with network, for a re-run a person approved.
    pub(crate) fn with_network(&self) -> Self {
        Self {
            writable_roots: self.writable_roots.clone(),
            network: SandboxNetwork::On,
            enforcement: SandboxEnforcement {
                network: NetworkEnforcement::Allowed,
                ..self.enforcement.clone()
            },
            temp_dir: self.temp_dir.clone(),
        }
    }

    /// Whether a command that failed may be offered a re-run with network.
    pub(crate) fn network_is_cut(&self) -> bool {
        matches!(
            self.enforcement.network,
            NetworkEnforcement::Namespace | NetworkEnforcement::LandlockTcp
        )
    }

    /// The workspace, whose protected paths commands see read-only.
    fn workspace(&self) -> &Path {
        self.writable_roots
            .first()
            .map_or(Path::new("/"), PathBuf::as_path)
    }

    /// Notes the protected paths and `.git` entries before a command, to bind them and to
    /// remove what it makes there ([`CreationAudit`]); the walk runs on a blocking thread.
    pub async fn audit(&self) -> CreationAudit {
        let workspace = self.workspace().to_path_buf();
        match tokio::task::spawn_blocking(move || CreationAudit::before(&workspace)).await {
            Ok(audit) => audit,
            Err(err) => {
                tracing::warn!("the sandbox's audit failed on its thread: {err}");
                CreationAudit::before(self.workspace())
            }
        }
    }

    /// The private temporary directory, made now if there is none yet; an error once
    /// [`SandboxPolicy::remove_temp_dir`] ran.
    pub fn temp_dir(&self) -> std::io::Result<PathBuf> {
        let mut slot = crate::sync::lock(&self.temp_dir);
        match &*slot {
            TempDirSlot::Made(dir) => return Ok(dir.path().to_path_buf()),
            TempDirSlot::Removed => {
                return Err(std::io::Error::other(
                    "the session has ended: no command starts after it",
                ));
            }
            TempDirSlot::Unmade => {}
        }
        let dir = temp_dir::SessionTempDir::make(&std::env::temp_dir())?;
        let path = dir.path().to_path_buf();
        *slot = TempDirSlot::Made(dir);
        Ok(path)
    }

    /// Removes the private temporary directory and what commands left in it, for good: a
    /// confined command starting later is refused.
    pub fn remove_temp_dir(&self) {
        let slot = std::mem::replace(
            &mut *crate::sync::lock(&self.temp_dir),
            TempDirSlot::Removed,
        );
        if let TempDirSlot::Made(dir) = slot
            && let Err(err) = dir.close()
        {
            tracing::warn!("cannot remove the sandbox's temporary directory: {err}");
        }
    }
}

/// Spawns `command`, confined by `policy` when given, binding what `audit` (taken from the
/// same policy just before) noted; without one, a fresh audit is taken. The engine only
/// passes a policy when [`SandboxEnforcement::is_enforced`] said the kernel enforces
/// something.
pub(crate) fn spawn(
    mut command: tokio::process::Command,
    policy: Option<Arc<SandboxPolicy>>,
    audit: Option<&CreationAudit>,
) -> std::io::Result<tokio::process::Child> {
    let Some(policy) = policy else {
        return command.spawn();
    };
    let temp_dir = policy.temp_dir()?;
    command.env("TMPDIR", &temp_dir);
    let mut writable = policy.writable_roots.clone();
    writable.push(temp_dir);
    let enforcement = &policy.enforcement;
    let ruleset = if enforcement.landlock_abi > 0 {
        let paths: Vec<&Path> = writable.iter().map(PathBuf::as_path).collect();
        let deny_tcp = enforcement.network == NetworkEnforcement::LandlockTcp;
        Some(landlock::ruleset(
            enforcement.landlock_abi,
            &paths,
            deny_tcp,
        )?)
    } else {
        None
    };
    if enforcement.read_only_view {
        let cwd = command.as_std().get_current_dir().map(Path::to_path_buf);
        let fresh;
        let audit = match audit {
            Some(audit) => audit,
            None => {
                fresh = CreationAudit::before(policy.workspace());
                &fresh
            }
        };
        let plan = namespaces::Plan::new(
            namespaces::support(),
            policy.network == SandboxNetwork::Off,
            &writable,
            audit.mounts(),
            cwd.as_deref(),
            ruleset,
        );
        plan.install(command.as_std_mut());
    } else if let Some(ruleset) = ruleset {
        // SAFETY: `restrict_self` only makes system calls.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || landlock::restrict_self(ruleset.as_raw_fd()));
        }
    }
    command.spawn()
}

/// A reply that looks like the sandbox stopped a write.
pub(crate) fn looks_blocked(output: &str) -> bool {
    [
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
        "Device or resource busy",
    ]
    .iter()
    .any(|needle| output.contains(needle))
}

/// A reply that looks like the command lacked network: what curl, git, pip, npm, cargo, Go,
/// Python and bash print when a host cannot be resolved or reached.
pub(crate) fn looks_offline(output: &str) -> bool {
    let output = output.to_lowercase();
    [
        "network is unreachable",
        "could not resolve host",
        "temporary failure in name resolution",
        "name or service not known",
        "no address associated with hostname",
        "could not resolve",
        "failed to lookup address",
        "connection refused",
        "failed to connect",
        "getaddrinfo",
    ]
    .iter()
    .any(|needle| output.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> SandboxPolicy {
        let enforcement = SandboxEnforcement {
            landlock_abi: 0,
            kernel_landlock_abi: 0,
            read_only_view: false,
            user_namespace: false,
            network: NetworkEnforcement::Allowed,
        };
        SandboxPolicy::new(Path::new("/"), &[], SandboxNetwork::On, enforcement)
    }

    #[test]
    fn no_temporary_directory_is_made_once_the_session_removed_its_own() {
        let policy = policy();
        let made = policy.temp_dir().unwrap();
        assert_eq!(
            policy.temp_dir().unwrap(),
            made,
            "one directory per session"
        );
        assert!(made.is_dir());
        let with_network = policy.with_network();
        policy.remove_temp_dir();
        assert!(!made.exists(), "{} is left behind", made.display());
        // A command starting after the session ended (a race with shutdown) would make a
        // directory nothing removes: it is refused instead.
        let err = policy.temp_dir().unwrap_err();
        assert!(err.to_string().contains("session has ended"), "{err}");
        assert!(with_network.temp_dir().is_err());
    }
}
