//! A conversation's MCP context through `coder lsp` (seed 003): an allowlist is checked
//! when it is given, even before any server has started; `conversation/setContext` changes
//! a conversation's context from its next task, the history kept in order.

use std::path::Path;
use std::time::Duration;

use coder_testkit::MockModelServer;
use coder_testkit::mcp::js_tool;
use serde_json::{Value, json};

use super::{Client, events, node_mcp_server};

/// A server that answers `initialize` only once the file its first argument names
/// exists, then offers one tool, `echo`.
fn gated_server(ws: &Path) -> String {
    let handle = format!(
        r#"
const fs = require("fs");
const gate = process.argv[2];
function handle(message) {{
  if (message.method === "initialize") {{
    const wait = setInterval(() => {{
      if (fs.existsSync(gate)) {{ clearInterval(wait); initialized(message, "gated"); }}
    }}, 20);
  }} else if (message.method === "tools/list") {{
    send({{ id: message.id, result: {{ tools: [{}] }} }});
  }} else {{
    send({{ id: message.id, result: {{}} }});
  }}
}}
"#,
        js_tool("echo")
    );
    let script = ws.join("gated.js");
    std::fs::write(&script, node_mcp_server(&handle)).unwrap();
    script.display().to_string()
}

/// `conversation/create` with `allowlist`: its answer.
async fn create(client: &mut Client, allowlist: Value, seen: &mut Vec<Value>) -> Value {
    client
        .request(
            "conversation/create",
            json!({"mcpAllowlist": allowlist}),
            seen,
        )
        .await
}

/// The error message of a refused request, after checking it is `-32602`.
fn refusal(answer: &Value) -> String {
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(
        answer["error"]["data"]["kind"], "invalid_params",
        "{answer}"
    );
    answer["error"]["message"].as_str().unwrap().to_owned()
}

/// Asks `/mcp` until it says the server `gated` is ready (within 30 s).
async fn until_ready(client: &mut Client, root: &str, seen: &mut Vec<Value>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = client
            .request(
                "conversation/command",
                json!({"conversationId": root, "command": "/mcp"}),
                seen,
            )
            .await;
        let text = answer["result"]["text"].as_str().unwrap_or_default();
        if text.contains("gated: ready") {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server did not start: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_allowlist_is_checked_when_given_even_before_any_server_started() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let gate = ws.join("gate");
    let script = gated_server(ws);
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {"gated": {"command": "node",
            "args": [script, gate.display().to_string()]}}})
        .to_string(),
    )
    .unwrap();
    let mut client = Client::trusted(ws, &server, "balanced").await;
    let root = client.root().await;
    let mut seen = Vec::new();

    // The server waits at its gate: only its name is known, and that is checked.
    let unknown = create(
        &mut client,
        json!(["gated__echo", "nosuch__echo"]),
        &mut seen,
    )
    .await;
    assert_eq!(
        refusal(&unknown),
        "mcp_allowlist entry `nosuch__echo` names an unknown MCP server: this session has \
         `gated`"
    );
    for illegal in ["a/b/c", "echo", "gated__", "gated__bad name"] {
        let answer = create(&mut client, json!([illegal]), &mut seen).await;
        assert!(
            refusal(&answer).starts_with(&format!(
                "mcp_allowlist entry `{illegal}` is not a fully-qualified MCP tool name"
            )),
            "{answer}"
        );
    }
    // The deprecated form is read as the qualified name, and said so once for the list.
    let created = create(
        &mut client,
        json!(["gated/echo", "gated/later", "gated__echo"]),
        &mut seen,
    )
    .await;
    let conversation = created["result"]["conversationId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    // A request after the create: its events have arrived when it is answered.
    client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    let warnings: Vec<&str> = events(&seen)
        .filter(|event| event["type"] == "warning" && event["conversationId"] == conversation)
        .filter_map(|event| event["message"].as_str())
        .collect();
    assert_eq!(
        warnings,
        [
            "mcp_allowlist uses the deprecated `server/tool` form: `gated/echo` is read as \
          `gated__echo`, `gated/later` is read as `gated__later`; write fully-qualified names \
          (`server__tool`)"
        ]
    );

    // Once the server is ready, its tools are known too.
    std::fs::write(&gate, "").unwrap();
    until_ready(&mut client, &root, &mut seen).await;
    let later = create(&mut client, json!(["gated__later"]), &mut seen).await;
    assert_eq!(
        refusal(&later),
        "mcp_allowlist entry `gated__later` names an unknown tool: the MCP server `gated` \
         offers no such tool"
    );
    let fine = create(&mut client, json!(["gated__echo"]), &mut seen).await;
    assert!(fine["result"]["conversationId"].is_string(), "{fine}");
    client.stop().await;
}

