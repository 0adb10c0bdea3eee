//! One task's turns: stream the model, record the reply, run its tool calls, and loop until
//! a reply has no tool call, the step limit is reached, the provider fails for good, the
//! task is stopped, or a conversation tool hands the turn over.
//!
//! A turn runs from the [`TurnContext`] it is given and returns a [`TurnOutcome`]; it never
//! reaches back into the session. What it records goes through its [`Recorder`] as it
//! happens, so a snapshot taken meanwhile holds it. Whatever way it ends, the history stays
//! a valid request: every assistant tool call has a result, except the one a handover leaves
//! for the continuation task to answer.

pub(crate) mod compact;
mod escalation;
mod plan_exit;
mod questions;
pub(crate) mod summary;
mod tool_calls;
mod verify;

use std::sync::{Arc, Mutex};

use coder_protocol::{
    AbortReason, ChatMessage, CompactTrigger, ConversationId, ErrorKind, EventMsg, InputItem, Mode,
    ModeChangeReason, RequestedToolCall, TaskId, TokenUsage,
};
use tokio_util::sync::CancellationToken;

use crate::error::EngineError;
use crate::events::TaskEvents;
use crate::model::{
    ModelRequest, ModelResponse, ModelStream, StreamError, StreamUpdate, ToolSpec, WireHistory,
};
use crate::permissions::Permissions;
use crate::sync::lock;
use crate::tokens::{ContextSize, Encoding};
use crate::tools::conversation::ConversationCall;
use crate::tools::{ToolContext, ToolRegistry};

pub(crate) use tool_calls::{CANCELLED_BEFORE_START, output_to, redacted};
pub(crate) use verify::Verifier;

/// Added to the history when a task is interrupted.
pub(crate) const INTERRUPT_MESSAGE: &str = "[Request interrupted by user]";

/// Everything one task's turns need, and nothing more.
pub(crate) struct TurnContext {
    /// The model and what the task sends it besides the history.
    pub model: TurnModel,
    pub system: String,
    /// The tools offered, sorted by name.
    pub offered: Vec<ToolSpec>,
    /// The conversation's history as its requests wrote it, which each request extends.
    pub wire: Arc<Mutex<WireHistory>>,
    /// The conversation's context size as last measured.
    pub size: ContextSize,
    /// Set when tools are described in the prompt (seed 002): the initial tools, which the
    /// description names; the offered tools are then not sent as `tools`.
    pub prompted: Option<Vec<ToolSpec>>,
    pub max_steps: u32,
    /// The tools the calls may use.
    pub tools: TurnTools,
    /// Stops the task, and says why.
    pub control: TaskControl,
    pub events: TaskEvents,
    /// Records history items into the conversation as they happen.
    pub recorder: Arc<dyn Recorder>,
    /// Answers the conversation tools.
    pub conversations: Arc<dyn ConversationHost>,
    /// Rebuilds the context when a call changes it (an approved plan).
    pub context: Arc<dyn ContextBuilder>,
    /// Verifies the task's edits when its replies end (seed 004 section 6); `None` for a
    /// worker.
    pub verifier: Option<Verifier>,
}

/// What a tool call asks the turn to do before the next model call (seed 001
/// `controlSignal`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ControlSignal {
    /// The conversation leaves plan mode: the session switches its mode and rebuilds the
    /// tools and the system prompt; with `rebuild_message` (the plan), the history is
    /// replaced by one message holding it. The turn goes on with the new context.
    RebuildContext {
        reason: ModeChangeReason,
        rebuild_message: Option<String>,
    },
    /// The turn ends now, `answer` being the task's answer (a plan nobody could approve).
    EndTurn { answer: String },
}

/// The context a turn goes on with after a [`ControlSignal::RebuildContext`].
pub(crate) struct Rebuilt {
    pub system: String,
    pub offered: Vec<ToolSpec>,
    pub hidden: Vec<String>,
    pub patch_through_shell: bool,
    pub prompt_cache_key: Option<String>,
    /// With tools described in the prompt: the initial tools the description names now.
    pub prompted: Option<Vec<ToolSpec>>,
    /// Whether a new batch replaced the history (the conversation holds it, with what the
    /// rebuild recorded after it).
    pub new_batch: bool,
}

