//! The four interrupt checkpoints of the conversation loop, and interrupting a stream.
//!
//! Each test interrupts from an event observer, which runs before the engine goes on, so the
//! interrupt lands at a known point.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use coder_core::{Engine, ProviderKind};
use coder_protocol::{AbortReason, ConversationId, Event, EventMsg, PermissionDecision, Role};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, SlowTool, assert_history_valid, kinds};

const INTERRUPTED: &str = "[Request interrupted by user]";

/// Interrupts `conversation` the first time `matches` holds for an event.
fn interrupt_on(engine: &Engine, conversation: ConversationId, matches: fn(&Event) -> bool) {
    let handle = engine.clone();
    let fired = AtomicUsize::new(0);
    engine.on_event(move |event| {
        if matches(event) && fired.fetch_add(1, Ordering::SeqCst) == 0 {
            assert!(handle.interrupt(conversation).unwrap());
        }
    });
}

fn assert_aborted(events: &[Event]) {
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnAborted {
            reason: AbortReason::Interrupted,
            continuation: None,
            replaced_by: None,
        }
    );
}

fn slow(millis: u64) -> Vec<Arc<dyn coder_core::Tool>> {
    vec![Arc::new(SlowTool {
        millis,
        read_only: false,
    })]
}

#[tokio::test]
async fn checkpoint_1_after_the_reply_before_any_tool() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![
        Chunk::text("Let me look."),
        Chunk::tool_call("c1", "read", json!({"path": "a.txt"})),
    ])])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.write("a.txt", "A\n");
    interrupt_on(&h.engine, h.root, |e| {
        matches!(e.msg, EventMsg::AgentMessage { .. })
    });
    let events = h.run("look").await;
    assert_aborted(&events);
    assert!(!kinds(&events).contains(&"tool_call_started".to_owned()));
    let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
    assert_history_valid(&history);
    assert_eq!(history.len(), 4);
    assert_eq!(history[2].role, Role::Tool);
    assert!(
        history[2]
            .content
            .as_deref()
            .unwrap()
            .contains("was not run")
    );
    assert_eq!(history[3].role, Role::User);
    assert_eq!(history[3].content.as_deref(), Some(INTERRUPTED));

    // The conversation goes on from a valid history.
    server.push([MockResponse::text("ok")]);
    h.events.recv().await.unwrap(); // idle
    let events = h.run("go on").await;
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete { .. }
    ));
    assert_eq!(
        server.requests()[1].body["messages"]
            .as_array()
            .unwrap()
            .len(),
        7,
        "system, input, its reminders, reply, result, note, next input"
    );
}

#[tokio::test]
async fn checkpoint_2_after_all_tools_before_the_next_model_call() {
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "c1",
        "read",
        json!({"path": "a.txt"}),
    )])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.write("a.txt", "A\n");
    interrupt_on(&h.engine, h.root, |e| {
        matches!(e.msg, EventMsg::ToolCallCompleted { .. })
    });
    let events = h.run("look").await;
    assert_aborted(&events);
    assert_eq!(server.requests().len(), 1);
    let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
    assert_history_valid(&history);
    assert_eq!(
        history.last().unwrap().content.as_deref(),
        Some(format!("     1\tA\n\n{INTERRUPTED}").as_str())
    );
}

#[tokio::test]
async fn checkpoint_3_before_a_tool_starts() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![
        Chunk::tool_call("w1", "slow_write", json!({"label": "one"})),
        Chunk::tool_call("w2", "slow_write", json!({"label": "two"})),
    ])])
    .await
    .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, |_| {}, slow(20));
    interrupt_on(&h.engine, h.root, |e| {
        matches!(e.msg, EventMsg::ToolCallCompleted { .. })
    });
    let events = h.run("write").await;
    assert_aborted(&events);
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ToolCallStarted { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["w1"]);
    let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
    assert_history_valid(&history);
    assert_eq!(history[2].content.as_deref(), Some("wrote \"one\""));
    let second = history[3].content.as_deref().unwrap();
    assert!(second.starts_with("The user interrupted the task before this tool call ran"));
}

#[tokio::test]
async fn checkpoint_4_while_a_tool_runs() {
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "w1",
        "slow_write",
        json!({"label": "long"}),
    )])
    .await
    .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, |_| {}, slow(60_000));
    interrupt_on(&h.engine, h.root, |e| {
        matches!(e.msg, EventMsg::ToolCallStarted { .. })
    });
    let started = tokio::time::Instant::now();
    let events = h.run("write").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_aborted(&events);
    assert!(events.iter().any(|e| matches!(&e.msg,
        EventMsg::ToolCallFailed { error, .. } if error.contains("while it was running"))));
    assert_history_valid(&super::support::without_reminders(
        h.engine.history(h.root).unwrap(),
    ));
}

