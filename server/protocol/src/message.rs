//! The conversation history model: OpenAI Chat Completions messages.
//!
//! History, session snapshots and OpenAI requests all use this one shape; the Anthropic
//! provider converts from it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message in OpenAI Chat Completions form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ChatMessage {
    pub role: Role,
    /// Text content; `None` for an assistant message made only of tool calls.
    pub content: Option<String>,
    /// The model's thinking, kept for display and snapshots; never sent back to providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool_call_id: Option<String>,
    /// The tool name, on `tool` messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub name: Option<String>,
    /// Images that came with a message: a person's (pasted, attached by an `@` reference,
    /// given as input items) or a tool's (a `read` of an image file, an MCP tool's image).
    /// Providers receive them in their own form: Anthropic inside the user message or the
    /// tool result, OpenAI as content parts of the user message, a tool's in a user message
    /// after the tool results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

/// An image carried by a message: its bytes, or a URL the provider fetches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(untagged)]
pub enum Attachment {
    /// The image's bytes, which coder holds and sends.
    Inline {
        /// For example `image/png`.
        #[serde(rename = "mediaType")]
        media_type: String,
        /// The bytes, base64 (standard alphabet, padded).
        data: String,
    },
    /// An image by `http` or `https` URL: the provider fetches it when it reads the request;
    /// coder never does.
    Url { url: String },
}

impl Attachment {
    /// The image as a URL: a `data:` URL of the bytes, or the URL it was given by.
    pub fn url(&self) -> String {
        match self {
            Self::Inline { media_type, data } => format!("data:{media_type};base64,{data}"),
            Self::Url { url } => url.clone(),
        }
    }
}

impl ChatMessage {
    fn new(role: Role, content: Option<String>) -> Self {
        Self {
            role,
            content,
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            attachments: Vec::new(),
        }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, Some(text.into()))
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, Some(text.into()))
    }

    /// An assistant message; empty text becomes `None` so tool-only replies stay valid.
    pub fn assistant(text: String, reasoning: String, tool_calls: Vec<ToolCall>) -> Self {
        let mut message = Self::new(Role::Assistant, (!text.is_empty()).then_some(text));
        message.reasoning = (!reasoning.is_empty()).then_some(reasoning);
        message.tool_calls = tool_calls;
        message
    }

    /// The result of one tool call, linked to it by `call_id`.
    pub fn tool_result(call_id: &str, tool_name: &str, output: impl Into<String>) -> Self {
        let mut message = Self::new(Role::Tool, Some(output.into()));
        message.tool_call_id = Some(call_id.to_owned());
        message.name = Some(tool_name.to_owned());
        message
    }
}

/// A tool call made by the assistant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

impl ToolCall {
    pub fn function(id: String, name: String, arguments: String) -> Self {
        Self {
            id,
            kind: function_type(),
            function: FunctionCall { name, arguments },
        }
    }
}

fn function_type() -> String {
    "function".to_owned()
}

/// The function a tool call names, with its arguments as a JSON string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}
