//! What a person's built-in commands changed, told to the model (seed 004 section 4: a
//! built-in command's result is written back into the session as text). `/undo`,
//! `/model <name>`, `/mode <name>` (and `/plan`, `/default`, `/auto-edit`, `/yolo`) and
//! `/permissions <preset>` or `/permissions remove <id>` each leave a user message in the
//! conversation they were typed in, in a fixed structure: the command, then what it
//! answered. The model's next request carries it, and so does the session's snapshot, so a
//! session taken up again knows it too. Commands that only show something (`/help`,
//! `/tools`, `/mode` alone) leave nothing.
//!
//! `/undo` is told rather than cut from the history: the conversation keeps what the model
//! did and learns that the files went back (`/rewind` is the command that cuts the history).
//!
//! A note is recorded at once when no task of the conversation runs or waits; otherwise
//! before the input of its next task, since a message now could fall between a running
//! turn's tool call and its result. A conversation with an empty history gets none: its
//! next request has nothing a note could correct (the system prompt is built for the mode
//! and the model of the moment), and a session with nothing said stays empty.

use coder_protocol::{ChatMessage, ConversationId};

use super::Session;
use crate::sync::lock;

/// Opens and closes the message that records a person's built-in command.
const COMMAND_OPEN: &str = "<command-result>";
const COMMAND_CLOSE: &str = "</command-result>";

/// The message a person's built-in command leaves in the conversation.
pub(crate) fn command_note(command: &str, result: &str) -> ChatMessage {
    ChatMessage::user(format!(
        "{COMMAND_OPEN}\nThe person ran {command} themselves; coder answered:\n{}\n{COMMAND_CLOSE}",
        result.trim_end()
    ))
}

impl Session {
    /// Records in `conversation` that the person ran `command` and what it answered (see the
    /// module's doc). A conversation that is gone is left alone: the command's answer is
    /// still shown.
    pub(super) fn tell_model(&self, conversation: ConversationId, command: &str, result: &str) {
        let Ok(held) = self.conversation(conversation) else {
            return;
        };
        let note = command_note(command.trim(), result);
        // Under the session's lock, so no task of the conversation starts meanwhile.
        let state = self.state();
        if state.queue.holds(conversation) {
            lock(&held).pending_notes.push(note);
            return;
        }
        {
            let mut held = lock(&held);
            if held.history.is_empty() {
                return;
            }
            held.record([note]);
            self.services.journal.persist(&mut held);
        }
        drop(state);
        self.warn_if_unjournaled(conversation);
    }
}
