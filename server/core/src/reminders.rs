//! System reminders (seed 001 `buildAdditionalReminders`): context the engine adds to a
//! user's input, recorded as a user message right after it, each part wrapped in
//! `<system-reminder>` tags so the model, the history and session snapshots show them as
//! what they are, not as the person's words.
//!
//! Which reminders an input gets:
//! - the `@` references' attachments, on every input ([`crate::references`]);
//! - on the first input of a conversation: the todo reminder when `todo_write` is offered,
//!   and the rules reminder when rules files apply (their text is in the system prompt; the
//!   reminder names them and says they come before the model's defaults);
//! - in plan mode, once per entry into it: the plan reminder. Whether it is due is a flag on
//!   the conversation (`Conversation::plan_reminder_due`), set when
//!   the conversation is created in plan mode or switched into it and saved in the session
//!   snapshot, so a resumed conversation neither repeats nor loses it.

use std::path::PathBuf;

use coder_protocol::{Attachment, ChatMessage, Role};

/// The opening tag of a reminder; a user message that starts with it holds reminders.
pub(crate) const OPEN: &str = "<system-reminder>";
const CLOSE: &str = "</system-reminder>";

/// On the first input of a conversation offered `todo_write`.
pub(crate) const TODO_REMINDER: &str = "Your todo list is empty. For work of several steps, \
     use the todo_write tool to plan it and to keep track of your progress: mark one item \
     in_progress at a time and each completed as soon as it is done. For a single, simple step, \
     skip the list. Do not mention this reminder to the user.";

/// The plan reminder, on the first input after the conversation entered plan mode.
pub(crate) const PLAN_REMINDER: &str = "Plan mode is on. Research with read-only tools and do \
     not change anything: edits, new files and commands that modify the workspace are refused. \
     When the plan is ready, call the exit_plan_mode tool with the whole plan (markdown) to ask \
     the user to approve it; do not ask for approval in a message. Do not mention this reminder \
     to the user.";

/// How the message that replaces a cleared history begins ([`plan_handoff`]); a history
/// holding it is past its first input.
const PLAN_HANDOFF: &str =
    "The user approved this plan and cleared the context to carry it out. Implement it now.";

/// The one message of a history cleared to carry out `plan` ("clear context and start"):
/// the plan, then the first input's reminders (the conversation starts over, but the
/// message counts as its first input, see [`is_first_input`]).
pub(crate) fn plan_handoff(plan: &str, todo_offered: bool, rules: &[PathBuf]) -> ChatMessage {
    let mut text = format!("{PLAN_HANDOFF}\n\n{plan}");
    for reminder in first_input_reminders(todo_offered, rules) {
        text.push('\n');
        text.push_str(&wrap(&reminder));
    }
    ChatMessage::user(text)
}

/// The rules reminder: the rules files' paths, one a line.
pub(crate) fn rules_reminder(paths: &[PathBuf]) -> Option<String> {
    if paths.is_empty() {
        return None;
    }
    let list: Vec<String> = paths
        .iter()
        .map(|path| format!("- {}", path.display()))
        .collect();
    Some(format!(
        "These rules files apply to this workspace; their text is in the system prompt under \
         # Rules. Their instructions take precedence over your default behaviour (the user's \
         own requests still come first):\n{}",
        list.join("\n")
    ))
}

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
    /// The rules files that apply (told on the first input).
    pub rules: Vec<PathBuf>,
    /// The conversation entered plan mode since its last input.
    pub plan_entered: bool,
    /// The input is a complex task that started a todo list (`requireTodoForComplex`).
    pub complex_task: bool,
}

/// Told when a complex request started a todo list.
pub(crate) const COMPLEX_TASK_REMINDER: &str = "This request has several parts, so a todo list was started with the request as its one item, in progress. Before you begin, replace it with the request's steps using todo_write, and keep the list current as you work.";

impl InputReminders {
    /// The user message holding every reminder, in the seed's order (references, then the
    /// first input's, then plan mode's); `None` when there are none.
    pub fn message(self) -> Option<ChatMessage> {
        let mut parts: Vec<String> = self.references;
        if self.first_input {
            // A complex task's list is not empty: its reminder says what it holds, and the
            // empty list's (which also says a simple step may skip it) would contradict it.
            let todo_offered = self.todo_offered && !self.complex_task;
            parts.extend(first_input_reminders(todo_offered, &self.rules));
        }
        if self.plan_entered {
            parts.push(PLAN_REMINDER.to_owned());
        }
        if self.complex_task {
            parts.push(COMPLEX_TASK_REMINDER.to_owned());
        }
        if parts.is_empty() && self.images.is_empty() {
            return None;
        }
        let text: Vec<String> = parts.iter().map(|part| wrap(part)).collect();
        let mut message = ChatMessage::user(text.join("\n"));
        message.attachments = self.images;
        Some(message)
    }
}

