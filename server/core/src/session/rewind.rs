//! Points, rewinds and forks: every input a person sent a conversation is a point it can go
//! back to. A rewind takes the conversation back to before that input (its history cut
//! there, the snapshot written) and the files to what they held then ([`crate::undo`]); a
//! fork starts a new saved session from that point and leaves the original as it was.
//!
//! The model is told nothing more: its next request carries the history as it is left.

use std::sync::Arc;

use coder_protocol::methods::{ForkResult, KeptFile, RewindPoint, RewindResult};
use coder_protocol::{ConversationId, SessionId};

use super::Session;
use crate::error::{EngineError, ErrorKind};
use crate::snapshot::Save;
use crate::sync::lock;
use crate::undo::FileRewind;

/// The most characters of a point's first line a listing shows.
const POINT_TEXT_CHARS: usize = 100;

impl Session {
    /// The points of `conversation` its history holds, oldest first.
    pub fn points(&self, conversation: ConversationId) -> Result<Vec<RewindPoint>, EngineError> {
        let held = self.conversation(conversation)?;
        let held = lock(&held);
        let len = held.history.len();
        Ok(held
            .points
            .iter()
            .filter_map(|input| {
                let message = held.history.get(input.at)?;
                let first = message
                    .content
                    .as_deref()
                    .unwrap_or_default()
                    .trim()
                    .lines()
                    .next()
                    .unwrap_or_default();
                let mut text: String = first.chars().take(POINT_TEXT_CHARS).collect();
                if text.len() < first.len() {
                    text.push('…');
                }
                Some(RewindPoint {
                    point: input.point,
                    text,
                    messages: len - input.at,
                })
            })
            .collect())
    }

    /// Takes `conversation` back to before `point` (see the module's doc); with `dry_run`,
    /// says what it would do and changes nothing. Refused while a task runs or waits.
    /// With `files` false only the history goes back: every file stays as it is, and the
    /// records of the turns cut away are dropped (a later rewind leaves their changes).
    pub async fn rewind(
        self: &Arc<Self>,
        conversation: ConversationId,
        point: usize,
        dry_run: bool,
        files: bool,
    ) -> Result<RewindResult, EngineError> {
        let held = self.conversation(conversation)?;
        let (at, since) = self.point_in(conversation, point)?;
        self.refuse_while_busy("rewind")?;
        let checkpoints = self.services.checkpoints.clone();
        let files = tokio::task::spawn_blocking(move || {
            if files {
                checkpoints.rewind(conversation, point, &since, dry_run)
            } else {
                checkpoints.forget_since(conversation, point, dry_run)
            }
        })
        .await
        .map_err(|err| EngineError::internal(format!("the rewind stopped: {err}")))?;
        let messages_removed = if dry_run {
            lock(&held).history.len().saturating_sub(at)
        } else {
            let (cut, todos) = self.change(&held, |held| {
                let cut = held.cut_before(at);
                let todos = crate::tools::todos_left_by(&held.history);
                *lock(&held.todos) = todos.clone();
                (cut, todos)
            });
            self.services.hub.emit(
                conversation,
                None,
                coder_protocol::EventMsg::TodoUpdated { todos },
            );
            if let Err(err) = self.save(Save::Again).await {
                self.services.hub.emit(
                    conversation,
                    None,
                    coder_protocol::EventMsg::Warning {
                        message: err.to_string(),
                    },
                );
            }
            cut
        };
        Ok(rewound(point, dry_run, messages_removed, files))
    }

