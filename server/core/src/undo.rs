//! `/undo` (seed 004 section 4): every file change of the last user turn is reverted, the
//! model's writes and patches, files the turn created and what its commands changed.
//!
//! At the start of each task that brings a person's input, the working tree is recorded as a
//! git tree, built through a private copy of the index (`GIT_INDEX_FILE`) into a private
//! object store (`GIT_OBJECT_DIRECTORY`, a `coder-undo-*` directory in the system's
//! temporary directory, which confined commands see read-only), with the repository's own
//! objects as an alternate so unchanged files cost nothing. Nothing is written into the
//! repository: no object, no ref (a push or a mirror clone carries nothing of it), and the
//! person's index, branches, stash and working tree are never touched. The trees are held
//! in memory; the store is removed when the session ends (or by the next session, when one
//! was killed). When the session goes idle (the turn is over, with every task it led to),
//! the tree is recorded again as the turn's end. `/undo` reverts what the turn changed,
//! from its start to its end: changed and deleted files get their recorded content, files
//! it created are removed. A file changed again since the turn ended (by the person, or a
//! later `!command`) is left as it is and named, so `/undo` never throws away work that
//! was not the turn's. Files git ignores are not recorded, so changes to them stay; nor are
//! untracked or changed files over [`MAX_RECORDED_FILE`] (a dataset, a build artefact):
//! `/undo` leaves them and says so. Past [`MAX_STORE_BYTES`] the store starts again empty
//! and the turns recorded so far are forgotten, with a warning.
//! Only in a git repository; elsewhere `/undo` says so.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::sandbox::temp_dir::SessionTempDir;
use crate::sync::lock;

/// Untracked or changed files larger than this are not recorded.
pub(crate) const MAX_RECORDED_FILE: u64 = 16 << 20;
/// The most a session's private object store holds before it starts again.
pub(crate) const MAX_STORE_BYTES: u64 = 512 << 20;
/// How the private object stores are named in the system's temporary directory.
const STORE_PREFIX: &str = "coder-undo-";
/// The largest index copied for a checkpoint (git's own index of a large repository is
/// tens of MiB).
const MAX_INDEX_BYTES: u64 = 512 << 20;

/// git in `dir`, run so that nothing the repository configures runs a program: no
/// filesystem monitor, no hooks, no signing, no external diff or text conversion, and
/// neither the system's nor the person's global configuration (a repository's own
/// configuration still applies; its filter programs are refused by the callers).
pub(crate) fn safe_git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        // Checkpoints are coder's commits, whoever the person is.
        .env("GIT_AUTHOR_NAME", "coder")
        .env("GIT_AUTHOR_EMAIL", "coder@localhost")
        .env("GIT_COMMITTER_NAME", "coder")
        .env("GIT_COMMITTER_EMAIL", "coder@localhost")
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "commit.gpgSign=false",
            "-c",
            "diff.external=",
        ]);
    command
}

/// One turn's trees: at its start, and at its end once the session went idle after it;
/// the paths (relative to the repository's top) that were too large to record in either.
struct Turn {
    start: String,
    end: Option<String>,
    unrecorded: BTreeSet<String>,
}

/// A tree of the working tree, and what was left out of it.
struct Recorded {
    tree: String,
    unrecorded: BTreeSet<String>,
}

/// Where the workspace's repository keeps what checkpoints need, found once.
#[derive(Clone)]
struct Repository {
    /// The git directory (its `index`).
    git_dir: PathBuf,
    /// The repository's object store, an alternate of the private one.
    objects: PathBuf,
    /// The work tree's top, where the trees' paths start.
    top: PathBuf,
    /// The workspace relative to the top (`""` or `sub/dir/`).
    prefix: String,
}

/// The checkpoints of one session, newest last.
pub(crate) struct Checkpoints {
    workspace: PathBuf,
    repository: Mutex<Option<Repository>>,
    /// The private object store, made at the first record.
    store: Mutex<Option<SessionTempDir>>,
    stack: Mutex<Vec<Turn>>,
}

