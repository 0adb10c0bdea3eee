//! The `.git` entries below the workspace: every file, directory or link named `.git` (any
//! case), found by a walk that follows no links and applies no ignore files (a nested `.git`
//! can hide in an ignored directory) and that does not descend into a `.git` it found.
//!
//! A `.git` file (`gitdir: ../elsewhere`) or directory a command plants makes the person's
//! next `git` command, outside coder and outside the sandbox, read a configuration the
//! command wrote: through a gitlink in the index the superproject's `git status` enters it
//! and runs its `core.fsmonitor`. So the entries are noted before a confined command, and
//! any new or changed one is removed after it ([`super::protected::CreationAudit`]). The
//! same walk notes directories git takes for a repository when run inside them (bare ones).
//!
//! Cost: one `readdir` per directory of the workspace, before and after each confined
//! command; the figures are in `docs/sandbox.md`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ignore::WalkState;

/// A walk stops after this many entries; the result then says it is incomplete.
const MAX_ENTRIES: usize = 2_000_000;

/// How much of a `.git` file is kept to notice a change (one is a single `gitdir:` line).
const MAX_FILE_BYTES: u64 = 4096;

/// One `.git` entry and what identifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GitEntry {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub kind: EntryKind,
}

/// What a `.git` entry is; a file keeps its start and a link its target, so that a change
/// in place is noticed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
    Other,
}

/// The `.git` entries of a tree, sorted by path.
#[derive(Debug, Default)]
pub(crate) struct GitEntries {
    pub entries: Vec<GitEntry>,
    /// Directories not named `.git` that git takes for a git directory when run inside them
    /// (`HEAD` beside `commondir`, or beside `objects/` and `refs/`: a bare repository),
    /// sorted by path.
    pub bare: Vec<GitEntry>,
    /// `false` when the walk stopped at [`MAX_ENTRIES`].
    pub complete: bool,
}

impl GitEntries {
    /// Walks `root` (on two threads) for `.git` entries.
    pub(crate) fn find(root: &Path) -> Self {
        let found = Arc::new(Mutex::new(Vec::new()));
        let bare = Arc::new(Mutex::new(Vec::new()));
        let visited = Arc::new(AtomicUsize::new(0));
        let complete = Arc::new(AtomicBool::new(true));
        ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .follow_links(false)
            .threads(2)
            .build_parallel()
            .run(|| {
                let found = Arc::clone(&found);
                let bare = Arc::clone(&bare);
                let visited = Arc::clone(&visited);
                let complete = Arc::clone(&complete);
                Box::new(move |entry| {
                    let Ok(entry) = entry else {
                        // An unreadable directory: git, run by the same user, cannot look
                        // into it either.
                        return WalkState::Continue;
                    };
                    if visited.fetch_add(1, Ordering::Relaxed) >= MAX_ENTRIES {
                        complete.store(false, Ordering::Relaxed);
                        return WalkState::Quit;
                    }
                    if entry.depth() == 0 {
                        return WalkState::Continue;
                    }
                    if entry.file_name().eq_ignore_ascii_case("HEAD") {
                        if let Some(dir) = entry.path().parent().filter(|d| looks_like_git_dir(d))
                            && let Some(found_dir) = describe(dir)
                        {
                            crate::sync::lock(&bare).push(found_dir);
                        }
                        return WalkState::Continue;
                    }
                    if !is_git_name(entry.file_name()) {
                        return WalkState::Continue;
                    }
                    if let Some(found_entry) = describe(entry.path()) {
                        crate::sync::lock(&found).push(found_entry);
                    }
                    WalkState::Skip
                })
            });
        let mut entries = std::mem::take(&mut *crate::sync::lock(&found));
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let mut bare = std::mem::take(&mut *crate::sync::lock(&bare));
        bare.sort_by(|a, b| a.path.cmp(&b.path));
        Self {
            entries,
            bare,
            complete: complete.load(Ordering::Relaxed),
        }
    }

    /// The entries of `self` (taken after a command) that were not in `before`: new, or
    /// changed in place, or files and links moved from elsewhere (a moved `gitdir:` line
    /// points somewhere else). A directory that was only moved keeps its (protected)
    /// configuration, so it is not counted.
    pub(crate) fn planted_since<'a>(&'a self, before: &'a Self) -> Vec<&'a GitEntry> {
        self.entries
            .iter()
            .filter(|entry| !before.entries.contains(entry))
            .filter(|entry| {
                !(entry.kind == EntryKind::Dir
                    && before.entries.iter().any(|old| {
                        old.kind == EntryKind::Dir && old.dev == entry.dev && old.ino == entry.ino
                    }))
            })
            .collect()
    }
}

