//! What commands change, seen as it happens: the workspace's folders (but those git ignores)
//! each watched on its own through the process's one watcher ([`crate::watch`]), the
//! changes gathered in a channel and read only when a checkpoint needs them
//! ([`FolderWatch::changed`]). Nothing runs between turns but the watcher's threads, which
//! every session of the process shares.
//!
//! Reading is exact: [`FolderWatch::changed`] flushes the subscription first, and the
//! watcher returns from a flush once every change made on disk before it has been read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::watch::{WatchedFolder, Watcher};

/// The most folders one workspace's watch holds (inotify needs one watch per folder, and
/// the person's limit is shared by every program).
pub(super) const MAX_WATCHED_FOLDERS: usize = 20_000;

/// What came out of the watch since the last reading.
#[derive(Debug, Default)]
pub(super) struct Changed {
    pub paths: BTreeSet<PathBuf>,
    /// The platform dropped changes (its queue overflowed): some went unseen.
    pub missed: bool,
}

pub(super) struct FolderWatch {
    watcher: Watcher,
    batches: UnboundedReceiver<Vec<PathBuf>>,
    folders: usize,
    /// At most this many folders ([`MAX_WATCHED_FOLDERS`] but in tests).
    max_folders: usize,
}

impl FolderWatch {
    /// Subscribes to the process's watcher with no folder yet, for at most `max_folders`
    /// folders of `workspace`.
    pub fn start(workspace: &Path, max_folders: usize) -> Result<Self, String> {
        let (sender, batches) = unbounded_channel();
        let watcher = Watcher::start(workspace.to_path_buf(), Vec::new(), sender)?;
        Ok(Self {
            watcher,
            batches,
            folders: 0,
            max_folders,
        })
    }

    /// Watches each of `folders` (not their subfolders); an error past the most folders or
    /// when the platform refuses one.
    pub fn watch(&mut self, folders: Vec<PathBuf>) -> Result<(), String> {
        if self.folders + folders.len() > self.max_folders {
            return Err(format!(
                "the workspace has more than {} folders",
                self.max_folders
            ));
        }
        self.folders += folders.len();
        self.watcher.watch_folders(
            folders
                .into_iter()
                .map(|path| WatchedFolder {
                    path,
                    recursive: false,
                })
                .collect(),
        )
    }

    /// Stops watching `folders` (gone from disk).
    pub fn unwatch(&mut self, folders: Vec<PathBuf>) {
        self.folders = self.folders.saturating_sub(folders.len());
        self.watcher.unwatch_folders(&folders);
    }

    /// Every path changed on disk since the last call, up to this call (blocks for the
    /// watcher's flush: call it from a blocking thread).
    pub fn changed(&mut self) -> Changed {
        self.watcher.flush();
        let mut changed = Changed {
            missed: self.watcher.take_missed(),
            ..Changed::default()
        };
        while let Ok(batch) = self.batches.try_recv() {
            changed.paths.extend(batch);
        }
        changed
    }
}
