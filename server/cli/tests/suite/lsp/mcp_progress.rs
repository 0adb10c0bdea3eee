//! An MCP tool's progress reaches the editor while the tool runs: each
//! `notifications/progress` the server sends for the call is one line of the call's live
//! output (`tool_call_output_delta` with the stream `progress`), before the call ends.
//! Progress for another token, or for a call that ended, is dropped; a message's control
//! characters are shown, not obeyed, and coder's secrets are redacted.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::{Client, events, node_mcp_server};
use crate::suite::everything_script;

/// The progress lines of call `call_id`, joined, after checking that every delta of the
/// call is a progress line and came before the call's end.
fn progress_of(events: &[&Value], call_id: &str) -> String {
    let ended = events
        .iter()
        .position(|e| e["type"] == "tool_call_completed" && e["callId"] == call_id)
        .unwrap_or_else(|| panic!("{call_id} did not complete: {events:?}"));
    let deltas = |range: &[&Value]| -> Vec<String> {
        range
            .iter()
            .filter(|e| e["type"] == "tool_call_output_delta" && e["callId"] == call_id)
            .map(|e| {
                assert_eq!(e["stream"], "progress", "{e}");
                e["delta"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    assert_eq!(
        deltas(&events[ended..]),
        Vec::<String>::new(),
        "a delta came after the call ended"
    );
    deltas(&events[..ended]).concat()
}

/// Runs one task ("go") through `coder lsp` in the trusted workspace `ws` (its `.mcp.json`
/// written), with the provider key `key`; returns every event.
async fn one_task(server: &MockModelServer, ws: &std::path::Path, key: &str) -> Vec<Value> {
    let mut client = Client::start_with(ws, server, "yolo", &[("OPENAI_API_KEY", key)]);
    client
        .initialize_with(
            json!({"capabilities": {}, "initializationOptions": {"trustWorkspace": true}}),
        )
        .await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "go", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
    events(&seen).cloned().collect()
}

#[tokio::test]
async fn the_reference_server_s_progress_arrives_as_lines_before_the_call_ends() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "ev__trigger-long-running-operation",
            json!({"duration": 0.6, "steps": 3}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {"ev": {"command": "node", "args": [everything_script(), "stdio"]}}})
            .to_string(),
    )
    .unwrap();
    let seen = one_task(&server, ws, "k").await;
    let events: Vec<&Value> = seen.iter().collect();
    assert_eq!(progress_of(&events, "c1"), "1/3\n2/3\n3/3\n");
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool_call_completed")
        .unwrap();
    assert_eq!(
        completed["output"],
        "Long running operation completed. Duration: 0.6 seconds, Steps: 3."
    );
}

/// A server whose tool `work` reports progress as a careless or hostile server may: for a
/// token it made up, with control characters and the provider key in its message, and, in
/// its second call, for the first call's token, which has ended. Each call's result names
/// the token it was given.
const PROGRESS_SERVER: &str = r#"
let first;
const progress = (progressToken, progress, total, message) =>
  send({ method: "notifications/progress", params: { progressToken, progress, total, message } });
function handle(message) {
  if (message.method === "initialize") {
    initialized(message, "progress");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: [{ name: "work",
      inputSchema: { type: "object", properties: {} } }] } });
  } else if (message.method === "tools/call") {
    const token = message.params._meta && message.params._meta.progressToken;
    if (first === undefined) {
      first = token;
      progress("made-up", 1, 2, "not ours");
      progress(token, 1, 4, "Downloading");
      progress(token, 2, 4, "\x1b[2J\x1b[Hfake prompt\r\nsecond line sk-test-0123456789abcdef");
      progress(token, 3);
    } else {
      progress(first, 9, 9, "the first call's, late");
      progress(token, 0.5, undefined, "Half");
    }
    send({ id: message.id, result: { content: [{ type: "text", text: `token ${JSON.stringify(token)}` }] } });
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

#[tokio::test]
async fn progress_for_other_tokens_is_dropped_and_messages_are_made_safe() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "p__work", json!({})),
        MockResponse::tool_call("c2", "p__work", json!({})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let script = ws.join("server.js");
    std::fs::write(&script, node_mcp_server(PROGRESS_SERVER)).unwrap();
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {"p": {"command": "node", "args": [script]}}}).to_string(),
    )
    .unwrap();
    let seen = one_task(&server, ws, "sk-test-0123456789abcdef").await;
    let events: Vec<&Value> = seen.iter().collect();
    assert_eq!(
        progress_of(&events, "c1"),
        "Downloading (1/4)\n^[[2J^[[Hfake prompt second line [redacted] (2/4)\n3\n"
    );
    assert_eq!(progress_of(&events, "c2"), "Half (0.5)\n");
    let tokens: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_completed")
        .map(|e| e["output"].as_str().unwrap())
        .collect();
    assert_eq!(tokens.len(), 2, "{tokens:?}");
    assert_ne!(tokens[0], tokens[1], "two calls were given one token");
    assert!(!tokens[0].contains("undefined"), "{tokens:?}");
}

/// A server whose tool `flood` reports its progress 5000 times, with a message of 1000
/// bytes each time, before it answers.
const FLOODING_SERVER: &str = r#"
function handle(message) {
  if (message.method === "initialize") {
    initialized(message, "flood");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: [{ name: "flood",
      inputSchema: { type: "object", properties: {} } }] } });
  } else if (message.method === "tools/call") {
    const progressToken = message.params._meta.progressToken;
    for (let i = 1; i <= 5000; i++) {
      send({ method: "notifications/progress",
        params: { progressToken, progress: i, total: 5000, message: "x".repeat(1000) } });
    }
    send({ id: message.id, result: { content: [{ type: "text", text: "flooded" }] } });
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

#[tokio::test]
async fn a_server_flooding_progress_is_cut_at_the_live_output_cap() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "f__flood", json!({})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let script = ws.join("server.js");
    std::fs::write(&script, node_mcp_server(FLOODING_SERVER)).unwrap();
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {"f": {"command": "node", "args": [script]}}}).to_string(),
    )
    .unwrap();
    let seen = one_task(&server, ws, "k").await;
    let events: Vec<&Value> = seen.iter().collect();
    let streamed = progress_of(&events, "c1");
    assert!(streamed.len() <= (4 << 20) + 200, "{}", streamed.len());
    assert!(
        streamed.starts_with(&format!("{} (1/5000)\n", "x".repeat(1000))),
        "{}",
        &streamed[..100]
    );
    assert!(
        streamed.ends_with("\n[live output stops after 4 MiB; the tool runs on]\n"),
        "{}",
        &streamed[streamed.len() - 200..]
    );
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool_call_completed")
        .unwrap();
    assert_eq!(completed["output"], "flooded");
}
