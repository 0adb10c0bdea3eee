//! Seed 001's tool execution: read-only tools (`read`, `glob`, `grep`) run together and
//! unasked; tools that are not read-only (`todo_write`, `write`, the interrupting
//! conversation tools) run one by one, in the reply's order.

use coder_core::{Config, ProviderKind};
use coder_protocol::{EventMsg, Mode, Preset};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, answer_with};

/// Each tool event as `started x` / `done x`, by call id.
fn timeline(events: &[coder_protocol::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ToolCallStarted { call_id, .. } => Some(format!("started {call_id}")),
            EventMsg::ToolCallCompleted { call_id, .. }
            | EventMsg::ToolCallFailed { call_id, .. } => Some(format!("done {call_id}")),
            _ => None,
        })
        .collect()
}

fn balanced(config: &mut Config) {
    config.mode = Mode::Default;
    config.preset = Preset::Balanced;
}

#[tokio::test]
async fn read_glob_and_grep_run_unasked_and_a_reply_with_other_calls_runs_one_by_one() {
    let server = MockModelServer::start(vec![
        // Only readers: they run unasked (together; `tools.rs` shows the overlap with
        // slow read-only tools).
        MockResponse::stream(vec![
            Chunk::tool_call("r", "read", json!({"path": "a.txt"})),
            Chunk::tool_call("g", "glob", json!({"pattern": "*.txt"})),
            Chunk::tool_call("s", "grep", json!({"pattern": "A"})),
        ]),
        // A reply that also changes something: every call alone, in the reply's order.
        MockResponse::stream(vec![
            Chunk::tool_call("r1", "read", json!({"path": "a.txt"})),
            Chunk::tool_call(
                "t",
                "todo_write",
                json!({"todos": [{"content": "look", "status": "in_progress"}]}),
            ),
            Chunk::tool_call("w", "write", json!({"path": "b.txt", "content": "B\n"})),
            Chunk::tool_call("r2", "read", json!({"path": "b.txt"})),
        ]),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, balanced, Vec::new());
    h.write("a.txt", "A\n");
    let asked = answer_with(&h.engine, coder_protocol::PermissionDecision::AllowOnce);
    let events = h.run("look around").await;
    // Only the write was put to the person.
    let asked: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::PermissionRequested { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["w"]);
    let second: Vec<String> = timeline(&events).into_iter().skip(6).collect();
    assert_eq!(
        second,
        [
            "started r1",
            "done r1",
            "started t",
            "done t",
            "started w",
            "done w",
            "started r2",
            "done r2",
        ]
    );
    // The last read saw the write before it.
    let requests = server.requests();
    let last = requests[2].body["messages"].as_array().unwrap();
    assert!(
        last.iter()
            .any(|m| m["tool_call_id"] == "r2" && m["content"] == "     1\tB\n"),
        "{last:?}"
    );
}
