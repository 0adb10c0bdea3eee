//! Runs the tool calls of one model reply: the pipeline for each call, concurrency when every
//! call is read-only, and the per-tool interrupt checkpoints (3: before a tool starts, 4:
//! while it runs, where a person's refusal keeps its message and ends the task).

use std::time::Instant;

use coder_protocol::{ChatMessage, EventMsg, ToolCall};
use futures::future::join_all;
use serde_json::Value;

use std::sync::Mutex;

use coder_protocol::{AbortReason, Mode, PolicyDecision, ToolKind};

use super::escalation;
use super::{
    CallAnswer, ControlSignal, ConversationHost, Handoff, StopReason, TaskControl, TurnTools,
    plan_exit, questions, summary,
};
use crate::events::TaskEvents;
use crate::permissions::{Answer, Call, Request, Unattended, check, folder_of};
use crate::sync::lock;
use crate::tools::ToolContext;
use crate::tools::conversation::ConversationCall;
use crate::tools::live_output::OutputSink;
use crate::tools::shell_safety::SafetyContext;

/// The result of a call that the interrupt reached before it started (checkpoint 3).
pub(crate) const CANCELLED_BEFORE_START: &str =
    "The user interrupted the task before this tool call ran; it was not run.";
/// The result of a call after an interrupting conversation tool in the same reply.
pub(crate) const REPLACED_BEFORE_START: &str = "This call was not run: an earlier call in the same reply handed the turn to another conversation.";
/// The result of a call that the interrupt reached while it ran (checkpoint 4).
pub(crate) const CANCELLED_WHILE_RUNNING: &str =
    "The user interrupted this tool call while it was running; it may have done part of its work.";
/// How long an interrupted call is given to return what it did so far.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
/// The result of a call after one the person refused in the same reply (checkpoint 3).
const REFUSED_BEFORE_START: &str = "This call was not run: the user refused an earlier call of the same reply, which ended the task.";

/// Sends what the call `call_id` prints while it runs as `tool_call_output_delta` events.
pub(crate) fn output_to(events: &TaskEvents, call_id: &str) -> OutputSink {
    let (events, call_id) = (events.clone(), call_id.to_owned());
    OutputSink::new(move |stream, delta| {
        events.emit(EventMsg::ToolCallOutputDelta {
            call_id: call_id.clone(),
            stream,
            delta,
        });
    })
}

/// Everything the calls of one reply run with.
pub(super) struct ToolRun<'a> {
    pub tools: &'a TurnTools,
    /// The conversation's mode now: a switch applies from the next decision, a waiting
    /// request's included.
    pub mode: &'a (dyn Fn() -> Mode + Sync),
    /// Answers the conversation tools.
    pub conversations: &'a dyn ConversationHost,
    /// The running task's control: its cancellation and why it was stopped.
    pub control: &'a TaskControl,
    pub events: &'a TaskEvents,
    /// Set by the conversation tool that handed the turn over.
    pub handoff: Mutex<Option<Handoff>>,
    /// Set by a call that changes the turn's context (an approved plan).
    pub signal: Mutex<Option<ControlSignal>>,
    /// The files the calls changed (read from their diffs), for verification.
    pub edited: Mutex<Vec<String>>,
}

impl ToolRun<'_> {
    pub fn mode(&self) -> Mode {
        (self.mode)()
    }

    fn hidden(&self, name: &str) -> bool {
        self.tools.hidden.iter().any(|hidden| hidden == name)
    }
}

/// Runs `calls` and returns one `tool` message per call, in the model's order; `None` for a
/// call a continuation task will answer (an interrupting conversation tool).
pub(super) async fn run_tool_calls(
    calls: &[ToolCall],
    run: &ToolRun<'_>,
) -> Vec<Option<ChatMessage>> {
    let all_read_only = calls.iter().all(|call| {
        run.tools
            .registry
            .get(&call.function.name)
            .or_else(|| run.tools.mcp.get(&call.function.name))
            .is_some_and(|entry| entry.tool.is_read_only())
    });
    if all_read_only {
        join_all(calls.iter().map(|call| run_one(call, run))).await
    } else {
        // Nothing changes the working tree before the turn's start is read for `/undo`.
        run.tools.checkpoint.ready(run.events).await;
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            results.push(run_one(call, run).await);
        }
        results
    }
}

