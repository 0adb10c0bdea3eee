//! The conversation tools of seed 000: `conv_create`, `conv_send` (interrupting), and
//! `conv_list`, `conv_history`, `conv_destroy`. People see them as `conv.create` and so on;
//! provider tool names cannot contain a dot.
//!
//! They are registered like any tool (schema, validation, policy), but they act on the
//! session, which a tool cannot reach: a call is parsed into the closed [`ConversationCall`]
//! set, and the turn hands it to the session (list, history and destroy are answered at once;
//! create and send end the turn, handed over to the session's driver).

use std::sync::Arc;

use async_trait::async_trait;
use coder_protocol::{ConversationId, InputItem, ToolsPrefs};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput};

/// The five tools, in their fixed order.
pub const CONVERSATION_TOOLS: [&str; 5] = [
    "conv_create",
    "conv_send",
    "conv_list",
    "conv_history",
    "conv_destroy",
];

/// One of the five tools, for the registry.
pub struct ConversationTool(&'static str);

impl ConversationTool {
    pub fn all() -> Vec<Arc<dyn Tool>> {
        CONVERSATION_TOOLS
            .iter()
            .map(|name| Arc::new(ConversationTool(name)) as Arc<dyn Tool>)
            .collect()
    }
}

fn input_items_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": ["text", "image"]},
                "text": {"type": "string"},
                "image_url": {
                    "type": "string",
                    "description": "An image: a `data:image/...;base64,...` URL or an `http(s)` URL.",
                },
            },
            "required": ["type"],
        },
    })
}

#[async_trait]
impl Tool for ConversationTool {
    fn name(&self) -> &str {
        self.0
    }

    fn description(&self) -> &str {
        match self.0 {
            "conv_create" => {
                "Create a new conversation in this session and run a task in it (interrupting): \
                 your current turn ends, the new conversation works on `user_instruction` to \
                 completion, then you continue with its last assistant message as this call's \
                 result. Base instructions (`base_instruction_text` or `base_instruction_file`, \
                 not both), `mcp_allowlist` and `internal_tools` default to yours."
            }
            "conv_send" => {
                "Send a message to another conversation and wait for its reply (interrupting): \
                 your turn ends, that conversation runs a task on `text`/`items`, then you \
                 continue with its last assistant message as this call's result."
            }
            "conv_list" => {
                "List the conversations of this session with their message counts \
                 (immediate: your turn goes on)."
            }
            "conv_history" => {
                "Read a conversation's messages (user and assistant text and images, no tool \
                 calls); `limit` keeps the last N (immediate: your turn goes on)."
            }
            _ => {
                "Destroy a conversation (not the root). Its running task, if any, is \
                 interrupted (immediate: your turn goes on)."
            }
        }
    }

    fn input_schema(&self) -> Value {
        match self.0 {
            "conv_create" => json!({
                "type": "object",
                "properties": {
                    "base_instruction_text": {"type": "string"},
                    "base_instruction_file": {"type": "string", "description": "Relative to the working directory."},
                    "user_instruction": {"type": "string"},
                    "items": input_items_schema(),
                    "mcp_allowlist": {"type": "array", "items": {"type": "string"}},
                    "internal_tools": {
                        "type": "object",
                        "description": "Built-in tools of the new conversation; each key left out is yours. coder has no web search and no streamable shell: `true` for either fails the call.",
                        "properties": {
                            "include_plan_tool": {"type": "boolean"},
                            "include_apply_patch_tool": {"type": "boolean"},
                            "web_search_request": {"type": "boolean"},
                            "use_streamable_shell_tool": {"type": "boolean"},
                            "shell_mode": {
                                "type": "string",
                                "enum": ["off", "sandboxed", "unconfined"],
                                "description": "`off`: no bash. It can only be narrower than yours.",
                            },
                        },
                    },
                },
                "additionalProperties": false,
            }),
            "conv_send" => json!({
                "type": "object",
                "properties": {
                    "conversation_id": {"type": "string"},
                    "text": {"type": "string"},
                    "items": input_items_schema(),
                },
                "required": ["conversation_id"],
                "additionalProperties": false,
            }),
            "conv_list" => {
                json!({"type": "object", "properties": {}, "additionalProperties": false})
            }
            "conv_history" => json!({
                "type": "object",
                "properties": {
                    "conversation_id": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1},
                },
                "required": ["conversation_id"],
                "additionalProperties": false,
            }),
            _ => json!({
                "type": "object",
                "properties": {"conversation_id": {"type": "string"}},
                "required": ["conversation_id"],
                "additionalProperties": false,
            }),
        }
    }

    fn stays_inside_session(&self) -> bool {
        true
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Other
    }

    fn is_read_only(&self) -> bool {
        matches!(self.0, "conv_list" | "conv_history")
    }

    fn validate_input(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        let has = |key: &str| input.get(key).is_some_and(|v| !v.is_null());
        match self.0 {
            "conv_create" if !has("user_instruction") && !has("items") => {
                Err("give `user_instruction`, `items`, or both".to_owned())
            }
            "conv_send" if !has("text") && !has("items") => {
                Err("give `text`, `items`, or both".to_owned())
            }
            _ => Ok(()),
        }
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, String> {
        Err(format!("{} runs only inside a session", self.0))
    }
}