/// The first input's reminders: the todo reminder when `todo_write` is offered, then the
/// rules reminder when rules files apply. Also what a plan carried into a cleared context
/// gets (the turn's `ControlSignal::RebuildContext`).
pub(crate) fn first_input_reminders(todo_offered: bool, rules: &[PathBuf]) -> Vec<String> {
    let mut parts = Vec::new();
    if todo_offered {
        parts.push(TODO_REMINDER.to_owned());
    }
    parts.extend(rules_reminder(rules));
    parts
}

/// `text` as one reminder.
pub(crate) fn wrap(text: &str) -> String {
    format!("{OPEN}\n{text}\n{CLOSE}")
}

/// Whether an input recorded now would be the conversation's first: nothing was answered
/// yet, no reminders were given and the history was not replaced by a plan (whose message
/// carried the first input's reminders, even when the model call after it failed). Read
/// from the history, so it holds for a conversation taken up from a snapshot too.
pub(crate) fn is_first_input(history: &[ChatMessage]) -> bool {
    !history.iter().any(|message| {
        message.role == Role::Assistant
            || (message.role == Role::User
                && message
                    .content
                    .as_deref()
                    .is_some_and(|text| text.starts_with(OPEN) || text.starts_with(PLAN_HANDOFF)))
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
    fn a_complex_first_input_is_not_also_told_its_list_is_empty() {
        let first = InputReminders {
            first_input: true,
            todo_offered: true,
            complex_task: true,
            ..InputReminders::default()
        };
        let text = first.message().and_then(|m| m.content).unwrap_or_default();
        assert_eq!(text, wrap(COMPLEX_TASK_REMINDER));
    }

    #[test]
    fn the_first_input_names_the_rules_files_after_the_todo_reminder() {
        let rules = vec![
            PathBuf::from("/w/AGENTS.md"),
            PathBuf::from("/w/app/CLAUDE.md"),
        ];
        let first = InputReminders {
            first_input: true,
            todo_offered: true,
            rules: rules.clone(),
            ..InputReminders::default()
        };
        let text = first.message().and_then(|m| m.content).unwrap_or_default();
        let rules_text = rules_reminder(&rules).unwrap_or_default();
        assert!(
            rules_text.ends_with("\n- /w/AGENTS.md\n- /w/app/CLAUDE.md"),
            "{rules_text}"
        );
        assert!(rules_text.contains("take precedence over your default behaviour"));
        assert_eq!(
            text,
            format!("{}\n{}", wrap(TODO_REMINDER), wrap(&rules_text))
        );
        let later = InputReminders {
            rules,
            ..InputReminders::default()
        };
        assert!(later.message().is_none());
        assert_eq!(rules_reminder(&[]), None);
    }

    #[test]
    fn the_plan_reminder_comes_last_and_only_when_plan_mode_was_entered() {
        let entered = InputReminders {
            references: vec!["ref".into()],
            plan_entered: true,
            ..InputReminders::default()
        };
        let text = entered
            .message()
            .and_then(|m| m.content)
            .unwrap_or_default();
        assert_eq!(text, format!("{}\n{}", wrap("ref"), wrap(PLAN_REMINDER)));
        let not_entered = InputReminders::default();
        assert!(not_entered.message().is_none());
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

    #[test]
    fn a_history_cleared_for_a_plan_is_past_its_first_input() {
        // Even with no reminder in it, and before the model answered it.
        let handoff = plan_handoff("1. Do it.", false, &[]);
        assert_eq!(
            handoff.content.as_deref(),
            Some(format!("{PLAN_HANDOFF}\n\n1. Do it.").as_str())
        );
        assert!(!is_first_input(&[handoff]));
        let rules = [PathBuf::from("AGENTS.md")];
        let text = plan_handoff("1. Do it.", true, &rules)
            .content
            .unwrap_or_default();
        let named = wrap(&rules_reminder(&rules).unwrap_or_default());
        assert!(text.ends_with(&named), "{text}");
        assert!(text.contains(&wrap(TODO_REMINDER)), "{text}");
    }
}
