//! Runs the tool calls of one model reply: the pipeline for each call, concurrency when every
//! call is read-only, and the per-tool interrupt checkpoints (3: before a tool starts, 4:
//! while it runs).

use std::time::Instant;

use coder_protocol::{ChatMessage, EventMsg, ToolCall};
use futures::future::join_all;
use serde_json::Value;

use super::{ToolContext, ToolRegistry};
use crate::events::TaskEvents;

/// The result of a call that the interrupt reached before it started (checkpoint 3).
pub(crate) const CANCELLED_BEFORE_START: &str =
    "The user interrupted the task before this tool call ran; it was not run.";
/// The result of a call that the interrupt reached while it ran (checkpoint 4).
pub(crate) const CANCELLED_WHILE_RUNNING: &str =
    "The user interrupted this tool call while it was running; it may have done part of its work.";

/// Runs `calls` and returns one `tool` message per call, in the model's order.
pub(crate) async fn run_tool_calls(
    calls: &[ToolCall],
    registry: &ToolRegistry,
    base: &ToolContext,
    events: &TaskEvents,
) -> Vec<ChatMessage> {
    let all_read_only = calls.iter().all(|call| {
        registry
            .get(&call.function.name)
            .is_some_and(|entry| entry.tool.is_read_only())
    });
    if all_read_only {
        join_all(
            calls
                .iter()
                .map(|call| run_one(call, registry, base, events)),
        )
        .await
    } else {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            results.push(run_one(call, registry, base, events).await);
        }
        results
    }
}

async fn run_one(
    call: &ToolCall,
    registry: &ToolRegistry,
    base: &ToolContext,
    events: &TaskEvents,
) -> ChatMessage {
    let name = call.function.name.as_str();
    let started = Instant::now();
    let fail = |error: String| {
        events.emit(EventMsg::ToolCallFailed {
            call_id: call.id.clone(),
            tool_name: name.to_owned(),
            error: error.clone(),
            duration_ms: elapsed_ms(started),
        });
        ChatMessage::tool_result(&call.id, name, error)
    };

    // Checkpoint 3: the task was interrupted before this call started.
    if base.cancel.is_cancelled() {
        return fail(CANCELLED_BEFORE_START.to_owned());
    }
    let Some(entry) = registry.get(name) else {
        return fail(format!(
            "Error: there is no tool named `{name}`. Available tools: {}",
            registry.names().join(", ")
        ));
    };
    let input: Value = match serde_json::from_str(&call.function.arguments) {
        Ok(input) => input,
        Err(err) => {
            return fail(format!(
                "Error: the arguments of `{name}` are not valid JSON ({err}); send a JSON object"
            ));
        }
    };
    let problems: Vec<String> = entry
        .validator
        .iter_errors(&input)
        .map(|err| {
            let at = err.instance_path().to_string();
            if at.is_empty() {
                err.to_string()
            } else {
                format!("{at}: {err}")
            }
        })
        .collect();
    if !problems.is_empty() {
        return fail(format!(
            "Error: invalid arguments for `{name}`: {}",
            problems.join("; ")
        ));
    }
    let ctx = ToolContext {
        call_id: call.id.clone(),
        ..base.clone()
    };
    if let Err(reason) = entry.tool.validate_input(&input, &ctx) {
        return fail(format!("Error: {reason}"));
    }

    events.emit(EventMsg::ToolCallStarted {
        call_id: call.id.clone(),
        tool_name: name.to_owned(),
        arguments: input.clone(),
    });
    let result = tokio::select! {
        biased;
        result = entry.tool.call(input, &ctx) => Some(result),
        () = ctx.cancel.cancelled() => None,
    };
    // Checkpoint 4: interrupted while running. Whatever the tool did was cut short, so the
    // model is told so, along with anything the tool still returned.
    if ctx.cancel.is_cancelled() {
        let returned = match result {
            Some(Ok(output)) => format!("\nWhat it returned: {}", output.content),
            Some(Err(error)) => format!("\nWhat it returned: {error}"),
            None => String::new(),
        };
        return fail(format!("{CANCELLED_WHILE_RUNNING}{returned}"));
    }
    match result {
        Some(Ok(output)) => {
            // The model sees the change too, so it can check what it did.
            let content = match &output.diff {
                Some(diff) => format!("{}\n\n{diff}", output.content),
                None => output.content,
            };
            events.emit(EventMsg::ToolCallCompleted {
                call_id: call.id.clone(),
                tool_name: name.to_owned(),
                output: content.clone(),
                duration_ms: elapsed_ms(started),
                diff: output.diff,
            });
            ChatMessage::tool_result(&call.id, name, content)
        }
        Some(Err(error)) => fail(format!("Error: {error}")),
        None => fail(CANCELLED_WHILE_RUNNING.to_owned()),
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