impl GitEntries {
    /// The directories of `self` (taken after a command) that look like git directories and
    /// were not there, as such, before: new, or made one by the command. One that was only
    /// moved keeps its (protected) configuration, so it is not counted.
    pub(crate) fn bare_since<'a>(&'a self, before: &'a Self) -> Vec<&'a GitEntry> {
        self.bare
            .iter()
            .filter(|dir| {
                !before
                    .bare
                    .iter()
                    .any(|old| old.dev == dir.dev && old.ino == dir.ino)
            })
            .collect()
    }
}

/// Whether git, run inside `dir`, takes it for a git directory: a `HEAD` beside a
/// `commondir` file, or beside `objects/` and `refs/`.
fn looks_like_git_dir(dir: &Path) -> bool {
    dir.join("commondir").exists() || (dir.join("objects").is_dir() && dir.join("refs").is_dir())
}

/// Whether `name` is `.git` in any case.
pub(crate) fn is_git_name(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

fn describe(path: &Path) -> Option<GitEntry> {
    let meta = path.symlink_metadata().ok()?;
    let kind = if meta.is_dir() {
        EntryKind::Dir
    } else if meta.is_symlink() {
        EntryKind::Link(std::fs::read_link(path).ok()?)
    } else if meta.is_file() {
        use std::io::Read;
        let mut start = Vec::new();
        // Regular files only: a FIFO swapped in since the check cannot hang the call.
        crate::bounded::open_regular(path)
            .ok()?
            .take(MAX_FILE_BYTES)
            .read_to_end(&mut start)
            .ok()?;
        EntryKind::File(start)
    } else {
        EntryKind::Other
    };
    Some(GitEntry {
        path: path.to_path_buf(),
        dev: meta.dev(),
        ino: meta.ino(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_git_entries_in_ignored_and_hidden_places_without_descending() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/modules/x")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(root.join("target/deep/.GIT")).unwrap();
        std::fs::create_dir_all(root.join(".hidden/sub")).unwrap();
        std::fs::write(root.join(".hidden/sub/.git"), "gitdir: ../../evil\n").unwrap();
        std::os::unix::fs::symlink("/", root.join("link")).unwrap();
        let found = GitEntries::find(root);
        assert!(found.complete);
        let paths: Vec<_> = found
            .entries
            .iter()
            .map(|e| e.path.strip_prefix(root).unwrap().to_path_buf())
            .collect();
        assert_eq!(
            paths,
            [".git", ".hidden/sub/.git", "target/deep/.GIT"].map(PathBuf::from)
        );
    }

    #[test]
    fn a_directory_made_into_a_bare_repository_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("old/objects")).unwrap();
        std::fs::create_dir_all(root.join("old/refs")).unwrap();
        std::fs::write(root.join("old/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("tools/refs")).unwrap();
        std::fs::write(root.join("tools/HEAD"), "ref: refs/heads/main\n").unwrap();
        let before = GitEntries::find(root);
        assert_eq!(before.bare.len(), 1);
        std::fs::create_dir_all(root.join("tools/objects")).unwrap();
        std::fs::rename(root.join("old"), root.join("moved")).unwrap();
        let after = GitEntries::find(root);
        let new: Vec<_> = after
            .bare_since(&before)
            .iter()
            .map(|e| e.path.strip_prefix(root).unwrap().to_path_buf())
            .collect();
        assert_eq!(new, [PathBuf::from("tools")]);
    }

    #[test]
    fn a_changed_file_and_a_new_entry_are_planted_but_a_moved_directory_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/.git")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let before = GitEntries::find(root);
        std::fs::rename(root.join("a"), root.join("b")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../evil\n").unwrap();
        std::fs::create_dir_all(root.join("c")).unwrap();
        std::fs::write(root.join("c/.git"), "gitdir: ../evil\n").unwrap();
        let after = GitEntries::find(root);
        let planted: Vec<_> = after
            .planted_since(&before)
            .iter()
            .map(|e| e.path.strip_prefix(root).unwrap().to_path_buf())
            .collect();
        assert_eq!(planted, ["c/.git", "sub/.git"].map(PathBuf::from));
    }
}