    /// Starts a new saved session from `point` of `conversation` and goes on in it (see
    /// the module's doc). The session it leaves is saved first, and nothing of it is
    /// written after: its file stays as it is.
    pub async fn fork(
        self: &Arc<Self>,
        conversation: ConversationId,
        point: usize,
    ) -> Result<ForkResult, EngineError> {
        self.conversation(conversation)?;
        let (at, _) = self.point_in(conversation, point)?;
        self.refuse_while_busy("fork")?;
        if self.services.saver.folder().is_none() {
            return Err(EngineError::invalid_params(
                "saving sessions is switched off, and a fork is a new saved session",
            ));
        }
        let original = self.session_id();
        // The original on disk holds everything it did, whatever its journal held.
        self.save(Save::Again).await?;
        let fork = SessionId::new();
        let (_, mut file) = self.snapshot();
        file.fork_as(fork, conversation, at);
        self.services.saver.write_other(&file)?;
        let messages = self.resume(fork)?;
        self.services.saver.drop_earlier();
        Ok(ForkResult {
            session_id: fork,
            forked_from: original,
            messages,
            text: format!(
                "forked session {original} at point {point} into session {fork}, which goes \
                 on from here; {original} is saved as it was, and no file was touched"
            ),
        })
    }

    /// Where `point` is in `conversation`'s history, and the points from it on.
    fn point_in(
        &self,
        conversation: ConversationId,
        point: usize,
    ) -> Result<(usize, Vec<usize>), EngineError> {
        let held = self.conversation(conversation)?;
        let held = lock(&held);
        let at = held
            .point_at(point)
            .filter(|at| {
                held.history
                    .get(*at)
                    .is_some_and(|message| message.role == coder_protocol::Role::User)
            })
            .ok_or_else(|| {
                let held: Vec<String> = held
                    .points
                    .iter()
                    .map(|input| input.point.to_string())
                    .collect();
                EngineError::invalid_params(if held.is_empty() {
                    format!("no point {point}: the conversation holds no input of a person")
                } else {
                    format!(
                        "no point {point}: the conversation's history holds points {} (a \
                         compaction or a clear takes earlier ones away)",
                        held.join(", ")
                    )
                })
            })?;
        let since = held
            .points
            .iter()
            .filter(|input| input.point >= point)
            .map(|input| input.point)
            .collect();
        Ok((at, since))
    }

    /// Refuses `what` while a task runs or waits.
    fn refuse_while_busy(&self, what: &str) -> Result<(), EngineError> {
        if self.state().queue.at_rest() {
            return Ok(());
        }
        Err(EngineError::new(
            ErrorKind::Busy,
            format!(
                "a task is running or queued: {what} once the session is idle, or interrupt it first"
            ),
        ))
    }
}

/// The answer to a rewind, its text included.
fn rewound(
    point: usize,
    dry_run: bool,
    messages_removed: usize,
    files: FileRewind,
) -> RewindResult {
    let FileRewind {
        restored,
        removed,
        kept,
        unrecorded,
        notes,
        line_changes,
    } = files;
    let mut said = Vec::new();
    let (verb, restore, remove, keep) = if dry_run {
        (
            "would rewind",
            "would restore",
            "would remove",
            "would keep",
        )
    } else {
        ("rewound", "restored", "removed", "kept")
    };
    said.push(format!(
        "{verb} the conversation to before point {point}: {messages_removed} message(s) {} the history; the model's next request carries the history as it is left",
        if dry_run { "would leave" } else { "left" }
    ));
    match &unrecorded {
        Some(why) => said.push(format!(
            "files were not recorded ({why}), so none {}",
            if dry_run { "would change" } else { "changed" }
        )),
        None if restored.is_empty() && removed.is_empty() && kept.is_empty() => {
            said.push(format!(
                "no file {}",
                if dry_run { "would change" } else { "changed" }
            ));
        }
        None => {}
    }
    if !restored.is_empty() {
        said.push(format!("{restore} {}", restored.join(", ")));
    }
    if !removed.is_empty() {
        said.push(format!("{remove} {}", removed.join(", ")));
    }
    if !kept.is_empty() {
        let kept: Vec<String> = kept
            .iter()
            .map(|KeptFile { path, detail, .. }| format!("{path} ({detail})"))
            .collect();
        said.push(format!("{keep} {}", kept.join(", ")));
    }
    said.extend(notes);
    RewindResult {
        dry_run,
        messages_removed,
        restored,
        removed,
        kept,
        files_recorded: unrecorded.is_none(),
        line_changes,
        text: said.join("; "),
    }
}
