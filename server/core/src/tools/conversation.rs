//! The conversation tools of seed 000: `conv_create`, `conv_send` (interrupting), and
//! `conv_list`, `conv_history`, `conv_destroy`. People see them as `conv.create` and so on;
//! provider tool names cannot contain a dot.
//!
//! They are registered like any tool (schema, validation, policy) but run inside the session:
//! the runner hands them to [`run`], which has the scheduler at hand.

use std::sync::Arc;

use async_trait::async_trait;
use coder_protocol::{InputItem, ToolCall, ToolsPrefs};
use serde::Deserialize;
use serde_json::{Value, json};

use super::runner::ToolRun;
use super::{Tool, ToolContext, ToolOutput};
use crate::conversation::{ConversationSpec, history_entries};
use crate::engine::{Inner, lock};
use crate::scheduler::{Closure, TaskPlan, abort_current_and_enqueue};

/// The five tools, in their fixed order.
pub const CONVERSATION_TOOLS: [&str; 5] = [
    "conv_create",
    "conv_send",
    "conv_list",
    "conv_history",
    "conv_destroy",
];

/// What running a conversation tool did.
pub(crate) enum Outcome {
    /// A result for the model now.
    Result(String),
    /// The task was replaced; a continuation task will answer the call.
    Replaced,
}

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
                "image_url": {"type": "string"},
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
            "conv_list" => "List the conversations of this session with their message counts.",
            "conv_history" => {
                "Read a conversation's messages (user and assistant text, no tool calls); \
                 `limit` keeps the last N."
            }
            _ => "Destroy a conversation (not the root). Its running task, if any, is interrupted.",
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
                        "properties": {
                            "include_plan_tool": {"type": "boolean"},
                            "include_apply_patch_tool": {"type": "boolean"},
                            "web_search_request": {"type": "boolean"},
                            "use_streamable_shell_tool": {"type": "boolean"},
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

#[derive(Deserialize)]
struct CreateArgs {
    base_instruction_text: Option<String>,
    base_instruction_file: Option<String>,
    user_instruction: Option<String>,
    #[serde(default)]
    items: Vec<InputItem>,
    mcp_allowlist: Option<Vec<String>>,
    internal_tools: Option<ToolsPrefs>,
}

#[derive(Deserialize)]
struct SendArgs {
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

fn failure(key: &str, reason: impl Into<String>) -> Outcome {
    Outcome::Result(json!({key: false, "reason": reason.into()}).to_string())
}

/// Runs a conversation tool for `call` of the running task.
pub(crate) fn run(call: &ToolCall, input: Value, run: &ToolRun<'_>) -> Outcome {
    let session = run.session;
    let caller = run.base.conversation_id;
    match call.function.name.as_str() {
        "conv_create" | "conv_send"
            if run.control.depth >= session.config.max_interrupt_chain_depth =>
        {
            failure(
                "success",
                format!(
                    "too many nested conversation handoffs (the limit is {}); do this work here \
                     instead",
                    session.config.max_interrupt_chain_depth
                ),
            )
        }
        "conv_create" => create(call, input, run, session, caller),
        "conv_send" => send(call, input, run, session, caller),
        "conv_list" => {
            let conversations: Vec<Value> = session
                .list_conversations()
                .into_iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "message_count": c.message_count,
                        "last_active_at": c.last_active_at,
                    })
                })
                .collect();
            Outcome::Result(json!({"conversations": conversations}).to_string())
        }
        "conv_history" => {
            let Ok(args) = serde_json::from_value::<TargetArgs>(input) else {
                return failure("ok", "invalid arguments");
            };
            let Some(target) = find(session, &args.conversation_id) else {
                return failure("ok", "conversation not found");
            };
            let entries = history_entries(&lock(&target).history, args.limit);
            Outcome::Result(json!({"entries": entries}).to_string())
        }
        _ => {
            let Ok(args) = serde_json::from_value::<TargetArgs>(input) else {
                return failure("ok", "invalid arguments");
            };
            let Ok(id) = args.conversation_id.parse() else {
                return failure("ok", "conversation not found");
            };
            if session.is_root(id) {
                return failure("ok", "the root conversation cannot be destroyed");
            }
            match session.destroy_conversation(id) {
                Ok(()) => Outcome::Result(json!({"ok": true}).to_string()),
                Err(_) => failure("ok", "conversation not found"),
            }
        }
    }
}

