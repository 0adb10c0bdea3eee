//! `/undo` (seed 004 section 4): every file change of the last user turn is reverted, the
//! model's writes and patches, files the turn created and what its commands changed.
//!
//! A checkpoint costs what the turn changed, never the size of the repository, and no turn
//! waits for one:
//! - The session's first turn starts the recorder in the background, so the model's first
//!   reply hides its cost (a session never prompted pays nothing, and a turn never waits for
//!   it; only a tool that may change files does, if it comes first): every folder of the
//!   workspace that git does not ignore is watched on its own ([`watching`]), while git
//!   lists its index and what differs from it, once ([`git::list`]). A file git tracks
//!   unchanged is recorded by its blob in the repository; a changed or new one is copied
//!   into the session's private store ([`store`]), outside the repository.
//! - When a turn's first tool that may change files is about to run, what changed since
//!   the last reading (the person's edits) is read and only those files are copied; the
//!   turn's own changes are read at its end. A turn whose tools change nothing reads
//!   nothing. Each file the turn changed keeps what it held before the turn and after it.
//! - `/undo` puts back what the last turn changed: changed and deleted files get their
//!   content back, files it created are removed. A file changed again since the turn ended
//!   (by the person, or a later `!command`) is left as it is and named, so `/undo` never
//!   throws away work that was not the turn's.
//!
//! Files git ignores are not recorded, so changes to them stay; nor are files over
//! [`MAX_RECORDED_FILE`] (a dataset, a build artefact) or symbolic links: `/undo` leaves them
//! and says so. Past [`MAX_STORE_BYTES`] the records of earlier turns are dropped, with a
//! warning. Nothing is written into the repository: no object, no ref, and the person's
//! index, branches, stash and working tree are never touched. Only in a git repository;
//! elsewhere `/undo` says so. When the workspace cannot be watched (too many folders, or the
//! platform's limit), what commands change is not recorded, and the turn is told.

mod git;
mod rewind;
mod store;
#[cfg(test)]
mod tests;
mod watching;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use rustix::fs::FileType;

pub(crate) use git::safe_git;
pub(crate) use rewind::FileRewind;

use crate::beneath::WorkspaceDir;
use crate::ignore_files::IgnoreRules;
use crate::sync::lock;
use git::Tracked;
use store::{Blob, Store};
use watching::FolderWatch;

/// Files larger than this are not recorded.
pub(crate) const MAX_RECORDED_FILE: u64 = 16 << 20;
/// The most a session's private store holds; past three quarters of it, earlier turns'
/// records are dropped at the next turn's start.
pub(crate) const MAX_STORE_BYTES: u64 = 512 << 20;

/// What a file held at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Content {
    Absent,
    /// Bytes in the private store.
    Stored {
        blob: Blob,
        executable: bool,
    },
    /// A file of git's index, unchanged since the session found it.
    Git(Tracked),
    /// Not recorded, for this reason.
    Unrecorded(Unrecorded),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unrecorded {
    TooLarge,
    Link,
    StoreFull,
    Unreadable,
}

impl Unrecorded {
    fn why(self) -> String {
        match self {
            Self::TooLarge => format!("over {} MiB, not recorded", MAX_RECORDED_FILE >> 20),
            Self::Link => "a symbolic link, not recorded".to_owned(),
            Self::StoreFull => format!(
                "not recorded: the records for /undo passed {} MiB",
                MAX_STORE_BYTES >> 20
            ),
            Self::Unreadable => "not readable, not recorded".to_owned(),
        }
    }
}

/// The point a turn belongs to: the person's input that started it, in its conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnOwner {
    pub conversation: coder_protocol::ConversationId,
    pub point: usize,
}

/// One turn: what each file it changed held before it, and after it once it ended.
#[derive(Debug, Default)]
struct Turn {
    /// The input that started it (`None` only in tests).
    owner: Option<TurnOwner>,
    before: BTreeMap<String, Content>,
    after: Option<BTreeMap<String, Content>>,
    /// The folders that appeared during the turn (`/undo` removes those left empty).
    made_folders: BTreeSet<String>,
    /// Changes went unseen during the turn (the platform dropped some).
    missed: bool,
}

