//! The process's one watcher: one `notify` watcher (one inotify instance on Linux), one
//! debouncer thread ([`routes::debounce`]), and the folders it watches, counted per folder
//! across subscribers so that two sessions on one workspace cost one watch per folder.
//!
//! The hub starts with its first subscriber and ends with its last: [`Hub::unsubscribe`]
//! drops notify's watcher (its thread ends once it has read that) and joins the debouncer's
//! thread.
//!
//! Lock order: the hub's `running` before the routes' state ([`Shared::routes`]); the
//! debouncer's thread takes only the latter, so joining it under the former cannot wait on
//! a lock.

use std::collections::HashMap;
use std::io::{Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::mpsc::UnboundedSender;

use super::WatchedFolder;
use super::routes::{self, Message, Routes, Shared, Subscriber};
use crate::sync::lock;

/// The longest [`Hub::flush`] waits for its marker before it returns anyway.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// The process's hub, which [`super::Watcher::start`] subscribes to.
pub(crate) static GLOBAL: Hub = Hub::new();

/// A watcher shared by every subscriber of a process (one per process in use; tests make
/// their own).
pub(crate) struct Hub {
    running: Mutex<Option<Running>>,
    /// The next subscriber's id.
    next: AtomicU64,
    /// Held through a flush: one marker write is read at a time, so the marker's event a
    /// flush reads is its own write's.
    flushing: Mutex<()>,
}

/// What the hub holds while it has subscribers.
struct Running {
    notify: RecommendedWatcher,
    /// Each watched folder's subscribers.
    watches: HashMap<PathBuf, Watch>,
    shared: Arc<Shared>,
    /// Tells the debouncer's thread to end.
    control: Sender<Message>,
    debouncer: Option<JoinHandle<()>>,
    /// The file [`Hub::flush`] writes, when it could be made and watched.
    marker: Option<Marker>,
    /// Alive while notify's thread holds the event handler (tests check that it ends).
    #[cfg(test)]
    handler_alive: std::sync::Weak<()>,
}

/// One watched folder: how many subscribers want it watched flat and recursively, and how
/// it is watched now.
struct Watch {
    flat: usize,
    deep: usize,
    recursive: bool,
}

/// The hub's flush marker: a file it watches and writes one byte to for each flush. On Linux
/// its name is removed as soon as it is watched: the watch lives on the open file, so nothing
/// is left on disk, even when the process is killed.
struct Marker {
    file: std::fs::File,
    /// The path its events carry.
    path: PathBuf,
    /// Removes the file when the hub ends, where it keeps its name.
    #[cfg(not(target_os = "linux"))]
    _named: tempfile::TempPath,
}

impl Hub {
    pub(crate) const fn new() -> Self {
        Self {
            running: Mutex::new(None),
            next: AtomicU64::new(1),
            flushing: Mutex::new(()),
        }
    }

    /// Adds a subscriber (starting the hub if it is the first) and watches the folders of
    /// `wanted` that exist. Fails only when the hub cannot start.
    pub(super) fn subscribe(
        &self,
        workspace: PathBuf,
        wanted: Vec<WatchedFolder>,
        batches: UnboundedSender<Vec<PathBuf>>,
    ) -> Result<u64, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut running = lock(&self.running);
        if running.is_none() {
            *running = Some(Running::start()?);
        }
        let Some(running) = running.as_mut() else {
            return Err("the watcher did not start".to_owned());
        };
        let shared = running.shared.clone();
        let mut routes = lock(&shared.routes);
        routes.add(id, Subscriber::new(workspace, wanted, batches));
        running.rewatch(&mut routes, id);
        Ok(id)
    }

    /// Watches the subscriber's wanted folders that exist now and are not watched yet, and
    /// lets go of those that are gone.
    pub(super) fn rewatch(&self, id: u64) {
        self.with_routes(|running, routes| running.rewatch(routes, id));
    }

    /// Adds `folders` to what the subscriber wants (replacing a folder of the same path)
    /// and watches those that exist. Fails, naming the first folder the platform would not
    /// watch, when any was refused (the others stay watched).
    pub(super) fn watch_folders(&self, id: u64, folders: Vec<WatchedFolder>) -> Result<(), String> {
        self.with_routes(|running, routes| {
            let mut refused = None;
            for folder in folders {
                if let Some(released) = routes.want(id, folder.clone()) {
                    running.release(&released.0, released.1);
                }
                if let Err(err) = running.rewatch_one(routes, id, &folder) {
                    refused.get_or_insert(err);
                }
            }
            refused.map_or(Ok(()), Err)
        })
        .unwrap_or_else(|| Err("the watcher is not running".to_owned()))
    }

    /// Whether the platform dropped changes (its queue overflowed) since the subscriber
    /// last asked.
    pub(super) fn take_missed(&self, id: u64) -> bool {
        self.with_routes(|_, routes| routes.take_missed(id))
            .unwrap_or(false)
    }

    /// Removes `paths` from what the subscriber wants, and lets go of their watches.
    pub(super) fn unwatch_folders(&self, id: u64, paths: &[PathBuf]) {
        self.with_routes(|running, routes| {
            for path in paths {
                if let Some(released) = routes.unwant(id, path) {
                    running.release(&released.0, released.1);
                }
            }
        });
    }

    /// How many of the subscriber's folders are watched now.
    pub(super) fn watched_count(&self, id: u64) -> usize {
        self.with_routes(|_, routes| routes.held_count(id))
            .unwrap_or(0)
    }

    /// Returns once every change made on disk before the call has been delivered to the
    /// subscriber's channel (or after [`FLUSH_WAIT`]): one byte is written to the hub's
    /// watched marker file, and the debouncer, on reading its event, has read every earlier
    /// one (one ordered queue per inotify instance) and delivers the subscriber's pending
    /// paths at once. Flushes take turns, so a marker event is never taken for another's.
    pub(super) fn flush(&self, id: u64) {
        let _turn = lock(&self.flushing);
        let written = self.with_routes(|running, routes| {
            let marker = running.marker.as_mut()?;
            routes.expect_flush(id);
            let written = marker
                .file
                .rewind()
                .and_then(|()| marker.file.write_all(b"."));
            if let Err(err) = written {
                tracing::debug!("cannot write the flush marker: {err}");
                routes.forget_flush();
                return None;
            }
            Some(running.shared.clone())
        });
        let Some(Some(shared)) = written else {
            tracing::debug!("no flush marker: changes are delivered after the debounce");
            return;
        };
        let deadline = Instant::now() + FLUSH_WAIT;
        let mut routes = lock(&shared.routes);
        while !routes.flushed() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::debug!("the flush marker was not read within {FLUSH_WAIT:?}");
                break;
            }
            routes = match shared.flushed.wait_timeout(routes, left) {
                Ok((routes, _)) => routes,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        routes.forget_flush();
    }

    /// Removes the subscriber and lets go of its watches; the last one ends the hub. Safe to
    /// call more than once.
    pub(super) fn unsubscribe(&self, id: u64) {
        let mut running = lock(&self.running);
        let Some(hub) = running.as_mut() else {
            return;
        };
        let shared = hub.shared.clone();
        let mut routes = lock(&shared.routes);
        if let Some(subscriber) = routes.remove(id) {
            for (path, recursive) in subscriber.held {
                hub.release(&path, recursive);
            }
            shared.flushed.notify_all();
        }
        let last = routes.is_empty();
        drop(routes);
        if last && let Some(ended) = running.take() {
            ended.stop();
        }
    }

    /// Runs `work` on the running hub and its routes; `None` when the hub is not running.
    fn with_routes<T>(&self, work: impl FnOnce(&mut Running, &mut Routes) -> T) -> Option<T> {
        let mut running = lock(&self.running);
        let running = running.as_mut()?;
        let shared = running.shared.clone();
        let mut routes = lock(&shared.routes);
        Some(work(running, &mut routes))
    }

    /// notify's event handler while the hub runs, gone once notify's thread has ended.
    #[cfg(test)]
    pub(super) fn handler_alive(&self) -> Option<std::sync::Weak<()>> {
        lock(&self.running)
            .as_ref()
            .map(|running| running.handler_alive.clone())
    }

    /// How many folders the hub watches (each once, whatever its subscribers).
    #[cfg(test)]
    pub(super) fn watched_folders(&self) -> usize {
        lock(&self.running)
            .as_ref()
            .map_or(0, |running| running.watches.len())
    }

    /// Whether the hub runs (it has subscribers).
    #[cfg(test)]
    pub(super) fn is_running(&self) -> bool {
        lock(&self.running).is_some()
    }
}

