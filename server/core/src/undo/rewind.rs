//! Rewinds: a conversation goes back to one of its points (a person's input), and the files
//! go back to what they held then: every turn of that conversation from that point on is
//! undone at once, newest first, so each file gets what it held before the earliest of
//! those turns that changed it, and files they created are removed (with the folders they
//! made, when left empty).
//!
//! What was not those turns' work is kept and named, as `/undo` keeps it:
//! - a file changed since the last of those turns that changed it (by the person, a
//!   `!command`, anything outside the engine's turns);
//! - a file changed between two of those turns by something else than them: putting its
//!   earliest content back would throw that change away;
//! - a file a later turn of another conversation of the session changed: the checkpoints
//!   are the session's, the points a conversation's, and rewinding one conversation never
//!   undoes another's work.
//!
//! Files that were never recorded (outside a git repository, past the size bound, links)
//! are left and named too; so are the turns the session holds no record of (those before a
//! resume or a fork, or dropped past the store's bound).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use coder_protocol::ConversationId;
use coder_protocol::methods::{KeptFile, KeptReason, LineChange};
use rustix::fs::FileType;

use super::{Checkpoints, Content, Inner, MAX_RECORDED_FILE, Phase, Recorder, Turn, close, git};
use crate::sync::lock;

/// What a rewind did to the files (or would do, for a dry run).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct FileRewind {
    /// Files put back to what they held before the point.
    pub restored: Vec<String>,
    /// Files created since the point, removed, and the folders made since that were left
    /// empty (with a trailing `/`).
    pub removed: Vec<String>,
    /// Files left as they are, each with why.
    pub kept: Vec<KeptFile>,
    /// Why the files were not recorded at all, when they were not.
    pub unrecorded: Option<String>,
    /// What else the person should know, as sentences.
    pub notes: Vec<String>,
    /// The lines putting each restored or removed file back adds and removes.
    pub line_changes: Vec<LineChange>,
}

/// What the turns being undone did to one file.
struct Track {
    /// What it held before the earliest of them that changed it.
    before: Content,
    /// What the latest of them left in it.
    end: Content,
    /// Why it stays as it is, once something else changed it in between.
    kept: Option<(KeptReason, String)>,
}

impl Checkpoints {
    /// Puts the files back as they were before `point` of `conversation`: the turns of that
    /// conversation from `point` on are undone (see the module's doc) and, unless
    /// `dry_run`, taken off the stack. `held` are the points from `point` on that the
    /// conversation's history holds; those without a record are named.
    pub fn rewind(
        &self,
        conversation: ConversationId,
        point: usize,
        held: &[usize],
        dry_run: bool,
    ) -> FileRewind {
        let mut inner = lock(&self.inner);
        let own = |turn: &Turn| {
            turn.owner
                .is_some_and(|owner| owner.conversation == conversation && owner.point >= point)
        };
        let mut result = FileRewind::default();
        if let Some(why) = self.unrecorded(&inner.phase) {
            result.unrecorded = Some(why);
        } else {
            let missing: Vec<String> = held
                .iter()
                .filter(|held| {
                    !inner.stack.iter().any(|turn| {
                        turn.owner.is_some_and(|owner| {
                            owner.conversation == conversation && owner.point == **held
                        })
                    })
                })
                .map(ToString::to_string)
                .collect();
            if !missing.is_empty() {
                result.notes.push(format!(
                    "the file changes after point(s) {} were not recorded in this session (made \
                     before it was resumed or forked, or dropped past the records' bound) and \
                     stay as they are",
                    missing.join(", ")
                ));
            }
            let Inner { phase, stack } = &mut *inner;
            if let Phase::Recording(recorder) = phase {
                // The last turn, left open, ends here (as `/undo` ends it).
                let open = stack.last_mut().filter(|turn| turn.after.is_none());
                let fresh = recorder.sync(open);
                if let Some(turn) = stack.last_mut().filter(|turn| turn.after.is_none()) {
                    close(phase, turn, &fresh);
                }
            }
            if let (Phase::Recording(recorder), Some(first)) =
                (&mut *phase, stack.iter().position(own))
            {
                recorder.rewind(&stack[first..], &own, dry_run, &mut result);
            }
        }
        if !dry_run {
            inner.stack.retain(|turn| !own(turn));
        }
        result
    }

