//! coder's own files in the workspace as commands see them: `.coder/` and `.mcp.json`
//! configure or record coder, and in every git directory of the workspace the files that
//! make git run code or look elsewhere for its configuration (`config`, `hooks/`,
//! `commondir`, `config.worktree`) would run code on the person's next `git` command, outside
//! the sandbox. A command sees them read-only.
//!
//! The git directories are the workspace's `.git`, every `.git` directory below it, every
//! bare repository in it, and the git directories of their submodules (`modules/**`) and
//! linked worktrees (`worktrees/*`):
//! the superproject's `git status` runs each submodule's `core.fsmonitor`.
//!
//! - Existing ones are bound read-only over themselves in the command's mount namespace;
//!   being mount points, they cannot be renamed or removed either. A `.git` file
//!   (`gitdir: ...`) is bound read-only too.
//! - `.git` directories are bound over themselves (writable), so they cannot be renamed away
//!   and replaced by a copy with a planted config or hook.
//! - `.coder/` is made before the first confined command when missing (sessions are saved
//!   there anyway), so it is always bound read-only.
//! - The editors' files that run programs (`.vscode/`, `.idea/`, Neovim's `.nvim.lua`,
//!   `.nvimrc`, `.exrc`), the folder git's `core.hooksPath` names inside the work tree, and
//!   the targets of protected links are bound read-only the same way
//!   ([`crate::launchers::launched_from`]).
//! - A name cannot be bound before it exists, so what a command creates at a missing
//!   protected path (`.mcp.json`, or one of the files above in an existing git directory) is
//!   removed when the call ends, and the output says so ([`CreationAudit`]). No placeholder
//!   is written into the person's repository instead: while the command runs, the session
//!   does not act on such a file by itself (a changed `.mcp.json` starts nothing until a
//!   person confirms, `session/mcp_reload.rs`).
//! - A `.git` entry a command creates anywhere in the workspace (a `.git` file pointing to a
//!   repository it made, wired in through a gitlink in the index), or changes in place, is
//!   removed when the call ends too ([`super::git_entries`]).
//! - A directory the command makes into a repository without naming it `.git` (a bare one)
//!   would have git, run inside it, follow its `config`: it loses its `HEAD`, so git no
//!   longer takes it for a repository. Bare repositories that were there before are git
//!   directories like the others above.
//!
//! Removal happens once the call's processes are gone, so it relies on nothing outliving
//! the call.

use std::path::{Path, PathBuf};

use super::git_entries::{EntryKind, GitEntries};

/// The files that configure or record coder, or make git or an editor run programs,
/// relative to the workspace (beside those of every git directory, and what
/// [`crate::launchers::launched_from`] finds).
pub const PROTECTED_PATHS: [&str; 9] = [
    ".coder",
    ".mcp.json",
    ".git/config",
    ".git/hooks",
    ".vscode",
    ".idea",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
];

/// The files of a git directory that make git run code or read a configuration elsewhere.
pub(crate) const GIT_DIR_REDIRECTS: [&str; 4] = ["config", "hooks", "commondir", "config.worktree"];

/// The names at the workspace's root whose whole content a confined command cannot change:
/// bound read-only when they exist, removed after the call when the command made them.
const HELD_DIRS: [&str; 3] = [".coder", ".vscode", ".idea"];

/// The files at the workspace's root a confined command cannot change, held as
/// [`HELD_DIRS`] are.
const HELD_FILES: [&str; 4] = [".mcp.json", ".nvim.lua", ".nvimrc", ".exrc"];

