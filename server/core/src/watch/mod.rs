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
//! One watcher serves the whole process ([`hub`]): one `notify` watcher (one inotify
//! instance: a process holding a thousand sessions would otherwise exhaust
//! `fs.inotify.max_user_instances`, 128 by default) and one debouncer thread, whatever the
//! number of sessions. A [`Watcher`] is one session's subscription to it; folders are
//! watched once however many subscribers want them, and each change goes to the
//! subscribers whose folders cover it ([`routes`]).
//!
//! This module knows nothing of sessions: it sends each debounced batch of changed paths
//! (without [`ignored`] ones) to a subscriber's channel; `session/reload.rs` decides what
//! they mean.
//!
//! Architecture invariant: the hub's threads (notify's and the debouncer's) run while it
//! has subscribers; the last [`Watcher::stop`] drops notify's watcher (its thread ends once
//! it has read that) and joins the debouncer's thread.

mod hub;
mod routes;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use tokio::sync::mpsc::UnboundedSender;

use hub::Hub;

/// Names of folders whose changes never matter to a session, wherever they are.
const IGNORED_FOLDERS: [&str; 3] = [".git", "target", "node_modules"];

/// One folder to watch, and whether its subfolders are watched too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatchedFolder {
    pub path: PathBuf,
    pub recursive: bool,
}

/// One subscription to the process's watcher: the folders it wants (watched while they
/// exist), and the channel its batches of changes go to. Dropping it stops it.
pub(crate) struct Watcher {
    hub: &'static Hub,
    id: u64,
}

impl Watcher {
    /// Starts watching `wanted` (those that exist now); each debounced batch of changed
    /// paths under `workspace`'s rules of [`ignored`] goes to `batches`. Fails when the
    /// process's watcher cannot start (no inotify instance left, for example).
    pub fn start(
        workspace: PathBuf,
        wanted: Vec<WatchedFolder>,
        batches: UnboundedSender<Vec<PathBuf>>,
    ) -> Result<Self, String> {
        Self::start_on(&hub::GLOBAL, workspace, wanted, batches)
    }

    /// [`Watcher::start`] on a given hub.
    fn start_on(
        hub: &'static Hub,
        workspace: PathBuf,
        wanted: Vec<WatchedFolder>,
        batches: UnboundedSender<Vec<PathBuf>>,
    ) -> Result<Self, String> {
        let id = hub.subscribe(workspace, wanted, batches)?;
        Ok(Self { hub, id })
    }

    /// Watches the wanted folders that exist now and are not watched yet, and forgets those
    /// that are gone (a folder removed and made again needs a new watch).
    pub fn rewatch(&self) {
        self.hub.rewatch(self.id);
    }

    /// Adds folders to watch (a folder already wanted takes the new `recursive`); those
    /// that do not exist yet are watched once [`Watcher::rewatch`] finds them. Fails, naming
    /// a folder, when the platform refused to watch any of them (the limit of watches, for
    /// example); the others are watched.
    pub fn watch_folders(&self, folders: Vec<WatchedFolder>) -> Result<(), String> {
        self.hub.watch_folders(self.id, folders)
    }

    /// Whether the platform dropped changes (its queue overflowed) since the last call:
    /// some may not have reached this subscription.
    pub fn take_missed(&self) -> bool {
        self.hub.take_missed(self.id)
    }

    /// Stops watching these folders (for this subscription: another that wants one keeps
    /// its watch).
    pub fn unwatch_folders(&self, paths: &[PathBuf]) {
        self.hub.unwatch_folders(self.id, paths);
    }

    /// How many folders are watched now.
    pub fn watched_count(&self) -> usize {
        self.hub.watched_count(self.id)
    }

    /// Blocks until every change made on disk before the call has been delivered to this
    /// subscription's channel, without waiting for the debounce (at most about two seconds;
    /// call it from a blocking thread).
    pub fn flush(&self) {
        self.hub.flush(self.id);
    }

    /// Stops this subscription: its folders are let go (unwatched when no other
    /// subscription wants them) and changes still pending are not reported (the session is
    /// ending). The last subscription's stop ends the process's watcher. Safe to call more
    /// than once.
    pub fn stop(&self) {
        self.hub.unsubscribe(self.id);
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop();
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
