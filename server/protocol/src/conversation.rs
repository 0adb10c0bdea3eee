//! Conversations as the engine API and the conversation tools describe them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One piece of user input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputItem {
    Text {
        text: String,
    },
    /// An image by `data:` URL (base64 bytes) or `http(s)` URL (fetched by the provider,
    /// never by coder); both are sent to the model as images.
    Image {
        image_url: String,
    },
}

/// Which built-in tools a conversation asks for (seed 000's `internal_tools`, seed 003's
/// `ToolsPrefs`). A flag left out is inherited: from the calling conversation when a model
/// opens one (`conv_create`), else from the session's defaults (`include_plan_tool` and
/// `include_apply_patch_tool` on, the shell the session gives).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(default)]
pub struct ToolsPrefs {
    /// Offer the plan tool (`todo_write`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub include_plan_tool: Option<bool>,
    /// Offer `apply_patch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub include_apply_patch_tool: Option<bool>,
    /// Offer web search. coder has no web search tool: `true` is refused with an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub web_search_request: Option<bool>,
    /// Use a streamable (interactive) shell. coder's one shell is `bash`, which takes no
    /// input: `true` is refused with an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub use_streamable_shell_tool: Option<bool>,
    /// How the conversation's commands may run. It may only narrow what the session's
    /// sandbox and policies give (a looser one is narrowed, with a `warning`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub shell_mode: Option<ShellMode>,
}

/// How a conversation's commands run (seed 003's `shell_mode`), from the narrowest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShellMode {
    /// No shell: `bash` is not offered.
    Off,
    /// `bash` inside the session's sandbox; a command the sandbox stopped runs again (with
    /// network, or outside it) only when a person approves.
    Sandboxed,
    /// `bash` without a sandbox (the session has none).
    Unconfined,
}

/// A conversation in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub id: crate::ConversationId,
    pub message_count: usize,
    /// RFC 3339.
    pub last_active_at: String,
    pub is_root: bool,
}

/// A message of a conversation's history, without tool calls and outputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct HistoryEntry {
    /// `user` or `assistant`: messages only (seed 000). Context the engine added after a
    /// user's input (`@` references' attachments, the first input's todo reminder, in
    /// `<system-reminder>` tags, which the model reads and nobody said) is not an entry.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub text: Option<String>,
    /// The entry's images; an empty array when it has none (seed 000 gives every entry
    /// `attachments`).
    #[serde(default)]
    pub attachments: Vec<HistoryAttachment>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct HistoryAttachment {
    /// Always `image`.
    #[serde(rename = "type")]
    pub kind: String,
    pub image_url: String,
}

/// Messages a compaction replaced by its summary, kept so nothing is lost: the
/// conversation's archive (`conversation/archive`) holds one segment per compaction, oldest
/// first, and the session snapshot keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchivedSegment {
    /// Its place in the archive, from 0.
    pub index: usize,
    /// When it was archived (RFC 3339).
    pub archived_at: String,
    pub trigger: crate::CompactTrigger,
    /// The summary that replaced it.
    pub summary: String,
    /// The replaced messages, in OpenAI Chat Completions form.
    pub messages: Vec<crate::ChatMessage>,
}