/// Why the recorder did not start: for the session, or until the next turn tries again.
enum Refusal {
    Lasting(String),
    ForNow(String),
}

/// The recorder of a session in a git repository, once started.
struct Recorder {
    workspace: PathBuf,
    dir: WorkspaceDir,
    store: Store,
    /// `None` when the workspace could not be watched: commands' changes go unseen.
    watch: Option<FolderWatch>,
    rules: IgnoreRules,
    /// Git's index as the session found it.
    index: BTreeMap<String, Tracked>,
    /// What each file read since held when last read (else its index entry, else nothing).
    known: BTreeMap<String, Content>,
    /// The folders seen (walked or watched since), relative to the workspace.
    folders: BTreeSet<String>,
    /// The folders that appeared since the last reading.
    made: BTreeSet<String>,
}

enum Phase {
    /// Nothing recorded yet: started by the first turn, or the first tool that may change
    /// files.
    Waiting,
    /// The recorder is starting in the background.
    Starting,
    Recording(Box<Recorder>),
    /// Not a git repository.
    NoRepository,
    /// The session records nothing: it runs one task, with no later turn to undo it from.
    Unkept,
    /// Refused, with the reason.
    Off(String),
    Closed,
}

struct Inner {
    phase: Phase,
    stack: Vec<Turn>,
}

/// The checkpoints of one session, newest last.
pub(crate) struct Checkpoints {
    workspace: PathBuf,
    inner: Mutex<Inner>,
    /// The running start of the last turn, which its end waits for.
    begun: Mutex<Option<Begun>>,
    /// The most folders watched ([`watching::MAX_WATCHED_FOLDERS`] but in tests).
    max_folders: usize,
    /// The recorder's start, once begun.
    starting: Mutex<Option<Start>>,
    /// Whether the start's note was said (once per session).
    start_told: AtomicBool,
}

type Begun = Shared<BoxFuture<'static, Option<String>>>;
/// The recorder's start: `Ok(Some(note))` when there is something to tell the person.
type Start = Shared<BoxFuture<'static, Result<Option<String>, String>>>;

