//! The walked list of workspace paths that `@` completion matches against, built on first
//! use and rebuilt when it is older than [`REBUILD_AFTER`] or was invalidated.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ignore::{WalkBuilder, WalkState};

use crate::sync::lock;

/// How long a walk is trusted: an older index is walked again on the next call, so files
/// created or removed since show up within this delay even without a watcher.
pub const REBUILD_AFTER: Duration = Duration::from_secs(5);

/// At most this many paths are kept, so a huge tree cannot exhaust memory; the walk stops
/// there.
pub const MAX_ENTRIES: usize = 300_000;

/// One path of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the workspace, `/`-separated, without a trailing `/`.
    pub path: String,
    pub is_dir: bool,
    /// Whether a component of the path starts with `.` (offered only when the query asks).
    pub hidden: bool,
}

/// The entries of one walk, sorted by path.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub entries: Vec<Entry>,
}

/// A session's path index. Cheap to share; every method takes its own short lock.
#[derive(Debug, Default)]
pub struct PathIndex {
    built: Mutex<Option<(Instant, Arc<Snapshot>)>>,
}

impl PathIndex {
    /// The index for `root`: the last walk when it is fresh, else a new walk. The lock is
    /// not held during the walk, so two first calls may both walk; the later one wins.
    pub fn snapshot(&self, root: &Path) -> Arc<Snapshot> {
        if let Some((at, snapshot)) = lock(&self.built).as_ref()
            && at.elapsed() < REBUILD_AFTER
        {
            return Arc::clone(snapshot);
        }
        let snapshot = Arc::new(walk(root));
        *lock(&self.built) = Some((Instant::now(), Arc::clone(&snapshot)));
        snapshot
    }

    /// Forgets the walk, so the next call walks again (for a file watcher that saw a path
    /// created, removed or renamed).
    pub fn invalidate(&self) {
        *lock(&self.built) = None;
    }
}

/// Walks `root` in parallel: `.gitignore` (also outside a git repository), `.ignore`, the
/// global git excludes; hidden paths are kept (and marked) but `.git` is never entered; links
/// are not followed.
pub fn walk(root: &Path) -> Snapshot {
    let found = Mutex::new(Vec::new());
    WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build_parallel()
        .run(|| {
            let found = &found;
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                let Ok(relative) = entry.path().strip_prefix(root) else {
                    return WalkState::Continue;
                };
                let Some(path) = relative.to_str().filter(|path| !path.is_empty()) else {
                    // The root itself, or a name that is not UTF-8 (it could not be typed).
                    return WalkState::Continue;
                };
                let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
                let path = path.replace(std::path::MAIN_SEPARATOR, "/");
                let hidden = path.split('/').any(|part| part.starts_with('.'));
                let mut found = lock(found);
                if found.len() >= MAX_ENTRIES {
                    return WalkState::Quit;
                }
                found.push(Entry {
                    path,
                    is_dir,
                    hidden,
                });
                WalkState::Continue
            })
        });
    let mut entries = found
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner());
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Snapshot { entries }
}
