//! The one event stream of the product.
//!
//! The engine emits [`Event`]s; every front door forwards them unchanged. A task always
//! begins with `task_started` and ends with exactly one of `task_complete` or `turn_aborted`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::{ConversationId, TaskId, TodoItem, TokenUsage};

/// One engine event with its envelope.
///
/// `seq` increases strictly within a session. A front door whose reader falls behind may
/// merge consecutive deltas ([`Event::absorb`]), which leaves gaps; no text is lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub seq: u64,
    pub conversation_id: ConversationId,
    /// The task the event belongs to; `None` only for events outside any task.
    pub task_id: Option<TaskId>,
    #[serde(flatten)]
    pub msg: EventMsg,
}

impl Event {
    /// Joins `next` into `self` when both are text deltas (or both thinking deltas) of the
    /// same conversation and task: consecutive deltas of one kind in one task belong to one
    /// message, which ends with `agent_message` (or `agent_reasoning`), never merged. The
    /// joined delta carries the later `seq`. Returns whether `next` was absorbed; a front door
    /// that falls behind its reader uses it so what waits is bounded by the number of
    /// distinct events, not by the length of the stream.
    pub fn absorb(&mut self, next: &Event) -> bool {
        if self.conversation_id != next.conversation_id || self.task_id != next.task_id {
            return false;
        }
        match (&mut self.msg, &next.msg) {
            (
                EventMsg::AgentMessageDelta { delta: held },
                EventMsg::AgentMessageDelta { delta },
            )
            | (
                EventMsg::AgentReasoningDelta { delta: held },
                EventMsg::AgentReasoningDelta { delta },
            ) => {
                held.push_str(delta);
                self.seq = next.seq;
                true
            }
            _ => false,
        }
    }
}

/// What happened. Serialized with a snake_case `type` tag next to camelCase fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EventMsg {
    /// A task began running.
    TaskStarted { model: String },
    /// A chunk of assistant text, as it streams.
    AgentMessageDelta { delta: String },
    /// A chunk of model thinking, as it streams.
    AgentReasoningDelta { delta: String },
    /// The whole text of a finished assistant message.
    AgentMessage { message: String },
    /// The whole thinking of a finished assistant message.
    AgentReasoning { text: String },
    /// The model's reply asked for these tool calls, in its order (emitted once per reply
    /// that has any, before its `token_count`; each call then starts, asks or fails).
    ToolCallsRequested { calls: Vec<RequestedToolCall> },
    /// A tool call passed validation and is about to run.
    ToolCallStarted {
        call_id: String,
        tool_name: String,
        arguments: Value,
    },
    /// A tool call finished; `output` is what the model receives.
    ToolCallCompleted {
        call_id: String,
        tool_name: String,
        output: String,
        duration_ms: u64,
        /// For tools that changed files: a unified diff of the change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        diff: Option<String>,
    },
    /// A tool call was refused or failed; `error` is what the model receives.
    ToolCallFailed {
        call_id: String,
        tool_name: String,
        error: String,
        duration_ms: u64,
    },
    /// A tool call waits for a person's decision. What the person is shown must be what
    /// runs: `command` and `diff` carry it whole, never shortened.
    PermissionRequested {
        request_id: String,
        call_id: String,
        tool_name: String,
        arguments: Value,
        /// One line saying what would run and why the person is asked.
        summary: String,
        options: Vec<String>,
        /// For `bash`: the whole command that would run, every line of it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        command: Option<String>,
        /// For tools that change files (`write`, `edit`, `apply_patch`): the change as a
        /// unified diff, computed without writing anything. The call then writes exactly
        /// this change, or fails if the files changed meanwhile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        diff: Option<String>,
    },
    /// Usage of the last model response and the conversation's running total.
    TokenCount {
        last: TokenUsage,
        total: TokenUsage,
        context_window: Option<u64>,
    },
    /// The task ended normally (or after an `error`).
    TaskComplete {
        last_agent_message: Option<String>,
        /// Set when the task stopped because it reached the step limit (`maxSteps`) with
        /// work left: the limit, in model calls. Absent when the model finished.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        step_limit: Option<u32>,
    },
    /// The task ended early.
    TurnAborted { reason: AbortReason },
    /// The session's engine state changed.
    StateChanged { state: EngineState },
    /// The conversation's todo list changed (the whole new list).
    TodoUpdated { todos: Vec<TodoItem> },
    /// Something went wrong but the task goes on (a retry, a skipped malformed chunk).
    Warning { message: String },
    /// The task cannot go on; a `task_complete` follows.
    Error { message: String },
}

/// One tool call of a reply, as the model wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestedToolCall {
    pub call_id: String,
    pub tool_name: String,
    /// The arguments as JSON; arguments that are not valid JSON come as a string.
    pub arguments: Value,
}

/// Why a task ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AbortReason {
    /// Another task took its place (an interrupting conversation tool).
    Replaced,
    /// A person or client interrupted it.
    Interrupted,
}

/// What the session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineState {
    Idle,
    Running,
    WaitingForPermission,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use uuid::Uuid;

    #[test]
    fn events_use_camel_case_fields_and_snake_case_tags() {
        let event = Event {
            seq: 7,
            conversation_id: ConversationId(Uuid::nil()),
            task_id: Some(TaskId(Uuid::nil())),
            msg: EventMsg::TaskComplete {
                last_agent_message: Some("done".into()),
                step_limit: None,
            },
        };
        let wire = serde_json::to_value(&event).unwrap();
        assert_eq!(
            wire,
            json!({
                "seq": 7,
                "conversationId": "00000000-0000-0000-0000-000000000000",
                "taskId": "00000000-0000-0000-0000-000000000000",
                "type": "task_complete",
                "lastAgentMessage": "done",
            })
        );
        let back: Event = serde_json::from_value(wire).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn abort_reasons_are_snake_case() {
        let msg = EventMsg::TurnAborted {
            reason: AbortReason::Interrupted,
        };
        assert_eq!(
            serde_json::to_value(msg).unwrap(),
            json!({"type": "turn_aborted", "reason": "interrupted"})
        );
    }
}