impl Checkpoints {
    pub fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            inner: Mutex::new(Inner {
                phase: Phase::Waiting,
                stack: Vec::new(),
            }),
            begun: Mutex::default(),
            max_folders: watching::MAX_WATCHED_FOLDERS,
            starting: Mutex::default(),
            start_told: AtomicBool::new(false),
        }
    }

    /// Checkpoints that record nothing, for a session that runs one task.
    pub fn unkept(workspace: &Path) -> Self {
        let checkpoints = Self::new(workspace);
        lock(&checkpoints.inner).phase = Phase::Unkept;
        checkpoints
    }

    /// Starts a turn. What changed since the last reading (not the turn's) is read when
    /// the turn's first tool that may change files is about to run
    /// ([`PendingCheckpoint::ready`]), and not before: a turn whose tools change nothing
    /// reads nothing, at its start or at its end.
    pub fn begin_turn(self: &Arc<Self>, owner: TurnOwner) -> PendingCheckpoint {
        let checkpoints = Arc::clone(self);
        let open = lock(&self.inner)
            .stack
            .last()
            .is_some_and(|turn| turn.after.is_none());
        let begun: Begun = if open {
            // A turn left open (its end was never recorded) ends here, read now.
            tokio::task::spawn_blocking(move || checkpoints.begin(Some(owner)))
                .map(|done| done.ok().flatten())
                .boxed()
                .shared()
        } else {
            lock(&self.inner).stack.push(Turn {
                owner: Some(owner),
                ..Turn::default()
            });
            async move {
                tokio::task::spawn_blocking(move || checkpoints.read_before_tools())
                    .await
                    .ok()
                    .flatten()
            }
            .boxed()
            .shared()
        };
        *lock(&self.begun) = Some(begun.clone());
        if matches!(lock(&self.inner).phase, Phase::Waiting) {
            // It runs in the background; tools that may change files wait for it.
            let _start = self.start_in_background();
        }
        PendingCheckpoint(Some(Arc::new(Pending {
            checkpoints: Arc::clone(self),
            begun: Some(begun),
            told: AtomicBool::new(false),
        })))
    }

    /// For a task inside a turn (a conversation's, a continuation): no turn starts, but its
    /// tools that may change files wait for the turn's start as the turn's would.
    pub fn within_turn(self: &Arc<Self>) -> PendingCheckpoint {
        PendingCheckpoint(Some(Arc::new(Pending {
            checkpoints: Arc::clone(self),
            begun: lock(&self.begun).clone(),
            told: AtomicBool::new(false),
        })))
    }

    /// Ends the last turn (the session is idle, the turn and every task it led to are over):
    /// what the turn changed is read as it is now. Costs what the turn changed; nothing
    /// when no tool that may change files ran.
    pub async fn end_turn(self: &Arc<Self>) {
        let begun = lock(&self.begun).take();
        // A start that no tool waited for never ran: the turn's tools changed nothing.
        let touched = begun.as_ref().is_none_or(|begun| begun.peek().is_some());
        if !touched {
            let mut inner = lock(&self.inner);
            if let Some(turn) = inner.stack.last_mut().filter(|turn| turn.after.is_none()) {
                turn.after = Some(BTreeMap::new());
            }
            return;
        }
        if let Some(begun) = begun {
            begun.await;
        }
        let checkpoints = Arc::clone(self);
        let _ = tokio::task::spawn_blocking(move || checkpoints.end()).await;
    }

    /// Before the turn's first tool that may change files: what changed since the last
    /// reading is read (the person's, not the turn's), and the records of earlier turns go
    /// when the store is past three quarters full.
    fn read_before_tools(&self) -> Option<String> {
        let mut inner = lock(&self.inner);
        let Inner { phase, stack } = &mut *inner;
        let Phase::Recording(recorder) = phase else {
            return None;
        };
        recorder.sync(None);
        if recorder.store.bytes() <= MAX_STORE_BYTES / 4 * 3 {
            return None;
        }
        let open = stack.pop();
        stack.clear();
        recorder.compact(stack);
        stack.extend(open);
        Some(format!(
            "the records of earlier turns for /undo passed {} MiB and were dropped; \
             /undo reverts from this turn on",
            (MAX_STORE_BYTES / 4 * 3) >> 20
        ))
    }

    fn begin(&self, owner: Option<TurnOwner>) -> Option<String> {
        let mut inner = lock(&self.inner);
        let Inner { phase, stack } = &mut *inner;
        let mut note = None;
        let mut fresh = BTreeSet::new();
        if let Phase::Recording(recorder) = phase {
            let open = stack.last_mut().filter(|turn| turn.after.is_none());
            fresh = recorder.sync(open);
            if recorder.store.bytes() > MAX_STORE_BYTES / 4 * 3 {
                stack.clear();
                recorder.compact(stack);
                note = Some(format!(
                    "the records of earlier turns for /undo passed {} MiB and were dropped; \
                     /undo reverts from this turn on",
                    (MAX_STORE_BYTES / 4 * 3) >> 20
                ));
            }
        }
        // A turn left open (its end was never recorded) is taken to end here.
        if let Some(turn) = stack.last_mut().filter(|turn| turn.after.is_none()) {
            close(phase, turn, &fresh);
        }
        stack.push(Turn {
            owner,
            ..Turn::default()
        });
        note
    }

    fn end(&self) {
        let mut inner = lock(&self.inner);
        let Inner { phase, stack } = &mut *inner;
        let Some(turn) = stack.last_mut().filter(|turn| turn.after.is_none()) else {
            return;
        };
        let fresh = match phase {
            Phase::Recording(recorder) => recorder.sync(Some(turn)),
            _ => BTreeSet::new(),
        };
        close(phase, turn, &fresh);
    }

    /// Starts the recorder in the background, once a session (again after a start that
    /// failed); the same start for every caller until then.
    fn start_in_background(self: &Arc<Self>) -> Start {
        let mut starting = lock(&self.starting);
        if let Some(start) = &*starting {
            return start.clone();
        }
        let checkpoints = Arc::clone(self);
        // A blocking task runs from here on, whether or not anyone waits for it.
        let start: Start = tokio::task::spawn_blocking(move || checkpoints.start())
            .map(|done| done.unwrap_or_else(|_| Err("the recorder stopped".to_owned())))
            .boxed()
            .shared();
        *starting = Some(start.clone());
        start
    }

    /// Starts recording: lists the repository and watches its folders, without holding the
    /// session's checkpoints meanwhile (a turn begins and ends while it runs).
    /// `Ok(Some(note))`: recording, with something to tell the person.
    fn start(&self) -> Result<Option<String>, String> {
        {
            let mut inner = lock(&self.inner);
            match &inner.phase {
                Phase::Waiting => inner.phase = Phase::Starting,
                Phase::Off(reason) => return Err(reason.clone()),
                Phase::Starting
                | Phase::Recording(_)
                | Phase::NoRepository
                | Phase::Unkept
                | Phase::Closed => return Ok(None),
            }
        }
        let started = self.make_recorder();
        let mut inner = lock(&self.inner);
        if !matches!(inner.phase, Phase::Starting) {
            // The session ended meanwhile.
            if let Ok(Some((recorder, _))) = started {
                recorder.close();
            }
            return Ok(None);
        }
        match started {
            Ok(None) => {
                inner.phase = Phase::NoRepository;
                Ok(None)
            }
            Ok(Some((recorder, note))) => {
                inner.phase = Phase::Recording(Box::new(recorder));
                Ok(note)
            }
            Err(Refusal::Lasting(reason)) => {
                inner.phase = Phase::Off(reason.clone());
                Err(reason)
            }
            Err(Refusal::ForNow(problem)) => {
                // Tried again by the next turn.
                inner.phase = Phase::Waiting;
                drop(inner);
                *lock(&self.starting) = None;
                Err(problem)
            }
        }
    }

    /// The recorder with its note, or `None` outside a git repository.
    fn make_recorder(&self) -> Result<Option<(Recorder, Option<String>)>, Refusal> {
        let Some(repository) = git::discover(&self.workspace) else {
            return Ok(None);
        };
        git::check_filters(&self.workspace).map_err(Refusal::Lasting)?;
        Recorder::start(&self.workspace, &repository, self.max_folders)
            .map(Some)
            .map_err(Refusal::ForNow)
    }

    /// Records what `relative` holds before a file tool changes it (the watch may miss it,
    /// or see it only after the person changed it again).
    fn before_change_of(&self, relative: &str) {
        let mut inner = lock(&self.inner);
        let Inner { phase, stack } = &mut *inner;
        let (Phase::Recording(recorder), Some(turn)) =
            (phase, stack.last_mut().filter(|turn| turn.after.is_none()))
        else {
            return;
        };
        if !turn.before.contains_key(relative) {
            let now = recorder.read_now(relative);
            turn.before.insert(relative.to_owned(), now);
        }
    }

    /// Forgets the turns recorded so far: a session was taken up, and `/undo` has nothing
    /// to revert until its next turn starts.
    pub fn forget(&self) {
        lock(&self.inner).stack.clear();
    }

    /// Ends recording and removes the private store (the session ends).
    pub fn close(&self) {
        let mut inner = lock(&self.inner);
        inner.stack.clear();
        if let Phase::Recording(recorder) = std::mem::replace(&mut inner.phase, Phase::Closed) {
            recorder.close();
        }
    }

    /// Puts the working tree back as the last turn found it; returns what was done, for
    /// people.
    pub fn undo(&self) -> Result<String, String> {
        let mut inner = lock(&self.inner);
        let Inner { phase, stack } = &mut *inner;
        match phase {
            Phase::NoRepository => {
                return Err(
                    "/undo works in a git repository, and this workspace is not one".to_owned(),
                );
            }
            Phase::Off(reason) => return Err(reason.clone()),
            Phase::Unkept => {
                return Err(
                    "this session runs one task and keeps no checkpoints for /undo".to_owned(),
                );
            }
            Phase::Closed => return Err("the session has ended".to_owned()),
            Phase::Waiting | Phase::Starting if git::discover(&self.workspace).is_none() => {
                return Err(
                    "/undo works in a git repository, and this workspace is not one".to_owned(),
                );
            }
            Phase::Waiting | Phase::Starting | Phase::Recording(_) => {}
        }
        if stack.is_empty() {
            return Err("nothing to undo: no turn has started in this session".to_owned());
        }
        let Phase::Recording(recorder) = phase else {
            // No tool that changes files ran in this session (they wait for the recorder).
            stack.pop();
            return Ok("the last turn changed no file to undo".to_owned());
        };
        let open = stack.last_mut().filter(|turn| turn.after.is_none());
        let fresh = recorder.sync(open);
        if let Some(turn) = stack.last_mut().filter(|turn| turn.after.is_none()) {
            close(phase, turn, &fresh);
        }
        let Phase::Recording(recorder) = phase else {
            return Err("/undo is off".to_owned());
        };
        let Some(turn) = stack.pop() else {
            return Err("nothing to undo: no turn has started in this session".to_owned());
        };
        Ok(recorder.revert(&turn))
    }
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl crate::tools::ChangeRecorder for Checkpoints {
    fn before_change(&self, path: &Path) {
        let relative = relative_of(&self.workspace, path).or_else(|| {
            let root = self.workspace.canonicalize().ok()?;
            relative_of(&root, path)
        });
        if let Some(relative) = relative {
            self.before_change_of(&relative);
        }
    }
}

