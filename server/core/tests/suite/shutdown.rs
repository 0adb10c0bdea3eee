//! `Engine::shutdown`, the one way every door ends a session: its order, and that calling it
//! again or concurrently is safe.

use std::time::Duration;

use coder_core::{Config, Engine, ProviderKind, SessionSnapshot};
use coder_protocol::{ChatMessage, EventMsg, Mode, Preset};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, assert_history_valid};

fn read_snapshot(engine: &Engine) -> SessionSnapshot {
    let path = engine.snapshot_path().expect("saving is on");
    serde_json::from_slice(&std::fs::read(path).expect("no snapshot written")).unwrap()
}

/// Waits for the first event that `wanted` accepts.
async fn until(h: &mut Harness, wanted: impl Fn(&EventMsg) -> bool) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), h.events.recv())
            .await
            .expect("no such event within 10 s")
            .expect("event stream ended");
        if wanted(&event.msg) {
            return;
        }
    }
}

fn asking(config: &mut Config) {
    config.mode = Mode::Default;
    config.preset = Preset::Balanced;
}

fn result_of<'a>(history: &'a [ChatMessage], call: &str) -> &'a str {
    history
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some(call))
        .and_then(|m| m.content.as_deref())
        .unwrap_or_else(|| panic!("no result for {call} in {history:#?}"))
}

#[tokio::test]
async fn an_open_permission_request_is_denied_before_the_task_is_interrupted() {
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "c1",
        "write",
        json!({"path": "out.txt", "content": "hello\n"}),
    )])
    .await
    .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, asking, vec![]);
    h.engine.send(h.root, "write it").unwrap();
    until(&mut h, |msg| {
        matches!(msg, EventMsg::PermissionRequested { .. })
    })
    .await;

    h.engine.shutdown().await;

    // The model's record of the call is the denial, not "interrupted before it started".
    let saved = read_snapshot(&h.engine);
    assert_history_valid(&saved.root.messages);
    let result = result_of(&saved.root.messages, "c1");
    assert!(
        result.starts_with(
            "The session ended before anyone answered this permission request; the call was not run."
        ),
        "{result}"
    );
    assert!(!h.workspace.path().join("out.txt").exists());
    // The task ended as interrupted, after the denial.
    until(&mut h, |msg| matches!(msg, EventMsg::TurnAborted { .. })).await;
}

#[tokio::test]
async fn shutdown_is_idempotent_and_a_concurrent_call_waits_for_the_first() {
    let server = MockModelServer::start(vec![MockResponse::endless(
        Vec::new(),
        Chunk::text("more "),
    )])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "write forever").unwrap();
    until(&mut h, |msg| {
        matches!(msg, EventMsg::AgentMessageDelta { .. })
    })
    .await;

    let first = tokio::spawn({
        let engine = h.engine.clone();
        async move { engine.shutdown().await }
    });
    // Let the first call start its work before the second comes.
    tokio::task::yield_now().await;
    h.engine.shutdown().await;
    // The second call returned only after the whole shutdown: the interruption is recorded
    // and saved.
    let saved = read_snapshot(&h.engine);
    assert_history_valid(&saved.root.messages);
    let last = saved.root.messages.last().unwrap();
    assert_eq!(
        last.content.as_deref(),
        Some("[Request interrupted by user]")
    );
    first.await.unwrap();
    // A third call, after the end, returns and changes nothing.
    h.engine.shutdown().await;
    assert_eq!(read_snapshot(&h.engine).root.messages, saved.root.messages);
    let mut aborted = 0;
    while let Ok(event) = h.events.try_recv() {
        aborted += usize::from(matches!(event.msg, EventMsg::TurnAborted { .. }));
    }
    assert_eq!(aborted, 1);
}
