//! Recording a task's input: the user's message, then the system reminders it brings
//! (`@` references, the first input's reminders, plan mode's), with a `file_reference`
//! event.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use coder_protocol::{ChatMessage, EventMsg, InputItem, Mode, TodoItem, TodoStatus};

use super::Session;
use crate::conversation::{Conversation, user_message};
use crate::events::TaskEvents;
use crate::reminders::{InputReminders, is_first_input};
use crate::sync::lock;

impl Session {
    /// What `input`'s `@` references attach, read off the runtime's threads.
    async fn expand_references(&self, input: &[InputItem]) -> crate::references::Expanded {
        if !crate::references::any(input) {
            return crate::references::Expanded::default();
        }
        let workspace = self.config().workspace.clone();
        let documents = self.state().documents.clone();
        let items = input.to_vec();
        tokio::task::spawn_blocking(move || {
            crate::references::expand(&workspace, documents.as_deref(), &items)
        })
        .await
        .unwrap_or_default()
    }

    /// What the history records of input steered into a running task: the person's message
    /// and what its `@` references attach, as for any input (the first input's and plan
    /// mode's reminders belong to a task's start, not to a steer).
    pub(super) async fn steer_messages(&self, input: &[InputItem]) -> Vec<ChatMessage> {
        let Some(message) = user_message(input) else {
            return Vec::new();
        };
        let expanded = self.expand_references(input).await;
        let reminders = InputReminders {
            references: expanded.reminders,
            images: expanded.images,
            first_input: false,
            todo_offered: false,
            rules: Vec::new(),
            plan_entered: false,
            complex_task: false,
        };
        std::iter::once(message)
            .chain(reminders.message())
            .collect()
    }

    /// Seed 004 section 7: with `requireTodoForComplex`, a complex request (`complexity.rs`)
    /// in a conversation whose todos are all done (or that has none) starts a todo list with
    /// the request as its one item, in progress. Returns the list it started.
    fn todos_for_complex_task(
        &self,
        conversation: &Mutex<Conversation>,
        input: &[InputItem],
        todo_offered: bool,
    ) -> Option<Vec<TodoItem>> {
        if !self.config().require_todo_for_complex || !todo_offered {
            return None;
        }
        let text = crate::conversation::input_text(input)?;
        crate::complexity::complexity(&text)?;
        let todos = lock(conversation).todos.clone();
        let mut todos = lock(&todos);
        if todos
            .iter()
            .any(|todo| todo.status != TodoStatus::Completed)
        {
            return None;
        }
        let first = text.trim().lines().next().unwrap_or_default();
        let mut content: String = first.chars().take(120).collect();
        if content.len() < first.len() {
            content.push('…');
        }
        *todos = vec![TodoItem {
            content,
            status: TodoStatus::InProgress,
        }];
        Some(todos.clone())
    }

    /// Records `input` as the user's message and, right after it, its reminders; a
    /// person's input (`point`) is the conversation's next point. Nothing is recorded for
    /// an empty input (a continuation).
    pub(super) async fn record_input(
        &self,
        conversation: &Arc<Mutex<Conversation>>,
        input: &[InputItem],
        point: bool,
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
        let expanded = self.expand_references(input).await;
        let started = self.todos_for_complex_task(conversation, input, todo_offered);
        let reminders = InputReminders {
            references: expanded.reminders,
            images: expanded.images,
            first_input,
            todo_offered,
            rules,
            plan_entered,
            complex_task: started.is_some(),
        };
        self.change(conversation, |conversation| {
            if plan_entered {
                conversation.plan_reminder_due = false;
            }
            let mut messages = vec![message];
            messages.extend(reminders.message());
            if point {
                conversation.record_input(messages);
            } else {
                conversation.record(messages);
            }
        });
        if let Some(todos) = started {
            events.emit(EventMsg::TodoUpdated { todos });
        }
        if !expanded.references.is_empty() {
            events.emit(EventMsg::FileReference {
                references: expanded.references,
            });
        }
    }
}