fn find(
    session: &Inner,
    id: &str,
) -> Option<Arc<std::sync::Mutex<crate::conversation::Conversation>>> {
    session.conversation(id.parse().ok()?).ok()
}

fn create(
    call: &ToolCall,
    input: Value,
    run: &ToolRun<'_>,
    session: &Arc<Inner>,
    caller: coder_protocol::ConversationId,
) -> Outcome {
    let args: CreateArgs = match serde_json::from_value(input) {
        Ok(args) => args,
        Err(err) => return failure("success", format!("invalid arguments: {err}")),
    };
    let spec = ConversationSpec {
        base_instructions: args.base_instruction_text,
        base_instructions_file: args.base_instruction_file.map(Into::into),
        user_instructions: None,
        mcp_allowlist: args.mcp_allowlist,
        tools_prefs: args.internal_tools,
        mode: None,
        sandbox: None,
        model: None,
    };
    let target = match session.open_conversation(spec, crate::engine::Opener::Conversation(caller))
    {
        Ok(id) => id,
        Err(err) => return failure("success", err.to_string()),
    };
    let mut input = Vec::new();
    if let Some(text) = &args.user_instruction {
        input.push(InputItem::Text { text: text.clone() });
    }
    input.extend(args.items.iter().cloned());
    let closure = Closure {
        call_id: call.id.clone(),
        tool_name: call.function.name.clone(),
        target,
        first_user_message: args.user_instruction,
        first_items_count: (!args.items.is_empty()).then_some(args.items.len()),
    };
    hand_over(run, session, caller, target, input, closure)
}

fn send(
    call: &ToolCall,
    input: Value,
    run: &ToolRun<'_>,
    session: &Arc<Inner>,
    caller: coder_protocol::ConversationId,
) -> Outcome {
    let args: SendArgs = match serde_json::from_value(input) {
        Ok(args) => args,
        Err(err) => return failure("success", format!("invalid arguments: {err}")),
    };
    let Some(target) = args
        .conversation_id
        .parse()
        .ok()
        .filter(|id| session.conversation(*id).is_ok())
    else {
        return failure("success", "conversation not found");
    };
    if target == caller {
        return failure("success", "a conversation cannot send to itself");
    }
    let mut input = Vec::new();
    if let Some(text) = args.text {
        input.push(InputItem::Text { text });
    }
    input.extend(args.items);
    let closure = Closure {
        call_id: call.id.clone(),
        tool_name: call.function.name.clone(),
        target,
        first_user_message: None,
        first_items_count: None,
    };
    hand_over(run, session, caller, target, input, closure)
}

/// Ends the running task (replaced) and queues the target's task, then the continuation.
fn hand_over(
    run: &ToolRun<'_>,
    session: &Arc<Inner>,
    caller: coder_protocol::ConversationId,
    target: coder_protocol::ConversationId,
    input: Vec<InputItem>,
    closure: Closure,
) -> Outcome {
    let target_task = TaskPlan::new(target, input, run.control.depth + 1);
    let mut continuation = TaskPlan::new(caller, Vec::new(), run.control.depth);
    continuation.closure = Some(closure);
    abort_current_and_enqueue(session, vec![target_task, continuation]);
    Outcome::Replaced
}

/// The result a continuation task injects for its closure.
pub(crate) fn closure_payload(session: &Inner, closure: &Closure) -> String {
    let last = session
        .conversation(closure.target)
        .ok()
        .and_then(|conv| lock(&conv).last_assistant_text())
        .unwrap_or_default();
    let mut payload = json!({
        "conversation_id": closure.target,
        "last_assistant_message": last,
    });
    if closure.tool_name == "conv_create" {
        if let Some(first) = &closure.first_user_message {
            payload["first_user_message"] = json!(first);
        }
        if let Some(count) = closure.first_items_count {
            payload["first_items_count"] = json!(count);
        }
    }
    payload.to_string()
}