/// The `apply_patch` call a `bash` call stands for, when the turn lets `bash` apply patches
/// and its command only applies one ([`crate::tools::Tool::stands_for`]). It keeps the call's
/// id, and goes through every check of the tool it stands for.
fn stand_in(call: &ToolCall, run: &ToolRun<'_>) -> Option<ToolCall> {
    if !run.tools.patch_through_shell || run.hidden(&call.function.name) {
        return None;
    }
    let entry = run.tools.registry.get(&call.function.name)?;
    let input: Value = serde_json::from_str(&call.function.arguments).ok()?;
    let (name, input) = entry.tool.stands_for(&input)?;
    Some(ToolCall::function(
        call.id.clone(),
        name.to_owned(),
        input.to_string(),
    ))
}

async fn run_one(call: &ToolCall, run: &ToolRun<'_>) -> Option<ChatMessage> {
    let stand_in = stand_in(call, run);
    let call = stand_in.as_ref().unwrap_or(call);
    let (registry, mcp, base, events) = (
        &run.tools.registry,
        &run.tools.mcp,
        &run.tools.base,
        run.events,
    );
    let name = call.function.name.as_str();
    // When the call started, for its duration: set again once a person answered, so that
    // the time spent answering is not counted as the tool's.
    let started = std::sync::Mutex::new(Instant::now());
    let fail = |error: String| {
        events.emit(EventMsg::ToolCallFailed {
            call_id: call.id.clone(),
            tool_name: name.to_owned(),
            summary: summary::failed(&summary::key_of_raw(&call.function.arguments), &error),
            error: error.clone(),
            duration_ms: elapsed_ms(*lock(&started)),
        });
        Some(ChatMessage::tool_result(&call.id, name, error))
    };

    // Checkpoint 3: the task was interrupted, replaced or refused before this call started.
    if base.cancel.is_cancelled() {
        return fail(match run.control.stopped_for() {
            StopReason::Aborted(AbortReason::Replaced) => REPLACED_BEFORE_START.to_owned(),
            StopReason::Aborted(AbortReason::Interrupted) => CANCELLED_BEFORE_START.to_owned(),
            StopReason::Refused => REFUSED_BEFORE_START.to_owned(),
        });
    }
    // A stand-in runs the tool the conversation left out: that is what it is for.
    let entry = registry
        .get(name)
        .filter(|_| !run.hidden(name) || stand_in.is_some())
        .or_else(|| mcp.get(name));
    let Some(entry) = entry else {
        return fail(format!(
            "Error: there is no tool named `{name}`. Available tools: {}",
            registry
                .names()
                .into_iter()
                .filter(|n| !run.hidden(n))
                .chain(mcp.names())
                .collect::<Vec<_>>()
                .join(", ")
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
    let validator = match entry.validator() {
        Ok(validator) => validator,
        Err(err) => {
            return fail(format!(
                "Error: `{name}` cannot be called: its schema is invalid ({err})"
            ));
        }
    };
    let problems: Vec<String> = validator
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
    let mut ctx = ToolContext {
        call_id: call.id.clone(),
        ..base.clone()
    };
    if let Err(reason) = entry.tool.validate_input(&input, &ctx) {
        return fail(format!("Error: {reason}"));
    }
    // Only a person answers questions: no mode or preset decides them.
    if let Some(questions) = entry.tool.questions(&input) {
        let began = *lock(&started);
        return Some(
            questions::ask_user(
                entry.tool.as_ref(),
                &ctx.workspace,
                call,
                &input,
                questions,
                run,
                began,
            )
            .await,
        );
    }
    // Only a person answers a plan: no mode or preset decides it.
    if entry.tool.kind() == ToolKind::SwitchMode {
        let began = *lock(&started);
        return Some(
            plan_exit::exit_plan_mode(
                entry.tool.as_ref(),
                &ctx.workspace,
                call,
                &input,
                run,
                began,
            )
            .await,
        );
    }
    let permissions = &run.tools.permissions;
    let safety = SafetyContext::new(
        &ctx.workspace,
        run.tools.home.as_deref(),
        ctx.sandbox.as_deref(),
    );
    // The folder of a file tool's paths: what "always" covers for it (none for a command).
    let folder = entry
        .tool
        .command_line(&input)
        .is_none()
        .then(|| {
            folder_of(
                &entry.tool.locations(&input, &ctx.workspace),
                &ctx.workspace,
            )
        })
        .flatten();
    // Decided with the mode and preset in force now; a change while a person is asked
    // decides it again.
    loop {
        let verdict = check(
            run.mode(),
            permissions.preset(),
            &permissions.rules(),
            &Call::of(entry.tool.as_ref(), &input, &ctx.workspace),
            &safety,
        );
        match verdict.decision {
            PolicyDecision::Allow => {
                // A person's recorded "always deny" holds whatever allowed the call.
                if let Some(message) =
                    permissions.recorded_denial(name, verdict.line.as_ref(), folder.as_deref())
                {
                    return fail(message);
                }
                break;
            }
            PolicyDecision::Deny => {
                return fail(format!(
                    "Permission denied ({}); the call was not run.",
                    verdict.reason
                ));
            }
            PolicyDecision::Ask => {
                // The person sees the change before it is made; a call that cannot succeed
                // fails without asking.
                let (diff, changes) = match entry.tool.preview(&input, &ctx).await {
                    Ok(Some(preview)) => (Some(preview.diff), preview.changes),
                    Ok(None) => (None, Vec::new()),
                    Err(reason) => return fail(format!("Error: {reason}")),
                };
                let summary = summarize(name, &input, &verdict.reason);
                let request = Request {
                    call_id: &call.id,
                    tool: name,
                    kind: entry.tool.kind(),
                    folder: folder.clone(),
                    locations: entry.tool.locations(&input, &ctx.workspace),
                    command: entry.tool.command_line(&input),
                    plan: entry.tool.plan(&input),
                    input: &input,
                    summary: &summary,
                    reason: &verdict.reason,
                    diff: diff.clone().filter(|diff| !diff.is_empty()),
                    changes,
                    human_required: verdict.human_required,
                    line: verdict.line.as_ref(),
                    unattended: verdict.unattended,
                };
                match permissions.ask(request, events, &ctx.cancel).await {
                    Answer::Allowed => {
                        ctx.approved_diff = diff;
                        *lock(&started) = Instant::now();
                        break;
                    }
                    Answer::Denied(message) => return fail(message),
                    Answer::Refused(message) => {
                        // Checkpoint 4 with the reason `refuse` (seed 001): the person
                        // refused the call while it was being carried out; it keeps the
                        // refusal as its result, and the task ends.
                        run.control.refuse();
                        return fail(message);
                    }
                    Answer::Cancelled => return fail(CANCELLED_BEFORE_START.to_owned()),
                    Answer::Redecide => {}
                }
            }
        }
    }

    events.emit(crate::tools::started(
        entry.tool.as_ref(),
        &call.id,
        &input,
        &ctx.workspace,
    ));
    ctx.live_output = Some(output_to(events, &call.id));
    if let Some(parsed) = ConversationCall::parse(name, input.clone()) {
        let answer = match parsed {
            Ok(parsed) => {
                run.conversations
                    .handle(base.conversation_id, &call.id, parsed, run.control.depth)
            }
            Err(output) => CallAnswer::Result(output),
        };
        return match answer {
            CallAnswer::HandOver(handoff) => {
                // The turn ends as replaced: later calls of this reply are not run, and a
                // continuation task answers this one.
                *lock(&run.handoff) = Some(handoff);
                run.control.stop(AbortReason::Replaced);
                None
            }
            CallAnswer::Result(output) => {
                events.emit(EventMsg::ToolCallCompleted {
                    call_id: call.id.clone(),
                    tool_name: name.to_owned(),
                    summary: summary::completed(&summary::key_argument(&input), &output),
                    output: output.clone(),
                    duration_ms: elapsed_ms(*lock(&started)),
                    diff: None,
                });
                Some(ChatMessage::tool_result(&call.id, name, output))
            }
        };
    }
    let key = summary::key_argument(&input);
    let input_copy = input.clone();
    let running = entry.tool.call(input, &ctx);
    tokio::pin!(running);
    let result = tokio::select! {
        biased;
        result = &mut running => Some(result),
        // A tool that watches the token itself (a command: its processes are ended) gets a
        // moment to return what it did so far, for the person and the model.
        () = ctx.cancel.cancelled() => tokio::time::timeout(STOP_GRACE, &mut running).await.ok(),
    };
    // What a tool returns is recorded: the keys coder holds are taken out first.
    let result = result.map(|result| redacted(result, &ctx.env));
    // Checkpoint 4: stopped while running. When a person refused a call of the reply (the
    // reason `refuse`), a call that still returned keeps what it returned; any other stop
    // cut the tool short, so the model is told so, along with anything it still returned.
    let refused = run.control.stopped_for() == StopReason::Refused;
    if ctx.cancel.is_cancelled() && !(refused && result.is_some()) {
        let returned = match result {
            Some(Ok(output)) => format!("\nWhat it returned: {}", output.content),
            Some(Err(error)) => format!("\nWhat it returned: {error}"),
            None => String::new(),
        };
        return fail(format!("{CANCELLED_WHILE_RUNNING}{returned}"));
    }
    let result = match result {
        Some(Ok(output)) if output.diff.is_none() => {
            match escalation::wanted(entry.tool.as_ref(), &ctx, &output.content) {
                Some(escalation) => Some(
                    escalation::rerun(
                        entry.tool.as_ref(),
                        input_copy,
                        &ctx,
                        call,
                        run,
                        output,
                        escalation,
                    )
                    .await,
                ),
                None => Some(Ok(output)),
            }
        }
        other => other,
    };
    match result.map(|result| redacted(result, &ctx.env)) {
        Some(Ok(mut output)) => {
            if let Some(event) = output.event.take() {
                events.emit(event);
            }
            let summary = summary::completed(&key, &output.content);
            if let Some(diff) = &output.diff {
                lock(&run.edited).extend(super::verify::diff_paths(diff));
            }
            // The model sees the change too, so it can check what it did.
            let content = match &output.diff {
                Some(diff) => format!("{}\n\n{diff}", output.content),
                None => output.content,
            };
            events.emit(EventMsg::ToolCallCompleted {
                call_id: call.id.clone(),
                tool_name: name.to_owned(),
                summary,
                output: content.clone(),
                duration_ms: elapsed_ms(*lock(&started)),
                diff: output.diff,
            });
            let mut message = ChatMessage::tool_result(&call.id, name, content);
            message.attachments = output.attachments;
            Some(message)
        }
        Some(Err(error)) => fail(format!("Error: {error}")),
        None => fail(CANCELLED_WHILE_RUNNING.to_owned()),
    }
}

/// `result` with the secrets `env` withholds taken out of its text and diff.
pub(crate) fn redacted(
    result: Result<crate::tools::ToolOutput, String>,
    env: &crate::process::ToolEnv,
) -> Result<crate::tools::ToolOutput, String> {
    match result {
        Ok(mut output) => {
            output.content = env.redact(output.content);
            output.diff = output.diff.map(|diff| env.redact(diff));
            Ok(output)
        }
        Err(error) => Err(env.redact(error)),
    }
}

/// A line for the person asked: what would run, and why they are asked.
pub(super) fn summarize(tool: &str, input: &Value, reason: &str) -> String {
    let what = ["command", "path", "pattern"]
        .iter()
        .find_map(|key| input[*key].as_str())
        .map_or_else(|| tool.to_owned(), |subject| format!("{tool}: {subject}"));
    format!("{what} ({reason})")
}

/// What a person is asked about for a call only a person answers (a plan, a question):
/// what the tool says of it, nothing a rule or mode could decide.
pub(super) fn person_request<'a>(
    tool: &'a dyn crate::tools::Tool,
    call: &'a ToolCall,
    input: &'a Value,
    workspace: &std::path::Path,
    summary: &'a str,
    reason: &'a str,
) -> Request<'a> {
    Request {
        call_id: &call.id,
        tool: tool.name(),
        kind: tool.kind(),
        locations: tool.locations(input, workspace),
        command: tool.command_line(input),
        plan: tool.plan(input),
        input,
        summary,
        reason,
        diff: None,
        changes: Vec::new(),
        folder: None,
        human_required: true,
        line: None,
        unattended: Unattended::Approve,
    }
}

/// Ends a call the turn ran itself (a plan, questions): its `tool_call_completed` or
/// `tool_call_failed` event, and the result the model reads.
pub(super) fn finished(
    events: &TaskEvents,
    tool: &dyn crate::tools::Tool,
    call: &ToolCall,
    output: String,
    failed: bool,
    started: Instant,
) -> ChatMessage {
    if failed {
        events.emit(EventMsg::ToolCallFailed {
            call_id: call.id.clone(),
            tool_name: tool.name().to_owned(),
            summary: summary::failed("", &output),
            error: output.clone(),
            duration_ms: elapsed_ms(started),
        });
    } else {
        events.emit(EventMsg::ToolCallCompleted {
            call_id: call.id.clone(),
            tool_name: tool.name().to_owned(),
            summary: summary::completed("", &output),
            output: output.clone(),
            duration_ms: elapsed_ms(started),
            diff: None,
        });
    }
    ChatMessage::tool_result(&call.id, tool.name(), output)
}

pub(super) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
