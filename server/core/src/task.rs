//! One task: the conversation loop of turns, with its interrupt checkpoints.
//!
//! A turn streams the model, records the reply, runs its tool calls and loops until a reply
//! has no tool call, the step limit is reached, or the provider fails for good. Whatever way
//! the task ends, the history stays a valid request: every assistant tool call has a result.

use std::sync::{Arc, Mutex};

use coder_protocol::{AbortReason, ChatMessage, EventMsg, RequestedToolCall, TokenUsage};

use crate::conversation::Conversation;
use crate::conversation::user_message;
use crate::engine::{Inner, lock};
use crate::events::TaskEvents;
use crate::model::{ActiveModel, ModelRequest, ModelResponse, StreamError, StreamUpdate};
use crate::process::ToolEnv;
use crate::prompt::system_prompt;
use crate::scheduler::{TaskControl, TaskPlan};
use crate::tools::ToolContext;
use crate::tools::conversation::closure_payload;
use crate::tools::runner::{CANCELLED_BEFORE_START, ToolRun, run_tool_calls};

/// Appended to the built-in prompt (alone or inside a conversation's instructions) when a
/// conversation is not offered `apply_patch`.
const NO_APPLY_PATCH_NOTE: &str = "\nThe apply_patch tool is not available in this conversation: change files with `edit` (exact replacements) or `write` (whole files).\n";

/// Added to the history when a task is interrupted.
pub(crate) const INTERRUPT_MESSAGE: &str = "[Request interrupted by user]";

/// How a task ended.
enum Ending {
    Complete(Option<String>),
    /// The step limit (in model calls) ran out with tool results the model has not seen.
    StepLimit(Option<String>, u32),
    Aborted(AbortReason),
}

/// Runs one task to its end, emitting its events.
pub(crate) async fn run_task(inner: &Arc<Inner>, plan: TaskPlan, control: TaskControl) {
    let events = TaskEvents {
        hub: inner.hub.clone(),
        conversation_id: plan.conversation_id,
        task_id: plan.task_id,
    };
    // The task keeps the model it starts with, whatever is switched meanwhile.
    let active = match inner.require_model() {
        Ok(active) => active,
        Err(err) => {
            events.emit(EventMsg::TaskStarted {
                model: String::new(),
            });
            events.emit(EventMsg::Error {
                message: err.to_string(),
            });
            events.emit(EventMsg::TaskComplete {
                last_agent_message: None,
                step_limit: None,
            });
            return;
        }
    };
    let model = inner
        .conversation(plan.conversation_id)
        .ok()
        .and_then(|conversation| lock(&conversation).context.model.clone())
        .unwrap_or_else(|| active.settings.model.clone());
    events.emit(EventMsg::TaskStarted {
        model: model.clone(),
    });
    if let Some(warning) = lock(&inner.sandbox_warning).take() {
        events.warning(warning);
    }
    for message in std::mem::take(&mut *lock(&inner.config_warnings)) {
        events.warning(message);
    }
    let ending = match inner.conversation(plan.conversation_id) {
        Ok(conversation) => {
            let model = TaskModel {
                name: &model,
                active: &active,
            };
            run_turns(inner, &conversation, plan, &control, &events, model).await
        }
        Err(err) => {
            events.emit(EventMsg::Error {
                message: err.to_string(),
            });
            Ending::Complete(None)
        }
    };
    match ending {
        Ending::Complete(last_agent_message) => {
            events.emit(EventMsg::TaskComplete {
                last_agent_message,
                step_limit: None,
            });
        }
        Ending::StepLimit(last_agent_message, limit) => {
            events.emit(EventMsg::TaskComplete {
                last_agent_message,
                step_limit: Some(limit),
            });
        }
        Ending::Aborted(reason) => events.emit(EventMsg::TurnAborted { reason }),
    }
}

/// The model a task talks to: a name, and the session's client for its provider.
#[derive(Clone, Copy)]
struct TaskModel<'a> {
    name: &'a str,
    active: &'a ActiveModel,
}

