//! `run_turn`'s outcomes, with a scripted model instead of a server.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use coder_protocol::{
    AbortReason, ChatMessage, ConversationId, EventMsg, FunctionCall, InputItem, Mode, Preset,
    RequestedToolCall, Role, TaskId, TokenUsage, ToolCall,
};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::conversation::{Conversation, ConversationSpec};
use crate::error::ErrorKind;
use crate::events::EventHub;
use crate::model::{ModelRequest, ModelResponse, ModelStream, StreamError, StreamUpdate};
use crate::permissions::{PermissionRules, Permissions};
use crate::tools::{ConversationTool, ToolContext, ToolRegistry};

/// A model that answers each call with the next scripted reply. A reply of `None` waits
/// until the task is cancelled, then ends as cancelled.
struct ScriptedModel {
    replies: Mutex<VecDeque<Option<Result<ModelResponse, StreamError>>>>,
    /// How many messages each request carried.
    seen: Mutex<Vec<usize>>,
}

#[async_trait]
impl ModelStream for ScriptedModel {
    async fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: &CancellationToken,
        on_update: &mut (dyn FnMut(StreamUpdate) + Send),
    ) -> Result<ModelResponse, StreamError> {
        lock(&self.seen).push(request.messages.len());
        let next = lock(&self.replies).pop_front();
        match next {
            Some(Some(reply)) => {
                if let Ok(response) = &reply {
                    on_update(StreamUpdate::Text(response.text.clone()));
                }
                reply
            }
            _ => {
                on_update(StreamUpdate::Text("partial".into()));
                cancel.cancelled().await;
                Err(StreamError::Cancelled {
                    partial: ModelResponse {
                        text: "partial".into(),
                        ..ModelResponse::default()
                    },
                })
            }
        }
    }
}

/// Answers the conversation tools: `conv_send` hands over, the others answer "listed".
/// Rebuilds no context: these turns never leave plan mode.
struct Host;

/// A conversation records straight into itself (the session's recorder also journals).
impl Recorder for Mutex<Conversation> {
    fn record(&self, messages: Vec<ChatMessage>) {
        lock(self).record(messages);
    }

    fn history(&self) -> Arc<Vec<ChatMessage>> {
        Arc::clone(&lock(self).history)
    }

    fn append_to_last(&self, text: &str) {
        lock(self).append_to_last(text);
    }

    fn mode(&self) -> Mode {
        lock(self).mode
    }

    fn add_usage(&self, usage: &TokenUsage, size: ContextSize) -> UsageNow {
        let mut conversation = lock(self);
        conversation.total_usage.add(usage);
        conversation.size = size;
        UsageNow {
            total: conversation.total_usage,
            context_tokens: size.tokens,
            reported: true,
        }
    }

    fn usage(&self) -> UsageNow {
        let conversation = lock(self);
        UsageNow {
            total: conversation.total_usage,
            context_tokens: conversation.size.tokens,
            reported: true,
        }
    }

    fn compacted(
        &self,
        compaction: compact::Compaction,
        _: CompactTrigger,
        size: ContextSize,
    ) -> (usize, UsageNow) {
        let mut conversation = lock(self);
        conversation.start_batch(compaction.history);
        conversation.size = size;
        drop(conversation);
        (0, self.usage())
    }
}

impl ContextBuilder for Host {
    fn rebuild(
        &self,
        _reason: coder_protocol::ModeChangeReason,
        _rebuild_message: Option<&str>,
        _events: &TaskEvents,
    ) -> Rebuilt {
        Rebuilt {
            system: String::new(),
            offered: Vec::new(),
            hidden: Vec::new(),
            patch_through_shell: false,
            prompt_cache_key: None,
            prompted: None,
            new_batch: false,
        }
    }
}

impl ConversationHost for Host {
    fn handle(
        &self,
        _caller: ConversationId,
        call_id: &str,
        call: ConversationCall,
        _depth: u32,
    ) -> CallAnswer {
        match call {
            ConversationCall::Send(args) => {
                let target = args.conversation.unwrap_or_default();
                CallAnswer::HandOver(Handoff {
                    continuation: TaskId::new(),
                    target,
                    input: vec![InputItem::Text {
                        text: args.text.unwrap_or_default(),
                    }],
                    closure: Closure {
                        call_id: call_id.to_owned(),
                        tool_name: "conv_send".into(),
                        target,
                        first_user_message: None,
                        first_items_count: None,
                    },
                })
            }
            _ => CallAnswer::Result("listed".into()),
        }
    }
}

fn text(reply: &str) -> Option<Result<ModelResponse, StreamError>> {
    Some(Ok(ModelResponse {
        text: reply.into(),
        ..ModelResponse::default()
    }))
}

fn calls(calls: &[(&str, &str, serde_json::Value)]) -> Option<Result<ModelResponse, StreamError>> {
    Some(Ok(ModelResponse {
        tool_calls: calls
            .iter()
            .map(|(id, name, arguments)| ToolCall {
                id: (*id).into(),
                kind: "function".into(),
                function: FunctionCall {
                    name: (*name).into(),
                    arguments: arguments.to_string(),
                },
            })
            .collect(),
        ..ModelResponse::default()
    }))
}

