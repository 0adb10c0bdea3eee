//! `/undo` (seed 004 section 4): every file change of the last user turn is reverted, the
//! model's writes and patches, files the turn created and what its commands changed.
//!
//! At the start of each task that brings a person's input, the working tree is recorded as a
//! git commit on a private ref, `refs/coder/checkpoints/<session>/<n>`, built through a
//! private copy of the index (`GIT_INDEX_FILE`): the person's index, branches, stash and
//! working tree are never touched. When the session goes idle (the turn is over, with every
//! task it led to), the tree is recorded again as the turn's end. `/undo` reverts what the
//! turn changed, from its start to its end: changed and deleted files get their recorded
//! content, files it created are removed. A file changed again since the turn ended (by the
//! person, or a later `!command`) is left as it is and named, so `/undo` never throws away
//! work that was not the turn's. Files git ignores are not recorded, so changes to them stay.
//! Only in a git repository; elsewhere `/undo` says so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::sync::lock;

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

/// One turn's trees: at its start, and at its end once the session went idle after it.
struct Turn {
    start: String,
    end: Option<String>,
}

/// The checkpoints of one session, newest last.
pub(crate) struct Checkpoints {
    workspace: PathBuf,
    /// The ref prefix of this session's checkpoints.
    prefix: Mutex<String>,
    stack: Mutex<Vec<Turn>>,
}

impl Checkpoints {
    pub fn new(workspace: &Path, session: impl std::fmt::Display) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            prefix: Mutex::new(format!("refs/coder/checkpoints/{session}")),
            stack: Mutex::default(),
        }
    }

    /// Runs git in the workspace with `index` as its index file, when given.
    fn git(&self, args: &[&str], index: Option<&Path>) -> Result<String, String> {
        self.git_in(&self.workspace, args, index)
    }

    fn git_in(&self, dir: &Path, args: &[&str], index: Option<&Path>) -> Result<String, String> {
        let mut command = safe_git(dir);
        command.args(args);
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        let output = command
            .output()
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

    /// Whether the workspace is inside a git work tree: a `.git` in it or in a folder above
    /// it (looked for without starting git, since every turn asks), confirmed by git.
    fn in_repository(&self) -> bool {
        let marked = self
            .workspace
            .ancestors()
            .any(|dir| dir.join(".git").symlink_metadata().is_ok());
        marked
            && self
                .git(&["rev-parse", "--is-inside-work-tree"], None)
                .is_ok_and(|answer| answer == "true")
    }

    /// The tree of the working tree now (tracked and untracked files git does not ignore),
    /// through a private copy of the person's index (so unchanged files are not hashed
    /// again).
    fn tree_now(&self) -> Result<String, String> {
        let git_dir = PathBuf::from(self.git(&["rev-parse", "--absolute-git-dir"], None)?);
        let private = tempfile::NamedTempFile::new().map_err(|err| err.to_string())?;
        // The repository's index: a regular file of a bounded size (a link to `/dev/zero`
        // would fill the disk), copied through the bounded reader.
        let copied = crate::bounded::open(&git_dir.join("index"), MAX_INDEX_BYTES)
            .and_then(|mut index| std::io::copy(&mut index, &mut private.as_file()));
        match copied {
            Ok(_) => {}
            // A repository without commits or an index yet: an empty one.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::remove_file(private.path()).map_err(|err| err.to_string())?;
            }
            Err(err) => return Err(err.to_string()),
        }
        self.git(&["add", "--all", "--", "."], Some(private.path()))?;
        self.git(&["write-tree"], Some(private.path()))
    }

    /// Records the working tree as the start of a turn. Nothing outside a git repository.
    pub fn record(&self) -> Result<(), String> {
        if !self.in_repository() {
            return Ok(());
        }
        self.check_filters()?;
        let tree = self.tree_now()?;
        let commit = self.git(&["commit-tree", &tree, "-m", "coder checkpoint"], None)?;
        let mut stack = lock(&self.stack);
        let name = format!("{}/{}", lock(&self.prefix), stack.len());
        self.git(&["update-ref", &name, &commit], None)?;
        stack.push(Turn {
            start: tree,
            end: None,
        });
        Ok(())
    }

    /// Forgets the turns recorded so far: `session` was taken up, and `/undo` has nothing
    /// to revert until its next turn starts (recorded under its own refs).
    pub fn forget(&self, session: impl std::fmt::Display) {
        lock(&self.stack).clear();
        *lock(&self.prefix) = format!("refs/coder/checkpoints/{session}");
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
        self.check_filters()?;
        let tree = self.tree_now()?;
        if let Some(turn) = lock(&self.stack).last_mut()
            && turn.end.is_none()
        {
            turn.end = Some(tree);
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
        if !self.in_repository() {
            return Err(
                "/undo works in a git repository, and this workspace is not one".to_owned(),
            );
        }
        self.check_filters()?;
        let Some((tree, end)) = lock(&self.stack)
            .last()
            .map(|turn| (turn.start.clone(), turn.end.clone()))
        else {
            return Err("nothing to undo: no turn has started in this session".to_owned());
        };
        // Paths in trees are the repository's; the workspace may be a folder inside it.
        let top = PathBuf::from(self.git(&["rev-parse", "--show-toplevel"], None)?);
        let now = self.tree_now()?;
        // A turn whose end was not recorded (its recording failed) is taken to end now.
        let end = end.unwrap_or_else(|| now.clone());
        let since: std::collections::HashSet<String> = self
            .changes(&end, &now)?
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
            } else if status == "D" {
                remove.push(path);
            } else {
                restore.push(path);
            }
        }
        if !restore.is_empty() {
            let private = tempfile::NamedTempFile::new().map_err(|err| err.to_string())?;
            std::fs::remove_file(private.path()).map_err(|err| err.to_string())?;
            self.git_in(&top, &["read-tree", &tree], Some(private.path()))?;
            let mut args = vec!["checkout-index", "--force", "--"];
            args.extend(restore.iter().map(String::as_str));
            self.git_in(&top, &args, Some(private.path()))?;
        }
        for path in &remove {
            let full = top.join(path);
            std::fs::remove_file(&full).map_err(|err| format!("cannot remove {path}: {err}"))?;
        }
        // Done: the checkpoint goes, so a second /undo reverts the turn before.
        let mut stack = lock(&self.stack);
        stack.pop();
        let name = format!("{}/{}", lock(&self.prefix), stack.len());
        drop(stack);
        let _ = self.git(&["update-ref", "-d", &name], None);
        let kept = if kept.is_empty() {
            String::new()
        } else {
            format!(
                "; kept {}: changed again since the turn ended",
                kept.join(", ")
            )
        };
        if restore.is_empty() && remove.is_empty() {
            return Ok(format!("the last turn changed no file to undo{kept}"));
        }
        let mut said = Vec::new();
        if !restore.is_empty() {
            said.push(format!("restored {}", restore.join(", ")));
        }
        if !remove.is_empty() {
            said.push(format!("removed {}", remove.join(", ")));
        }
        Ok(format!("undid the last turn: {}{kept}", said.join("; ")))
    }
}

/// A record being taken on a blocking thread, until it is awaited.
type Recording = Option<tokio::task::JoinHandle<Result<(), String>>>;

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
        if let Ok(Err(problem)) = handle.await {
            events.warning(format!(
                "the working tree could not be recorded for /undo: {problem}"
            ));
        }
    }
}