/// Checkpoint 4's `refuse` (seed 001): a call a person refused keeps the refusal as its
/// result, later calls of the reply get the cancel message, and the task ends as
/// interrupted without asking the model again. A denial with a message (any other answer)
/// lets the task go on: `permissions.rs`, `a_denial_reaches_the_model_and_nothing_is_written`.
#[tokio::test]
async fn checkpoint_4_a_refused_call_keeps_its_refusal_and_ends_the_task() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::tool_call("w1", "write", json!({"path": "a.txt", "content": "a\n"})),
            Chunk::tool_call("w2", "write", json!({"path": "b.txt", "content": "b\n"})),
        ]),
        MockResponse::text("never asked for"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.preset = coder_protocol::Preset::Balanced,
        vec![],
    );
    let asked = super::support::answer_with(&h.engine, PermissionDecision::Refuse);
    let events = h.run("write both").await;
    assert_aborted(&events);
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "the second call was asked about"
    );
    assert_eq!(server.requests().len(), 1, "the model was asked again");
    assert!(!h.workspace.path().join("a.txt").exists());
    assert!(!h.workspace.path().join("b.txt").exists());
    let history = h.engine.history(h.root).unwrap();
    let result = |id: &str| {
        history
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some(id))
            .and_then(|m| m.content.clone())
            .unwrap_or_default()
    };
    assert!(
        result("w1").starts_with("The user refused this call; it was not run"),
        "{}",
        result("w1")
    );
    assert_eq!(
        result("w2"),
        format!(
            "This call was not run: the user refused an earlier call of the same reply, which \
             ended the task.\n{INTERRUPTED}"
        )
    );
    assert_history_valid(&super::support::without_reminders(history));
}

/// The one request asked while a tool runs: a confined command the sandbox stopped may run
/// again outside it. Refused, the call keeps the confined run's output and the refusal, and
/// the task ends.
#[tokio::test]
async fn checkpoint_4_refusing_a_rerun_keeps_the_confined_output_and_ends_the_task() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!("echo before && touch {}", target.display());
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::text("never asked for"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = coder_protocol::Mode::Yolo,
        vec![],
    );
    super::support::answer_with(&h.engine, PermissionDecision::Refuse);
    let events = h.run("escape").await;
    assert_aborted(&events);
    assert!(!target.exists());
    assert_eq!(server.requests().len(), 1, "the model was asked again");
    let history = h.engine.history(h.root).unwrap();
    let result = history
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c1"))
        .and_then(|m| m.content.clone())
        .unwrap_or_default();
    assert!(result.contains("before\n"), "{result}");
    assert!(
        result.contains("outside the sandbox was not approved: The user refused this call"),
        "{result}"
    );
    assert!(result.ends_with(INTERRUPTED), "{result}");
}

#[tokio::test]
async fn interrupting_a_stream_closes_the_http_connection_at_once() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let server =
            MockModelServer::start(vec![MockResponse::text_deltas(200, "word ").with_delay(20)])
                .await
                .unwrap();
        let mut h = Harness::new(&server, kind);
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        let handle = h.engine.clone();
        let root = h.root;
        h.engine.on_event(move |e| {
            if matches!(e.msg, EventMsg::AgentMessageDelta { .. })
                && seen.fetch_add(1, Ordering::SeqCst) == 2
            {
                handle.interrupt(root).unwrap();
            }
        });
        let started = tokio::time::Instant::now();
        let events = h.run("talk").await;
        assert!(started.elapsed() < Duration::from_secs(2), "{kind:?}");
        assert_aborted(&events);
        assert!(
            server
                .wait_for(Duration::from_secs(2), |r| r[0].client_disconnected)
                .await,
            "{kind:?}: the server still streams to a cancelled task"
        );
        let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
        assert_eq!(history.len(), 3);
        assert_eq!(history[1].content.as_deref(), Some("word word word "));
        assert_eq!(history[2].content.as_deref(), Some(INTERRUPTED));
    }
}

#[tokio::test]
async fn interrupting_an_idle_conversation_does_nothing() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    assert!(!h.engine.interrupt(h.root).unwrap());
    assert!(h.engine.interrupt(ConversationId::new()).is_err());
}