/// Ends `turn`: each file it changed is read as it is now (but those of `fresh`, read just
/// now).
fn close(phase: &mut Phase, turn: &mut Turn, fresh: &BTreeSet<String>) {
    let mut after = BTreeMap::new();
    if let Phase::Recording(recorder) = phase {
        for relative in turn.before.keys() {
            let now = match recorder.known.get(relative) {
                Some(known) if fresh.contains(relative) => known.clone(),
                _ => recorder.read_now(relative),
            };
            recorder.known.insert(relative.clone(), now.clone());
            after.insert(relative.clone(), now);
        }
    }
    turn.after = Some(after);
}

impl Recorder {
    /// Starts the watch over the workspace's folders, then lists the repository (a change
    /// made meanwhile is read at the next reading).
    fn start(
        workspace: &Path,
        repository: &git::Repository,
        max_folders: usize,
    ) -> Result<(Self, Option<String>), String> {
        let dir = WorkspaceDir::open(workspace)?;
        let store = Store::make()?;
        let mut note = None;
        let mut recorder = Self {
            workspace: workspace.to_path_buf(),
            dir,
            store,
            watch: None,
            rules: IgnoreRules::new(workspace),
            index: BTreeMap::new(),
            known: BTreeMap::new(),
            folders: BTreeSet::new(),
            made: BTreeSet::new(),
        };
        // Git lists the repository while the folders are walked and watched (git's status
        // walks the tree too: the two take about as long).
        let listing = std::thread::scope(|scope| {
            let listing = scope.spawn(|| git::list(workspace, repository));
            match FolderWatch::start(workspace, max_folders) {
                Ok(watch) => {
                    recorder.watch = Some(watch);
                    if let Err(err) = recorder.watch_below(workspace, None) {
                        recorder.watch = None;
                        note = Some(unwatched(&err));
                    }
                    // The folders found at the start are nobody's turn's.
                    recorder.made.clear();
                }
                Err(err) => note = Some(unwatched(&err)),
            }
            listing
                .join()
                .unwrap_or_else(|_| Err("git's listing stopped".to_owned()))
        })?;
        recorder.index = listing.index.into_iter().collect();
        for relative in listing.differing {
            let now = recorder.read_now(&relative);
            recorder.known.insert(relative, now);
        }
        Ok((recorder, note))
    }