/// Builds a task's context again, from the same code that built it when the task started.
pub(crate) trait ContextBuilder: Send + Sync {
    /// Leaves plan mode as `reason` says (emitting `mode_changed`), replaces the history by
    /// `rebuild_message` when given, and returns the context for the next model call.
    fn rebuild(
        &self,
        reason: ModeChangeReason,
        rebuild_message: Option<&str>,
        events: &TaskEvents,
    ) -> Rebuilt;
}

/// The model a task talks to.
pub(crate) struct TurnModel {
    pub name: String,
    pub client: Arc<dyn ModelStream>,
    pub context_window: Option<u64>,
    pub max_output_tokens: u32,
    pub prompt_cache_key: Option<String>,
    /// The tokenizer that counts what the provider does not report.
    pub encoding: Encoding,
    /// The share of the context window past which the history is compacted before a model
    /// call; `None` for a worker (seed 001), which fails instead when it overflows.
    pub compact_threshold: Option<f64>,
}

/// The tools one task may call, and what a call runs with.
pub(crate) struct TurnTools {
    pub registry: Arc<ToolRegistry>,
    /// The conversation's MCP tools.
    pub mcp: Arc<ToolRegistry>,
    pub permissions: Arc<Permissions>,
    /// Tools not offered to this conversation (disabled, or left out by its tool prefs).
    pub hidden: Vec<String>,
    /// A `bash` call that only applies a patch runs as an `apply_patch` call
    /// ([`crate::tools::Tool::stands_for`]): set when the conversation left `apply_patch`
    /// out and the session did not disable it (seed 003; the prompt's instructions say so).
    pub patch_through_shell: bool,
    pub home: Option<std::path::PathBuf>,
    /// The context every call starts from (its call id is filled per call).
    pub base: ToolContext,
    /// The turn's start, being recorded for `/undo`: tools run once it is done.
    pub checkpoint: crate::undo::PendingCheckpoint,
}

/// How a task's turns ended.
#[derive(Debug)]
pub(crate) enum TurnOutcome {
    /// The last reply had no tool call; `step_limit` is set when the step limit cut the task
    /// short instead.
    Completed {
        last_agent_message: Option<String>,
        step_limit: Option<u32>,
    },
    /// Stopped by an interrupt (or a destroy) at a checkpoint.
    Aborted(AbortReason),
    /// A conversation tool handed the turn to another conversation; the driver runs the
    /// target's task, then the continuation that answers the call.
    HandedOver(Handoff),
    /// The task could not go on: the provider failed for good, or the task could not start
    /// (no provider, its conversation gone). Already reported as an `error` event.
    Failed {
        error: EngineError,
        last_agent_message: Option<String>,
    },
}

/// Where a conversation's history goes as a turn records it.
pub(crate) trait Recorder: Send + Sync {
    fn record(&self, messages: Vec<ChatMessage>);
    /// The conversation's history now, shared (no copy): what the next request sends. A
    /// task holds it no longer than it needs it, so recording changes it in place.
    fn history(&self) -> Arc<Vec<ChatMessage>>;
    /// Appends `text` to the content of the last message (an interrupt after the tools ran).
    fn append_to_last(&self, text: &str);
    /// The conversation's mode now: a switch applies from the next tool call.
    fn mode(&self) -> Mode;
    /// Adds a reply's usage and the context's size after it; returns the conversation's
    /// usage after it.
    fn add_usage(&self, usage: &TokenUsage, size: ContextSize) -> UsageNow;
    fn usage(&self) -> UsageNow;
    /// Replaces the history by a compaction's, archiving what it replaced; returns the
    /// archived segment's index and the usage after the summary request.
    fn compacted(
        &self,
        compaction: compact::Compaction,
        trigger: CompactTrigger,
        size: ContextSize,
    ) -> (usize, UsageNow);
}

/// A conversation's usage at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct UsageNow {
    /// Every request's usage added up.
    pub total: TokenUsage,
    /// The size of the context now: the last request's input plus its reply.
    pub context_tokens: u64,
    /// Whether the conversation reports its usage (`token_count`): not a worker's, as
    /// seed 001 says of subagents.
    pub reported: bool,
}