struct Turn {
    conversation: Arc<Mutex<Conversation>>,
    model: Arc<ScriptedModel>,
    control: TaskControl,
    ctx: Option<TurnContext>,
    events: crate::events::EventReceiver,
}

fn turn(replies: Vec<Option<Result<ModelResponse, StreamError>>>, max_steps: u32) -> Turn {
    let mut conversation = Conversation::new(ConversationSpec::default(), Mode::Default);
    conversation.record([ChatMessage::user("hello")]);
    let wire = conversation.wire.clone();
    let conversation = Arc::new(Mutex::new(conversation));
    let model = Arc::new(ScriptedModel {
        replies: Mutex::new(replies.into()),
        seen: Mutex::new(Vec::new()),
    });
    let control = TaskControl::new(0);
    let id = lock(&conversation).id;
    let hub = EventHub::default();
    let events = hub.subscribe();
    let ctx = TurnContext {
        model: TurnModel {
            name: "scripted".into(),
            client: model.clone(),
            context_window: None,
            max_output_tokens: 100,
            prompt_cache_key: None,
            encoding: crate::tokens::Encoding::Cl100k,
            compact_threshold: Some(0.8),
        },
        system: "You are a test.".into(),
        offered: Vec::new(),
        wire,
        size: Default::default(),
        prompted: None,
        max_steps,
        tools: TurnTools {
            registry: Arc::new(ToolRegistry::new(ConversationTool::all()).unwrap()),
            mcp: Arc::new(ToolRegistry::empty()),
            permissions: Arc::new(Permissions::new(
                Preset::default(),
                PermissionRules::default(),
                false,
                None,
            )),
            hidden: Vec::new(),
            patch_through_shell: false,
            home: None,
            base: ToolContext {
                conversation_id: id,
                cancel: control.cancel.clone(),
                ..ToolContext::new(std::env::temp_dir())
            },
            checkpoint: Default::default(),
        },
        control: control.clone(),
        events: TaskEvents {
            hub,
            conversation_id: id,
            task_id: TaskId::new(),
        },
        recorder: conversation.clone(),
        conversations: Arc::new(Host),
        context: Arc::new(Host),
        verifier: None,
    };
    Turn {
        conversation,
        model,
        control,
        ctx: Some(ctx),
        events,
    }
}

impl Turn {
    async fn run(&mut self) -> TurnOutcome {
        run_turn(self.ctx.take().unwrap()).await
    }

    fn history(&self) -> Vec<ChatMessage> {
        lock(&self.conversation).history.to_vec()
    }

    /// The events emitted so far.
    fn events(&mut self) -> Vec<EventMsg> {
        std::iter::from_fn(|| self.events.try_recv().ok())
            .map(|event| event.msg)
            .collect()
    }
}

#[tokio::test]
async fn a_reply_without_tool_calls_completes_the_task() {
    let mut t = turn(vec![text("done")], 5);
    let outcome = t.run().await;
    match outcome {
        TurnOutcome::Completed {
            last_agent_message,
            step_limit,
        } => {
            assert_eq!(last_agent_message.as_deref(), Some("done"));
            assert_eq!(step_limit, None);
        }
        other => panic!("{other:?}"),
    }
    let history = t.history();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].content.as_deref(), Some("done"));
}

#[tokio::test]
async fn each_model_call_sees_what_the_turn_recorded() {
    let mut t = turn(
        vec![
            calls(&[("c1", "conv_list", json!({}))]),
            text("listed them"),
        ],
        5,
    );
    let outcome = t.run().await;
    assert!(
        matches!(outcome, TurnOutcome::Completed { .. }),
        "{outcome:?}"
    );
    // user; then user, assistant call, tool result.
    assert_eq!(*lock(&t.model.seen), [1, 3]);
    let history = t.history();
    assert_eq!(history[2].role, Role::Tool);
    assert_eq!(history[2].content.as_deref(), Some("listed"));
}

#[tokio::test]
async fn a_handing_over_call_ends_the_turn_with_the_handoff() {
    let target = ConversationId::new();
    let mut t = turn(
        vec![calls(&[
            (
                "c1",
                "conv_send",
                json!({"conversation_id": target, "text": "help"}),
            ),
            ("c2", "conv_list", json!({})),
        ])],
        5,
    );
    let outcome = t.run().await;
    let TurnOutcome::HandedOver(handoff) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(handoff.target, target);
    assert_eq!(handoff.closure.call_id, "c1");
    assert_eq!(t.control.reason(), AbortReason::Replaced);
    // The handing-over call is left for the continuation; the later one was not run.
    let history = t.history();
    let results: Vec<(Option<String>, Option<String>)> = history
        .iter()
        .filter(|message| message.role == Role::Tool)
        .map(|message| (message.tool_call_id.clone(), message.content.clone()))
        .collect();
    assert_eq!(
        results,
        [(
            Some("c2".to_owned()),
            Some(tool_calls::REPLACED_BEFORE_START.to_owned())
        )]
    );
}