    /// Watches `folder` and every folder below it that is not ignored; the files found go
    /// into `files` (relative to the workspace), when asked for.
    fn watch_below(
        &mut self,
        folder: &Path,
        mut files: Option<&mut BTreeSet<String>>,
    ) -> Result<(), String> {
        let Some(watch) = self.watch.as_mut() else {
            return Ok(());
        };
        let mut walker = match files {
            Some(_) => crate::ignore_files::walker(&self.workspace, folder),
            None => crate::ignore_files::folder_walker(&self.workspace, folder),
        };
        let mut folders = Vec::new();
        for entry in walker.hidden(false).build().flatten() {
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            if is_dir {
                if crate::watch::ignored(&self.workspace, entry.path()) {
                    // The engine's own session files, `.git`, `target`: nothing /undo keeps.
                    continue;
                }
                if let Some(relative) = relative_of(&self.workspace, entry.path())
                    && self.folders.insert(relative.clone())
                {
                    self.made.insert(relative);
                }
                folders.push(entry.into_path());
            } else if let (Some(files), Some(relative)) = (
                files.as_deref_mut(),
                relative_of(&self.workspace, entry.path()),
            ) {
                files.insert(relative);
            }
        }
        watch.watch(folders)
    }

    /// Reads what changed since the last reading: each changed file is copied, and what it
    /// held before goes into `turn`, when one is open. Returns the files read.
    fn sync(&mut self, mut turn: Option<&mut Turn>) -> BTreeSet<String> {
        let Some(watch) = self.watch.as_mut() else {
            return BTreeSet::new();
        };
        let changed = watch.changed();
        if changed.missed
            && let Some(turn) = turn.as_deref_mut()
        {
            turn.missed = true;
        }
        let mut files = BTreeSet::new();
        for path in changed.paths {
            self.expand(&path, &mut files);
        }
        for relative in &files {
            let now = self.read_now(relative);
            let before = self.known_of(relative);
            if let Some(turn) = turn.as_deref_mut() {
                turn.before.entry(relative.clone()).or_insert(before);
            }
            self.known.insert(relative.clone(), now);
        }
        let made = std::mem::take(&mut self.made);
        if let Some(turn) = turn {
            turn.made_folders.extend(made);
        }
        files
    }

