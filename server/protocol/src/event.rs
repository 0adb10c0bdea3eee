//! The one event stream of the product.
//!
//! The engine emits [`Event`]s; every front door forwards them unchanged. A task that runs
//! begins with `task_started` and ends with exactly one of `task_complete` or `turn_aborted`;
//! a task queued and dropped before it ran gets one `task_dropped` instead. So every task id
//! that `send` returned ends with exactly one of the [`TASK_END_EVENTS`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::{
    ConversationId, ErrorKind, FileReference, Mode, TaskId, TodoItem, TokenUsage, ToolKind,
    ToolLocation,
};

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
    /// Joins `next` into `self` when both are text deltas (or both thinking deltas, or both
    /// output deltas of one call's stream) of the same conversation and task: consecutive
    /// deltas of one kind in one task belong to one message, which ends with
    /// `agent_message` (or `agent_reasoning`, or the call's end), never merged. The
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
            (
                EventMsg::ToolCallOutputDelta {
                    call_id: held_call,
                    stream: held_stream,
                    delta: held,
                },
                EventMsg::ToolCallOutputDelta {
                    call_id,
                    stream,
                    delta,
                },
            ) if held_call == call_id && held_stream == stream => {
                held.push_str(delta);
                self.seq = next.seq;
                true
            }
            _ => false,
        }
    }
}

/// Which of a running tool's outputs a delta comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    /// What a command printed to its standard output.
    Stdout,
    /// What a command printed to its standard error.
    Stderr,
    /// What an MCP tool's server reported of its progress (`notifications/progress`): one
    /// line per report, its message and its progress (`Downloading (3/10)`, `3/10` without
    /// a message, `42` without a total).
    Progress,
}

