//! Which folder a session works in: one rule for every front door.
//!
//! A folder the door names explicitly (an editor's `rootUri` or first workspace folder, the
//! SDK's `workingDir`) is the workspace as given: the person or program chose it, as an
//! editor opens the folder it is told to. A start directory that is only implied (the
//! directory `coder exec` runs in, or its `-C DIR`, which means "as if started in DIR";
//! the directory `coder lsp` was started in when the client names no folder) grows to the
//! enclosing repository, so the files of the whole repository are in reach from a
//! subdirectory, and the start directory is kept as [`Workspace::started_in`] for the
//! system prompt.

use std::path::{Path, PathBuf};

use crate::config::ConfigError;

/// A session's workspace and where it was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The workspace root, canonical: its `.coder/config.json` applies, it holds the
    /// session snapshots, and it bounds the tools.
    pub root: PathBuf,
    /// The start directory, canonical, when it is below `root`.
    pub started_in: Option<PathBuf>,
}

impl Workspace {
    /// Opens the workspace a door asks for: `requested`, the folder the door names
    /// explicitly, as given (relative to `cwd` when relative); without one, the repository
    /// enclosing `cwd` (see [`workspace_root`]), with `cwd` as `started_in` when it is
    /// below. A folder that does not exist or is not a directory is
    /// [`ConfigError::Folder`], naming it.
    pub fn open(requested: Option<&Path>, cwd: &Path) -> Result<Self, ConfigError> {
        match requested {
            Some(folder) => Ok(Self {
                root: directory(&cwd.join(folder))?,
                started_in: None,
            }),
            None => {
                let start = directory(cwd)?;
                let root = workspace_root(&start);
                let started_in = (root != start).then_some(start);
                Ok(Self { root, started_in })
            }
        }
    }
}

/// The workspace for a start directory: the nearest enclosing directory that holds `.git`
/// (a directory, or a file as in a linked worktree or a submodule), else `start` itself.
fn workspace_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(start)
        .to_path_buf()
}

/// `path` canonical, or why it cannot be a workspace.
fn directory(path: &Path) -> Result<PathBuf, ConfigError> {
    let folder_error = |reason| ConfigError::Folder {
        path: path.to_path_buf(),
        reason,
    };
    let canonical = path.canonicalize().map_err(folder_error)?;
    if !canonical.is_dir() {
        return Err(folder_error(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    /// `repo/.git`, `repo/src/deep`, and `plain/` beside them, all canonical.
    fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::create_dir(base.join("plain")).unwrap();
        (dir, base, repo)
    }

    #[test]
    fn a_start_directory_grows_to_the_enclosing_repository() {
        let (_dir, base, repo) = layout();
        let deep = repo.join("src/deep");
        assert_eq!(
            Workspace::open(None, &deep).unwrap(),
            Workspace {
                root: repo.clone(),
                started_in: Some(deep.clone())
            }
        );
        assert_eq!(
            Workspace::open(None, &repo).unwrap(),
            Workspace {
                root: repo.clone(),
                started_in: None
            }
        );
        // A linked worktree or submodule has a `.git` file.
        let linked = repo.join("src/linked");
        std::fs::create_dir_all(linked.join("x")).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: ../../.git/worktrees/linked\n").unwrap();
        assert_eq!(
            Workspace::open(None, &linked.join("x")).unwrap().root,
            linked
        );
        let plain = base.join("plain");
        assert_eq!(Workspace::open(None, &plain).unwrap().root, plain);
    }

    #[test]
    fn a_named_folder_is_the_workspace_as_given() {
        let (_dir, base, repo) = layout();
        let deep = repo.join("src/deep");
        assert_eq!(
            Workspace::open(Some(&deep), &base.join("plain")).unwrap(),
            Workspace {
                root: deep,
                started_in: None
            }
        );
        // Relative to the directory the door runs in.
        assert_eq!(
            Workspace::open(Some(Path::new("repo/src/../src")), &base)
                .unwrap()
                .root,
            repo.join("src")
        );
    }

    #[test]
    fn a_missing_folder_or_a_file_is_refused_by_name() {
        let (_dir, base, repo) = layout();
        let missing = base.join("missing");
        let named = Workspace::open(Some(&missing), &base).unwrap_err();
        let started = Workspace::open(None, &missing).unwrap_err();
        for err in [named, started] {
            assert!(
                err.to_string()
                    .starts_with(&format!("cannot open the folder {}: ", missing.display())),
                "{err}"
            );
        }
        let file = repo.join("file.txt");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            Workspace::open(Some(&file), &base).unwrap_err().to_string(),
            format!("cannot open the folder {}: not a directory", file.display())
        );
    }
}
