//! Watching the folders that hold the files a session keeps (rules, skills, custom commands,
//! configuration, `.mcp.json`), with `notify` and a debouncer of its own that sleeps while
//! nothing changes (`notify-debouncer-full` woke its thread every 37 ms, so an idle `coder
//! lsp` woke 27 times a second).
//!
//! Only those folders are watched, never the whole workspace: on Linux, inotify needs one
//! watch per directory, so a recursive watch of a workspace would also pay for every
//! directory of `.git`, `target` and `node_modules` (tens of thousands in a JavaScript or
//! Rust project) and could exhaust `fs.inotify.max_user_watches`. Watched, each on its own
//! (not recursively): the workspace root and each directory down to the one coder was
//! started in (`AGENTS.md`, `CLAUDE.md`, `.mcp.json`), `.coder/`, `.coder/rules/`,
//! `.coder/commands/`, the user-level folder and its `commands/`; recursively only the small
//! `skills/` folders. A folder that does not exist yet is watched once it appears (its
//! parent's event triggers [`Watcher::rewatch`]).
//!
//! This module knows nothing of sessions: it sends each debounced batch of changed paths
//! (without [`ignored`] ones) to a channel; `session/reload.rs` decides what they mean.
//!
//! Architecture invariant: the watcher's threads (notify's and the debouncer's) end when
//! [`Watcher::stop`] has dropped notify's watcher: its thread ends, and with it the channel
//! the debouncer's thread waits on.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::mpsc::UnboundedSender;

use crate::sync::lock;

/// How long a path must stay quiet before its change is reported: an editor's save (write
/// to a temporary file, rename over) arrives as one change.
const DEBOUNCE: Duration = Duration::from_millis(150);
/// The longest a change waits: paths that never stay quiet (a log written in a watched
/// folder) do not hold back the others' changes for ever.
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// Names of folders whose changes never matter to a session, wherever they are.
const IGNORED_FOLDERS: [&str; 3] = [".git", "target", "node_modules"];

/// One folder to watch, and whether its subfolders are watched too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatchedFolder {
    pub path: PathBuf,
    pub recursive: bool,
}

/// A running watcher over a fixed list of folders.
pub(crate) struct Watcher {
    /// notify's watcher, until [`Watcher::stop`]; its events go to the debouncer's thread.
    notify: Mutex<Option<RecommendedWatcher>>,
    wanted: Vec<WatchedFolder>,
    /// The folders of `wanted` watched now.
    watched: Mutex<HashSet<PathBuf>>,
}

impl Watcher {
    /// Starts watching `wanted` (those that exist now); each debounced batch of changed
    /// paths under `workspace`'s rules of [`ignored`] goes to `batches`. Fails when the
    /// platform's watcher cannot start (no inotify instance left, for example).
    pub fn start(
        workspace: PathBuf,
        wanted: Vec<WatchedFolder>,
        batches: UnboundedSender<Vec<PathBuf>>,
    ) -> Result<Self, String> {
        let (events, raw) = std::sync::mpsc::channel();
        let notify = notify::recommended_watcher(move |event| {
            // The debouncer's thread is gone only when the session is ending.
            let _ = events.send(event);
        })
        .map_err(|err| err.to_string())?;
        std::thread::Builder::new()
            .name("coder-watch".to_owned())
            .spawn(move || debounce(&raw, &workspace, &batches))
            .map_err(|err| format!("cannot start the watcher's thread: {err}"))?;
        let watcher = Self {
            notify: Mutex::new(Some(notify)),
            wanted,
            watched: Mutex::new(HashSet::new()),
        };
        watcher.rewatch();
        Ok(watcher)
    }