/// What happened. Serialized with a snake_case `type` tag next to camelCase fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[allow(
    clippy::large_enum_variant,
    reason = "`permission_requested` carries all a person is shown (about 330 bytes) and is \
              rare; boxing it would change the wire shape's derive for every door, and the \
              engine keeps at most 100,000 events for replay (33 MB at this size)"
)]
pub enum EventMsg {
    /// A task began running.
    TaskStarted {
        model: String,
        /// The text of the input that started it: the user's input, or the message another
        /// conversation sent with `conv_create`/`conv_send` (images are left out). Absent for
        /// a continuation, whose input is the result of its own handoff call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        input: Option<String>,
    },
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
    /// One assistant reply is over, whole: after its `agent_message`, `agent_reasoning` and
    /// `tool_calls_requested`, before its `token_count`. Every model call of a task that
    /// streamed anything ends with one, so a client needs no other event to know a reply's
    /// end. `interrupted`: the task was interrupted while the reply streamed; `text` and
    /// `reasoning` are what had arrived (and what the history keeps), `toolCalls` is empty.
    ReplyComplete {
        text: String,
        reasoning: String,
        tool_calls: Vec<RequestedToolCall>,
        interrupted: bool,
    },
    /// A tool call passed validation and is about to run.
    ToolCallStarted {
        call_id: String,
        tool_name: String,
        arguments: Value,
        /// What the call does; a client shows it by this, not by `toolName`.
        kind: ToolKind,
        /// The paths the call reads or changes, absolute (empty when it names none).
        locations: Vec<ToolLocation>,
        /// What it does, in a few words, from its kind and its command or paths (`` Run
        /// `cargo test` ``, `Read /abs/src/main.rs`), as `permission_requested` says it.
        title: String,
    },
    /// What a running command printed since the last delta (`bash`, a person's `!command`),
    /// or the progress an MCP tool's server reported (`stream` `progress`), so a client can
    /// show a live terminal: whole lines where the command ends them, one line per progress
    /// report, with secrets coder knows redacted and invalid UTF-8 replaced. Bounded per
    /// call (4 MiB, then one last delta saying the rest is not streamed); every delta of a
    /// call comes before its `tool_call_completed` or `tool_call_failed`, whose `output`
    /// stays what the model receives.
    ToolCallOutputDelta {
        call_id: String,
        stream: OutputStream,
        delta: String,
    },
    /// A tool call finished; `output` is what the model receives.
    ToolCallCompleted {
        call_id: String,
        tool_name: String,
        output: String,
        /// One line for people: the call's key argument and its result (`src/main.rs → 120
        /// lines`), control characters neutralised, at most 120 characters.
        summary: String,
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
        /// One line for people: the call's key argument and the first line of the error.
        summary: String,
        duration_ms: u64,
    },
    /// A tool call waits for a person's decision. What the person is shown must be what
    /// runs: `command` and `diff` carry it whole, never shortened.
    PermissionRequested {
        request_id: String,
        call_id: String,
        tool_name: String,
        arguments: Value,
        /// What the call does.
        kind: ToolKind,
        /// The paths the call reads or changes, absolute (empty when it names none).
        locations: Vec<ToolLocation>,
        /// What would happen, in a few words, from the call's kind and what it touches
        /// (`Run cargo test`, `Edit src/main.rs`).
        title: String,
        /// Why the person is asked: the rule or preset, the command's risk, the sandbox.
        reason: String,
        /// One line saying what would run and why the person is asked.
        summary: String,
        /// The choices, in the order a door shows them; the answer names one by id.
        options: Vec<crate::PermissionOption>,
        /// Only a person may allow this call (a dangerous command, a protected file): no
        /// mode, preset or auto-approval would, so `allow_always` is not offered. A client
        /// without a person to ask should deny it and say so.
        human_required: bool,
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
        /// For a call that leaves plan mode (`kind: switch_mode`): the plan, whole, in
        /// markdown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        plan: Option<String>,
        /// For tools that change files: each file the change touches, its text now and
        /// after (files up to 1 MiB; a larger one is in `diff` only).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[ts(as = "Option<Vec<crate::FileDiff>>", optional)]
        changes: Vec<crate::FileDiff>,
        /// For a question the model asks (`ask_user`): the question and its choices, which
        /// are the options.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        question: Option<Box<crate::Question>>,
    },
    /// A `permission_requested` ended without the door's answer: the mode or preset changed
    /// and the call is decided again (a new request follows if it still needs one), the task
    /// was interrupted, the session withdrew it, or nobody could answer. A door closes the
    /// prompt it shows for `request_id`; an answer sent afterwards is refused as unknown.
    PermissionWithdrawn { request_id: String, reason: String },
    /// Usage of the last model response and the conversation's running total, after every
    /// model response and after an interruption. Only conversations a person or client
    /// opened report it; a worker opened by `conv_create` does not (seed 001's subagents).
    TokenCount {
        last: TokenUsage,
        total: TokenUsage,
        /// The size of the conversation's context now, in tokens: what the last request
        /// sent plus the reply it got (what the next request starts from). Compare it with
        /// `contextWindow`; `total` counts every request and only grows.
        context_tokens: u64,
        /// The model's context window: configured (`contextWindow`), else the model's own
        /// from coder's table of known models, else a guess (32,768, with a `warning`).
        context_window: Option<u64>,
    },
    /// The conversation's history was compacted (seed 001 `compact:exec`): the model
    /// summarised its older part, which was replaced by the summary; the most recent turns
    /// stay whole. The replaced messages are kept as an archived segment of the
    /// conversation (`conversation/archive`), never lost.
    Compacted {
        /// What started it: the context passed `compactThreshold` of the window before a
        /// model call, or a person asked (`conversation/compact`).
        trigger: CompactTrigger,
        /// The context's size before, in tokens.
        token_before: u64,
        /// The context's size after: the summary and the turns kept.
        token_compact: u64,
        /// `tokenCompact / tokenBefore`, between 0 and 1: the share of the context left.
        compact_rate: f64,
        /// The summary that now opens the history.
        summary: String,
        /// How many messages were replaced (and archived).
        archived_messages: usize,
        /// The archived segment's index in `conversation/archive`.
        segment: usize,
    },
    /// The conversation's context was cleared (`/clear`, seed 002's clear): its messages
    /// left the context and the next input starts a new batch. The system prompt and the
    /// tools stay; with tools described in the prompt, the initial tools' description opens
    /// the next request again, once. Outside any task (no `taskId`).
    ContextCleared {
        /// How many messages left the context.
        cleared_messages: usize,
    },
    /// Automatic verification after the model's edits (seed 004 section 6): one of the
    /// nine allowlisted test commands ran (as a `bash` call: `tool_call_started`, then
    /// `tool_call_completed` or `tool_call_failed`, call id `verify_…`), or did not run and
    /// says why. `message` says it in a sentence for people.
    Verification {
        status: VerificationStatus,
        /// The allowlisted command, when one was chosen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        command: Option<String>,
        /// Which run of this task's verification it was, from 1; 0 when none ran.
        attempt: u32,
        /// How many times a failed verification may send the model back to fix it
        /// (`maxVerifyAttempts`).
        max_retries: u32,
        /// The command's exit code, when it ran to an exit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        exit_code: Option<i32>,
        message: String,
    },
    /// The task ended normally (or after an `error`).
    TaskComplete {
        last_agent_message: Option<String>,
        /// Set when the task stopped because it reached the step limit (`maxSteps`) with
        /// work left: the limit, in model calls. Absent when the model finished.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        step_limit: Option<u32>,
        /// Set when the task ended because of an `error`: that error's kind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        error: Option<ErrorKind>,
    },
    /// The task ended early.
    TurnAborted {
        reason: AbortReason,
        /// With `replaced`: the task that carries this conversation's work on once the
        /// conversation it handed over to has answered (seed 000's T_cont). A client waiting
        /// for the outcome of its input follows it: that task ends the work, or hands over
        /// again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        continuation: Option<TaskId>,
        /// With `replaced`: the interrupting tool call that took the task's place and the
        /// conversation that runs now, so a front end can say so (seed 000: "the current task
        /// was replaced by conv_create; running the target conversation, then continuing").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        replaced_by: Option<Replacement>,
    },
    /// A queued task was dropped before it started (it never had a `task_started`).
    TaskDropped { reason: DropReason },
    /// What became of a person's input (`conversation/send`, `conversation/steer`):
    /// `queued` behind the running task, `steered` into it at a checkpoint (`step`: the
    /// model call of the task it came before), `started` as a task of its own, or `dropped`
    /// (`reason`). `inputId` is the id the method answered; the event's `taskId` is the task
    /// it went into (for `steered`, the running one).
    InputReceipt {
        input_id: TaskId,
        receipt: Receipt,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        step: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        reason: Option<String>,
    },
    /// The session's engine state changed.
    StateChanged { state: EngineState },
    /// The conversation's todo list changed (the whole new list).
    TodoUpdated { todos: Vec<TodoItem> },
    /// The `@` references of the task's input, in order, and what each attached (recorded
    /// as system reminders after the input). Comes after `task_started`, before the first
    /// reply; absent when the input has none.
    FileReference { references: Vec<FileReference> },
    /// The conversation's mode changed: through `set_mode` (outside any task), or when the
    /// person approved a plan through `exit_plan_mode` (inside the task, which goes on in
    /// `mode` with the tools and system prompt rebuilt for it).
    ModeChanged {
        mode: Mode,
        previous: Mode,
        reason: ModeChangeReason,
    },
    /// Something went wrong but the task goes on (a skipped malformed chunk).
    Warning { message: String },
    /// The provider's request failed in a way worth retrying: coder waits `delay_ms`, then
    /// asks again (`attempt` of at most `max_retries`). `message` says why and what
    /// happens, whole, for a door that only prints it.
    Retrying {
        message: String,
        reason: String,
        attempt: u32,
        max_retries: u32,
        delay_ms: u64,
    },
    /// Files the session keeps changed on disk and were read again; the next task sees
    /// them. A session-level event: it names the root conversation and no task. `paths` are
    /// the changed files (or folders) that caused it.
    WorkspaceReloaded {
        what: ReloadedKind,
        paths: Vec<String>,
    },
    /// An MCP server changed state because the servers were read again (a changed
    /// `.mcp.json` or `mcpServers`): started, failed, or stopped. A session-level event,
    /// like [`EventMsg::WorkspaceReloaded`]. `tools` counts a ready server's tools; `error`
    /// says why a server failed.
    McpServerStatus {
        server: String,
        state: McpServerState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        tools: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        error: Option<String>,
    },
    /// The task cannot go on; a `task_complete` follows, carrying the same `kind`.
    Error { message: String, kind: ErrorKind },
}

