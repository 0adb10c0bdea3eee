//! Resolving paths the model gives against the workspace, refusing escapes.

use std::path::{Component, Path, PathBuf};

/// Resolves `requested` (absolute, or relative to `workspace`) to an existing path inside
/// the workspace. Symlinks are followed before the check, so a link pointing out is refused.
pub(crate) fn resolve_existing(workspace: &Path, requested: &str) -> Result<PathBuf, String> {
    let root = canonical_root(workspace)?;
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

/// Resolves `requested` to a path inside the workspace that may not exist yet (for writes).
/// The nearest existing ancestor is resolved with symlinks followed and must lie inside
/// the workspace, so neither `..`, an absolute path nor a symlinked directory can lead out.
/// An existing file that is itself a symlink is resolved the same way.
pub(crate) fn resolve_for_write(workspace: &Path, requested: &str) -> Result<PathBuf, String> {
    let root = canonical_root(workspace)?;
    let joined = normalize(&root.join(requested));
    if !joined.starts_with(&root) {
        return Err(outside(requested, &root));
    }
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    while existing.symlink_metadata().is_err() {
        let Some(name) = existing.file_name() else {
            return Err(outside(requested, &root));
        };
        rest.push(name.to_owned());
        existing = existing.parent().ok_or_else(|| outside(requested, &root))?;
    }
    let mut resolved = existing
        .canonicalize()
        .map_err(|err| format!("cannot open {requested}: {err}"))?;
    if !resolved.starts_with(&root) {
        return Err(outside(requested, &root));
    }
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

/// The path as people should see it: relative to the workspace when inside it.
pub(crate) fn display_path(workspace: &Path, path: &Path) -> String {
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn canonical_root(workspace: &Path) -> Result<PathBuf, String> {
    workspace.canonicalize().map_err(|err| {
        format!(
            "the workspace {} is not readable: {err}",
            workspace.display()
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_may_create_new_paths_but_not_escape() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            resolve_for_write(&root, "new/dir/file.txt").unwrap(),
            root.join("new/dir/file.txt")
        );
        assert!(
            resolve_for_write(&root, "../x")
                .unwrap_err()
                .contains("outside")
        );
        assert!(
            resolve_for_write(&root, "/tmp/x")
                .unwrap_err()
                .contains("outside")
        );
        let outside_dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside_dir.path(), root.join("link")).unwrap();
        assert!(
            resolve_for_write(&root, "link/file.txt")
                .unwrap_err()
                .contains("outside")
        );
        assert!(
            resolve_existing(&root, "link")
                .unwrap_err()
                .contains("outside")
        );
    }
}