    /// The files a change at `path` may concern: the file itself; for a new folder, what is
    /// in it (watched from now on); for a path gone, every file known below it.
    fn expand(&mut self, path: &Path, files: &mut BTreeSet<String>) {
        let Some(relative) = relative_of(&self.workspace, path) else {
            return;
        };
        if crate::watch::ignored(&self.workspace, path) {
            return;
        }
        match self.dir.file_type(Path::new(&relative)) {
            Ok(Some(FileType::Directory)) => {
                if self.rules.is_ignored(path, true) {
                    return;
                }
                if let Err(err) = self.watch_below(path, Some(files)) {
                    tracing::debug!("not watching a new folder for /undo: {err}");
                }
            }
            Ok(None) => {
                self.forget_folders(&relative);
                let below = format!("{relative}/");
                let known = self.known.range(below.clone()..).map(|(path, _)| path);
                let tracked = self.index.range(below.clone()..).map(|(path, _)| path);
                for inside in known.chain(tracked) {
                    if !inside.starts_with(&below) {
                        continue;
                    }
                    files.insert(inside.clone());
                }
                if self.index.contains_key(&relative) || !self.rules.is_ignored(path, false) {
                    files.insert(relative);
                }
            }
            _ => {
                if self.index.contains_key(&relative) || !self.rules.is_ignored(path, false) {
                    files.insert(relative);
                }
            }
        }
    }

    /// Forgets the folder `relative` and those below it (gone from disk), and lets go of
    /// their watches.
    fn forget_folders(&mut self, relative: &str) {
        let below = format!("{relative}/");
        let gone: Vec<String> = std::iter::once(relative.to_owned())
            .filter(|folder| self.folders.contains(folder))
            .chain(
                self.folders
                    .range(below.clone()..)
                    .take_while(|folder| folder.starts_with(&below))
                    .cloned(),
            )
            .collect();
        if gone.is_empty() {
            return;
        }
        for folder in &gone {
            self.folders.remove(folder);
            self.made.remove(folder);
        }
        if let Some(watch) = self.watch.as_mut() {
            watch.unwatch(
                gone.iter()
                    .map(|folder| self.workspace.join(folder))
                    .collect(),
            );
        }
    }