/// Where an MCP server is ([`EventMsg::McpServerStatus`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    Ready,
    Failed,
    /// Switched off in its definition (`enabled: false`).
    Disabled,
    /// Removed from the configuration (or about to restart with a new definition): its
    /// process has ended.
    Stopped,
}

impl McpServerState {
    /// The name on the wire (`ready`, `failed`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Disabled => "disabled",
            Self::Stopped => "stopped",
        }
    }
}

/// The `type` of each event that ends a task: every task id ends with exactly one of them.
pub const TASK_END_EVENTS: &[&str] = &["task_complete", "turn_aborted", "task_dropped"];

/// How a task ended, read from the one event that ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    /// The model finished.
    Completed,
    /// The task stopped at the step limit (`maxSteps`, in model calls) with work left.
    StepLimit(u32),
    /// An error ended it.
    Failed(ErrorKind),
    /// It handed over to another conversation (`conv_create`/`conv_send`); its continuation
    /// is a new task of the same conversation (this id), queued behind the other
    /// conversation's.
    HandedOver(Option<TaskId>),
    /// A person or client interrupted it.
    Interrupted,
    /// It was queued and dropped before it ran.
    Dropped(DropReason),
}

impl EventMsg {
    /// How the task ended, when this event is the end of a task (one of
    /// [`TASK_END_EVENTS`]); `None` for every other event.
    pub fn task_end(&self) -> Option<TaskEnd> {
        Some(match self {
            Self::TaskComplete {
                error: Some(kind), ..
            } => TaskEnd::Failed(*kind),
            Self::TaskComplete {
                step_limit: Some(limit),
                ..
            } => TaskEnd::StepLimit(*limit),
            Self::TaskComplete { .. } => TaskEnd::Completed,
            Self::TurnAborted {
                reason: AbortReason::Replaced,
                continuation,
                ..
            } => TaskEnd::HandedOver(*continuation),
            Self::TurnAborted {
                reason: AbortReason::Interrupted,
                ..
            } => TaskEnd::Interrupted,
            Self::TaskDropped { reason } => TaskEnd::Dropped(*reason),
            _ => return None,
        })
    }
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

/// How an automatic verification went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerificationStatus {
    /// The command exited 0.
    Passed,
    /// The command failed; the model was told to fix it and verify again.
    Retrying,
    /// The command failed and no retry is left; the task ends with the failure reported.
    Failed,
    /// The command could not do its job (not installed, killed, timed out): a best-effort
    /// warning, and verification stops.
    Environment,
    /// Verification applied but did not run (no allowlisted command fits, the permissions
    /// do not allow it, `bash` is not available); `message` says why.
    NotRun,
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The next request would have passed `compactThreshold` of the context window.
    Auto,
    /// Asked for (`conversation/compact`, `/compact`, the SDK's `compact`).
    Manual,
}

