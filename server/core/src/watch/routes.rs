//! Who gets which change: the hub's subscribers, the folders each wants, the paths each
//! has pending, and the debouncer's thread that sorts notify's events to them.
//!
//! A change at a path goes to every subscriber with a wanted folder that covers it (a flat
//! folder covers itself and its direct children, a recursive one everything below it), unless
//! [`ignored`] under that subscriber's workspace. Each subscriber's pending paths are
//! debounced on their own: sent as one sorted batch once none came for [`DEBOUNCE`], or
//! [`LONGEST_WAIT`] after the first, so a busy workspace does not hold back another's.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use notify::EventKind;
use notify::event::ModifyKind;
use tokio::sync::mpsc::UnboundedSender;

use super::{WatchedFolder, ignored};
use crate::sync::lock;

/// How long a path must stay quiet before its change is reported: an editor's save (write
/// to a temporary file, rename over) arrives as one change.
const DEBOUNCE: Duration = Duration::from_millis(150);
/// The longest a change waits: paths that never stay quiet (a log written in a watched
/// folder) do not hold back the others' changes for ever.
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// What the debouncer's thread reads: notify's events, and the hub's word to end.
pub(super) enum Message {
    Event(notify::Result<notify::Event>),
    Stop,
}

/// The state the debouncer's thread shares with the subscribers' calls.
pub(super) struct Shared {
    pub routes: Mutex<Routes>,
    /// Told each time a flush marker has been read.
    pub flushed: Condvar,
}

/// One subscriber: its workspace (for [`ignored`]), its channel, what it wants watched,
/// which of those it holds a watch on (and how), and its changes not sent yet.
pub(super) struct Subscriber {
    workspace: PathBuf,
    batches: UnboundedSender<Vec<PathBuf>>,
    /// Each wanted folder, and whether recursively.
    wanted: BTreeMap<PathBuf, bool>,
    /// The folders this subscriber counts in the hub's watches, and whether recursively.
    pub held: HashMap<PathBuf, bool>,
    pending: BTreeSet<PathBuf>,
    /// The platform dropped changes since [`Routes::take_missed`] last asked.
    missed: bool,
    /// When the first pending change came, and the last.
    first: Instant,
    last: Instant,
}

/// The subscribers and an index of their wanted folders.
pub(super) struct Routes {
    subscribers: HashMap<u64, Subscriber>,
    /// Each wanted folder's subscribers, and whether each wants it recursively.
    folders: HashMap<PathBuf, HashMap<u64, bool>>,
    /// The subscribers with pending changes.
    waiting: HashSet<u64>,
    /// The flush waiting for the marker's event (flushes take turns).
    flush: Option<Flush>,
    /// The hub's flush marker (never a subscriber's change).
    marker: Option<PathBuf>,
}

/// A flush waiting for its marker's event.
struct Flush {
    subscriber: u64,
    done: bool,
}

impl Subscriber {
    pub fn new(
        workspace: PathBuf,
        wanted: Vec<WatchedFolder>,
        batches: UnboundedSender<Vec<PathBuf>>,
    ) -> Self {
        let now = Instant::now();
        let mut unique: BTreeMap<PathBuf, bool> = BTreeMap::new();
        for folder in wanted {
            *unique.entry(folder.path).or_default() |= folder.recursive;
        }
        Self {
            workspace,
            batches,
            wanted: unique,
            held: HashMap::new(),
            pending: BTreeSet::new(),
            missed: false,
            first: now,
            last: now,
        }
    }

    /// When this subscriber's pending changes are due.
    fn due(&self) -> Instant {
        (self.last + DEBOUNCE).min(self.first + LONGEST_WAIT)
    }

    /// Sends the pending changes as one sorted batch.
    fn deliver(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let batch: Vec<PathBuf> = std::mem::take(&mut self.pending).into_iter().collect();
        // The receiver is gone only when the session is ending.
        let _ = self.batches.send(batch);
    }
}

impl Routes {
    pub fn new(marker: Option<PathBuf>) -> Self {
        Self {
            subscribers: HashMap::new(),
            folders: HashMap::new(),
            waiting: HashSet::new(),
            flush: None,
            marker,
        }
    }

