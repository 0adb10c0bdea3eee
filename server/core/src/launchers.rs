//! What runs although no protected name says so: the folder git's `core.hooksPath` names
//! inside the work tree (husky's `.husky/_`, `.githooks`), and the targets of links at the
//! names coder and git read (`.mcp.json -> config/mcp.json`, `.git/hooks -> ../githooks`).
//! The file tools and the command analysis protect these as the names themselves
//! (`tools/protected_files.rs`), and the sandbox binds them read-only
//! (`sandbox/protected.rs`).

use std::path::{Path, PathBuf};

use crate::beneath::{existing_canonical, normalize};

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
            && !protected_by_name(&target)
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

/// Whether `relative` is already protected by its name: `.coder`, `.git`, `.vscode` at any
/// depth, or `.mcp.json` (the targets worth adding are those no name covers).
fn protected_by_name(relative: &Path) -> bool {
    relative.components().any(|component| {
        let name = component.as_os_str().to_string_lossy();
        [".coder", ".git", ".vscode", ".idea", ".mcp.json"]
            .iter()
            .any(|protected| name.eq_ignore_ascii_case(protected))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
