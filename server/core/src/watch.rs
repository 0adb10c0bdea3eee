//! Watching the folders that hold the files a session keeps (rules, skills, custom commands,
//! configuration, `.mcp.json`), with `notify` and its full debouncer.
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
//! [`Watcher::stop`] returns.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::mpsc::UnboundedSender;

use crate::sync::lock;

/// How long a path must stay quiet before its change is reported: an editor's save (write
/// to a temporary file, rename over) arrives as one change.
const DEBOUNCE: Duration = Duration::from_millis(150);

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
    debouncer: Mutex<Option<Debouncer<RecommendedWatcher, RecommendedCache>>>,
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
        let handler = move |result: DebounceEventResult| match result {
            Ok(events) => {
                let mut paths: Vec<PathBuf> = events
                    .iter()
                    .filter(|event| !matches!(event.kind, EventKind::Access(_)))
                    .flat_map(|event| event.paths.iter().cloned())
                    .filter(|path| !ignored(&workspace, path))
                    .collect();
                paths.sort();
                paths.dedup();
                if !paths.is_empty() {
                    // The receiver is gone only when the session is ending.
                    let _ = batches.send(paths);
                }
            }
            Err(errors) => {
                for error in errors {
                    tracing::warn!("watching the workspace: {error}");
                }
            }
        };
        let debouncer = new_debouncer(DEBOUNCE, None, handler).map_err(|err| err.to_string())?;
        let watcher = Self {
            debouncer: Mutex::new(Some(debouncer)),
            wanted,
            watched: Mutex::new(HashSet::new()),
        };
        watcher.rewatch();
        Ok(watcher)
    }

    /// Watches the wanted folders that exist now and are not watched yet, and forgets those
    /// that are gone (a folder removed and made again needs a new watch).
    pub fn rewatch(&self) {
        let mut debouncer = lock(&self.debouncer);
        let Some(debouncer) = debouncer.as_mut() else {
            return;
        };
        let mut watched = lock(&self.watched);
        for folder in &self.wanted {
            let exists = std::fs::symlink_metadata(&folder.path).is_ok_and(|meta| meta.is_dir());
            let known = watched.contains(&folder.path);
            if known && !exists {
                let _ = debouncer.unwatch(&folder.path);
                watched.remove(&folder.path);
            } else if !known && exists {
                let mode = if folder.recursive {
                    RecursiveMode::Recursive
                } else {
                    RecursiveMode::NonRecursive
                };
                match debouncer.watch(&folder.path, mode) {
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

    /// Stops watching: notify's watcher is dropped, which ends its thread, and the
    /// debouncer's thread is told to end; it does so at its next tick (within a quarter of
    /// [`DEBOUNCE`]) without anybody waiting for it. Joining it made every session's end
    /// (each `coder exec`) up to 37 ms longer. A batch it still sends meanwhile finds its
    /// reader gone. Safe to call more than once.
    pub fn stop(&self) {
        let debouncer = lock(&self.debouncer).take();
        if let Some(debouncer) = debouncer {
            debouncer.stop_nonblocking();
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
