//! coder's own files in the workspace as commands see them: `.coder/`, `.mcp.json`,
//! `.git/config` and `.git/hooks/` configure or record coder (or run code on the person's
//! next `git` command), so a command sees them read-only.
//!
//! - Existing ones are bound read-only over themselves in the command's mount namespace;
//!   being mount points, they cannot be renamed or removed either.
//! - `.git` is bound over itself (writable), so it cannot be renamed away and replaced by a
//!   copy with a planted config or hook.
//! - `.coder/` is made before the first confined command when missing (sessions are saved
//!   there anyway), so it is always bound read-only.
//! - A name cannot be bound before it exists, so what a command creates at a missing
//!   `.mcp.json`, `.git/config` or `.git/hooks` (in an existing `.git` directory) is removed
//!   when the call ends, and the output says so ([`CreationAudit`]). Removal happens once
//!   the call's processes are gone, so it relies on nothing outliving the call.

use std::path::{Path, PathBuf};

/// The files that configure or record coder, relative to the workspace.
pub const PROTECTED_PATHS: [&str; 4] = [".coder", ".mcp.json", ".git/config", ".git/hooks"];

/// The protected paths, and the paths to pin, of `workspace` for one command.
pub(crate) struct Mounts {
    /// Bound over themselves, writable: they cannot be renamed away.
    pub pinned: Vec<PathBuf>,
    /// Bound over themselves, read-only.
    pub read_only: Vec<PathBuf>,
}

pub(crate) fn mounts(workspace: &Path) -> Mounts {
    let coder_dir = workspace.join(".coder");
    if !coder_dir.exists()
        && let Err(err) = std::fs::create_dir(&coder_dir)
    {
        tracing::warn!("cannot make {}: {err}", coder_dir.display());
    }
    let git = workspace.join(".git");
    Mounts {
        pinned: if git.is_dir() { vec![git] } else { Vec::new() },
        read_only: PROTECTED_PATHS.iter().map(|p| workspace.join(p)).collect(),
    }
}

/// The protected paths missing before a command; what the command made there is removed
/// after it.
pub struct CreationAudit {
    workspace: PathBuf,
    missing: Vec<&'static str>,
}

impl CreationAudit {
    /// Notes which protected paths of `workspace` are missing. `.git/config` and
    /// `.git/hooks` count only in an existing `.git` directory: a command may `git init`.
    pub fn before(workspace: &Path) -> Self {
        let git_dir = workspace.join(".git").is_dir();
        // `.coder/` was made before the command (see [`mounts`]); coder itself may make it
        // again while the command runs, to save the session.
        let missing = PROTECTED_PATHS
            .into_iter()
            .filter(|p| *p != ".coder")
            .filter(|p| git_dir || !p.starts_with(".git/"))
            .filter(|p| workspace.join(p).symlink_metadata().is_err())
            .collect();
        Self {
            workspace: workspace.to_path_buf(),
            missing,
        }
    }

    /// Removes what the command created at a missing protected path, and says so for the
    /// command's output; `None` when it created nothing there.
    pub fn after(self) -> Option<String> {
        let mut removed = Vec::new();
        for name in self.missing {
            let path = self.workspace.join(name);
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            let result = if meta.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match result {
                Ok(()) => removed.push(name),
                Err(err) => tracing::warn!("cannot remove {}: {err}", path.display()),
            }
        }
        (!removed.is_empty()).then(|| {
            format!(
                "The command created {}, which configures coder or git; commands may not \
                 create these files without a person's approval, so it was removed.\n",
                removed.join(", ")
            )
        })
    }
}
