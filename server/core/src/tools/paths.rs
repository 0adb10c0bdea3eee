//! Resolving paths the model gives against the workspace, refusing escapes.

use std::path::{Component, Path, PathBuf};

/// Resolves `requested` (absolute, or relative to `workspace`) to an existing path inside
/// the workspace. Symlinks are followed before the check, so a link pointing out is refused.
pub(crate) fn resolve_existing(workspace: &Path, requested: &str) -> Result<PathBuf, String> {
    let root = workspace.canonicalize().map_err(|err| {
        format!(
            "the workspace {} is not readable: {err}",
            workspace.display()
        )
    })?;
    let joined = normalize(&root.join(requested));
    if !joined.starts_with(&root) {
        return Err(outside(requested, &root));
    }
    let resolved = joined.canonicalize().map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => format!("{requested} does not exist"),
        _ => format!("cannot open {requested}: {err}"),
    })?;
    if !resolved.starts_with(&root) {
        return Err(outside(requested, &root));
    }
    Ok(resolved)
}

fn outside(requested: &str, root: &Path) -> String {
    format!(
        "{requested} is outside the workspace {}; only files inside it can be used",
        root.display()
    )
}

/// Removes `.` and `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
