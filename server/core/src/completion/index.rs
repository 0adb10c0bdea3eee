//! The walked list of workspace paths that `@` completion matches against.
//!
//! Nobody waits for a walk that could have happened earlier:
//! - the session starts the first walk in the background when it starts ([`PathIndex::refresh`]);
//! - a call during that first walk waits for it at most [`FIRST_WALK_WAIT`], then answers
//!   from the paths walked so far (a person typing gets an answer in time, and the next
//!   keystroke's answer holds more);
//! - an index older than [`REFRESH_AFTER`], or marked stale by the workspace watcher,
//!   answers at once from the last walk while one background walk refreshes it
//!   (stale-while-revalidate);
//! - at most one walk runs at a time, on its own thread ("coder-path-walk"), and a walk
//!   stops at [`MAX_ENTRIES`] paths.
//!
//! Architecture invariant: after [`PathIndex::stop`] returns, no walk runs and none starts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ignore::WalkState;

use crate::sync::lock;

/// How long a walk is trusted: the first call after that answers from it and starts a walk
/// in the background, so files created or removed since show up within about this delay
/// plus one walk, even where no watcher sees them. Short, because the caller never pays for
/// the walk; at most one walk runs per this delay while someone types.
pub const REFRESH_AFTER: Duration = Duration::from_secs(2);

/// How long a call waits for the session's first walk before answering from the paths
/// walked so far (the target of an answer is under 50 ms).
pub const FIRST_WALK_WAIT: Duration = Duration::from_millis(25);

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

/// A session's path index of one workspace root. Every method takes a short lock; none
/// walks on the caller's thread (when no thread can be started, a warning is logged and the
/// index stays as it is).
#[derive(Debug)]
pub struct PathIndex {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    root: PathBuf,
    /// [`REFRESH_AFTER`] unless made with [`PathIndex::with_refresh_after`].
    refresh_after: Duration,
    state: Mutex<State>,
    /// Signalled when a walk ends.
    walked: Condvar,
    /// Set by [`PathIndex::stop`]: the running walk quits, no other starts.
    stopped: AtomicBool,
    /// Where a test holds every walk before each path.
    #[cfg(test)]
    gate: Gate,
}

/// A test's hold on the index's walks: while closed, each walker thread waits before its
/// next path (and before looking at the stop flag, so a stop asked for while it waits is
/// seen as soon as the gate opens).
#[cfg(test)]
#[derive(Debug, Default)]
pub(super) struct Gate {
    closed: Mutex<bool>,
    changed: Condvar,
}

#[cfg(test)]
impl Gate {
    pub(super) fn close(&self) {
        *lock(&self.closed) = true;
    }

    pub(super) fn open(&self) {
        *lock(&self.closed) = false;
        self.changed.notify_all();
    }

    fn pass(&self) {
        let closed = lock(&self.closed);
        drop(
            self.changed
                .wait_while(closed, |closed| *closed)
                .unwrap_or_else(|poison| poison.into_inner()),
        );
    }
}

#[derive(Debug, Default)]
struct State {
    /// The last complete walk and when it started.
    built: Option<(Instant, Arc<Snapshot>)>,
    /// Set by [`PathIndex::mark_stale`]; cleared when a walk starts.
    stale: bool,
    /// The running walk's paths so far (unsorted); `None` when no walk runs.
    walking: Option<Arc<Mutex<Vec<Entry>>>>,
    /// The last walk's thread (ended or not), joined before the next starts and at stop.
    thread: Option<JoinHandle<()>>,
    /// How many walks have started (for tests and benchmarks).
    walks: u64,
}

impl PathIndex {
    /// An empty index of `root`; nothing is walked until [`PathIndex::refresh`] or the first
    /// call.
    pub fn new(root: PathBuf) -> Self {
        Self::with_refresh_after(root, REFRESH_AFTER)
    }

