//! Recording a task's input: the user's message, then the system reminders it brings
//! (`@` references, the first input's reminders, plan mode's), with a `file_reference`
//! event.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use coder_protocol::{EventMsg, InputItem, Mode};

use super::Session;
use crate::conversation::{Conversation, user_message};
use crate::events::TaskEvents;
use crate::reminders::{InputReminders, is_first_input};
use crate::sync::lock;

impl Session {
    /// Records `input` as the user's message and, right after it, its reminders. Nothing
    /// is recorded for an empty input (a continuation).
    pub(super) async fn record_input(
        &self,
        conversation: &Arc<Mutex<Conversation>>,
        input: &[InputItem],
        todo_offered: bool,
        rules: Vec<PathBuf>,
        events: &TaskEvents,
    ) {
        let Some(message) = user_message(input) else {
            return;
        };
        let (first_input, plan_entered) = {
            let conversation = lock(conversation);
            (
                is_first_input(&conversation.history),
                conversation.plan_reminder_due && conversation.mode == Mode::Plan,
            )
        };
        let workspace = self.config().workspace.clone();
        let documents = self.state().documents.clone();
        let items = input.to_vec();
        let expanded = tokio::task::spawn_blocking(move || {
            crate::references::expand(&workspace, documents.as_deref(), &items)
        })
        .await
        .unwrap_or_default();
        let reminders = InputReminders {
            references: expanded.reminders,
            images: expanded.images,
            first_input,
            todo_offered,
            rules,
            plan_entered,
        };
        self.change(conversation, |conversation| {
            if plan_entered {
                conversation.plan_reminder_due = false;
            }
            conversation.record([message]);
            conversation.record(reminders.message());
        });
        if !expanded.references.is_empty() {
            events.emit(EventMsg::FileReference {
                references: expanded.references,
            });
        }
    }
}
