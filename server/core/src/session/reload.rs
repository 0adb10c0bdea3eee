//! Reloading what changed on disk: the session's watcher (`watch/`) sends batches of
//! changed paths; this loop sorts them by what they mean ([`files::kind_of`]), reads that
//! again, and announces each reload with a session-level `workspace_reloaded` event (the
//! root conversation, no task), after the `warning`s of files that could not be used.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

use coder_protocol::{EventMsg, ReloadedKind};
use tokio::sync::mpsc::UnboundedReceiver;

use super::Session;
use super::files::{self, WorkspaceFiles};
use crate::sync::lock;
use crate::watch::Watcher;

/// Told the paths of each batch of changes the watcher saw (for example, to invalidate an
/// index of the workspace's files). Called on the reload loop; it must be quick.
pub type FilesChanged = Arc<dyn Fn(&[PathBuf]) + Send + Sync>;

/// The session's watcher and the loop reading its batches.
pub(super) struct Watching {
    watcher: Arc<Watcher>,
    reloads: tokio::task::JoinHandle<()>,
}

impl Session {
    /// Starts watching the workspace's and the user-level folder's files. When the platform
    /// watcher cannot start, the session says so once (a `warning` at its first task) and
    /// reads the files at each task start instead.
    pub(super) fn start_watching(self: &Arc<Self>, runtime: &tokio::runtime::Handle) {
        let config = self.config();
        let config = &*config;
        let (sender, batches) = tokio::sync::mpsc::unbounded_channel();
        let watcher = match Watcher::start(
            config.workspace.clone(),
            files::watched_folders(config),
            sender,
        ) {
            Ok(watcher) => Arc::new(watcher),
            Err(err) => {
                self.state().config_warnings.push(format!(
                    "the workspace is not watched ({err}): rules, skills, commands and \
                     configuration are read again at each task start instead"
                ));
                return;
            }
        };
        tracing::debug!("watching {} folders", watcher.watched_count());
        let reloads = runtime.spawn(reload_loop(Arc::downgrade(self), watcher.clone(), batches));
        *lock(&self.watching) = Some(Watching { watcher, reloads });
    }

    /// Stops the watcher and its loop ([`Watcher::stop`]: the session's subscription ends;
    /// the last one of the process ends the process's watcher).
    pub(super) fn stop_watching(&self) {
        let watching = lock(&self.watching).take();
        if let Some(Watching { watcher, reloads }) = watching {
            reloads.abort();
            watcher.stop();
        }
    }

    /// Calls `hook` with the paths of every batch of changes seen from now on.
    pub fn on_files_changed(&self, hook: FilesChanged) {
        lock(&self.files_changed).push(hook);
    }

    /// The rules, skills and commands as the session holds them. Without a watcher they
    /// are read again now (as at every task start before the session watched).
    pub(super) fn workspace_files(&self) -> Arc<WorkspaceFiles> {
        if lock(&self.watching).is_some() {
            return lock(&self.services.files).clone();
        }
        let config = self.config();
        let config = &*config;
        let mut files = (*lock(&self.services.files).clone()).clone();
        for kind in [
            ReloadedKind::Rules,
            ReloadedKind::Skills,
            ReloadedKind::Commands,
        ] {
            // Their warnings were reported at start; the task reports the rules' own.
            files = files.reload(kind, config).0;
        }
        let files = Arc::new(files);
        *lock(&self.services.files) = files.clone();
        files
    }

    /// Reads again what one batch of changed paths touched, and announces it.
    fn reload(self: &Arc<Self>, paths: Vec<PathBuf>) {
        let hooks = lock(&self.files_changed).clone();
        for hook in hooks {
            hook(&paths);
        }
        let config = self.config();
        let config = &*config;
        let mut by_kind: BTreeMap<ReloadedKind, Vec<String>> = BTreeMap::new();
        for path in &paths {
            if let Some(kind) = files::kind_of(path, config) {
                by_kind
                    .entry(kind)
                    .or_default()
                    .push(path.display().to_string());
            }
        }
        for (kind, paths) in by_kind {
            let (warnings, reloaded) = match kind {
                ReloadedKind::Rules | ReloadedKind::Skills | ReloadedKind::Commands => {
                    let current = lock(&self.services.files).clone();
                    let (next, warnings) = current.reload(kind, config);
                    *lock(&self.services.files) = Arc::new(next);
                    (warnings, true)
                }
                // A change of servers is announced once they have started (or failed).
                ReloadedKind::Config => {
                    let mut reload = self.reload_config(&paths);
                    reload
                        .warnings
                        .extend(self.reload_mcp(paths.clone(), false));
                    (reload.warnings, reload.changed)
                }
                ReloadedKind::Mcp => (self.reload_mcp(paths.clone(), true), false),
            };
            let root = self.root();
            for message in warnings {
                self.services
                    .hub
                    .emit(root, None, EventMsg::Warning { message });
            }
            if reloaded {
                self.services.hub.emit(
                    root,
                    None,
                    EventMsg::WorkspaceReloaded { what: kind, paths },
                );
            }
        }
    }
}

/// Reads the watcher's batches until the session or the watcher is gone.
async fn reload_loop(
    session: Weak<Session>,
    watcher: Arc<Watcher>,
    mut batches: UnboundedReceiver<Vec<PathBuf>>,
) {
    while let Some(paths) = batches.recv().await {
        // A folder made (or removed) since is watched (or forgotten) before the next batch.
        watcher.rewatch();
        let Some(session) = session.upgrade() else {
            return;
        };
        session.reload(paths);
    }
}