/// Whether a confined command's change to `path` (absolute and normalized; a component may
/// be a glob pattern) is stopped by the sandbox's read-only view: the path is one of those
/// [`CreationAudit::before`] binds read-only, or removes when a command made it. `false`
/// when that is not certain: protected names below the root (`sub/.mcp.json`, whose
/// nested project is not bound), the rest of a git directory (`.git/HEAD`, `.git/index`,
/// which git itself writes), a `.git` entry itself, and a pattern where a name decides.
/// Names compare without regard to ASCII case: a name that differs only in case is the same
/// file on a case-insensitive file system, and on a case-sensitive one neither coder nor
/// git reads it. This says nothing of whether the sandbox runs: see
/// [`SandboxEnforcement::read_only_view`].
///
/// [`SandboxEnforcement::read_only_view`]: super::SandboxEnforcement::read_only_view
pub(crate) fn holds_unchanged(workspace: &Path, path: &Path) -> bool {
    let workspace = crate::beneath::normalize(workspace);
    let Ok(relative) = path.strip_prefix(&workspace) else {
        return false;
    };
    let names: Vec<&str> = relative
        .components()
        .filter_map(|component| match component {
            std::path::Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    let Some(first) = names.first() else {
        return false;
    };
    let is = |name: &str, held: &str| name.eq_ignore_ascii_case(held);
    if HELD_DIRS.iter().any(|dir| is(first, dir))
        || (names.len() == 1 && HELD_FILES.iter().any(|file| is(first, file)))
    {
        return true;
    }
    // The hooks folder `core.hooksPath` names and the targets of protected links.
    if crate::launchers::launched_from(&workspace)
        .iter()
        .any(|(launched, _)| relative.starts_with(launched))
    {
        return true;
    }
    // In a git directory at any depth: only the files that make git run code.
    let literal = |name: &&str| !name.contains(['*', '?', '[', '{']);
    match names.iter().position(|name| is(name, ".git")) {
        Some(at) if names[..at].iter().all(literal) => names
            .get(at + 1)
            .is_some_and(|inside| GIT_DIR_REDIRECTS.contains(inside)),
        _ => false,
    }
}

/// How deep submodule names and nesting are followed below `modules/`.
const MAX_MODULES_DEPTH: usize = 16;

/// The protected paths, and the paths to pin, of a workspace for one command.
#[derive(Debug, Default)]
pub(crate) struct Mounts {
    /// Bound over themselves, writable: they cannot be renamed away.
    pub pinned: Vec<PathBuf>,
    /// Bound over themselves, read-only.
    pub read_only: Vec<PathBuf>,
}

/// What a confined command may not leave behind: noted before it, checked after it.
pub struct CreationAudit {
    workspace: PathBuf,
    /// Protected paths that were missing; what the command makes there is removed.
    missing: Vec<PathBuf>,
    /// Protected paths that were symbolic links, with their targets: a bind follows the link,
    /// so the link itself could be replaced; it is put back after the command.
    links: Vec<(PathBuf, PathBuf)>,
    /// The `.git` entries before the command.
    git_entries: GitEntries,
    mounts: Mounts,
}

impl CreationAudit {
    /// Notes the `.git` entries of `workspace`, its protected paths and which of them are
    /// missing; makes `.coder/` when missing.
    pub fn before(workspace: &Path) -> Self {
        let coder_dir = workspace.join(".coder");
        if !coder_dir.exists()
            && let Err(err) = std::fs::create_dir(&coder_dir)
        {
            tracing::warn!("cannot make {}: {err}", coder_dir.display());
        }
        let git_entries = GitEntries::find(workspace);
        let mut pinned = Vec::new();
        // `.coder/` is made above and bound below; `.git` files come from the walk.
        let mut protected: Vec<PathBuf> = PROTECTED_PATHS
            .iter()
            .filter(|path| **path != ".coder" && !path.starts_with(".git/"))
            .map(|path| workspace.join(path))
            .collect();
        // The hooks folder `core.hooksPath` names and the targets of protected links.
        protected.extend(
            crate::launchers::launched_from(workspace)
                .into_iter()
                .map(|(path, _)| workspace.join(path)),
        );
        for entry in &git_entries.entries {
            match entry.kind {
                EntryKind::Dir => {
                    pinned.push(entry.path.clone());
                    for git_dir in git_dirs_in(&entry.path) {
                        protected.extend(GIT_DIR_REDIRECTS.iter().map(|f| git_dir.join(f)));
                    }
                }
                EntryKind::File(_) => protected.push(entry.path.clone()),
                EntryKind::Link(_) | EntryKind::Other => {}
            }
        }
        for bare in &git_entries.bare {
            for git_dir in git_dirs_in(&bare.path) {
                protected.extend(GIT_DIR_REDIRECTS.iter().map(|f| git_dir.join(f)));
            }
        }
        let (mut read_only, missing): (Vec<PathBuf>, Vec<PathBuf>) = protected
            .into_iter()
            .partition(|p| p.symlink_metadata().is_ok());
        let links = read_only
            .iter()
            .filter_map(|p| Some((p.clone(), std::fs::read_link(p).ok()?)))
            .collect();
        // `.coder/` was made above, so it is not audited: coder itself may make it again
        // while the command runs, to save the session.
        read_only.insert(0, coder_dir);
        Self {
            workspace: workspace.to_path_buf(),
            missing,
            links,
            git_entries,
            mounts: Mounts { pinned, read_only },
        }
    }

    /// The paths to bind for the command.
    pub(crate) fn mounts(&self) -> &Mounts {
        &self.mounts
    }

    /// [`CreationAudit::after`] on a blocking thread (it walks the workspace).
    pub async fn check(self) -> Option<String> {
        match tokio::task::spawn_blocking(move || self.after()).await {
            Ok(note) => note,
            Err(err) => Some(format!(
                "coder could not check what the command left in coder's and git's files: \
                 {err}\n"
            )),
        }
    }

    /// Removes what the command created at a missing protected path and any `.git` entry it
    /// planted, and says so for the command's output; `None` when there was nothing.
    pub fn after(self) -> Option<String> {
        let mut removed = Vec::new();
        for path in &self.missing {
            if remove(path) {
                removed.push(self.relative(path));
            }
        }
        let mut restored = Vec::new();
        for (path, target) in &self.links {
            if std::fs::read_link(path).is_ok_and(|now| now == *target) {
                continue;
            }
            remove(path);
            match std::os::unix::fs::symlink(target, path) {
                Ok(()) => restored.push(self.relative(path)),
                Err(err) => tracing::warn!("cannot restore the link {}: {err}", path.display()),
            }
        }
        let now = GitEntries::find(&self.workspace);
        let mut planted = Vec::new();
        for entry in now.planted_since(&self.git_entries) {
            if remove(&entry.path) {
                planted.push(self.relative(&entry.path));
            }
        }
        let mut unmade = Vec::new();
        for dir in now.bare_since(&self.git_entries) {
            // Without `HEAD` git no longer takes the directory for a repository; the rest of
            // what the command made stays.
            if remove(&dir.path.join("HEAD")) {
                unmade.push(self.relative(&dir.path));
            }
        }
        let mut note = String::new();
        if !removed.is_empty() {
            note.push_str(&format!(
                "The command created {}, which configures coder or git; commands may not \
                 create these files without a person's approval, so it was removed.\n",
                removed.join(", ")
            ));
        }
        if !restored.is_empty() {
            note.push_str(&format!(
                "The command replaced {}, a link to files that configure coder or git; the \
                 link was put back.\n",
                restored.join(", ")
            ));
        }
        if !planted.is_empty() {
            note.push_str(&format!(
                "The command created or changed {}, which would make the next git command \
                 use a repository it wrote (and run its configuration outside the sandbox); \
                 commands may not create git repositories or links to them, so it was \
                 removed. A person can run git init or git clone.\n",
                planted.join(", ")
            ));
        }
        if !unmade.is_empty() {
            note.push_str(&format!(
                "The command made {} a git repository, whose configuration the next git \
                 command run inside it would follow outside the sandbox; its HEAD was \
                 removed so git no longer takes it for one.\n",
                unmade.join(", ")
            ));
        }
        if !now.complete {
            note.push_str(
                "The workspace has too many files to check for planted .git entries after \
                 the command; some were not checked.\n",
            );
        }
        (!note.is_empty()).then_some(note)
    }

    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.workspace)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// Removes `path` (a directory with what it holds); whether something was removed.
fn remove(path: &Path) -> bool {
    let Ok(meta) = path.symlink_metadata() else {
        return false;
    };
    let result = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match result {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!("cannot remove {}: {err}", path.display());
            false
        }
    }
}

/// `git_dir` and the git directories git keeps inside it: those of submodules (any depth
/// below `modules/`, names may hold `/`, and their own submodules) and of linked worktrees.
fn git_dirs_in(git_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![git_dir.to_path_buf()];
    if let Ok(worktrees) = std::fs::read_dir(git_dir.join("worktrees")) {
        dirs.extend(
            worktrees
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    let mut pending = vec![(git_dir.join("modules"), 0)];
    while let Some((dir, depth)) = pending.pop() {
        if depth > MAX_MODULES_DEPTH {
            continue;
        }
        let Ok(children) = std::fs::read_dir(&dir) else {
            continue;
        };
        for child in children.flatten() {
            if !child.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = child.path();
            if path.join("HEAD").is_file() {
                pending.push((path.join("modules"), depth + 1));
                dirs.push(path);
            } else {
                pending.push((path, depth + 1));
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protected_paths_a_confined_command_cannot_change_are_held() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("tracked")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        std::fs::write(root.join("tracked/servers.json"), "{}").unwrap();
        std::os::unix::fs::symlink("tracked/servers.json", root.join(".mcp.json")).unwrap();
        let holds = |path: &str| holds_unchanged(&root, &root.join(path));
        for path in [
            ".coder",
            ".coder/config.json",
            ".mcp.json",
            ".vscode/tasks.json",
            ".idea/workspace.xml",
            ".nvim.lua",
            ".nvimrc",
            ".exrc",
            ".git/config",
            ".git/hooks/pre-commit",
            ".git/hooks/*",
            ".git/commondir",
            ".git/config.worktree",
            "vendor/x/.git/config",
            ".githooks/pre-commit",
            "tracked/servers.json",
        ] {
            assert!(holds(path), "{path} should be held");
        }
        for path in [
            "src/main.rs",
            "sub/.mcp.json",
            "sub/.coder/config.json",
            "sub/.vscode/tasks.json",
            ".git",
            ".git/HEAD",
            ".git/info/attributes",
            ".git/*",
            ".g*/hooks/x",
            "*/.git/config",
            ".mcp*",
            "tracked/other.json",
        ] {
            assert!(!holds(path), "{path} should not be held");
        }
        assert!(!holds_unchanged(&root, Path::new("/elsewhere/.coder")));
    }

    #[test]
    fn a_protected_link_replaced_by_a_directory_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("githooks")).unwrap();
        std::os::unix::fs::symlink("../githooks", root.join(".git/hooks")).unwrap();
        let audit = CreationAudit::before(root);
        std::fs::remove_file(root.join(".git/hooks")).unwrap();
        std::fs::create_dir(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
        let note = audit.after().unwrap();
        assert!(note.contains(".git/hooks"), "{note}");
        assert_eq!(
            std::fs::read_link(root.join(".git/hooks")).unwrap(),
            Path::new("../githooks")
        );
    }

    #[test]
    fn the_redirects_of_submodules_and_worktrees_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for git_dir in [
            ".git",
            ".git/modules/libs/a",
            ".git/modules/libs/a/modules/b",
            "vendor/x/.git",
        ] {
            std::fs::create_dir_all(root.join(git_dir).join("hooks")).unwrap();
            std::fs::write(root.join(git_dir).join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(root.join(git_dir).join("config"), "").unwrap();
        }
        std::fs::create_dir_all(root.join(".git/worktrees/w")).unwrap();
        std::fs::write(root.join(".git/worktrees/w/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(root.join("libs/a")).unwrap();
        std::fs::write(
            root.join("libs/a/.git"),
            "gitdir: ../../.git/modules/libs/a\n",
        )
        .unwrap();
        let audit = CreationAudit::before(root);
        let relative = |paths: &[PathBuf]| -> Vec<String> {
            let mut paths: Vec<String> = paths
                .iter()
                .map(|p| p.strip_prefix(root).unwrap().display().to_string())
                .collect();
            paths.sort();
            paths
        };
        assert_eq!(relative(&audit.mounts().pinned), [".git", "vendor/x/.git"]);
        let read_only = relative(&audit.mounts().read_only);
        for wanted in [
            ".coder",
            ".git/config",
            ".git/hooks",
            ".git/modules/libs/a/config",
            ".git/modules/libs/a/modules/b/hooks",
            ".git/worktrees/w/commondir",
            "libs/a/.git",
            "vendor/x/.git/config",
        ] {
            assert!(
                read_only.iter().any(|p| p == wanted),
                "{wanted}: {read_only:?}"
            );
        }
        let missing = relative(&audit.missing);
        for wanted in [
            ".mcp.json",
            ".git/commondir",
            ".git/config.worktree",
            ".git/modules/libs/a/commondir",
            ".git/worktrees/w/config",
            "vendor/x/.git/commondir",
        ] {
            assert!(missing.iter().any(|p| p == wanted), "{wanted}: {missing:?}");
        }
    }
}
