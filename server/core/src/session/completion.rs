//! `@` path completion over the session's path index: walked in the background from the
//! session's start, walked again when the watcher sees a change in the workspace, stopped
//! at the session's end.

use std::sync::Arc;

use coder_protocol::methods::PathMatch;

use super::Session;

impl Session {
    /// Workspace paths matching `query`, best first (see [`crate::completion`]).
    pub fn complete_paths(&self, query: &str, limit: usize) -> Vec<PathMatch> {
        crate::completion::complete(&self.services.paths, query, limit)
    }

    /// Starts the first walk of the path index (in the background: the session does not
    /// wait for it), and has each change the watcher sees inside the workspace refresh it.
    /// The watcher sees only the folders it watches (the workspace root itself, `.coder/`,
    /// not the whole tree); elsewhere the index is refreshed when older than
    /// [`crate::completion::index::REFRESH_AFTER`].
    pub(super) fn start_path_index(&self) {
        let paths = Arc::clone(&self.services.paths);
        paths.refresh();
        self.on_files_changed(Arc::new(move |changed| {
            if changed
                .iter()
                .any(|path| path.starts_with(paths.root()) && path != paths.root())
            {
                paths.mark_stale();
            }
        }));
    }

    /// Stops a walk of the path index in progress and waits for its thread.
    pub(super) async fn stop_path_index(&self) {
        let paths = Arc::clone(&self.services.paths);
        let _ = tokio::task::spawn_blocking(move || paths.stop()).await;
    }

    /// [`Session::stop_path_index`] on this thread (the walk quits at its next path).
    pub(super) fn stop_path_index_now(&self) {
        self.services.paths.stop();
    }
}