/// What the session does with a conversation tool call.
pub(crate) trait ConversationHost: Send + Sync {
    /// Answers `call`, made in conversation `caller` by a task `depth` handoffs deep.
    fn handle(
        &self,
        caller: ConversationId,
        call_id: &str,
        call: ConversationCall,
        depth: u32,
    ) -> CallAnswer;
}

/// A conversation tool's answer.
#[derive(Debug)]
pub(crate) enum CallAnswer {
    /// The result for the model now.
    Result(String),
    /// The turn ends; the session runs the handoff.
    HandOver(Handoff),
}

/// A handoff ready to run: the target's task, then the continuation answering the call.
#[derive(Debug, Clone)]
pub(crate) struct Handoff {
    pub target: ConversationId,
    pub input: Vec<InputItem>,
    pub closure: Closure,
    /// The id of the task that continues the caller's work (it answers the closure), named
    /// now so the handed-over task's `turn_aborted` can say which task carries on.
    pub continuation: TaskId,
}

/// The tool call a continuation task closes, and where its answer comes from.
#[derive(Debug, Clone)]
pub(crate) struct Closure {
    pub call_id: String,
    pub tool_name: String,
    /// The conversation whose last assistant message is the tool's return value.
    pub target: ConversationId,
    /// `conv_create` also reports the first input it gave.
    pub first_user_message: Option<String>,
    pub first_items_count: Option<usize>,
}

/// How a running task is stopped, and why. The driver keeps one per running task; the turn
/// checks it at its checkpoints.
#[derive(Debug, Clone)]
pub(crate) struct TaskControl {
    pub cancel: CancellationToken,
    reason: Arc<Mutex<StopReason>>,
    /// How many handoffs led to this task.
    pub depth: u32,
    /// Input a person steered into the task, for its next checkpoint.
    steers: Arc<Mutex<SteerBox>>,
}

/// A person's input for a running task: given to its model at the next checkpoint (after
/// the current tool calls), without ending the task.
#[derive(Debug, Clone)]
pub(crate) struct Steer {
    /// The input's id (a task id, which it keeps if it ends up queued instead).
    pub id: TaskId,
    /// The input as the person gave it.
    pub input: Vec<coder_protocol::InputItem>,
    /// What the history records of it.
    pub messages: Vec<ChatMessage>,
}

#[derive(Debug, Default)]
struct SteerBox {
    waiting: Vec<Steer>,
    /// The task passed its last checkpoint: nothing more is taken.
    closed: bool,
}

/// Why a task was stopped (seed 001's abort reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// Stopped as [`AbortReason`] says: an interrupt (or a destroy), or a handover.
    Aborted(AbortReason),
    /// A person refused one of its calls (SemaCore's `refuse`): that call keeps the refusal
    /// as its result (checkpoint 4), later calls get the cancel message, and the task ends
    /// as interrupted.
    Refused,
}

impl TaskControl {
    pub fn new(depth: u32) -> Self {
        Self {
            cancel: CancellationToken::new(),
            reason: Arc::new(Mutex::new(StopReason::Aborted(AbortReason::Interrupted))),
            depth,
            steers: Arc::default(),
        }
    }

    /// Offers `steer` to the task; gives it back when the task takes no more.
    pub fn offer_steer(&self, steer: Steer) -> Result<(), Steer> {
        let mut steers = lock(&self.steers);
        if steers.closed {
            return Err(steer);
        }
        steers.waiting.push(steer);
        Ok(())
    }

    /// Takes back the steer `id` not given to the model yet; whether there was one.
    pub fn withdraw_steer(&self, id: TaskId) -> bool {
        let mut steers = lock(&self.steers);
        let before = steers.waiting.len();
        steers.waiting.retain(|steer| steer.id != id);
        steers.waiting.len() != before
    }

    /// The steers waiting, for the checkpoint that gives them to the model.
    fn take_steers(&self) -> Vec<Steer> {
        std::mem::take(&mut lock(&self.steers).waiting)
    }

    /// Ends the taking of steers (the task ended); returns those not given to the model.
    pub fn close_steers(&self) -> Vec<Steer> {
        let mut steers = lock(&self.steers);
        steers.closed = true;
        std::mem::take(&mut steers.waiting)
    }

    pub fn stop(&self, reason: AbortReason) {
        self.stop_for(StopReason::Aborted(reason));
    }