impl Checkpoints {
    pub fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            repository: Mutex::default(),
            store: Mutex::default(),
            stack: Mutex::default(),
        }
    }

    /// Runs git in the workspace with `index` as its index file, when given, and the
    /// private object store when it exists.
    fn git(&self, args: &[&str], index: Option<&Path>) -> Result<String, String> {
        self.git_in(&self.workspace, args, index, None)
    }

    fn git_in(
        &self,
        dir: &Path,
        args: &[&str],
        index: Option<&Path>,
        input: Option<&[u8]>,
    ) -> Result<String, String> {
        let mut command = safe_git(dir);
        command.args(args);
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        let objects = lock(&self.repository).as_ref().map(|r| r.objects.clone());
        if let (Some(store), Some(objects)) = (lock(&self.store).as_ref(), objects) {
            command
                .env("GIT_OBJECT_DIRECTORY", store.path())
                .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects);
        }
        command
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|err| format!("cannot run git: {err}"))?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write;
            stdin
                .write_all(input)
                .map_err(|err| format!("cannot run git: {err}"))?;
        }
        let output = child
            .wait_with_output()
            .map_err(|err| format!("cannot run git: {err}"))?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// Refuses a repository whose configuration names filter programs: recording or
    /// restoring files would run them (a shipped `.git/config` is the repository author's).
    fn check_filters(&self) -> Result<(), String> {
        match self.git(&["config", "--get-regexp", r"^filter\."], None) {
            Ok(found) if !found.is_empty() => Err(
                "this repository's git configuration names filter programs, which recording the working tree would run; /undo is off here"
                    .to_owned(),
            ),
            _ => Ok(()),
        }
    }

    /// The workspace's repository: a `.git` in it or in a folder above it (looked for
    /// without starting git, since every turn asks), confirmed and described by git once.
    fn repository(&self) -> Option<Repository> {
        if let Some(known) = lock(&self.repository).clone() {
            return Some(known);
        }
        let marked = self
            .workspace
            .ancestors()
            .any(|dir| dir.join(".git").symlink_metadata().is_ok());
        if !marked {
            return None;
        }
        let found = self
            .git(
                &[
                    "rev-parse",
                    "--is-inside-work-tree",
                    "--absolute-git-dir",
                    "--git-path",
                    "objects",
                    "--show-toplevel",
                    "--show-prefix",
                ],
                None,
            )
            .ok()?;
        let mut lines = found.lines();
        if lines.next()? != "true" {
            return None;
        }
        let git_dir = PathBuf::from(lines.next()?);
        let objects = self.workspace.join(lines.next()?);
        let top = PathBuf::from(lines.next()?);
        let prefix = lines.next().unwrap_or_default().to_owned();
        let repository = Repository {
            git_dir,
            objects,
            top,
            prefix,
        };
        *lock(&self.repository) = Some(repository.clone());
        Some(repository)
    }

    /// Makes the private object store when there is none; past [`MAX_STORE_BYTES`] it is
    /// made again empty and the recorded turns are forgotten, which the returned note says.
    fn store(&self) -> Result<Option<String>, String> {
        let mut store = lock(&self.store);
        let mut note = None;
        if let Some(current) = store.as_ref()
            && size_of(current.path()) > MAX_STORE_BYTES
        {
            if let Some(full) = store.take()
                && let Err(err) = full.close()
            {
                tracing::debug!("cannot remove a checkpoint store: {err}");
            }
            lock(&self.stack).clear();
            note = Some(format!(
                "the records of earlier turns for /undo passed {} MiB and were dropped; /undo \
                 reverts from this turn on",
                MAX_STORE_BYTES >> 20
            ));
        }
        if store.is_none() {
            let made = SessionTempDir::make_named(&std::env::temp_dir(), STORE_PREFIX)
                .map_err(|err| format!("cannot make a store for checkpoints: {err}"))?;
            *store = Some(made);
        }
        Ok(note)
    }

    /// Removes the private object store (the session ends).
    pub fn close(&self) {
        lock(&self.stack).clear();
        if let Some(store) = lock(&self.store).take()
            && let Err(err) = store.close()
        {
            tracing::debug!("cannot remove the checkpoint store: {err}");
        }
    }

    /// The tree of the working tree now (tracked and untracked files git does not ignore,
    /// but those over [`MAX_RECORDED_FILE`]), through a private copy of the person's index
    /// (so unchanged files are not hashed again).
    fn tree_now(&self, repository: &Repository) -> Result<Recorded, String> {
        let private = tempfile::NamedTempFile::new().map_err(|err| err.to_string())?;
        // The repository's index: a regular file of a bounded size (a link to `/dev/zero`
        // would fill the disk), copied through the bounded reader.
        let copied = crate::bounded::open(&repository.git_dir.join("index"), MAX_INDEX_BYTES)
            .and_then(|mut index| std::io::copy(&mut index, &mut private.as_file()));
        match copied {
            Ok(_) => {}
            // A repository without commits or an index yet: an empty one.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::remove_file(private.path()).map_err(|err| err.to_string())?;
            }
            Err(err) => return Err(err.to_string()),
        }
        let listed = self.git(
            &[
                "ls-files",
                "-z",
                "--others",
                "--modified",
                "--exclude-standard",
            ],
            Some(private.path()),
        )?;
        let mut pathspecs = b".\0".to_vec();
        let mut unrecorded = BTreeSet::new();
        for path in listed.split('\0').filter(|path| !path.is_empty()) {
            let large = std::fs::symlink_metadata(self.workspace.join(path))
                .is_ok_and(|meta| meta.is_file() && meta.len() > MAX_RECORDED_FILE);
            if large {
                pathspecs.extend_from_slice(b":(exclude,literal)");
                pathspecs.extend_from_slice(path.as_bytes());
                pathspecs.push(0);
                unrecorded.insert(format!("{}{path}", repository.prefix));
            }
        }
        self.git_in(
            &self.workspace,
            &[
                "add",
                "--all",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            Some(private.path()),
            Some(&pathspecs),
        )?;
        let tree = self.git(&["write-tree"], Some(private.path()))?;
        Ok(Recorded { tree, unrecorded })
    }

    /// Records the working tree as the start of a turn. Nothing outside a git repository.
    /// `Ok(Some(note))`: recorded, with something to tell the person.
    pub fn record(&self) -> Result<Option<String>, String> {
        let Some(repository) = self.repository() else {
            return Ok(None);
        };
        self.check_filters()?;
        let note = self.store()?;
        let recorded = self.tree_now(&repository)?;
        lock(&self.stack).push(Turn {
            start: recorded.tree,
            end: None,
            unrecorded: recorded.unrecorded,
        });
        Ok(note)
    }

    /// Forgets the turns recorded so far: a session was taken up, and `/undo` has nothing
    /// to revert until its next turn starts.
    pub fn forget(&self) {
        lock(&self.stack).clear();
    }

    /// Records the working tree as the end of the last turn, once: the session is idle, the
    /// turn and every task it led to are over.
    pub fn record_end(&self) -> Result<(), String> {
        if lock(&self.stack)
            .last()
            .is_none_or(|turn| turn.end.is_some())
        {
            return Ok(());
        }
        let Some(repository) = self.repository() else {
            return Ok(());
        };
        self.check_filters()?;
        let recorded = self.tree_now(&repository)?;
        if let Some(turn) = lock(&self.stack).last_mut()
            && turn.end.is_none()
        {
            turn.end = Some(recorded.tree);
            turn.unrecorded.extend(recorded.unrecorded);
        }
        Ok(())
    }

    /// The paths that differ from tree `from` to tree `to`, with git's status letter.
    fn changes(&self, from: &str, to: &str) -> Result<Vec<(String, String)>, String> {
        let listed = self.git(
            &["diff-tree", "-r", "--no-renames", "--name-status", from, to],
            None,
        )?;
        Ok(listed
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(status, path)| (status.to_owned(), path.to_owned()))
            .collect())
    }

    /// Puts the working tree back as the last checkpoint recorded it; returns what was done,
    /// for people.
    pub fn undo(&self) -> Result<String, String> {
        let Some(repository) = self.repository() else {
            return Err(
                "/undo works in a git repository, and this workspace is not one".to_owned(),
            );
        };
        self.check_filters()?;
        let Some((tree, end, mut unrecorded)) = lock(&self.stack).last().map(|turn| {
            (
                turn.start.clone(),
                turn.end.clone(),
                turn.unrecorded.clone(),
            )
        }) else {
            return Err("nothing to undo: no turn has started in this session".to_owned());
        };
        // Paths in trees are the repository's; the workspace may be a folder inside it.
        let top = repository.top.clone();
        let now = self.tree_now(&repository)?;
        unrecorded.extend(now.unrecorded);
        // A turn whose end was not recorded (its recording failed) is taken to end now.
        let end = end.unwrap_or_else(|| now.tree.clone());
        let since: std::collections::HashSet<String> = self
            .changes(&end, &now.tree)?
            .into_iter()
            .map(|(_, path)| path)
            .collect();
        let mut restore = Vec::new();
        let mut remove = Vec::new();
        let mut kept = Vec::new();
        // From the turn's end back to its start: `D`, the file did not exist then.
        for (status, path) in self.changes(&end, &tree)? {
            if since.contains(&path) {
                kept.push(path);
            } else if unrecorded.contains(&path) {
                // Recorded at one end only: what is on disk may be newer than either.
            } else if status == "D" {
                remove.push(path);
            } else {
                restore.push(path);
            }
        }
        if !restore.is_empty() {
            let private = tempfile::NamedTempFile::new().map_err(|err| err.to_string())?;
            std::fs::remove_file(private.path()).map_err(|err| err.to_string())?;
            self.git_in(&top, &["read-tree", &tree], Some(private.path()), None)?;
            let mut args = vec!["checkout-index", "--force", "--"];
            args.extend(restore.iter().map(String::as_str));
            self.git_in(&top, &args, Some(private.path()), None)?;
        }
        for path in &remove {
            let full = top.join(path);
            std::fs::remove_file(&full).map_err(|err| format!("cannot remove {path}: {err}"))?;
        }
        // Done: the checkpoint goes, so a second /undo reverts the turn before.
        lock(&self.stack).pop();
        let mut notes = String::new();
        if !kept.is_empty() {
            notes.push_str(&format!(
                "; kept {}: changed again since the turn ended",
                kept.join(", ")
            ));
        }
        if !unrecorded.is_empty() {
            let names: Vec<&str> = unrecorded.iter().map(String::as_str).collect();
            notes.push_str(&format!(
                "; left {}: over {} MiB, not recorded",
                names.join(", "),
                MAX_RECORDED_FILE >> 20
            ));
        }
        if restore.is_empty() && remove.is_empty() {
            return Ok(format!("the last turn changed no file to undo{notes}"));
        }
        let mut said = Vec::new();
        if !restore.is_empty() {
            said.push(format!("restored {}", restore.join(", ")));
        }
        if !remove.is_empty() {
            said.push(format!("removed {}", remove.join(", ")));
        }
        Ok(format!("undid the last turn: {}{notes}", said.join("; ")))
    }
}