    pub fn add(&mut self, id: u64, subscriber: Subscriber) {
        for (path, recursive) in &subscriber.wanted {
            self.folders
                .entry(path.clone())
                .or_default()
                .insert(id, *recursive);
        }
        self.subscribers.insert(id, subscriber);
    }

    /// Removes the subscriber (its flushes end at once); the caller lets go of its watches.
    pub fn remove(&mut self, id: u64) -> Option<Subscriber> {
        let subscriber = self.subscribers.remove(&id)?;
        for path in subscriber.wanted.keys() {
            self.unindex(id, path);
        }
        self.waiting.remove(&id);
        if let Some(flush) = self.flush.as_mut().filter(|flush| flush.subscriber == id) {
            flush.done = true;
        }
        Some(subscriber)
    }

    pub fn is_empty(&self) -> bool {
        self.subscribers.is_empty()
    }

    /// The subscriber's wanted folders.
    pub fn wanted(&self, id: u64) -> Vec<WatchedFolder> {
        self.subscribers
            .get(&id)
            .map(|subscriber| {
                subscriber
                    .wanted
                    .iter()
                    .map(|(path, recursive)| WatchedFolder {
                        path: path.clone(),
                        recursive: *recursive,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Adds `folder` to what the subscriber wants. When it wanted that folder in the other
    /// mode and held a watch on it, that hold is let go and returned (path, recursive) for
    /// the caller to release; the next rewatch takes it again in the new mode.
    pub fn want(&mut self, id: u64, folder: WatchedFolder) -> Option<(PathBuf, bool)> {
        let subscriber = self.subscribers.get_mut(&id)?;
        let mut released = None;
        if let Some(known) = subscriber.wanted.get_mut(&folder.path) {
            if *known == folder.recursive {
                return None;
            }
            *known = folder.recursive;
            released = subscriber
                .held
                .remove(&folder.path)
                .map(|recursive| (folder.path.clone(), recursive));
        } else {
            subscriber
                .wanted
                .insert(folder.path.clone(), folder.recursive);
        }
        self.folders
            .entry(folder.path)
            .or_default()
            .insert(id, folder.recursive);
        released
    }

    /// Removes `path` from what the subscriber wants; returns its hold (path, recursive),
    /// if it had one, for the caller to release.
    pub fn unwant(&mut self, id: u64, path: &Path) -> Option<(PathBuf, bool)> {
        let subscriber = self.subscribers.get_mut(&id)?;
        subscriber.wanted.remove(path);
        let released = subscriber
            .held
            .remove(path)
            .map(|recursive| (path.to_path_buf(), recursive));
        self.unindex(id, path);
        released
    }

    fn unindex(&mut self, id: u64, path: &Path) {
        if let Some(subscribers) = self.folders.get_mut(path) {
            subscribers.remove(&id);
            if subscribers.is_empty() {
                self.folders.remove(path);
            }
        }
    }

    /// Whether the subscriber holds a watch on `path`, and how.
    pub fn holds(&self, id: u64, path: &Path) -> Option<bool> {
        self.subscribers.get(&id)?.held.get(path).copied()
    }

    pub fn hold(&mut self, id: u64, path: &Path, recursive: bool) {
        if let Some(subscriber) = self.subscribers.get_mut(&id) {
            subscriber.held.insert(path.to_path_buf(), recursive);
        }
    }

    pub fn let_go(&mut self, id: u64, path: &Path) {
        if let Some(subscriber) = self.subscribers.get_mut(&id) {
            subscriber.held.remove(path);
        }
    }

    /// Whether the platform dropped changes since the subscriber last asked.
    pub fn take_missed(&mut self, id: u64) -> bool {
        self.subscribers
            .get_mut(&id)
            .is_some_and(|subscriber| std::mem::take(&mut subscriber.missed))
    }

    pub fn held_count(&self, id: u64) -> usize {
        self.subscribers
            .get(&id)
            .map_or(0, |subscriber| subscriber.held.len())
    }

    /// Registers the flush whose marker write comes next.
    pub fn expect_flush(&mut self, id: u64) {
        self.flush = Some(Flush {
            subscriber: id,
            done: false,
        });
    }

    /// Whether the marker's event was read (or the flush's subscriber left).
    pub fn flushed(&self) -> bool {
        self.flush.as_ref().is_none_or(|flush| flush.done)
    }

    pub fn forget_flush(&mut self) {
        self.flush = None;
    }

    /// Sorts one of notify's events to the subscribers it concerns. Returns whether it was
    /// a flush marker's (its subscriber's pending changes are then sent at once).
    pub fn take(&mut self, event: notify::Event, now: Instant) -> bool {
        let mut flushed = false;
        if event.need_rescan() {
            // The platform's queue overflowed: any subscriber may have missed a change.
            for subscriber in self.subscribers.values_mut() {
                subscriber.missed = true;
            }
        }
        let access = matches!(event.kind, EventKind::Access(_));
        for path in event.paths {
            if self.marker.as_ref() == Some(&path) {
                // A write's event; not the name's removal, nor the end of the watch.
                if matches!(
                    event.kind,
                    EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any)
                ) {
                    flushed |= self.read_marker();
                }
                continue;
            }
            if access {
                continue;
            }
            for id in self.covering(&path) {
                let Some(subscriber) = self.subscribers.get_mut(&id) else {
                    continue;
                };
                if ignored(&subscriber.workspace, &path) {
                    continue;
                }
                if subscriber.pending.is_empty() {
                    subscriber.first = now;
                    self.waiting.insert(id);
                }
                subscriber.last = now;
                subscriber.pending.insert(path.clone());
            }
        }
        flushed
    }

    /// The subscribers with a wanted folder that covers `path`.
    fn covering(&self, path: &Path) -> BTreeSet<u64> {
        let parent = path.parent();
        let mut found = BTreeSet::new();
        for folder in path.ancestors() {
            let Some(subscribers) = self.folders.get(folder) else {
                continue;
            };
            let near = folder == path || Some(folder) == parent;
            found.extend(
                subscribers
                    .iter()
                    .filter(|(_, recursive)| near || **recursive)
                    .map(|(id, _)| *id),
            );
        }
        found
    }

    /// The marker's event: the waiting flush's subscriber's pending changes go now. Returns
    /// whether a flush was waiting for it.
    fn read_marker(&mut self) -> bool {
        let Some(flush) = self.flush.as_mut().filter(|flush| !flush.done) else {
            return false;
        };
        flush.done = true;
        let id = flush.subscriber;
        if let Some(subscriber) = self.subscribers.get_mut(&id) {
            subscriber.deliver();
        }
        self.waiting.remove(&id);
        true
    }

    /// When the earliest pending changes are due, if any are pending.
    pub fn due(&self) -> Option<Instant> {
        self.waiting
            .iter()
            .filter_map(|id| self.subscribers.get(id))
            .map(Subscriber::due)
            .min()
    }

    /// Sends the pending changes that are due.
    pub fn deliver_due(&mut self, now: Instant) {
        let subscribers = &mut self.subscribers;
        self.waiting.retain(|id| {
            let Some(subscriber) = subscribers.get_mut(id) else {
                return false;
            };
            if subscriber.due() > now {
                return true;
            }
            subscriber.deliver();
            false
        });
    }
}

/// The debouncer's thread: sorts notify's events to the subscribers, and sends each one's
/// changes when due. With nothing pending it waits without a timeout. Returns when the hub
/// says so (or notify's handler and the hub are both gone).
pub(super) fn debounce(received: &Receiver<Message>, shared: &Shared) {
    loop {
        let due = lock(&shared.routes).due();
        let message = match due {
            None => received.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(due) => received.recv_timeout(due.saturating_duration_since(Instant::now())),
        };
        match message {
            Ok(Message::Event(Ok(event))) => {
                if lock(&shared.routes).take(event, Instant::now()) {
                    shared.flushed.notify_all();
                }
            }
            Ok(Message::Event(Err(error))) => tracing::warn!("watching the workspace: {error}"),
            Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
        lock(&shared.routes).deliver_due(Instant::now());
    }
}