/// `conversation/setContext` for `conversation` with `change`: its answer.
async fn set_context(
    client: &mut Client,
    conversation: &str,
    change: Value,
    seen: &mut Vec<Value>,
) -> Value {
    let mut params = change;
    params["conversationId"] = json!(conversation);
    client
        .request("conversation/setContext", params, seen)
        .await
}

/// Reads until the next `task_complete`.
async fn until_complete(client: &mut Client, seen: &mut Vec<Value>) {
    loop {
        let message = client.read().await;
        let done = message["params"]["event"]["type"] == "task_complete";
        seen.push(message);
        if done {
            return;
        }
    }
}

/// The texts of the user and assistant messages of model request `index`, without the
/// engine's reminders.
fn said(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .filter(|text| !text.is_empty() && !text.starts_with("<system-reminder>"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn set_context_applies_from_the_next_task_and_keeps_the_history_in_order() {
    let server = MockModelServer::start(vec![
        coder_testkit::MockResponse::tool_call(
            "w1",
            "write",
            json!({"path": "a.txt", "content": "a"}),
        ),
        coder_testkit::MockResponse::text("first answer"),
        coder_testkit::MockResponse::text("second answer"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".coder")).unwrap();
    std::fs::write(
        ws.join(".coder/config.json"),
        json!({"tools": {"disabled": ["apply_patch"]}}).to_string(),
    )
    .unwrap();
    let (mut client, root) = Client::ready(ws, &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&root, "one", &mut seen).await;
    // The task waits for a person: it runs while its context changes.
    let ask = client.server_request("permission/request", &mut seen).await;
    let changed = set_context(
        &mut client,
        &root,
        json!({
            "baseInstructions": "You answer in haiku.",
            "userInstructions": "Be brief.",
            "toolsPrefs": {"include_apply_patch_tool": true, "include_plan_tool": false},
        }),
        &mut seen,
    )
    .await;
    assert_eq!(changed["result"], json!({}), "{changed}");
    // Refused whole: the base instructions of a request whose allowlist is refused are not
    // taken either.
    let refused = set_context(
        &mut client,
        &root,
        json!({"baseInstructions": "IGNORED", "mcpAllowlist": ["nosuch__tool"]}),
        &mut seen,
    )
    .await;
    assert_eq!(
        refusal(&refused),
        "mcp_allowlist entry `nosuch__tool` names an unknown MCP server: this session has none"
    );
    let both = set_context(
        &mut client,
        &root,
        json!({"baseInstructions": "x", "baseInstructionsFile": "x.md"}),
        &mut seen,
    )
    .await;
    assert!(refusal(&both).contains("mutually exclusive"), "{both}");
    // While the task runs, the history does not take the user instructions.
    let history = client
        .request(
            "conversation/history",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    let texts: Vec<&str> = history["result"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|entry| entry["text"].as_str())
        .collect();
    assert_eq!(texts, ["one"]);
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "deny"}}))
        .await;
    until_complete(&mut client, &mut seen).await;
    client.send_text(&root, "two", &mut seen).await;
    until_complete(&mut client, &mut seen).await;

    // The running task kept the context it started with.
    let system = |index: usize| {
        server.requests()[index].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(!system(1).starts_with("You answer in haiku."));
    assert!(
        system(2).starts_with("You answer in haiku."),
        "{}",
        system(2)
    );
    assert!(!system(2).contains("IGNORED"));
    // The next one has the new context, the user instructions after the history.
    assert_eq!(
        said(&server, 2),
        ["one", "first answer", "Be brief.", "two"]
    );
    let tools: Vec<String> = server.requests()[2].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!tools.contains(&"todo_write".to_owned()), "{tools:?}");
    assert!(
        !tools.contains(&"apply_patch".to_owned()),
        "a conversation cannot loosen the session's tools: {tools:?}"
    );
    let narrowed: Vec<&str> = events(&seen)
        .filter(|event| event["type"] == "warning")
        .filter_map(|event| event["message"].as_str())
        .filter(|message| message.contains("asks for `apply_patch`"))
        .collect();
    assert_eq!(narrowed.len(), 1, "{narrowed:?}");
    let unknown = set_context(
        &mut client,
        "01000000-0000-7000-8000-000000000000",
        json!({}),
        &mut seen,
    )
    .await;
    assert_eq!(unknown["error"]["data"]["kind"], "not_found", "{unknown}");
    client.stop().await;
}