    /// An index trusting a walk for `refresh_after` instead of [`REFRESH_AFTER`].
    pub fn with_refresh_after(root: PathBuf, refresh_after: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                root,
                refresh_after,
                state: Mutex::new(State::default()),
                walked: Condvar::new(),
                stopped: AtomicBool::new(false),
                #[cfg(test)]
                gate: Gate::default(),
            }),
        }
    }

    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// The index to answer from now, never waiting for a walk except the first (at most
    /// [`FIRST_WALK_WAIT`]): the last walk, refreshed in the background when it is stale;
    /// during the first walk, the paths walked so far.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        let mut state = lock(&self.shared.state);
        if let Some((at, snapshot)) = &state.built {
            let snapshot = Arc::clone(snapshot);
            if (state.stale || at.elapsed() >= self.shared.refresh_after) && state.walking.is_none()
            {
                self.start_walk(&mut state);
            }
            return snapshot;
        }
        if state.walking.is_none() {
            self.start_walk(&mut state);
        }
        let (state, _) = self
            .shared
            .walked
            .wait_timeout_while(state, FIRST_WALK_WAIT, |state| {
                state.built.is_none() && state.walking.is_some()
            })
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some((_, snapshot)) = &state.built {
            return Arc::clone(snapshot);
        }
        let partial = state.walking.clone();
        drop(state);
        let mut entries = partial.map_or_else(Vec::new, |found| lock(&found).clone());
        entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Arc::new(Snapshot { entries })
    }

    /// Starts a walk in the background unless one runs (or the index was stopped).
    pub fn refresh(&self) {
        let mut state = lock(&self.shared.state);
        if state.walking.is_none() {
            self.start_walk(&mut state);
        }
    }

    /// Marks the index stale (for a watcher that saw a path created, removed or renamed) and
    /// starts a walk unless one runs; a walk running now may have missed the change, so the
    /// mark stays and the next call walks again.
    pub fn mark_stale(&self) {
        let mut state = lock(&self.shared.state);
        state.stale = true;
        if state.walking.is_none() {
            self.start_walk(&mut state);
        }
    }

    /// Blocks until no walk runs (for tests and benchmarks).
    pub fn until_walked(&self) {
        let state = lock(&self.shared.state);
        drop(
            self.shared
                .walked
                .wait_while(state, |state| state.walking.is_some()),
        );
    }

    /// The test's hold on this index's walks.
    #[cfg(test)]
    pub(super) fn gate(&self) -> &Gate {
        &self.shared.gate
    }

    /// Whether [`PathIndex::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopped.load(Ordering::SeqCst)
    }

    /// How many walks have started since the index was made.
    pub fn walks(&self) -> u64 {
        lock(&self.shared.state).walks
    }

    /// Stops the running walk and waits for its thread to end; no walk starts afterwards
    /// (calls answer from the last walk). Safe to call more than once.
    pub fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let thread = lock(&self.shared.state).thread.take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }

    /// Starts a walk (the caller checked none runs) on its own thread.
    fn start_walk(&self, state: &mut State) {
        if self.shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        if let Some(ended) = state.thread.take() {
            // Its walk ended (none runs), so this returns at once.
            let _ = ended.join();
        }
        let found = Arc::new(Mutex::new(Vec::new()));
        state.walking = Some(Arc::clone(&found));
        state.stale = false;
        state.walks += 1;
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("coder-path-walk".to_owned())
            .spawn(move || shared.walk_into(found));
        match spawned {
            Ok(thread) => state.thread = Some(thread),
            Err(err) => {
                tracing::warn!("no thread for the path index ({err}): it is not refreshed");
                state.walking = None;
            }
        }
    }
}

impl Shared {
    /// One walk from start to installing its result.
    fn walk_into(&self, found: Arc<Mutex<Vec<Entry>>>) {
        let started = Instant::now();
        #[cfg(test)]
        let pass = || self.gate.pass();
        #[cfg(not(test))]
        let pass = || {};
        walk_until(&self.root, &found, &self.stopped, &pass);
        let mut entries = std::mem::take(&mut *lock(&found));
        entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        let mut state = lock(&self.state);
        if !self.stopped.load(Ordering::SeqCst) {
            state.built = Some((started, Arc::new(Snapshot { entries })));
        }
        state.walking = None;
        drop(state);
        self.walked.notify_all();
    }
}

impl Drop for PathIndex {
    /// A walk still running quits soon on its own (its thread is not waited for here; the
    /// session's shutdown calls [`PathIndex::stop`], which is).
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
    }
}

/// Walks `root` at once on this thread (see [`walk_until`]).
pub fn walk(root: &Path) -> Snapshot {
    let found = Mutex::new(Vec::new());
    walk_until(root, &found, &AtomicBool::new(false), &|| {});
    let mut entries = found
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner());
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Snapshot { entries }
}

/// Walks `root` in parallel into `found` (unsorted) until done, [`MAX_ENTRIES`] or `stop`:
/// `.gitignore` (also outside a git repository), `.ignore`, `.git/info/exclude`, the global
/// git excludes, each read as the repository's files are (`ignore_files.rs`: bounded, no
/// link out, no FIFO or device); hidden paths are kept (and marked) but `.git` is never
/// entered; links are not followed. `pass` runs before each path (a test's gate).
fn walk_until(root: &Path, found: &Mutex<Vec<Entry>>, stop: &AtomicBool, pass: &(dyn Fn() + Sync)) {
    crate::ignore_files::walker(root, root)
        .hidden(false)
        .build_parallel()
        .run(|| {
            Box::new(move |entry| {
                pass();
                if stop.load(Ordering::Relaxed) {
                    return WalkState::Quit;
                }
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
}