/// The handoff that replaced a task (`turn_aborted` with `replaced`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    /// The interrupting tool the model called (`conv_create`, `conv_send`).
    pub tool_name: String,
    /// The conversation that runs now; the replaced task's work goes on after its reply.
    pub conversation_id: ConversationId,
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

/// Why a conversation's mode changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModeChangeReason {
    /// The person approved the plan of an `exit_plan_mode` call.
    ExitPlanMode,
    /// A client switched it (`set_mode`, `coder/setMode`, the SDK's `setMode`).
    SetMode,
    /// A conversation in a stricter mode sent it a message (`conv_send`): it is narrowed to
    /// that mode, since a conversation never does on another's behalf what that one may
    /// not (a plan-mode conversation cannot have a `yolo` one opened earlier write for it).
    CallerMode,
}

/// Why a queued task was dropped before it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The session was interrupted and the task was a continuation of the interrupted
    /// chain (queued input of the person stays queued).
    Interrupted,
    /// Its conversation was destroyed.
    ConversationDestroyed,
    /// The session ended.
    SessionEnded,
    /// The person withdrew the input before it ran (`conversation/withdraw`).
    Withdrawn,
}

/// What became of an input ([`EventMsg::InputReceipt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Receipt {
    /// It waits behind the running task; it can still be withdrawn.
    Queued,
    /// It was given to the running task's model at a checkpoint (`step`: the model call
    /// it came before), without ending the task.
    Steered,
    /// Its task started.
    Started,
    /// It will not run (`reason` says why).
    Dropped,
}