    /// Stops the task because a person refused one of its calls.
    pub fn refuse(&self) {
        self.stop_for(StopReason::Refused);
    }

    fn stop_for(&self, reason: StopReason) {
        *lock(&self.reason) = reason;
        self.cancel.cancel();
    }

    /// Why the task was stopped (meaningful once it was).
    pub fn stopped_for(&self) -> StopReason {
        *lock(&self.reason)
    }

    /// How the task's end is reported (`turn_aborted`): a refusal ends it as interrupted.
    pub fn reason(&self) -> AbortReason {
        match self.stopped_for() {
            StopReason::Aborted(reason) => reason,
            StopReason::Refused => AbortReason::Interrupted,
        }
    }
}

/// Runs a task's turns to their end.
pub(crate) async fn run_turn(ctx: TurnContext) -> TurnOutcome {
    let TurnContext {
        mut model,
        mut system,
        mut offered,
        wire,
        mut size,
        mut prompted,
        max_steps,
        mut tools,
        control,
        events,
        recorder,
        conversations,
        context,
        mut verifier,
    } = ctx;
    let cancel = &control.cancel;
    let mut last_agent_message = None;
    // Set when the provider refused a request as too long: the next one is compacted.
    let mut overflowed: Option<EngineError> = None;
    let mut refused_once = false;
    for step in 0..max_steps {
        let fitting = Fitting {
            model: &model,
            system: &system,
            offered: &offered,
            recorder: recorder.as_ref(),
            events: &events,
            cancel,
        };
        let next = match fitting.fit(&mut size, overflowed.take()).await {
            Ok(next) => next,
            Err(outcome) => return outcome,
        };
        // With tools in the prompt, the request opens with their description and writes
        // the history as text.
        let lead = prompted
            .as_deref()
            .map(crate::tool_prompt::request_lead)
            .unwrap_or_default();
        let as_text = prompted
            .is_some()
            .then_some(crate::tool_prompt::message_as_text as fn(&ChatMessage) -> ChatMessage);
        let history = recorder.history();
        let request = ModelRequest {
            model: &model.name,
            system: &system,
            lead: &lead,
            messages: &history,
            as_text,
            cache: Some(&wire),
            tools: if as_text.is_some() { &[] } else { &offered },
            prompt_cache_key: model.prompt_cache_key.as_deref(),
            max_output_tokens: model.max_output_tokens,
        };
        // Calls written in the text are never shown as text.
        let mut blocks = prompted
            .as_ref()
            .map(|_| crate::tool_prompt::DeltaFilter::default());
        let mut on_update = |update: StreamUpdate| match update {
            StreamUpdate::Text(delta) => {
                let delta = match &mut blocks {
                    Some(filter) => filter.push(&delta),
                    None => delta,
                };
                if !delta.is_empty() {
                    events.emit(EventMsg::AgentMessageDelta { delta });
                }
            }
            StreamUpdate::Reasoning(delta) => events.emit(EventMsg::AgentReasoningDelta { delta }),
            StreamUpdate::Warning(message) => events.emit(EventMsg::Warning { message }),
            StreamUpdate::Retrying {
                message,
                reason,
                attempt,
                max_retries,
                delay,
            } => events.emit(EventMsg::Retrying {
                message,
                reason,
                attempt,
                max_retries,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            }),
        };
        let streamed = model.client.stream(&request, cancel, &mut on_update).await;
        // What the request sent; let go before anything is recorded.
        let sent = history.len();
        drop(history);
        if let Some(rest) = blocks.as_mut().map(crate::tool_prompt::DeltaFilter::finish)
            && !rest.is_empty()
        {
            events.emit(EventMsg::AgentMessageDelta { delta: rest });
        }
        let response = match streamed.map(|response| read_calls(response, prompted.is_some())) {
            Ok(response) => response,
            Err(StreamError::Cancelled { partial }) => {
                // Interrupted while streaming: keep the text that was shown, drop unfinished
                // tool calls, and say it was interrupted.
                let mut records = Vec::new();
                if !partial.text.is_empty() || !partial.reasoning.is_empty() {
                    events.emit(EventMsg::ReplyComplete {
                        text: partial.text.clone(),
                        reasoning: partial.reasoning.clone(),
                        tool_calls: Vec::new(),
                        interrupted: true,
                    });
                    records.push(ChatMessage::assistant(
                        partial.text,
                        partial.reasoning,
                        Vec::new(),
                    ));
                }
                records.push(ChatMessage::user(INTERRUPT_MESSAGE));
                recorder.record(records);
                return interrupted(recorder.as_ref(), &events, model.context_window);
            }
            Err(StreamError::Failed(error))
                if error.kind() == ErrorKind::ContextLengthExceeded
                    && model.compact_threshold.is_some()
                    && model.context_window.is_some()
                    && !refused_once =>
            {
                // The count said it fits; the provider says not: compact and ask again,
                // once.
                events.warning(format!(
                    "{error}; compacting the conversation and trying again"
                ));
                refused_once = true;
                overflowed = Some(error);
                continue;
            }
            Err(StreamError::Failed(error)) => {
                events.emit(EventMsg::Error {
                    message: error.to_string(),
                    kind: error.kind(),
                });
                return TurnOutcome::Failed {
                    error,
                    last_agent_message,
                };
            }
        };
        refused_once = false;
        let tool_calls = response.tool_calls.clone();
        let reported = response.usage;
        record_reply(
            recorder.as_ref(),
            response,
            &events,
            &mut last_agent_message,
        );
        let usage = match reported {
            Some(usage) => usage,
            None => {
                let history = recorder.history();
                let input = match next {
                    Some(next) => next,
                    None => {
                        let asked = history.get(..sent).unwrap_or(&history);
                        size.count(model.encoding, &system, &offered, asked).await
                    }
                };
                counted_usage(model.encoding, input, history, sent).await
            }
        };
        size = ContextSize {
            tokens: usage.input_tokens + usage.output_tokens,
            through: sent + 1,
        };
        let now = recorder.add_usage(&usage, size);
        emit_usage(&events, usage, now, model.context_window);
        if tool_calls.is_empty() {
            let next = match verifier.as_mut() {
                Some(verifier) => {
                    verifier
                        .after_reply(&tools, &|| recorder.mode(), &events, &control)
                        .await
                }
                None => verify::Next::Done,
            };
            match next {
                verify::Next::Done => {}
                verify::Next::DoneWith(message) => recorder.record(vec![message]),
                verify::Next::Again(message) => {
                    recorder.record(vec![message]);
                    continue;
                }
                verify::Next::Interrupted => {
                    recorder.record(vec![ChatMessage::user(INTERRUPT_MESSAGE)]);
                    return interrupted(recorder.as_ref(), &events, model.context_window);
                }
            }
            return TurnOutcome::Completed {
                last_agent_message,
                step_limit: None,
            };
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
            recorder.record(records);
            return interrupted(recorder.as_ref(), &events, model.context_window);
        }

        let mode_now = || recorder.mode();
        let run = tool_calls::ToolRun {
            tools: &tools,
            mode: &mode_now,
            conversations: conversations.as_ref(),
            control: &control,
            events: &events,
            handoff: Mutex::new(None),
            signal: Mutex::new(None),
            edited: Mutex::new(Vec::new()),
        };
        let results = tool_calls::run_tool_calls(&tool_calls, &run).await;
        recorder.record(results.into_iter().flatten().collect());
        if let Some(verifier) = verifier.as_mut() {
            verifier.edited(std::mem::take(&mut *lock(&run.edited)));
        }

        // Checkpoint 2: every tool has finished and the model is not yet asked again. A
        // conversation tool that handed the turn over ends the task as replaced.
        if let Some(handoff) = run.handoff.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return TurnOutcome::HandedOver(handoff);
        }
        let signal = run.signal.into_inner().unwrap_or_else(|p| p.into_inner());
        if cancel.is_cancelled() {
            recorder.append_to_last(&format!("\n{INTERRUPT_MESSAGE}"));
            return interrupted(recorder.as_ref(), &events, model.context_window);
        }
        match signal {
            None => {}
            Some(ControlSignal::EndTurn { answer }) => {
                // The answer is shown and recorded as the agent's, like a reply.
                events.emit(EventMsg::AgentMessageDelta {
                    delta: answer.clone(),
                });
                events.emit(EventMsg::AgentMessage {
                    message: answer.clone(),
                });
                recorder.record(vec![ChatMessage::assistant(
                    answer.clone(),
                    String::new(),
                    Vec::new(),
                )]);
                return TurnOutcome::Completed {
                    last_agent_message: Some(answer),
                    step_limit: None,
                };
            }
            Some(ControlSignal::RebuildContext {
                reason,
                rebuild_message,
            }) => {
                let rebuilt = context.rebuild(reason, rebuild_message.as_deref(), &events);
                system = rebuilt.system;
                offered = rebuilt.offered;
                tools.hidden = rebuilt.hidden;
                tools.patch_through_shell = rebuilt.patch_through_shell;
                model.prompt_cache_key = rebuilt.prompt_cache_key;
                prompted = rebuilt.prompted;
                if rebuilt.new_batch {
                    // Measured again at the next request.
                    size = ContextSize::default();
                }
            }
        }
        // Checkpoint 2, going on: a person's input steered into the task goes to the model
        // with the next request (`step`: that request's number in the task, from 1). At the
        // step limit there is no next request: it waits for a task of its own.
        let steers = if step + 1 < max_steps {
            control.take_steers()
        } else {
            Vec::new()
        };
        for steer in steers {
            recorder.record(steer.messages);
            events.emit(EventMsg::InputReceipt {
                input_id: steer.id,
                receipt: coder_protocol::Receipt::Steered,
                step: Some(step + 2),
                reason: None,
            });
        }
    }
    events.warning(format!(
        "stopped after {max_steps} model calls, the step limit (maxSteps), before the task was done; send another message to continue"
    ));
    TurnOutcome::Completed {
        last_agent_message,
        step_limit: Some(max_steps),
    }
}