    /// Watches the wanted folders that exist now and are not watched yet, and forgets those
    /// that are gone (a folder removed and made again needs a new watch).
    pub fn rewatch(&self) {
        let mut notify = lock(&self.notify);
        let Some(notify) = notify.as_mut() else {
            return;
        };
        let mut watched = lock(&self.watched);
        for folder in &self.wanted {
            let exists = std::fs::symlink_metadata(&folder.path).is_ok_and(|meta| meta.is_dir());
            let known = watched.contains(&folder.path);
            if known && !exists {
                let _ = notify.unwatch(&folder.path);
                watched.remove(&folder.path);
            } else if !known && exists {
                let mode = if folder.recursive {
                    RecursiveMode::Recursive
                } else {
                    RecursiveMode::NonRecursive
                };
                match notify.watch(&folder.path, mode) {
                    Ok(()) => {
                        watched.insert(folder.path.clone());
                    }
                    Err(err) => tracing::warn!("not watching {}: {err}", folder.path.display()),
                }
            }
        }
    }

    /// How many folders are watched now.
    pub fn watched_count(&self) -> usize {
        lock(&self.watched).len()
    }

    /// Stops watching: notify's watcher is dropped, which ends its thread; the debouncer's
    /// thread then finds its channel closed and ends, without anybody waiting for it (changes
    /// still waiting are not reported: the session is ending). Safe to call more than once.
    pub fn stop(&self) {
        drop(lock(&self.notify).take());
    }
}

/// The debouncer's thread: gathers the changed paths notify reports (without accesses and
/// [`ignored`] paths) and sends them as one sorted batch once no change came for
/// [`DEBOUNCE`], or [`LONGEST_WAIT`] after the first. With nothing gathered it waits
/// without a timeout. Returns when notify's watcher is dropped.
fn debounce(
    raw: &Receiver<notify::Result<notify::Event>>,
    workspace: &Path,
    batches: &UnboundedSender<Vec<PathBuf>>,
) {
    let mut gathered = BTreeSet::new();
    // When the first gathered change came, and the last.
    let mut first = Instant::now();
    let mut last = first;
    loop {
        let received = if gathered.is_empty() {
            raw.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            let due = (last + DEBOUNCE).min(first + LONGEST_WAIT);
            raw.recv_timeout(due.saturating_duration_since(Instant::now()))
        };
        match received {
            Ok(Ok(event)) => {
                if matches!(event.kind, EventKind::Access(_)) {
                    continue;
                }
                let now = Instant::now();
                if gathered.is_empty() {
                    first = now;
                }
                last = now;
                gathered.extend(
                    event
                        .paths
                        .into_iter()
                        .filter(|path| !ignored(workspace, path)),
                );
            }
            Ok(Err(error)) => tracing::warn!("watching the workspace: {error}"),
            Err(RecvTimeoutError::Timeout) => {
                let batch: Vec<PathBuf> = std::mem::take(&mut gathered).into_iter().collect();
                // The receiver is gone only when the session is ending.
                let _ = batches.send(batch);
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Whether a change at `path` is one no session acts on: anything inside `.git`, `target`
/// or `node_modules`, and the engine's own session snapshots (`.coder/sessions`).
pub(crate) fn ignored(workspace: &Path, path: &Path) -> bool {
    if path.starts_with(workspace.join(".coder").join("sessions")) {
        return true;
    }
    let Ok(relative) = path.strip_prefix(workspace) else {
        return false;
    };
    relative.components().any(|part| {
        IGNORED_FOLDERS
            .iter()
            .any(|name| part.as_os_str() == std::ffi::OsStr::new(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_own_files_and_build_trees_are_ignored() {
        let ws = Path::new("/w");
        assert!(ignored(ws, Path::new("/w/.coder/sessions/a.json")));
        assert!(ignored(ws, Path::new("/w/target")));
        assert!(ignored(ws, Path::new("/w/app/node_modules/x/AGENTS.md")));
        assert!(ignored(ws, Path::new("/w/.git/HEAD")));
        assert!(!ignored(ws, Path::new("/w/AGENTS.md")));
        assert!(!ignored(ws, Path::new("/w/.coder/rules/a.md")));
        // Only below the workspace: a user folder elsewhere is judged by its own path.
        assert!(!ignored(ws, Path::new("/home/me/.config/coder/AGENTS.md")));
    }
}