    fn known_of(&self, relative: &str) -> Content {
        if let Some(known) = self.known.get(relative) {
            return known.clone();
        }
        self.index
            .get(relative)
            .map_or(Content::Absent, |tracked| Content::Git(tracked.clone()))
    }

    /// What `relative` holds now, copied into the store.
    fn read_now(&mut self, relative: &str) -> Content {
        let path = Path::new(relative);
        match self.dir.file_type(path) {
            Ok(None | Some(FileType::Directory)) => Content::Absent,
            Ok(Some(FileType::Symlink)) => Content::Unrecorded(Unrecorded::Link),
            Ok(Some(FileType::RegularFile)) => match self.dir.read(path, MAX_RECORDED_FILE) {
                Ok(Some(bytes)) => {
                    let executable = self
                        .dir
                        .permissions(path)
                        .is_ok_and(|bits| bits & 0o111 != 0);
                    match self.store.put(&bytes, MAX_STORE_BYTES) {
                        Some(blob) => Content::Stored { blob, executable },
                        None => Content::Unrecorded(Unrecorded::StoreFull),
                    }
                }
                Ok(None) => Content::Absent,
                Err(err) if err.kind() == std::io::ErrorKind::FileTooLarge => {
                    Content::Unrecorded(Unrecorded::TooLarge)
                }
                Err(_) => Content::Unrecorded(Unrecorded::Unreadable),
            },
            Ok(Some(_)) | Err(_) => Content::Unrecorded(Unrecorded::Unreadable),
        }
    }

    /// The bytes and executable bit of `content`; `None` for no file.
    fn bytes_of(&self, content: &Content) -> Result<Option<(Vec<u8>, bool)>, String> {
        match content {
            Content::Absent => Ok(None),
            Content::Stored { blob, executable } => self
                .store
                .get(*blob)
                .map(|bytes| Some((bytes, *executable)))
                .map_err(|err| format!("a record for /undo is gone: {err}")),
            Content::Git(tracked) => git::blob(&self.workspace, &tracked.oid)
                .map(|bytes| Some((bytes, tracked.executable))),
            Content::Unrecorded(_) => Err("not recorded".to_owned()),
        }
    }

