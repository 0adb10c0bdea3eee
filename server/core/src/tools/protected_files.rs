//! The files that configure or record coder, or run commands on the person's behalf: a tool
//! never changes them without a person's explicit approval, in every mode.
//!
//! Protected, at any depth in the workspace (a nested repository or project has its own):
//! - `.coder/`: configuration, instructions and recorded sessions;
//! - `.mcp.json`: MCP servers, whose commands coder starts;
//! - `.git/` and a `.git` file: git's configuration (`core.fsmonitor`, `core.pager`, aliases
//!   and filters run commands), its hooks (run by every commit) and the rest of the
//!   repository's own data, which no tool has reason to write.
//!
//! - the editors' own files that run programs when a folder is opened or a setting read:
//!   `.vscode/` (tasks, launch configurations, settings naming programs, MCP servers),
//!   `.idea/` (run configurations), Neovim's `.nvim.lua`, `.nvimrc` and `.exrc`.
//!
//! Names match without regard to ASCII case, so `.GIT/hooks` on a case-insensitive file
//! system is caught; on a case-sensitive one this only asks once more than needed.
//!
//! What runs is also found where no name says so ([`launched_from`]): the folder git's
//! `core.hooksPath` names inside the work tree (husky's `.husky/_`, `.githooks`), and
//! whatever a protected name links to (`.mcp.json -> config/mcp.json`,
//! `.git/hooks -> ../githooks`) are protected as the names themselves are.

use std::path::{Component, Path, PathBuf};

use crate::launchers::launched_from;
use crate::tools::paths::{existing_canonical, normalize};

/// The directories whose whole content is protected, with why.
const PROTECTED_DIRS: [(&str, &str); 4] = [
    (
        ".coder",
        "coder's own configuration and sessions (.coder/) can loosen what later sessions allow",
    ),
    (
        ".git",
        "git's configuration and hooks (.git/) run commands on the next git operation",
    ),
    (
        ".vscode",
        "VS Code's workspace files (.vscode/) name tasks, programs and MCP servers it runs",
    ),
    (
        ".idea",
        "JetBrains IDEs' project files (.idea/) name run configurations and tools they start",
    ),
];

/// Why a file Neovim runs when it opens the folder (with `exrc` set) is protected.
const NEOVIM_EXRC: &str = "Neovim runs this file as code when it opens the folder (exrc)";

/// The files protected by name, with why.
const PROTECTED_FILES: [(&str, &str); 4] = [
    (
        ".mcp.json",
        ".mcp.json names MCP servers whose commands coder starts",
    ),
    (".nvim.lua", NEOVIM_EXRC),
    (".nvimrc", NEOVIM_EXRC),
    (".exrc", NEOVIM_EXRC),
];

/// Why changing `path` needs a person's explicit approval, or `None` when it does not.
///
/// `path` is relative to `workspace` or absolute; `.` and `..` are applied first (so
/// `src/../.git/hooks/x` is caught), and when the lexical path is not protected, the longest
/// existing part of it is resolved with symbolic links followed and checked again (so a link
/// `h -> .git/hooks` does not hide `h/pre-commit`). Paths outside the workspace are not this
/// function's business (`None`): the file tools refuse them anyway.
pub(crate) fn is_protected(workspace: &Path, path: &Path) -> Option<&'static str> {
    is_protected_by(workspace, path, str::eq_ignore_ascii_case)
}

/// [`is_protected`] with `names(component, protected)` deciding whether a path component may
/// name a protected file: the shell analysis passes one that also reads glob patterns
/// (`.g*/hooks/*`), which a shell expands.
pub(crate) fn is_protected_by(
    workspace: &Path,
    path: &Path,
    names: fn(&str, &str) -> bool,
) -> Option<&'static str> {
    let joined = normalize(&workspace.join(path));
    if let Some(reason) =
        relative_to(workspace, &joined).and_then(|rel| protected_relative(&rel, names))
    {
        return Some(reason);
    }
    let root = workspace.canonicalize().ok()?;
    let resolved = existing_canonical(&joined)?;
    let relative = resolved.strip_prefix(&root).ok()?;
    if let Some(reason) = protected_relative(relative, names) {
        return Some(reason);
    }
    let lexical = relative_to(workspace, &joined);
    launched_from(workspace)
        .into_iter()
        .find(|(launched, _)| {
            relative.starts_with(launched)
                || lexical
                    .as_deref()
                    .is_some_and(|path| path.starts_with(launched))
        })
        .map(|(_, reason)| reason)
}

/// Why a path relative to the workspace root (already normalized) is protected.
fn protected_relative(relative: &Path, names: fn(&str, &str) -> bool) -> Option<&'static str> {
    let components: Vec<&str> = relative
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    for (index, name) in components.iter().enumerate() {
        for (dir, reason) in PROTECTED_DIRS {
            // The directory itself (or a `.git` file) and everything under it.
            if names(name, dir) {
                return Some(reason);
            }
        }
        if index + 1 == components.len() {
            for (file, reason) in PROTECTED_FILES {
                if names(name, file) {
                    return Some(reason);
                }
            }
        }
    }
    None
}