/// A reply with the calls written in its text (prompt tool calling) taken out of the text.
fn read_calls(mut response: ModelResponse, prompted: bool) -> ModelResponse {
    if prompted {
        let (text, calls) = crate::tool_prompt::parse_calls(&response.text, || {
            format!(
                "call_{}",
                coder_protocol::TaskId::new().to_string().replace('-', "")
            )
        });
        response.text = text;
        response.tool_calls.extend(calls);
    }
    response
}

/// Records a finished reply and reports it: whole reasoning, whole text. Returns the
/// assistant message recorded.
fn record_reply(
    recorder: &dyn Recorder,
    response: ModelResponse,
    events: &TaskEvents,
    last_agent_message: &mut Option<String>,
) {
    let ModelResponse {
        text,
        reasoning,
        tool_calls,
        usage: _,
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
    let calls: Vec<RequestedToolCall> = tool_calls
        .iter()
        .map(|call| RequestedToolCall {
            call_id: call.id.clone(),
            tool_name: call.function.name.clone(),
            arguments: serde_json::from_str(&call.function.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.function.arguments.clone())),
        })
        .collect();
    if !calls.is_empty() {
        events.emit(EventMsg::ToolCallsRequested {
            calls: calls.clone(),
        });
    }
    events.emit(EventMsg::ReplyComplete {
        text: text.clone(),
        reasoning: reasoning.clone(),
        tool_calls: calls,
        interrupted: false,
    });
    recorder.record(vec![ChatMessage::assistant(text, reasoning, tool_calls)]);
}

