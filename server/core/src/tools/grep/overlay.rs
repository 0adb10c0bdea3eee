//! The editor's open files in a search: their text replaces the disk's, and open files not
//! saved to disk yet are searched too, when the walk would have searched them.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::documents::Documents;
use crate::ignore_files::IgnoreRules;
use crate::tools::paths::resolve_for_write;

/// The texts of the open documents under the search root, by path.
pub(super) struct Overlay {
    open: HashMap<PathBuf, String>,
}

impl Overlay {
    /// The open documents under `base` (canonical, inside the workspace), with their text.
    pub(super) fn collect(documents: Option<&dyn Documents>, base: &Path) -> Self {
        let open = documents
            .map(|documents| {
                documents
                    .open_paths()
                    .into_iter()
                    .filter(|path| is_plain(path) && path.starts_with(base))
                    .filter_map(|path| {
                        let text = documents.text(&path)?;
                        Some((path, text))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self { open }
    }

    /// The editor's text of `path`, when it is open there.
    pub(super) fn text(&self, path: &Path) -> Option<&str> {
        if self.open.is_empty() {
            return None;
        }
        self.open.get(path).map(String::as_str)
    }

    /// The open documents that do not exist on disk, so the walk cannot find them, and that
    /// it would have searched: inside the workspace by a canonical path, and, unless it is
    /// `base` itself (a file named by the call is searched as it is), not hidden below
    /// `base` and not ignored by an `.ignore` or `.gitignore` file. The search's own glob
    /// filter is left to the caller.
    pub(super) fn unsaved<'a>(
        &'a self,
        workspace: &'a Path,
        base: &'a Path,
    ) -> impl Iterator<Item = (&'a Path, &'a str)> + 'a {
        self.open
            .iter()
            .filter(|(path, _)| path.symlink_metadata().is_err())
            .filter(move |(path, _)| is_confined(workspace, path))
            .filter(move |(path, _)| {
                *path == base || !(is_hidden(base, path) || is_ignored(workspace, path))
            })
            .map(|(path, text)| (path.as_path(), text.as_str()))
    }
}

/// Whether `path` is absolute and has no `.` or `..` parts, so `starts_with` means inside.
fn is_plain(path: &Path) -> bool {
    path.is_absolute()
        && path.components().all(|part| {
            matches!(
                part,
                Component::RootDir | Component::Prefix(_) | Component::Normal(_)
            )
        })
}

/// Whether `path` is where the tools would write it: inside the workspace, with no symbolic
/// link on the way leading elsewhere.
fn is_confined(workspace: &Path, path: &Path) -> bool {
    path.to_str().is_some_and(|text| {
        resolve_for_write(workspace, text).is_ok_and(|resolved| resolved == path)
    })
}

/// Whether a part of `path` below `base` is hidden (starts with a dot), as the walk skips.
fn is_hidden(base: &Path, path: &Path) -> bool {
    path.strip_prefix(base).is_ok_and(|relative| {
        relative
            .components()
            .any(|part| part.as_os_str().to_string_lossy().starts_with('.'))
    })
}

/// Whether the walk would have left `path` out: it, or a directory between the workspace
/// and it, is ignored by the workspace's ignore files (read as `ignore_files.rs` reads them).
fn is_ignored(workspace: &Path, path: &Path) -> bool {
    let rules = IgnoreRules::new(workspace);
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let dirs = path
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(&root) && *dir != root)
        .map(|dir| (dir, true));
    std::iter::once((path, false))
        .chain(dirs)
        .any(|(candidate, is_dir)| rules.is_ignored(candidate, is_dir))
}