impl Running {
    /// Starts notify's watcher and the debouncer's thread, and watches the flush folder.
    fn start() -> Result<Self, String> {
        let (messages, received) = std::sync::mpsc::channel();
        let events = messages.clone();
        #[cfg(test)]
        let handler_alive = Arc::new(());
        #[cfg(test)]
        let alive = Arc::downgrade(&handler_alive);
        let mut notify = notify::recommended_watcher(move |event| {
            #[cfg(test)]
            let _alive = &handler_alive;
            // The debouncer's thread is gone only when the hub is ending.
            let _ = events.send(Message::Event(event));
        })
        .map_err(|err| err.to_string())?;
        let marker = marker(&mut notify);
        let shared = Arc::new(Shared {
            routes: Mutex::new(Routes::new(
                marker.as_ref().map(|marker| marker.path.clone()),
            )),
            flushed: Condvar::new(),
        });
        let debouncer = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("coder-watch".to_owned())
                .spawn(move || routes::debounce(&received, &shared))
                .map_err(|err| format!("cannot start the watcher's thread: {err}"))?
        };
        Ok(Self {
            notify,
            watches: HashMap::new(),
            shared,
            control: messages,
            debouncer: Some(debouncer),
            marker,
            #[cfg(test)]
            handler_alive: alive,
        })
    }

    /// Ends the hub: notify's watcher is dropped (its thread ends once it has read that,
    /// and drops the event handler), and the debouncer's thread is told to end and joined.
    fn stop(mut self) {
        let _ = self.control.send(Message::Stop);
        if let Some(debouncer) = self.debouncer.take() {
            let _ = debouncer.join();
        }
        // Dropping `self` drops notify's watcher and closes the marker.
    }

    /// Brings the subscriber's watches in line with its wanted folders on disk.
    fn rewatch(&mut self, routes: &mut Routes, id: u64) {
        for folder in routes.wanted(id) {
            if let Err(err) = self.rewatch_one(routes, id, &folder) {
                tracing::warn!("{err}");
            }
        }
    }

    /// Brings the subscriber's watch of one wanted folder in line with the disk; an error
    /// names the folder the platform would not watch.
    fn rewatch_one(
        &mut self,
        routes: &mut Routes,
        id: u64,
        folder: &WatchedFolder,
    ) -> Result<(), String> {
        let exists = std::fs::symlink_metadata(&folder.path).is_ok_and(|meta| meta.is_dir());
        match (routes.holds(id, &folder.path), exists) {
            (Some(recursive), false) => {
                routes.let_go(id, &folder.path);
                self.release(&folder.path, recursive);
            }
            (None, true) => match self.acquire(&folder.path, folder.recursive) {
                Ok(()) => routes.hold(id, &folder.path, folder.recursive),
                Err(err) => return Err(format!("not watching {}: {err}", folder.path.display())),
            },
            (Some(_), true) => self.refresh(&folder.path),
            (None, false) => {}
        }
        Ok(())
    }

    /// Counts one more subscriber of `path`, watching it first if nobody did (or more
    /// deeply, if it is now wanted recursively and was watched flat).
    fn acquire(&mut self, path: &Path, recursive: bool) -> notify::Result<()> {
        let watch = self.watches.get(path);
        let needs_watch = watch.is_none_or(|watch| recursive && !watch.recursive);
        if needs_watch {
            self.notify.watch(path, mode(recursive))?;
        }
        let watch = self.watches.entry(path.to_path_buf()).or_insert(Watch {
            flat: 0,
            deep: 0,
            recursive,
        });
        if recursive {
            watch.deep += 1;
            watch.recursive = true;
        } else {
            watch.flat += 1;
        }
        Ok(())
    }

    /// Watches `path` again: the same directory keeps its watch, but one removed and made
    /// again between two looks needs a new one (its old watch went with it, and its inode
    /// number may be the old one's, so nothing short of asking tells them apart).
    fn refresh(&mut self, path: &Path) {
        let Some(watch) = self.watches.get(path) else {
            return;
        };
        if let Err(err) = self.notify.watch(path, mode(watch.recursive)) {
            tracing::warn!("not watching {} again: {err}", path.display());
        }
    }

    /// Counts one subscriber of `path` less; the last one's release unwatches it (or
    /// watches it flat again when only flat subscribers remain).
    fn release(&mut self, path: &Path, recursive: bool) {
        let Some(watch) = self.watches.get_mut(path) else {
            return;
        };
        if recursive {
            watch.deep = watch.deep.saturating_sub(1);
        } else {
            watch.flat = watch.flat.saturating_sub(1);
        }
        let (flat, deep, was_recursive) = (watch.flat, watch.deep, watch.recursive);
        if flat + deep == 0 {
            self.watches.remove(path);
            let _ = self.notify.unwatch(path);
        } else if deep == 0 && was_recursive {
            watch.recursive = false;
            let _ = self.notify.unwatch(path);
            if let Err(err) = self.notify.watch(path, RecursiveMode::NonRecursive) {
                tracing::warn!("not watching {}: {err}", path.display());
            }
        } else {
            return;
        }
        if was_recursive {
            self.rewatch_below(path);
        }
    }

    /// Watches again the folders below `path` that other subscribers hold: notify forgot
    /// them with `path`'s recursive watch.
    fn rewatch_below(&mut self, path: &Path) {
        let below: Vec<(PathBuf, bool)> = self
            .watches
            .iter()
            .filter(|(folder, _)| folder.as_path() != path && folder.starts_with(path))
            .map(|(folder, watch)| (folder.clone(), watch.recursive))
            .collect();
        for (folder, recursive) in below {
            if let Err(err) = self.notify.watch(&folder, mode(recursive)) {
                tracing::warn!("not watching {}: {err}", folder.display());
            }
        }
    }
}

/// Makes the hub's flush marker and watches it; `None` (flushes then only wait for the
/// debounce) when either fails.
fn marker(notify: &mut RecommendedWatcher) -> Option<Marker> {
    let named = match tempfile::Builder::new().prefix("coder-watch-").tempfile() {
        Ok(named) => named,
        Err(err) => {
            tracing::debug!("no flush marker: {err}");
            return None;
        }
    };
    if let Err(err) = notify.watch(named.path(), RecursiveMode::NonRecursive) {
        tracing::debug!("not watching the flush marker: {err}");
        return None;
    }
    let path = named.path().to_path_buf();
    let (file, named) = named.into_parts();
    #[cfg(target_os = "linux")]
    {
        if let Err(err) = named.close() {
            tracing::debug!("cannot remove the flush marker's name: {err}");
        }
        Some(Marker { file, path })
    }
    #[cfg(not(target_os = "linux"))]
    Some(Marker {
        file,
        path,
        _named: named,
    })
}

fn mode(recursive: bool) -> RecursiveMode {
    if recursive {
        RecursiveMode::Recursive
    } else {
        RecursiveMode::NonRecursive
    }
}
