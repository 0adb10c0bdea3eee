//! System reminders (seed 001 `buildAdditionalReminders`): context the engine adds to a
//! user's input, recorded as a user message right after it, each part wrapped in
//! `<system-reminder>` tags so the model, the history and session snapshots show them as
//! what they are, not as the person's words.
//!
//! Which reminders an input gets:
//! - the `@` references' attachments, on every input ([`crate::references`]);
//! - on the first input of a conversation: the todo reminder when `todo_write` is offered;
//!   the rules reminder belongs here too (not written yet);
//! - in plan mode, once per entry into it: the plan reminder (not written yet).

use coder_protocol::{Attachment, ChatMessage, Role};

/// The opening tag of a reminder; a user message that starts with it holds reminders.
pub(crate) const OPEN: &str = "<system-reminder>";
const CLOSE: &str = "</system-reminder>";

/// On the first input of a conversation offered `todo_write`.
pub(crate) const TODO_REMINDER: &str = "Your todo list is empty. For work of several steps, \
     use the todo_write tool to plan it and to keep track of your progress: mark one item \
     in_progress at a time and each completed as soon as it is done. For a single, simple step, \
     skip the list. Do not mention this reminder to the user.";

/// What one input's reminders are made from.
#[derive(Debug, Default)]
pub(crate) struct InputReminders {
    /// The `@` references' reminder texts, in order.
    pub references: Vec<String>,
    /// Images the references attached.
    pub images: Vec<Attachment>,
    /// This is the conversation's first input.
    pub first_input: bool,
    /// `todo_write` is offered to this task.
    pub todo_offered: bool,
}

impl InputReminders {
    /// The user message holding every reminder, in the seed's order (references, then the
    /// first input's); `None` when there are none.
    pub fn message(self) -> Option<ChatMessage> {
        let mut parts: Vec<String> = self.references;
        if self.first_input && self.todo_offered {
            parts.push(TODO_REMINDER.to_owned());
        }
        // The rules reminder (first input) and the plan reminder (plan mode) go here.
        if parts.is_empty() && self.images.is_empty() {
            return None;
        }
        let text: Vec<String> = parts.iter().map(|part| wrap(part)).collect();
        let mut message = ChatMessage::user(text.join("\n"));
        message.attachments = self.images;
        Some(message)
    }
}

/// `text` as one reminder.
pub(crate) fn wrap(text: &str) -> String {
    format!("{OPEN}\n{text}\n{CLOSE}")
}

/// Whether an input recorded now would be the conversation's first: nothing was answered
/// yet and no reminders were given. Read from the history, so it holds for a conversation
/// taken up from a snapshot too.
pub(crate) fn is_first_input(history: &[ChatMessage]) -> bool {
    !history.iter().any(|message| {
        message.role == Role::Assistant
            || (message.role == Role::User
                && message
                    .content
                    .as_deref()
                    .is_some_and(|text| text.starts_with(OPEN)))
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn first_input_gets_the_todo_reminder_only_when_offered() {
        let first = InputReminders {
            first_input: true,
            todo_offered: true,
            ..InputReminders::default()
        };
        let text = first.message().and_then(|m| m.content).unwrap_or_default();
        assert_eq!(text, wrap(TODO_REMINDER));
        let not_offered = InputReminders {
            first_input: true,
            ..InputReminders::default()
        };
        assert!(not_offered.message().is_none());
    }

    #[test]
    fn a_history_with_reminders_or_replies_is_past_its_first_input() {
        assert!(is_first_input(&[ChatMessage::user("instructions")]));
        assert!(!is_first_input(&[
            ChatMessage::user("hi"),
            ChatMessage::user(wrap("x"))
        ]));
        assert!(!is_first_input(&[ChatMessage::assistant(
            "hello".into(),
            String::new(),
            Vec::new()
        )]));
    }
}