#[tokio::test]
async fn an_interrupt_while_streaming_aborts_and_keeps_the_history_valid() {
    let mut t = turn(vec![None], 5);
    let control = t.control.clone();
    let stopper = tokio::spawn(async move {
        // The model call is under way once it waits; stopping earlier is caught too.
        control.stop(AbortReason::Interrupted);
    });
    let outcome = t.run().await;
    stopper.await.unwrap();
    assert!(
        matches!(outcome, TurnOutcome::Aborted(AbortReason::Interrupted)),
        "{outcome:?}"
    );
    let history = t.history();
    assert_eq!(
        history.last().and_then(|message| message.content.clone()),
        Some(INTERRUPT_MESSAGE.to_owned())
    );
}

#[tokio::test]
async fn a_provider_failure_fails_the_turn_with_the_provider_kind() {
    let mut t = turn(
        vec![
            calls(&[("c1", "conv_list", json!({}))]),
            Some(Err(StreamError::Failed(EngineError::new(
                ErrorKind::Provider,
                "the provider is down",
            )))),
        ],
        5,
    );
    match t.run().await {
        TurnOutcome::Failed {
            error,
            last_agent_message,
        } => {
            assert_eq!(error.kind(), ErrorKind::Provider);
            assert_eq!(error.message(), "the provider is down");
            assert_eq!(last_agent_message, None);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_error_event_carries_the_failure_kind() {
    let mut t = turn(
        vec![Some(Err(StreamError::Failed(EngineError::new(
            ErrorKind::ContextLengthExceeded,
            "the prompt is too long",
        ))))],
        5,
    );
    t.run().await;
    let errors: Vec<EventMsg> = t
        .events()
        .into_iter()
        .filter(|msg| matches!(msg, EventMsg::Error { .. }))
        .collect();
    assert_eq!(
        errors,
        [EventMsg::Error {
            message: "the prompt is too long".into(),
            kind: ErrorKind::ContextLengthExceeded,
        }]
    );
}

#[tokio::test]
async fn every_reply_ends_with_reply_complete_holding_all_of_it() {
    let mut with_usage = calls(&[("c1", "conv_list", json!({}))]);
    if let Some(Ok(response)) = &mut with_usage {
        response.text = "Looking.".into();
        response.reasoning = "List first.".into();
        response.usage = Some(TokenUsage {
            input_tokens: 100,
            output_tokens: 20,
            total_tokens: 120,
            ..TokenUsage::default()
        });
    }
    let mut t = turn(vec![with_usage, text("done")], 5);
    t.run().await;
    let events = t.events();
    let ends: Vec<&EventMsg> = events
        .iter()
        .filter(|msg| matches!(msg, EventMsg::ReplyComplete { .. }))
        .collect();
    assert_eq!(
        ends,
        [
            &EventMsg::ReplyComplete {
                text: "Looking.".into(),
                reasoning: "List first.".into(),
                tool_calls: vec![RequestedToolCall {
                    call_id: "c1".into(),
                    tool_name: "conv_list".into(),
                    arguments: json!({}),
                }],
                interrupted: false,
            },
            &EventMsg::ReplyComplete {
                text: "done".into(),
                reasoning: String::new(),
                tool_calls: Vec::new(),
                interrupted: false,
            },
        ]
    );
    // The first reply's end comes before its usage, which says how big the context is.
    let end = events
        .iter()
        .position(|msg| matches!(msg, EventMsg::ReplyComplete { .. }))
        .unwrap();
    match &events[end + 1] {
        EventMsg::TokenCount { context_tokens, .. } => assert_eq!(*context_tokens, 120),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_reply_cut_by_an_interrupt_ends_as_interrupted_with_what_streamed() {
    let mut t = turn(vec![None], 5);
    let control = t.control.clone();
    let run = tokio::spawn(run_turn(t.ctx.take().unwrap()));
    // The scripted model streams "partial", then waits for the cancellation.
    tokio::task::yield_now().await;
    control.stop(AbortReason::Interrupted);
    run.await.unwrap();
    let ends: Vec<EventMsg> = t
        .events()
        .into_iter()
        .filter(|msg| matches!(msg, EventMsg::ReplyComplete { .. }))
        .collect();
    assert_eq!(
        ends,
        [EventMsg::ReplyComplete {
            text: "partial".into(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
            interrupted: true,
        }]
    );
}

#[tokio::test]
async fn the_step_limit_completes_the_task_with_the_limit() {
    let mut t = turn(vec![calls(&[("c1", "conv_list", json!({}))])], 1);
    match t.run().await {
        TurnOutcome::Completed { step_limit, .. } => assert_eq!(step_limit, Some(1)),
        other => panic!("{other:?}"),
    }
}
