//! `todo_write`: the conversation's todo list, replaced as a whole on each call.

use async_trait::async_trait;
use coder_protocol::{EventMsg, TodoItem, TodoStatus};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput};
use crate::sync::lock;

pub struct TodoWriteTool;

#[derive(Deserialize)]
struct Args {
    todos: Vec<TodoItem>,
}

/// The tool's name.
pub const TODO_WRITE: &str = "todo_write";

/// The todo list `history` leaves: the list of its last `todo_write` call that could be
/// read (each call replaces the list whole), or none. A rewind sets it back so.
pub(crate) fn todos_left_by(history: &[coder_protocol::ChatMessage]) -> Vec<TodoItem> {
    history
        .iter()
        .rev()
        .flat_map(|message| message.tool_calls.iter().rev())
        .filter(|call| call.function.name == TODO_WRITE)
        .find_map(|call| serde_json::from_str::<Args>(&call.function.arguments).ok())
        .map(|args| args.todos)
        .unwrap_or_default()
}

#[async_trait]
impl Tool for TodoWriteTool {
    fn name(&self) -> &str {
        TODO_WRITE
    }

    fn description(&self) -> &str {
        "Keep a todo list for multi-step work. Each call replaces the whole list. Items have \
         `content` and `status` (`pending`, `in_progress`, `completed`); keep exactly one \
         item `in_progress` while working, and mark items completed as soon as they are done. \
         The user sees the list."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false,
                    },
                },
            },
            "required": ["todos"],
            "additionalProperties": false,
        })
    }

    fn stays_inside_session(&self) -> bool {
        true
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Think
    }

    fn is_read_only(&self) -> bool {
        false
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        *lock(&ctx.todos) = args.todos.clone();
        let done = args
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        let mut output = ToolOutput::text(format!(
            "Todo list updated: {done} of {} done.",
            args.todos.len()
        ));
        output.event = Some(EventMsg::TodoUpdated { todos: args.todos });
        Ok(output)
    }
}