async fn run_turns(
    inner: &Arc<Inner>,
    conversation: &Mutex<Conversation>,
    plan: TaskPlan,
    control: &TaskControl,
    events: &TaskEvents,
    model: TaskModel<'_>,
) -> Ending {
    let cancel = &control.cancel;
    let context_window = model.active.settings.context_window;
    // A continuation first answers the tool call that handed the turn over.
    if let Some(closure) = &plan.closure {
        let output = closure_payload(inner, closure);
        events.emit(EventMsg::ToolCallCompleted {
            call_id: closure.call_id.clone(),
            tool_name: closure.tool_name.clone(),
            output: output.clone(),
            duration_ms: 0,
            diff: None,
        });
        lock(conversation).record([ChatMessage::tool_result(
            &closure.call_id,
            &closure.tool_name,
            output,
        )]);
    }
    if let Some(message) = user_message(&plan.input) {
        lock(conversation).record([message]);
    }
    let (system, hidden) = {
        let conv = lock(conversation);
        let base = plan
            .base_instructions_override
            .as_deref()
            .or(conv.context.base_instructions.as_deref());
        let mut hidden: Vec<&str> = inner
            .config
            .disabled_tools
            .iter()
            .map(String::as_str)
            .collect();
        if !conv.context.tools_prefs.include_apply_patch_tool {
            hidden.push("apply_patch");
        }
        if !conv.context.tools_prefs.include_plan_tool {
            hidden.push("todo_write");
        }
        let mut system = system_prompt(
            base,
            &inner.config.workspace,
            inner.config.started_in.as_deref(),
        );
        // Custom instructions are left as given, unless they include the built-in prompt.
        let built_in = base.is_none_or(|base| base.contains(crate::prompt::built_in_prompt()));
        if built_in && hidden.contains(&"apply_patch") {
            system.push_str(NO_APPLY_PATCH_NOTE);
        }
        (system, hidden)
    };
    let Some(mcp_view) = mcp_view(inner, conversation, cancel, events).await else {
        lock(conversation).record([ChatMessage::user(INTERRUPT_MESSAGE)]);
        return interrupted(conversation, events, context_window);
    };
    let mut offered = inner.tools.offered(&hidden);
    offered.extend(mcp_view.specs().iter().cloned());
    offered.sort_by(|a, b| a.name.cmp(&b.name));
    lock(conversation).prompt = Some(inner.prompt_shapes.share(&system, &offered));
    let cache_key = inner
        .config
        .prompt_cache_key
        .then(|| prompt_cache_key(&system, &offered, model.name));
    let tool_ctx = ToolContext {
        workspace: inner.config.workspace.clone(),
        conversation_id: plan.conversation_id,
        call_id: String::new(),
        cancel: cancel.clone(),
        sandbox: inner.sandbox.clone(),
        env: Arc::new(
            ToolEnv::for_config(&inner.config)
                .and_key(model.active.settings.provider.api_key.as_ref()),
        ),
        todos: lock(conversation).todos.clone(),
        documents: lock(&inner.documents).clone(),
        approved_diff: None,
    };
    let mut last_agent_message = None;
    for _step in 0..inner.config.max_steps {
        let history = lock(conversation).history.clone();
        let request = ModelRequest {
            model: model.name,
            system: &system,
            messages: &history,
            tools: &offered,
            prompt_cache_key: cache_key.as_deref(),
            max_output_tokens: model.active.settings.max_output_tokens,
        };
        let mut on_update = |update: StreamUpdate| {
            events.emit(match update {
                StreamUpdate::Text(delta) => EventMsg::AgentMessageDelta { delta },
                StreamUpdate::Reasoning(delta) => EventMsg::AgentReasoningDelta { delta },
                StreamUpdate::Warning(message) => EventMsg::Warning { message },
            });
        };
        let response = match model
            .active
            .client
            .stream(&request, cancel, &mut on_update)
            .await
        {
            Ok(response) => response,
            Err(StreamError::Cancelled { partial }) => {
                // Interrupted while streaming: keep the text that was shown, drop unfinished
                // tool calls, and say it was interrupted.
                let mut records = Vec::new();
                if !partial.text.is_empty() || !partial.reasoning.is_empty() {
                    records.push(ChatMessage::assistant(
                        partial.text,
                        partial.reasoning,
                        Vec::new(),
                    ));
                }
                records.push(ChatMessage::user(INTERRUPT_MESSAGE));
                lock(conversation).record(records);
                return interrupted(conversation, events, context_window);
            }
            Err(StreamError::Failed(message)) => {
                events.emit(EventMsg::Error { message });
                return Ending::Complete(last_agent_message);
            }
        };
        let tool_calls = response.tool_calls.clone();
        record_reply(
            conversation,
            response,
            events,
            context_window,
            &mut last_agent_message,
        );
        if tool_calls.is_empty() {
            return Ending::Complete(last_agent_message);
        }

        // Checkpoint 1: the reply is complete and no tool has run.
        if cancel.is_cancelled() {
            let mut records: Vec<ChatMessage> = tool_calls
                .iter()
                .map(|call| {
                    ChatMessage::tool_result(&call.id, &call.function.name, CANCELLED_BEFORE_START)
                })
                .collect();
            records.push(ChatMessage::user(INTERRUPT_MESSAGE));
            lock(conversation).record(records);
            return interrupted(conversation, events, context_window);
        }

        let mode = lock(conversation).mode;
        let run = ToolRun {
            registry: &inner.tools,
            mcp: &mcp_view,
            permissions: &inner.permissions,
            mode,
            hidden: &hidden,
            session: inner,
            control,
            home: inner.home.as_deref(),
            base: &tool_ctx,
            events,
        };
        let results = run_tool_calls(&tool_calls, &run).await;
        lock(conversation).record(results.into_iter().flatten());

        // Checkpoint 2: every tool has finished and the model is not yet asked again. A
        // conversation tool that handed the turn over ends the task as replaced.
        if cancel.is_cancelled() && control.reason() == AbortReason::Replaced {
            return Ending::Aborted(AbortReason::Replaced);
        }
        if cancel.is_cancelled() {
            let conversation_ref = conversation;
            let mut conversation = lock(conversation_ref);
            if let Some(last) = conversation.history.last_mut() {
                let content = last.content.get_or_insert_with(String::new);
                content.push('\n');
                content.push_str(INTERRUPT_MESSAGE);
            }
            drop(conversation);
            return interrupted(conversation_ref, events, context_window);
        }
    }
    let limit = inner.config.max_steps;
    events.warning(format!(
        "stopped after {limit} model calls, the step limit (maxSteps), before the task was done; send another message to continue"
    ));
    Ending::StepLimit(last_agent_message, limit)
}

