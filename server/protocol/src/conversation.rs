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

/// Which built-in tools a conversation offers (seed 000's `internal_tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(default)]
// Clients send this in `conversation/create` and may leave out any field (the container
// `default`); the `#[ts(as = "Option<bool>", optional)]`s make that `field?: boolean`.
pub struct ToolsPrefs {
    /// Offer the plan tool (`todo_write`).
    #[ts(as = "Option<bool>", optional)]
    pub include_plan_tool: bool,
    /// Offer `apply_patch`.
    #[ts(as = "Option<bool>", optional)]
    pub include_apply_patch_tool: bool,
    /// Offer web search; coder has no web search tool yet, so this changes nothing.
    #[ts(as = "Option<bool>", optional)]
    pub web_search_request: bool,
    /// Use a streamable shell; coder's `bash` is the only shell, so this changes nothing.
    #[ts(as = "Option<bool>", optional)]
    pub use_streamable_shell_tool: bool,
}

impl Default for ToolsPrefs {
    fn default() -> Self {
        Self {
            include_plan_tool: true,
            include_apply_patch_tool: true,
            web_search_request: false,
            use_streamable_shell_tool: false,
        }
    }
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
