//! Recording a task's input: the user's message, then the system reminders it brings
//! (`@` references, the first input's reminders), with a `file_reference` event.

use std::sync::{Arc, Mutex};

use coder_protocol::{EventMsg, InputItem};

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
        events: &TaskEvents,
    ) {
        let Some(message) = user_message(input) else {
            return;
        };
        let first_input = is_first_input(&lock(conversation).history);
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
        };
        let mut conversation = lock(conversation);
        conversation.record([message]);
        conversation.record(reminders.message());
        drop(conversation);
        if !expanded.references.is_empty() {
            events.emit(EventMsg::FileReference {
                references: expanded.references,
            });
        }
    }
}
