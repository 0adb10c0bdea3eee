//! The files that configure or record coder, or run commands on the person's behalf: a
//! command that changes them needs a person's explicit approval, in every mode, `yolo`
//! included.
//!
//! Protected, at any depth in the workspace (a nested repository or project has its own),
//! names compared without regard to ASCII case: the list of `tools::protected_files`, which
//! the file tools apply too; here a name may also be a glob pattern (`.g*/hooks/*`), which a
//! shell expands.

use std::path::Path;

use globset::GlobBuilder;

/// Why a change to `path` (absolute, normalized; it may hold glob patterns) needs a person,
/// or `None`; see [`crate::tools::protected_files`] for the list and how links are resolved.
pub(super) fn reason(workspace: &Path, path: &Path) -> Option<&'static str> {
    crate::tools::protected_files::is_protected_by(workspace, path, may_name)
}

/// Whether a path component (perhaps a glob pattern) may name `protected`. A pattern only
/// matches a name starting with `.` when it starts with `.` itself, as in the shell.
pub(super) fn may_name(component: &str, protected: &str) -> bool {
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