/// Which of the files a session keeps was read again ([`EventMsg::WorkspaceReloaded`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ReloadedKind {
    /// Rules files (`AGENTS.md`, `CLAUDE.md`, `.coder/rules/*.md`, the user rules file).
    Rules,
    /// Skills (`.coder/skills/*/SKILL.md`).
    Skills,
    /// Custom commands (`.coder/commands/*.md`).
    Commands,
    /// The configuration files (`.coder/config.json`, the user-level file).
    Config,
    /// The workspace's `.mcp.json`.
    Mcp,
}

impl ReloadedKind {
    /// The name on the wire (`rules`, `skills`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rules => "rules",
            Self::Skills => "skills",
            Self::Commands => "commands",
            Self::Config => "config",
            Self::Mcp => "mcp",
        }
    }
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
                error: None,
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
    fn each_task_end_event_says_how_the_task_ended() {
        let ends = [
            (
                json!({"type": "task_complete", "lastAgentMessage": null}),
                TaskEnd::Completed,
            ),
            (
                json!({"type": "task_complete", "lastAgentMessage": null, "stepLimit": 3}),
                TaskEnd::StepLimit(3),
            ),
            (
                json!({"type": "task_complete", "lastAgentMessage": null, "stepLimit": 3,
                       "error": "context_length_exceeded"}),
                TaskEnd::Failed(ErrorKind::ContextLengthExceeded),
            ),
            (
                json!({"type": "turn_aborted", "reason": "replaced",
                       "continuation": "00000000-0000-0000-0000-000000000000"}),
                TaskEnd::HandedOver(Some(TaskId(Uuid::nil()))),
            ),
            (
                json!({"type": "turn_aborted", "reason": "interrupted"}),
                TaskEnd::Interrupted,
            ),
            (
                json!({"type": "task_dropped", "reason": "conversation_destroyed"}),
                TaskEnd::Dropped(DropReason::ConversationDestroyed),
            ),
        ];
        for (wire, end) in ends {
            let msg: EventMsg = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(msg.task_end(), Some(end), "{wire}");
            assert!(TASK_END_EVENTS.contains(&wire["type"].as_str().unwrap()));
        }
        let not_an_end = EventMsg::Warning {
            message: "slow".into(),
        };
        assert_eq!(not_an_end.task_end(), None);
    }

    #[test]
    fn abort_reasons_are_snake_case() {
        let msg = EventMsg::TurnAborted {
            reason: AbortReason::Interrupted,
            continuation: None,
            replaced_by: None,
        };
        assert_eq!(
            serde_json::to_value(msg).unwrap(),
            json!({"type": "turn_aborted", "reason": "interrupted"})
        );
    }
}
