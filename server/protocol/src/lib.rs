//! The wire vocabulary of coder: everything that crosses a process or language boundary.
//!
//! This crate holds data only: ids, the [`Event`] stream every front door forwards, the
//! OpenAI Chat Completions message model used for history and snapshots, token usage, and
//! the params and results of the `coder lsp` methods ([`methods`]), declared once in the
//! method table there ([`table`] is its machinery).
//! It has no logic beyond serde, so every front door (LSP, Node, terminal) can depend on it
//! without pulling in the engine.
//!
//! Wire rules: field names are camelCase, `type` tags are snake_case. The chat message model
//! is the exception: it follows the OpenAI Chat Completions field names (`tool_calls`,
//! `tool_call_id`) so snapshots can be replayed against any OpenAI-compatible server.
//!
//! TypeScript: every type derives [`ts_rs::TS`], and `tests/typescript.rs` renders them all
//! into `bindings-node/ts/protocol.ts` (checked in, for the Node SDK and the VS Code
//! extension), failing when that file no longer matches; regenerate it with
//! `UPDATE_PROTOCOL_TS=1 cargo test -p coder-protocol --test typescript`. ts-rs reads the
//! serde attributes, but it renders a `None` left out by `skip_serializing_if` as
//! `field?: T | null`; serde never writes that `null`, so such fields carry
//! `#[ts(optional)]` to make them `field?: T`.
//!
//! JSON Schema: every type also derives [`schemars::JsonSchema`], and `tests/schema.rs`
//! renders the method table into `docs/protocol.schema.json` for clients in other
//! languages, failing on drift likewise (`UPDATE_PROTOCOL_SCHEMA=1`).

mod conversation;
mod error;
mod event;
mod ids;
mod message;
pub mod methods;
pub mod options;
mod permission;
mod reference;
mod replay;
pub mod table;
mod todo;
mod tool_kind;
pub mod tools;
mod usage;

pub use conversation::{
    ArchivedSegment, ConversationSummary, HistoryAttachment, HistoryEntry, InputItem, ShellMode,
    ToolsPrefs,
};
pub use error::ErrorKind;
pub use event::{
    AbortReason, CompactTrigger, DropReason, EngineState, Event, EventMsg, McpServerState,
    ModeChangeReason, OutputStream, Receipt, ReloadedKind, Replacement, RequestedToolCall,
    TASK_END_EVENTS, TaskEnd, VerificationStatus,
};
pub use ids::{ConversationId, SessionId, TaskId};
pub use message::{Attachment, ChatMessage, FunctionCall, Role, ToolCall};
pub use permission::{
    Mode, PermissionDecision, PermissionOption, PermissionOptionKind, PermissionRule,
    PolicyDecision, Preset,
};
pub use reference::{FileReference, FileReferenceKind, LineRange};
pub use replay::{ConversationState, SessionSnapshot, SubscribeParams, SubscribeResult};
pub use todo::{TodoItem, TodoStatus};
pub use tool_kind::{FileDiff, Question, QuestionChoice, ToolKind, ToolLocation};
pub use usage::TokenUsage;