/// Records a finished reply and reports it: whole reasoning, whole text, token usage.
fn record_reply(
    conversation: &Mutex<Conversation>,
    response: ModelResponse,
    events: &TaskEvents,
    context_window: Option<u64>,
    last_agent_message: &mut Option<String>,
) {
    let ModelResponse {
        text,
        reasoning,
        tool_calls,
        usage,
    } = response;
    if !reasoning.is_empty() {
        events.emit(EventMsg::AgentReasoning {
            text: reasoning.clone(),
        });
    }
    if !text.is_empty() {
        events.emit(EventMsg::AgentMessage {
            message: text.clone(),
        });
        *last_agent_message = Some(text.clone());
    }
    if !tool_calls.is_empty() {
        let calls = tool_calls
            .iter()
            .map(|call| RequestedToolCall {
                call_id: call.id.clone(),
                tool_name: call.function.name.clone(),
                arguments: serde_json::from_str(&call.function.arguments)
                    .unwrap_or_else(|_| serde_json::Value::String(call.function.arguments.clone())),
            })
            .collect();
        events.emit(EventMsg::ToolCallsRequested { calls });
    }
    let mut conversation = lock(conversation);
    conversation.record([ChatMessage::assistant(text, reasoning, tool_calls)]);
    if let Some(usage) = usage {
        conversation.total_usage.add(&usage);
        let total = conversation.total_usage;
        drop(conversation);
        emit_usage(events, usage, total, context_window);
    }
}

fn emit_usage(
    events: &TaskEvents,
    last: TokenUsage,
    total: TokenUsage,
    context_window: Option<u64>,
) {
    events.emit(EventMsg::TokenCount {
        last,
        total,
        context_window,
    });
}

/// Ends an interrupted task, reporting the usage so far as the seed asks.
fn interrupted(
    conversation: &Mutex<Conversation>,
    events: &TaskEvents,
    context_window: Option<u64>,
) -> Ending {
    let total = lock(conversation).total_usage;
    if total.total_tokens > 0 {
        emit_usage(events, TokenUsage::default(), total, context_window);
    }
    Ending::Aborted(AbortReason::Interrupted)
}

/// A key that stays the same while a conversation's instructions, tools and model family do,
/// so a provider can reuse its prompt cache across turns.
fn prompt_cache_key(system: &str, tools: &[crate::model::ToolSpec], model: &str) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    system.hash(&mut hasher);
    for tool in tools {
        tool.name.hash(&mut hasher);
    }
    model
        .split(['-', '.'])
        .next()
        .unwrap_or(model)
        .hash(&mut hasher);
    format!("coder-{:016x}", hasher.finish())
}

/// The conversation's MCP view, built once the servers settled (problems become warnings).
/// `None` when the task was interrupted while waiting for the servers.
async fn mcp_view(
    inner: &Inner,
    conversation: &Mutex<Conversation>,
    cancel: &tokio_util::sync::CancellationToken,
    events: &TaskEvents,
) -> Option<Arc<crate::tools::ToolRegistry>> {
    if let Some(view) = lock(conversation).mcp_view.clone() {
        return Some(view);
    }
    tokio::select! {
        () = inner.mcp.settled() => {}
        () = cancel.cancelled() => return None,
    }
    let allowlist = lock(conversation).context.mcp_allowlist.clone();
    let (view, problems) = crate::mcp::view(&inner.mcp, allowlist.as_deref());
    for problem in problems {
        events.warning(problem);
    }
    let view = Arc::new(view);
    lock(conversation).mcp_view = Some(view.clone());
    Some(view)
}