/// Why writing the files at `paths` (relative to `workspace` or absolute) would plant a git
/// repository, or `None`. git takes a directory holding `HEAD` and `config` (with `objects/`
/// and `refs/`) for a repository wherever it is, and runs what its `config` names
/// (`core.fsmonitor`, ...) on the person's next `git` command there: a file tool may not
/// write the second of the two beside the first, nor both at once, without a person.
pub(crate) fn plants_repository(workspace: &Path, paths: &[&Path]) -> Option<&'static str> {
    const WHY: &str = "HEAD and config side by side make a git repository, whose config runs \
                       commands on the next git operation there";
    let pair = |name: &str| match name {
        "HEAD" => Some("config"),
        "config" => Some("HEAD"),
        _ => None,
    };
    paths.iter().find_map(|path| {
        let full = workspace.join(path);
        let other = pair(full.file_name()?.to_str()?)?;
        let sibling = full.with_file_name(other);
        let written_too = paths.iter().any(|p| workspace.join(p) == sibling);
        (written_too || sibling.symlink_metadata().is_ok()).then_some(WHY)
    })
}

/// `path` relative to `workspace` (as given, or canonical), when inside it.
fn relative_to(workspace: &Path, path: &Path) -> Option<PathBuf> {
    if let Ok(rel) = path.strip_prefix(normalize(workspace)) {
        return Some(rel.to_path_buf());
    }
    let root = workspace.canonicalize().ok()?;
    path.strip_prefix(root).ok().map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(workspace: &Path, path: &str) -> bool {
        is_protected(workspace, Path::new(path)).is_some()
    }

    #[test]
    fn coder_mcp_and_git_files_are_protected_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for path in [
            ".coder/config.json",
            ".coder/sessions/x.json",
            ".coder",
            ".mcp.json",
            ".git/config",
            ".git/hooks/pre-commit",
            ".git",
            "vendor/lib/.git/config",
            "sub/.mcp.json",
            "./.git/../.git/hooks/x",
            "src/../.coder/config.json",
            ".GIT/hooks/x",
            ".Coder/config.json",
            ".MCP.JSON",
        ] {
            assert!(check(root, path), "{path} should be protected");
        }
        let absolute = root.join(".git/config");
        assert!(check(root, absolute.to_str().unwrap()));
        for path in [
            "src/main.rs",
            ".mcp.json.bak/x",
            ".gitignore",
            ".github/workflows/ci.yml",
            "docs/.coder-notes.md",
            "/etc/passwd",
        ] {
            assert!(!check(root, path), "{path} should not be protected");
        }
    }

    /// Every protected name at the workspace's root is one the sandbox's read-only view
    /// keeps as it was (`sandbox/protected.rs`), so a command changing it may be approved
    /// without a person when it runs confined; in a git directory only the files that run
    /// code are, and a `.git` entry itself is not.
    #[test]
    fn the_sandbox_holds_every_protected_name_at_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let holds = |path: &str| crate::sandbox::holds_unchanged(&root, &root.join(path));
        for (name, _) in PROTECTED_DIRS {
            let inside = format!("{name}/x");
            if name == ".git" {
                assert!(!holds(name) && !holds(&inside), "{name}");
                for redirect in ["config", "hooks/x", "commondir", "config.worktree"] {
                    assert!(holds(&format!(".git/{redirect}")), "{redirect}");
                }
            } else {
                assert!(holds(name) && holds(&inside), "{name}");
            }
        }
        for (name, _) in PROTECTED_FILES {
            assert!(holds(name), "{name}");
            assert!(!holds(&format!("sub/{name}")), "sub/{name}");
        }
    }

    #[test]
    fn head_and_config_side_by_side_plant_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let plants = |paths: &[&str]| {
            let paths: Vec<&Path> = paths.iter().map(Path::new).collect();
            plants_repository(root, &paths).is_some()
        };
        assert!(!plants(&["x/HEAD"]));
        assert!(!plants(&["x/config", "y/HEAD"]));
        assert!(plants(&["x/HEAD", "x/config"]));
        std::fs::create_dir_all(root.join("x")).unwrap();
        std::fs::write(root.join("x/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(plants(&["x/config"]));
        assert!(!plants(&["src/config"]));
    }

    #[test]
    fn links_into_protected_directories_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", root.join("h")).unwrap();
        assert!(check(root, "h/pre-commit"));
        assert!(!check(root, "other/pre-commit"));
    }

    #[test]
    fn the_hooks_folder_and_link_targets_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("tracked")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        std::fs::write(root.join("tracked/servers.json"), "{}").unwrap();
        std::os::unix::fs::symlink("tracked/servers.json", root.join(".mcp.json")).unwrap();
        // Not made yet: protected by its name.
        assert!(check(root, ".githooks/pre-commit"));
        assert!(check(root, "tracked/servers.json"));
        assert!(!check(root, "tracked/other.json"));
        assert!(!check(root, "githooks/pre-commit"));
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\thooksPath = /elsewhere\n",
        )
        .unwrap();
        assert!(!check(root, ".githooks/pre-commit"));
    }
}
