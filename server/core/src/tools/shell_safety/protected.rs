//! The files that configure or record coder, or run commands on the person's behalf: a
//! command that changes them needs a person's explicit approval, in every mode, `yolo`
//! included.
//!
//! Protected, at any depth in the workspace (a nested repository or project has its own),
//! names compared without regard to ASCII case: `.coder/` (configuration and sessions),
//! `.mcp.json` (MCP servers coder starts) and `.git/` or a `.git` file (configuration whose
//! `core.fsmonitor`, pager, aliases and filters run commands, and hooks). The file tools
//! apply the same list (`permissions::protected`); this copy also understands glob patterns
//! (`.g*/hooks/*`), which a shell expands.

use std::path::{Component, Path};

use globset::GlobBuilder;

/// Directories whose whole content is protected, with why.
const DIRS: [(&str, &str); 2] = [
    (".coder", ".coder/ holds coder's configuration and sessions"),
    (
        ".git",
        ".git/ holds git's configuration and hooks, which run commands",
    ),
];

/// Files protected by name, with why.
const FILES: [(&str, &str); 1] = [(".mcp.json", ".mcp.json names commands coder starts")];

/// Why a change to `path` (absolute, normalized; it may hold glob patterns) needs a person,
/// or `None`. Paths outside `workspace` are not protected here (other rules cover them).
/// When the lexical path is not protected, its existing part is resolved with symbolic
/// links followed and checked again (a link `h -> .git/hooks` does not hide `h/x`).
pub(super) fn reason(workspace: &Path, path: &Path) -> Option<&'static str> {
    if let Ok(relative) = path.strip_prefix(workspace)
        && let Some(reason) = relative_reason(relative)
    {
        return Some(reason);
    }
    let root = workspace.canonicalize().ok()?;
    let mut existing = path;
    let mut rest = Vec::new();
    let resolved = loop {
        if let Ok(resolved) = existing.canonicalize() {
            break resolved;
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    };
    let mut full = resolved;
    full.extend(rest.iter().rev());
    relative_reason(full.strip_prefix(&root).ok()?)
}

/// Why a path relative to the workspace root is protected.
fn relative_reason(relative: &Path) -> Option<&'static str> {
    let names: Vec<&str> = relative
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    for (index, name) in names.iter().enumerate() {
        if let Some((_, why)) = DIRS.iter().find(|(dir, _)| may_name(name, dir)) {
            return Some(why);
        }
        if index + 1 == names.len()
            && let Some((_, why)) = FILES.iter().find(|(file, _)| may_name(name, file))
        {
            return Some(why);
        }
    }
    None
}

/// Whether a path component (perhaps a glob pattern) may name `protected`. A pattern only
/// matches a name starting with `.` when it starts with `.` itself, as in the shell.
fn may_name(component: &str, protected: &str) -> bool {
    if component.eq_ignore_ascii_case(protected) {
        return true;
    }
    if !component.starts_with('.') || !component.contains(['*', '?', '[']) {
        return false;
    }
    GlobBuilder::new(component)
        .case_insensitive(true)
        .literal_separator(true)
        .build()
        // A pattern the glob crate cannot read counts as matching: better one question more.
        .map_or(true, |glob| glob.compile_matcher().is_match(protected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_patterns_that_reach_protected_files() {
        let ws = Path::new("/w/p");
        for path in [
            "/w/p/.git/config",
            "/w/p/.git/hooks/pre-commit",
            "/w/p/.git",
            "/w/p/.GIT/hooks/x",
            "/w/p/sub/.git/config",
            "/w/p/.coder/config.json",
            "/w/p/.mcp.json",
            "/w/p/.g*/hooks/pre-commit",
            "/w/p/.mcp*",
            "/w/p/.[c]oder/x",
        ] {
            assert!(reason(ws, Path::new(path)).is_some(), "{path}");
        }
        for path in [
            "/w/p/src/main.rs",
            "/w/p/*",
            "/w/p/gitconfig",
            "/w/p/.gitignore",
            "/w/p/.github/workflows/x.yml",
            "/w/p/notes/.mcp.json.bak",
            "/elsewhere/.git/config",
        ] {
            assert!(reason(ws, Path::new(path)).is_none(), "{path}");
        }
    }
}