/// The usage of a reply the provider did not report: `input` tokens sent (as counted before
/// the call) and the reply's own (`history[at]`), counted off the async threads.
async fn counted_usage(
    encoding: Encoding,
    input: u64,
    history: Arc<Vec<ChatMessage>>,
    at: usize,
) -> TokenUsage {
    // Shared with the counting thread, not copied: a reply may be megabytes.
    let counting = Arc::clone(&history);
    let output = tokio::task::spawn_blocking(move || {
        counting.get(at).map_or(0, |reply| {
            encoding.count_reply(
                reply.content.as_deref().unwrap_or_default(),
                reply.reasoning.as_deref().unwrap_or_default(),
                &reply.tool_calls,
            )
        })
    })
    .await
    .unwrap_or_else(|_| history.get(at).map_or(0, crate::tokens::bound_message));
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        estimated: true,
        ..TokenUsage::default()
    }
}

/// What deciding whether the next request fits needs.
struct Fitting<'a> {
    model: &'a TurnModel,
    system: &'a str,
    offered: &'a [ToolSpec],
    recorder: &'a dyn Recorder,
    events: &'a TaskEvents,
    cancel: &'a CancellationToken,
}

impl Fitting<'_> {
    /// Before a model call: compacts the history when the request would pass the
    /// conversation's threshold (or the provider refused the last one as too long:
    /// `overflowed`, its error), and stops a worker whose request would pass the window.
    /// Returns the request's size when it had to be counted.
    async fn fit(
        &self,
        size: &mut ContextSize,
        overflowed: Option<EngineError>,
    ) -> Result<Option<u64>, TurnOutcome> {
        let Self {
            model,
            system,
            offered,
            ..
        } = *self;
        let Some(window) = model.context_window else {
            return Ok(None);
        };
        let limit = model
            .compact_threshold
            .map_or(window, |share| (window as f64 * share) as u64);
        let history = self.recorder.history();
        if overflowed.is_none() && size.bound(system, offered, &history) <= limit {
            return Ok(None);
        }
        let next = size.count(model.encoding, system, offered, &history).await;
        if overflowed.is_none() && next <= limit {
            return Ok(Some(next));
        }
        if model.compact_threshold.is_none() {
            return Err(self.fail(EngineError::new(
                ErrorKind::ContextLengthExceeded,
                format!(
                    "this conversation's next request holds {next} tokens, more than the model's context window of {window}; a conversation opened by conv_create does not compact: give it a smaller task"
                ),
            )));
        }
        let compactor = compact::Compactor {
            model,
            recorder: self.recorder,
            events: self.events,
            cancel: self.cancel,
            focus: None,
        };
        let compacted = compactor
            .run(&history, size, next, CompactTrigger::Auto)
            .await;
        if let (
            Err(compact::CompactError::Nothing(_) | compact::CompactError::Failed(_)),
            Some(refusal),
        ) = (&compacted, overflowed)
        {
            // The provider refused the request: its word stands.
            return Err(self.fail(refusal));
        }
        match compacted {
            Ok(()) => Ok(None),
            Err(compact::CompactError::Cancelled) => {
                self.recorder.record(vec![ChatMessage::user(INTERRUPT_MESSAGE)]);
                Err(interrupted(self.recorder, self.events, model.context_window))
            }
            Err(compact::CompactError::Nothing(why)) if next <= window => {
                Ok(Some(self.unfit(next, &why)))
            }
            Err(compact::CompactError::Failed(error)) if next <= window => {
                Ok(Some(self.unfit(next, &error.to_string())))
            }
            Err(compact::CompactError::Nothing(why)) => Err(self.fail(EngineError::new(
                ErrorKind::ContextLengthExceeded,
                format!("the next request holds {next} tokens, more than the context window of {window}, and {why}"),
            ))),
            Err(compact::CompactError::Failed(error)) => Err(self.fail(error)),
        }
    }

    /// Goes on without compacting, which failed for `why`, while the request still fits.
    fn unfit(&self, next: u64, why: &str) -> u64 {
        self.events.warning(format!(
            "the conversation could not be compacted ({why}); the request still fits the context window, so it is sent as it is"
        ));
        next
    }

    fn fail(&self, error: EngineError) -> TurnOutcome {
        self.events.emit(EventMsg::Error {
            message: error.to_string(),
            kind: error.kind(),
        });
        TurnOutcome::Failed {
            error,
            last_agent_message: None,
        }
    }
}

pub(crate) fn emit_usage(
    events: &TaskEvents,
    last: TokenUsage,
    now: UsageNow,
    context_window: Option<u64>,
) {
    if !now.reported {
        return;
    }
    events.emit(EventMsg::TokenCount {
        last,
        total: now.total,
        context_tokens: now.context_tokens,
        context_window,
    });
}

/// Ends an interrupted task, reporting the usage so far as the seed asks.
pub(crate) fn interrupted(
    recorder: &dyn Recorder,
    events: &TaskEvents,
    context_window: Option<u64>,
) -> TurnOutcome {
    let now = recorder.usage();
    if now.total.total_tokens > 0 {
        emit_usage(events, TokenUsage::default(), now, context_window);
    }
    TurnOutcome::Aborted(AbortReason::Interrupted)
}

#[cfg(test)]
mod tests;
