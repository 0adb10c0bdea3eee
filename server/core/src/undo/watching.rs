//! What commands change, seen as it happens: the workspace's folders (but those git ignores)
//! each watched on its own, the raw changes gathered in a channel and read only when a
//! checkpoint needs them ([`FolderWatch::changed`]). Nothing runs between turns but the
//! platform's watcher thread.
//!
//! Reading is made exact by a marker: [`FolderWatch::changed`] creates a file in a watched
//! folder of the private store and reads the channel until the marker's own change comes;
//! the kernel keeps one ordered queue per watcher, so every change made on disk before the
//! call has been read by then.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

/// The most folders one workspace's watch holds (inotify needs one watch per folder, and
/// the person's limit is shared by every program).
pub(super) const MAX_WATCHED_FOLDERS: usize = 20_000;
/// How long [`FolderWatch::changed`] waits for its marker before it answers with what came.
const MARKER_WAIT: Duration = Duration::from_secs(2);

/// What came out of the watch since the last reading.
#[derive(Debug, Default)]
pub(super) struct Changed {
    pub paths: BTreeSet<PathBuf>,
    /// The platform dropped changes (its queue overflowed): some went unseen.
    pub missed: bool,
}

pub(super) struct FolderWatch {
    notify: RecommendedWatcher,
    raw: Receiver<notify::Result<notify::Event>>,
    /// The watched folder where markers are made (outside the workspace).
    markers: PathBuf,
    next_marker: u64,
    folders: usize,
    /// At most this many folders ([`MAX_WATCHED_FOLDERS`] but in tests).
    max_folders: usize,
}

impl FolderWatch {
    /// Starts a watch with no workspace folder yet, for at most `max_folders` folders;
    /// markers go in `markers`.
    pub fn start(markers: &Path, max_folders: usize) -> Result<Self, String> {
        let (events, raw) = std::sync::mpsc::channel();
        let mut notify = notify::recommended_watcher(move |event| {
            // The receiver goes with the session.
            let _ = events.send(event);
        })
        .map_err(|err| err.to_string())?;
        notify
            .watch(markers, RecursiveMode::NonRecursive)
            .map_err(|err| err.to_string())?;
        Ok(Self {
            notify,
            raw,
            markers: markers.to_path_buf(),
            next_marker: 0,
            folders: 0,
            max_folders,
        })
    }

    /// Watches `folder` (not its subfolders); an error past the most folders or when the
    /// platform refuses.
    pub fn watch(&mut self, folder: &Path) -> Result<(), String> {
        if self.folders >= self.max_folders {
            return Err(format!(
                "the workspace has more than {} folders",
                self.max_folders
            ));
        }
        self.notify
            .watch(folder, RecursiveMode::NonRecursive)
            .map_err(|err| format!("{}: {err}", folder.display()))?;
        self.folders += 1;
        Ok(())
    }

    /// Every path changed on disk since the last call, up to this call.
    pub fn changed(&mut self) -> Changed {
        let mut changed = Changed::default();
        let marker = self.markers.join(format!("flush-{}", self.next_marker));
        self.next_marker += 1;
        if let Err(err) = std::fs::write(&marker, b"") {
            tracing::debug!("no marker for the watch ({err}): reading what came");
            while let Ok(event) = self.raw.try_recv() {
                take(&mut changed, event, &self.markers, None);
            }
            return changed;
        }
        let due = Instant::now() + MARKER_WAIT;
        loop {
            match self
                .raw
                .recv_timeout(due.saturating_duration_since(Instant::now()))
            {
                Ok(event) => {
                    if take(&mut changed, event, &self.markers, Some(&marker)) {
                        break;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    tracing::debug!("the watch's marker did not come back in time");
                    break;
                }
            }
        }
        let _ = std::fs::remove_file(&marker);
        changed
    }
}

/// Adds `event`'s paths to `changed` (but those in `markers`); whether it was `marker`'s
/// creation.
fn take(
    changed: &mut Changed,
    event: notify::Result<notify::Event>,
    markers: &Path,
    marker: Option<&Path>,
) -> bool {
    let event = match event {
        Ok(event) => event,
        Err(err) => {
            tracing::debug!("watching the workspace for /undo: {err}");
            return false;
        }
    };
    if event.need_rescan() {
        changed.missed = true;
    }
    if matches!(event.kind, EventKind::Access(_)) {
        return false;
    }
    let mut was_marker = false;
    for path in event.paths {
        if marker.is_some_and(|marker| path == marker) {
            was_marker = true;
        } else if !path.starts_with(markers) {
            changed.paths.insert(path);
        }
    }
    was_marker
}