    /// Drops the records of the turns of `conversation` from `point` on (unless `dry_run`)
    /// and leaves every file as it is: a rewind of the history alone.
    pub fn forget_since(
        &self,
        conversation: ConversationId,
        point: usize,
        dry_run: bool,
    ) -> FileRewind {
        if !dry_run {
            lock(&self.inner).stack.retain(|turn| {
                !turn
                    .owner
                    .is_some_and(|owner| owner.conversation == conversation && owner.point >= point)
            });
        }
        FileRewind {
            notes: vec![
                "the files were left as they are: only the conversation went back".to_owned(),
            ],
            ..FileRewind::default()
        }
    }

    /// Why nothing of the files is recorded in `phase`, when it is not.
    fn unrecorded(&self, phase: &Phase) -> Option<String> {
        let not_git = "the workspace is not a git repository, and file changes are recorded \
                       only in one";
        match phase {
            Phase::NoRepository => Some(not_git.to_owned()),
            Phase::Off(reason) => Some(reason.clone()),
            Phase::Unkept => Some("this session runs one task and records no files".to_owned()),
            Phase::Closed => Some("the session has ended".to_owned()),
            Phase::Waiting | Phase::Starting if git::discover(&self.workspace).is_none() => {
                Some(not_git.to_owned())
            }
            Phase::Waiting | Phase::Starting | Phase::Recording(_) => None,
        }
    }
}

impl Recorder {
    /// Undoes the turns of `turns` that are `own`, newest first, into `result`; only says
    /// what it would do when `dry_run`.
    fn rewind(
        &mut self,
        turns: &[Turn],
        own: &dyn Fn(&Turn) -> bool,
        dry_run: bool,
        result: &mut FileRewind,
    ) {
        let files = self.track(turns, own);
        for (relative, track) in files {
            for content in [&track.before, &track.end] {
                if let Content::Unrecorded(why) = content {
                    result.kept.push(KeptFile {
                        path: relative.clone(),
                        reason: KeptReason::NotRecorded,
                        detail: why.why(),
                    });
                }
            }
            if matches!(track.before, Content::Unrecorded(_))
                || matches!(track.end, Content::Unrecorded(_))
            {
                continue;
            }
            if let Some((reason, detail)) = track.kept {
                result.kept.push(KeptFile {
                    path: relative,
                    reason,
                    detail,
                });
                continue;
            }
            if self.same(&track.before, &track.end) {
                continue;
            }
            if !self.holds_now(&relative, &track.end) {
                result.kept.push(KeptFile {
                    path: relative,
                    reason: KeptReason::ChangedSince,
                    detail: "changed since the conversation's last turn that changed it".to_owned(),
                });
                continue;
            }
            let lines = self.line_change(&relative, &track.before, &track.end);
            let put = if dry_run {
                Ok(!matches!(track.before, Content::Absent))
            } else {
                self.put_back(&relative, &track.before)
            };
            if put.is_ok() {
                result.line_changes.extend(lines);
            }
            match put {
                Ok(true) => result.restored.push(relative),
                Ok(false) => result.removed.push(relative),
                Err(err) => result.kept.push(KeptFile {
                    path: relative,
                    reason: KeptReason::Failed,
                    detail: format!("could not be put back: {err}"),
                }),
            }
        }
        let undone = turns.iter().filter(|turn| own(turn));
        let mut folders = BTreeSet::new();
        let mut missed = false;
        for turn in undone {
            folders.extend(turn.made_folders.iter().cloned());
            missed |= turn.missed;
        }
        // Deepest first, when nothing is left in them (a file the person put there since
        // keeps its folder).
        for folder in folders.iter().rev() {
            let gone = if dry_run {
                self.would_be_empty(folder, &result.removed)
            } else {
                self.dir.remove_empty_dir(Path::new(folder)).is_ok()
            };
            if gone {
                result.removed.push(format!("{folder}/"));
            }
        }
        if missed {
            result.notes.push(
                "some changes of those turns came too fast to be seen and were not reverted"
                    .to_owned(),
            );
        }
    }

