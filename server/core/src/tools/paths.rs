//! Resolving paths the model gives against the workspace, refusing escapes.

use std::path::{Path, PathBuf};

use crate::beneath::link_refused;
use crate::documents::Documents;

pub(crate) use crate::beneath::{existing_canonical, normalize};

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

/// Resolves `requested` for reading: like [`resolve_existing`], with the text the editor has
/// for it when it is open there. A path that does not exist on disk is accepted when it is
/// open in the editor (a new file not saved yet), resolved as for a write, so the same
/// confinement applies: the path is resolved first and only then looked up.
pub(crate) fn resolve_readable(
    workspace: &Path,
    requested: &str,
    documents: Option<&dyn Documents>,
) -> Result<(PathBuf, Option<String>), String> {
    let missing = match resolve_existing(workspace, requested) {
        Ok(path) => {
            let text = documents.and_then(|documents| documents.text(&path));
            return Ok((path, text));
        }
        Err(err) => err,
    };
    let Some(documents) = documents else {
        return Err(missing);
    };
    let Ok(path) = resolve_for_write(workspace, requested) else {
        return Err(missing);
    };
    if path.symlink_metadata().is_ok() {
        // Something is there (a dangling or escaping link): keep the original refusal.
        return Err(missing);
    }
    match documents.text(&path) {
        Some(text) => Ok((path, Some(text))),
        None => Err(missing),
    }
}

/// Resolves `requested` to a path inside the workspace that may not exist yet (for writes).
/// `.` and `..` are applied to the text, and the result must lie inside the workspace.
/// A symbolic link anywhere in the path is refused, whether it points out of the workspace
/// (the refusal says so) or into it (the refusal names the link and what it points to):
/// the path a write is checked and approved for is exactly the path it changes. This check
/// gives the clear message; the write itself goes through [`super::beneath`], which refuses
/// a link that appears after this check too.
pub(crate) fn resolve_for_write(workspace: &Path, requested: &str) -> Result<PathBuf, String> {
    let root = canonical_root(workspace)?;
    let joined = normalize(&root.join(requested));
    let Ok(relative) = joined.strip_prefix(&root) else {
        return Err(outside(requested, &root));
    };
    let mut at = root.clone();
    for name in relative.components() {
        at.push(name);
        match at.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                if at
                    .canonicalize()
                    .is_ok_and(|target| target.starts_with(&root))
                {
                    let target = std::fs::read_link(&at).unwrap_or_default();
                    let link = display_path(&root, &at);
                    return Err(link_refused(&link, &target));
                }
                return Err(outside(requested, &root));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(joined)
}

/// The path as people should see it: relative to the workspace when inside it.
/// Where a call's path argument `requested` points, absolute (the workspace joined with a
/// relative one, `.` and `..` taken lexically: nothing is read), with the first line the call
/// names. `None` for an empty path.
pub(crate) fn location(
    workspace: &Path,
    requested: Option<&str>,
    line: Option<u64>,
) -> Option<coder_protocol::ToolLocation> {
    let requested = requested.filter(|path| !path.is_empty())?;
    let path = crate::beneath::normalize(&workspace.join(requested));
    Some(coder_protocol::ToolLocation {
        path: path.to_string_lossy().into_owned(),
        line,
    })
}

/// The location of a call's `path` argument (`default` when it gives none), as a list.
pub(crate) fn path_argument(
    workspace: &Path,
    input: &serde_json::Value,
    default: Option<&str>,
    line: Option<u64>,
) -> Vec<coder_protocol::ToolLocation> {
    location(workspace, input["path"].as_str().or(default), line)
        .into_iter()
        .collect()
}

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
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("near")).unwrap();
        assert_eq!(
            resolve_for_write(&root, "near/file.txt").unwrap_err(),
            "near is a symbolic link (to real); the file tools do not follow links, use the \
             path it points to"
        );
        assert!(
            resolve_existing(&root, "link")
                .unwrap_err()
                .contains("outside")
        );
    }
}