/// A conversation tool call, parsed: the closed set of seed 000.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConversationCall {
    /// `conv_create` (interrupting).
    Create(CreateArgs),
    /// `conv_send` (interrupting).
    Send(SendArgs),
    /// `conv_list`.
    List,
    /// `conv_history`.
    History {
        conversation: Option<ConversationId>,
        limit: Option<usize>,
    },
    /// `conv_destroy`.
    Destroy {
        conversation: Option<ConversationId>,
    },
}

/// `conv_create`'s arguments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct CreateArgs {
    pub base_instruction_text: Option<String>,
    pub base_instruction_file: Option<String>,
    pub user_instruction: Option<String>,
    #[serde(default)]
    pub items: Vec<InputItem>,
    pub mcp_allowlist: Option<Vec<String>>,
    pub internal_tools: Option<ToolsPrefs>,
}

/// `conv_send`'s arguments; an id that names no conversation is `None`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SendArgs {
    pub conversation: Option<ConversationId>,
    pub text: Option<String>,
    pub items: Vec<InputItem>,
}

#[derive(Deserialize)]
struct RawSendArgs {
    conversation_id: String,
    text: Option<String>,
    #[serde(default)]
    items: Vec<InputItem>,
}

#[derive(Deserialize)]
struct TargetArgs {
    conversation_id: String,
    limit: Option<usize>,
}

impl ConversationCall {
    /// The call of tool `name` with `input` (already checked against the schema), `None`
    /// when `name` is not a conversation tool, `Some(Err(result))` when the arguments do not
    /// parse: `result` is the tool result for the model.
    pub fn parse(name: &str, input: Value) -> Option<Result<Self, String>> {
        let failed = |key: &str, reason: String| json!({key: false, "reason": reason}).to_string();
        let call = match name {
            "conv_create" => serde_json::from_value(input)
                .map(Self::Create)
                .map_err(|err| failed("success", format!("invalid arguments: {err}"))),
            "conv_send" => serde_json::from_value::<RawSendArgs>(input)
                .map(|args| {
                    Self::Send(SendArgs {
                        conversation: args.conversation_id.parse().ok(),
                        text: args.text,
                        items: args.items,
                    })
                })
                .map_err(|err| failed("success", format!("invalid arguments: {err}"))),
            "conv_list" => Ok(Self::List),
            "conv_history" => serde_json::from_value::<TargetArgs>(input)
                .map(|args| Self::History {
                    conversation: args.conversation_id.parse().ok(),
                    limit: args.limit,
                })
                .map_err(|_| failed("ok", "invalid arguments".to_owned())),
            "conv_destroy" => serde_json::from_value::<TargetArgs>(input)
                .map(|args| Self::Destroy {
                    conversation: args.conversation_id.parse().ok(),
                })
                .map_err(|_| failed("ok", "invalid arguments".to_owned())),
            _ => return None,
        };
        Some(call)
    }

    /// Whether the call ends the turn and hands it to another conversation.
    pub fn hands_over(&self) -> bool {
        matches!(self, Self::Create(_) | Self::Send(_))
    }
}

/// A conversation tool's failure as the model reads it: `{"<key>": false, "reason": ...}`
/// (`success` for the interrupting tools, `ok` for the others, as seed 000 words them).
pub(crate) fn failure(key: &str, reason: impl Into<String>) -> String {
    json!({key: false, "reason": reason.into()}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 000: each description says whether the call interrupts (ends the turn and hands
    /// it over) or answers at once.
    #[test]
    fn each_description_says_whether_it_interrupts() {
        for tool in ConversationTool::all() {
            let description = tool.description();
            let interrupting = matches!(tool.name(), "conv_create" | "conv_send");
            assert_eq!(
                description.contains("(interrupting)"),
                interrupting,
                "{}: {description}",
                tool.name()
            );
            assert_eq!(
                description.contains("(immediate: your turn goes on)"),
                !interrupting,
                "{}: {description}",
                tool.name()
            );
        }
    }

    #[test]
    fn only_the_five_tools_parse() {
        assert_eq!(ConversationCall::parse("read", json!({})), None);
        assert_eq!(
            ConversationCall::parse("conv_list", json!({})),
            Some(Ok(ConversationCall::List))
        );
        let id = ConversationId::new();
        assert_eq!(
            ConversationCall::parse("conv_send", json!({"conversation_id": id, "text": "hi"})),
            Some(Ok(ConversationCall::Send(SendArgs {
                conversation: Some(id),
                text: Some("hi".into()),
                items: Vec::new(),
            })))
        );
        assert_eq!(
            ConversationCall::parse("conv_destroy", json!({"conversation_id": "nope"})),
            Some(Ok(ConversationCall::Destroy { conversation: None }))
        );
        assert!(
            ConversationCall::parse("conv_send", json!({"conversation_id": 1}))
                .is_some_and(|call| call.is_err())
        );
        assert!(
            ConversationCall::parse("conv_create", json!({"user_instruction": "x"}))
                .is_some_and(|call| call.is_ok_and(|call| call.hands_over()))
        );
    }
}