    /// Whether `folder` would be left empty once the paths in `removed` (files, and folders
    /// ending in `/`) are gone.
    fn would_be_empty(&self, folder: &str, removed: &[String]) -> bool {
        let Ok(names) = self.dir.entries(Path::new(folder)) else {
            return false;
        };
        names.iter().all(|name| {
            let path = format!("{folder}/{name}");
            removed
                .iter()
                .any(|gone| *gone == path || gone.strip_suffix('/') == Some(path.as_str()))
        })
    }

    /// What the `own` turns of `turns` did to each file they changed, and what changed it
    /// in between.
    fn track(&self, turns: &[Turn], own: &dyn Fn(&Turn) -> bool) -> BTreeMap<String, Track> {
        let mut files: BTreeMap<String, Track> = BTreeMap::new();
        let empty = BTreeMap::new();
        for turn in turns {
            let mine = own(turn);
            let after = turn.after.as_ref().unwrap_or(&empty);
            for (relative, before) in &turn.before {
                let end = after.get(relative).unwrap_or(before);
                match files.get_mut(relative) {
                    // Another conversation's change before any of these turns is part of
                    // what the file held before them.
                    None if !mine => {}
                    None => {
                        files.insert(
                            relative.clone(),
                            Track {
                                before: before.clone(),
                                end: end.clone(),
                                kept: None,
                            },
                        );
                    }
                    Some(track) if mine => {
                        if track.kept.is_none() && !self.same(before, &track.end) {
                            track.kept = Some((
                                KeptReason::ChangedSince,
                                "changed between the conversation's turns, not by them".to_owned(),
                            ));
                        }
                        track.end = end.clone();
                    }
                    Some(track) => {
                        if track.kept.is_none() && !self.same(before, end) {
                            let by = turn.owner.map_or_else(
                                || "another conversation".to_owned(),
                                |owner| format!("conversation {}", owner.conversation),
                            );
                            track.kept = Some((
                                KeptReason::OtherConversation,
                                format!("changed since by a turn of {by}"),
                            ));
                        }
                    }
                }
            }
        }
        files
    }

    /// Whether `relative` holds `content` now (read, not recorded).
    /// The lines going from `end` (what the file holds now) back to `before` adds and
    /// removes; `None` when either cannot be read or is not text.
    fn line_change(&self, relative: &str, before: &Content, end: &Content) -> Option<LineChange> {
        let text = |content: &Content| match self.bytes_of(content) {
            Ok(None) => Some(String::new()),
            Ok(Some((bytes, _))) => String::from_utf8(bytes).ok(),
            Err(_) => None,
        };
        let (old, new) = (text(end)?, text(before)?);
        let diff = similar::TextDiff::from_lines(&old, &new);
        let (mut added, mut removed) = (0, 0);
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Insert => added += 1,
                similar::ChangeTag::Delete => removed += 1,
                similar::ChangeTag::Equal => {}
            }
        }
        Some(LineChange {
            path: relative.to_owned(),
            added,
            removed,
        })
    }

    fn holds_now(&self, relative: &str, content: &Content) -> bool {
        let path = Path::new(relative);
        let now = match self.dir.file_type(path) {
            Ok(None | Some(FileType::Directory)) => None,
            Ok(Some(FileType::RegularFile)) => match self.dir.read(path, MAX_RECORDED_FILE) {
                Ok(Some(bytes)) => {
                    let executable = self
                        .dir
                        .permissions(path)
                        .is_ok_and(|bits| bits & 0o111 != 0);
                    Some((bytes, executable))
                }
                Ok(None) => None,
                Err(_) => return false,
            },
            Ok(Some(_)) | Err(_) => return false,
        };
        self.bytes_of(content).is_ok_and(|expected| expected == now)
    }
}
