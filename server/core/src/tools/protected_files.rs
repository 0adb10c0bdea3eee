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

/// Why the folder `core.hooksPath` names is protected.
const HOOKS_PATH: &str =
    "git runs the hooks in this folder (core.hooksPath) on the next commit, outside the sandbox";

/// Why the target of a protected link is protected.
const LINKED: &str = "a protected name (.mcp.json, .git/hooks, .coder, ...) links here, so this \
                      file is what coder or git reads and runs";

/// The protected names whose link target is protected too, relative to the workspace.
const FOLLOWED_LINKS: [&str; 7] = [
    ".mcp.json",
    ".coder",
    ".coder/config.json",
    ".git",
    ".git/config",
    ".git/hooks",
    ".vscode",
];

/// Paths inside the workspace, relative to its root, that something runs although no
/// protected name says so, with why: the folder git's `core.hooksPath` names (in
/// `.git/config` or `.git/config.worktree`; a relative one is taken from the work tree's
/// root, as git does), and the targets of links at [`FOLLOWED_LINKS`] and at that folder.
pub(crate) fn launched_from(workspace: &Path) -> Vec<(PathBuf, &'static str)> {
    let Ok(root) = workspace.canonicalize() else {
        return Vec::new();
    };
    let inside = |path: &Path| -> Option<PathBuf> {
        let resolved = existing_canonical(&normalize(&root.join(path)))?;
        let relative = resolved.strip_prefix(&root).ok()?;
        (!relative.as_os_str().is_empty()).then(|| relative.to_path_buf())
    };
    let mut found = Vec::new();
    for name in FOLLOWED_LINKS {
        let path = root.join(name);
        if path.symlink_metadata().is_ok_and(|meta| meta.is_symlink())
            && let Some(target) = inside(Path::new(name))
            && protected_relative(&target, str::eq_ignore_ascii_case).is_none()
        {
            found.push((target, LINKED));
        }
    }
    for file in ["config", "config.worktree"] {
        let Ok(text) = crate::bounded::read_to_string(
            &root.join(".git").join(file),
            crate::bounded::MAX_CONFIG_BYTES,
        ) else {
            continue;
        };
        if let Some(hooks) = hooks_path(&text)
            && !hooks.starts_with('~')
            && let Some(target) = inside(Path::new(&hooks)).or_else(|| {
                // A folder not made yet is protected by its name.
                let lexical = normalize(&root.join(&hooks));
                lexical.strip_prefix(&root).ok().map(Path::to_path_buf)
            })
            && !target.as_os_str().is_empty()
        {
            found.push((target, HOOKS_PATH));
        }
    }
    found
}

/// The last `core.hooksPath` a git configuration file sets, unquoted; `None` when it sets
/// none. Includes are not followed (git commands in such a repository ask anyway).
fn hooks_path(text: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let end = header.find(']')?;
            let name = header[..end]
                .split(|c: char| c.is_whitespace() || c == '"' || c == '.')
                .next()
                .unwrap_or_default();
            in_core = name.eq_ignore_ascii_case("core");
            line = header[end + 1..].trim();
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("hookspath") {
            let value = value.split(['#', ';']).next().unwrap_or_default().trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            found = (!value.is_empty()).then(|| value.to_owned());
        }
    }
    found
}

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
    fn hooks_path_is_read_as_git_reads_it() {
        assert_eq!(
            hooks_path("[core]\n\thooksPath = .husky/_\n"),
            Some(".husky/_".into())
        );
        assert_eq!(
            hooks_path("[CORE]\nhookspath = \"githooks\" # shared\n[core]\nHooksPath=later\n"),
            Some("later".into())
        );
        assert_eq!(hooks_path("[core.x]\nhooksPath = a\n"), Some("a".into()));
        assert_eq!(
            hooks_path("[alias]\nhooksPath = a\n[core]\nbare = false\n"),
            None
        );
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