/// The bytes the files below `dir` hold (a store of loose objects: two levels).
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![(dir.to_path_buf(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() && depth < 3 {
                pending.push((entry.path(), depth + 1));
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}

/// A record being taken on a blocking thread, until it is awaited.
type Recording = Option<tokio::task::JoinHandle<Result<Option<String>, String>>>;

/// The working tree being recorded at the start of a turn, while the model is asked: no
/// tool runs before it is done ([`PendingCheckpoint::wait`]), so the record holds the tree
/// as the turn found it, and the model's first token does not wait for git.
#[derive(Clone, Default)]
pub(crate) struct PendingCheckpoint(Arc<Mutex<Recording>>);

impl PendingCheckpoint {
    /// Starts recording the start of a turn on a blocking thread.
    pub fn start(checkpoints: Arc<Checkpoints>) -> Self {
        let handle = tokio::task::spawn_blocking(move || checkpoints.record());
        Self(Arc::new(Mutex::new(Some(handle))))
    }

    /// Waits for the record, once; a failure is a `warning` of the task.
    pub async fn wait(&self, events: &crate::events::TaskEvents) {
        let Some(handle) = lock(&self.0).take() else {
            return;
        };
        match handle.await {
            Ok(Err(problem)) => events.warning(format!(
                "the working tree could not be recorded for /undo: {problem}"
            )),
            Ok(Ok(Some(note))) => events.warning(note),
            Ok(Ok(None)) | Err(_) => {}
        }
    }
}
