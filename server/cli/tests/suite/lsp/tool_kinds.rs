//! What a tool call is and where it reaches, as `coder lsp` reports it: every
//! `tool_call_started` carries the call's kind and the absolute paths it touches, so an
//! editor shows a call without knowing the tool (the built-in tools, and an MCP tool, which
//! is `other`).

use coder_testkit::mcp::js_tool;
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::{Client, events, node_mcp_server};

#[tokio::test]
async fn every_started_call_says_what_it_does_and_where() {
    let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+new\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-old\n+old, moved\n*** End Patch\n";
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "true"})),
        MockResponse::tool_call("c2", "grep", json!({"pattern": "old", "path": "./src/../"})),
        MockResponse::tool_call("c3", "read", json!({"path": "old.txt", "offset": 1})),
        MockResponse::tool_call("c4", "apply_patch", json!({"patch": patch})),
        MockResponse::tool_call("c5", "echo__say", json!({"text": "hi"})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::write(ws.join("old.txt"), "old\n").unwrap();
    let script = ws.join("server.js");
    let handle = format!(
        r#"function handle(message) {{
  if (message.method === "initialize") initialized(message, "echo");
  else if (message.method === "tools/list") send({{ id: message.id, result: {{ tools: [{}] }} }});
  else if (message.method === "tools/call") send({{ id: message.id, result: {{ content: [{{ type: "text", text: "said" }}] }} }});
  else send({{ id: message.id, result: {{}} }});
}}"#,
        js_tool("say")
    );
    std::fs::write(&script, node_mcp_server(&handle)).unwrap();
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {"echo": {"command": "node", "args": [script]}}}).to_string(),
    )
    .unwrap();
    let mut client = Client::trusted(ws, &server, "yolo").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "go", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let started: Vec<&Value> = events(&seen)
        .filter(|event| event["type"] == "tool_call_started")
        .collect();
    let at = |name: &str| ws.join(name).to_string_lossy().into_owned();
    let shown: Vec<(String, Value, Value)> = started
        .iter()
        .map(|event| {
            (
                event["toolName"].as_str().unwrap_or_default().to_owned(),
                event["kind"].clone(),
                event["locations"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            ("bash".to_owned(), json!("execute"), json!([])),
            (
                "grep".to_owned(),
                json!("search"),
                json!([{"path": ws.to_string_lossy()}])
            ),
            (
                "read".to_owned(),
                json!("read"),
                json!([{"path": at("old.txt"), "line": 1}])
            ),
            (
                "apply_patch".to_owned(),
                json!("edit"),
                json!([
                    {"path": at("docs/new.md")},
                    {"path": at("old.txt")},
                    {"path": at("moved.txt")}
                ])
            ),
            ("echo__say".to_owned(), json!("other"), json!([])),
        ],
        "{started:?}"
    );
    client.stop().await;
}
