//! A conversation: its history and running totals.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use coder_protocol::{ChatMessage, ConversationId, Mode, TodoItem, TokenUsage};

/// One conversation of a session. The history is OpenAI Chat Completions messages and is
/// always a valid request: every assistant tool call has a matching tool result.
#[derive(Debug)]
pub(crate) struct Conversation {
    pub id: ConversationId,
    pub history: Vec<ChatMessage>,
    pub total_usage: TokenUsage,
    pub last_active_at: SystemTime,
    pub mode: Mode,
    /// Shared with the `todo_write` tool while a task runs.
    pub todos: Arc<Mutex<Vec<TodoItem>>>,
}

impl Conversation {
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            todos: Arc::default(),
            id: ConversationId::new(),
            history: Vec::new(),
            total_usage: TokenUsage::default(),
            last_active_at: SystemTime::now(),
        }
    }

    pub fn record(&mut self, messages: impl IntoIterator<Item = ChatMessage>) {
        self.history.extend(messages);
        self.last_active_at = SystemTime::now();
    }
}