    /// Whether `a` and `b` are the same file (both absent, or the same bytes and bit).
    fn same(&self, a: &Content, b: &Content) -> bool {
        if a == b {
            return true;
        }
        match (self.bytes_of(a), self.bytes_of(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }

    /// Puts back what `turn` changed, but what changed since it ended; what was done, for
    /// people: a line per file and folder (restored, deleted, folder removed, kept) under
    /// `undid the last turn:`.
    fn revert(&mut self, turn: &Turn) -> String {
        let empty = BTreeMap::new();
        let after = turn.after.as_ref().unwrap_or(&empty);
        let (mut restored, mut removed, mut kept, mut failed) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut left: BTreeMap<Unrecorded, Vec<&str>> = BTreeMap::new();
        for (relative, before) in &turn.before {
            let Some(end) = after.get(relative) else {
                continue;
            };
            if let Content::Unrecorded(why) = before {
                left.entry(*why).or_default().push(relative);
                continue;
            }
            if let Content::Unrecorded(why) = end {
                left.entry(*why).or_default().push(relative);
                continue;
            }
            if self.same(before, end) {
                continue;
            }
            let now = self.read_now(relative);
            if !self.same(&now, end) {
                kept.push(relative.as_str());
                continue;
            }
            match self.put_back(relative, before) {
                Ok(true) if matches!(end, Content::Absent) => {
                    restored.push(format!("restored {relative} (the turn deleted it)"));
                }
                Ok(true) => restored.push(format!("restored {relative}")),
                Ok(false) => removed.push(format!("deleted {relative} (the turn created it)")),
                Err(err) => failed.push(format!("{relative} ({err})")),
            }
        }
        // The folders the turn made, deepest first, when nothing is left in them (a file
        // the person put there since keeps its folder).
        for folder in turn.made_folders.iter().rev() {
            if self.dir.remove_empty_dir(Path::new(folder)).is_ok() {
                removed.push(format!("removed the folder {folder}/"));
            }
        }
        let mut notes = Vec::new();
        if !kept.is_empty() {
            notes.push(format!(
                "kept {}: changed again since the turn ended",
                kept.join(", ")
            ));
        }
        for (why, paths) in &left {
            notes.push(format!("left {}: {}", paths.join(", "), why.why()));
        }
        if !failed.is_empty() {
            notes.push(format!("could not put back {}", failed.join(", ")));
        }
        if turn.missed {
            notes.push(
                "some changes of the turn came too fast to be seen and were not reverted"
                    .to_owned(),
            );
        }
        if restored.is_empty() && removed.is_empty() {
            let notes: String = notes.iter().map(|note| format!("; {note}")).collect();
            return format!("the last turn changed no file to undo{notes}");
        }
        let lines: String = restored
            .iter()
            .chain(&removed)
            .chain(&notes)
            .map(|line| format!("\n  {line}"))
            .collect();
        format!("undid the last turn:{lines}")
    }

    /// Writes `content` at `relative` through the workspace handle (`Ok(true)`), or removes
    /// the file there when it held none (`Ok(false)`).
    fn put_back(&self, relative: &str, content: &Content) -> Result<bool, String> {
        let path = Path::new(relative);
        match self.bytes_of(content)? {
            Some((bytes, executable)) => {
                let mode = if executable { 0o755 } else { 0o644 };
                self.dir
                    .write(path, &bytes, Some(mode))
                    .map_err(|err| err.to_string())?;
                Ok(true)
            }
            None => match self.dir.remove(path) {
                Ok(()) => Ok(false),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(err) => Err(err.to_string()),
            },
        }
    }

    /// Keeps in the store only what `known` (and the turns of `stack`) still name.
    fn compact(&mut self, stack: &[Turn]) {
        let mut kept = HashSet::new();
        let named = self.known.values().chain(stack.iter().flat_map(|turn| {
            turn.before
                .values()
                .chain(turn.after.iter().flat_map(BTreeMap::values))
        }));
        for content in named {
            if let Content::Stored { blob, .. } = content {
                kept.insert(*blob);
            }
        }
        self.store.retain(&kept);
    }

    fn close(self) {
        drop(self.watch);
        self.store.close();
    }
}

/// `path` relative to `workspace`, `/`-separated; `None` outside it, for the root itself or
/// a name that is not UTF-8.
fn relative_of(workspace: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(workspace).ok()?.to_str()?;
    (!relative.is_empty()).then(|| relative.replace(std::path::MAIN_SEPARATOR, "/"))
}

fn unwatched(err: &str) -> String {
    format!(
        "the workspace cannot be watched for /undo ({err}): /undo reverts what the file tools \
         change, not what commands change"
    )
}

/// A turn's start, running in the background until a tool that may change files needs it.
#[derive(Clone, Default)]
pub(crate) struct PendingCheckpoint(Option<Arc<Pending>>);

struct Pending {
    checkpoints: Arc<Checkpoints>,
    /// The turn's start; `None` for a task inside a turn.
    begun: Option<Begun>,
    /// Whether the notes were said (once per turn).
    told: AtomicBool,
}

impl PendingCheckpoint {
    /// Waits until the turn's start is read and the recorder runs: a tool that may change
    /// files is about to run. Notes and failures are `warning`s of the task, once.
    pub async fn ready(&self, events: &crate::events::TaskEvents) {
        let Some(pending) = &self.0 else {
            return;
        };
        let note = match &pending.begun {
            Some(begun) => begun.clone().await,
            None => None,
        };
        let started = pending.checkpoints.start_in_background().await;
        if pending.told.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(note) = note {
            events.warning(note);
        }
        match started {
            Err(problem) => events.warning(format!(
                "the working tree could not be recorded for /undo: {problem}"
            )),
            Ok(Some(note)) if !pending.checkpoints.start_told.swap(true, Ordering::SeqCst) => {
                events.warning(note);
            }
            Ok(_) => {}
        }
    }
}
