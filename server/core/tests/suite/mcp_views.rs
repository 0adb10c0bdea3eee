//! Each conversation's view of the MCP tools (seed 003), with real server processes: a
//! server's changed tool list reaches the views that include it and is announced to their
//! models as an ordinary message (seed 002's dynamic tools).

use std::time::Duration;

use coder_core::mcp::{McpServerConfig, ServerStatus};
use coder_core::{ContextChange, ConversationSpec};
use coder_protocol::{ConversationId, EventMsg};
use coder_testkit::mcp::node_mcp_server;
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::mcp::{harness, tool_names};
use super::support::Harness;

/// A server, `dyn`, offering `alpha` and `beta`; a call of `alpha` changes its list to
/// `alpha`, `gamma` and `delta` and says so with `notifications/tools/list_changed`.
const CHANGING_SERVER: &str = r#"
let tools = ["alpha", "beta"];
const tool = (name) => ({ name, description: `The tool ${name}.`,
  inputSchema: { type: "object", properties: {} } });
function handle(message) {
  if (message.method === "initialize") {
    initialized(message, "dyn");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: tools.map(tool) } });
  } else if (message.method === "tools/call") {
    const name = message.params.name;
    if (name === "alpha") tools = ["alpha", "gamma", "delta"];
    send({ id: message.id, result: { content: [{ type: "text", text: `${name} ran` }] } });
    if (name === "alpha") notify("notifications/tools/list_changed");
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

/// A stdio server running `script` with node, from a file in `dir`.
pub(super) fn node_server(dir: &std::path::Path, name: &str, script: &str) -> McpServerConfig {
    let file = dir.join(format!("{name}.js"));
    std::fs::write(&file, node_mcp_server(script)).unwrap();
    McpServerConfig {
        command: Some("node".into()),
        args: vec![file.display().to_string()],
        enabled: true,
        ..McpServerConfig::default()
    }
}

/// Sends `text` to `conversation` and waits for its task to end.
async fn run_in(h: &mut Harness, conversation: ConversationId, text: &str) {
    let task = h.engine.send(conversation, text).unwrap();
    h.until_end(task).await;
}

/// The messages of model request `index` that announce tools.
fn announcements(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["content"].as_str())
        .filter(|text| {
            text.starts_with("New tools available:")
                || text.starts_with("Tools no longer available:")
        })
        .map(str::to_owned)
        .collect()
}

/// The MCP tools (names with `__`) of model request `index`.
fn mcp_tools(server: &MockModelServer, index: usize) -> Vec<String> {
    tool_names(server, index)
        .into_iter()
        .filter(|name| name.contains("__"))
        .collect()
}

#[tokio::test]
async fn a_changed_tool_list_refreshes_the_views_that_include_the_server_and_is_announced() {
    let server = MockModelServer::start(vec![
        MockResponse::text("n1"),
        MockResponse::text("b1"),
        MockResponse::tool_call("a", "dyn__alpha", json!({})),
        MockResponse::text("r1"),
        MockResponse::text("r2"),
        MockResponse::text("n2"),
        MockResponse::text("b2"),
        MockResponse::text("r3"),
    ])
    .await
    .unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let changing = node_server(scripts.path(), "dyn", CHANGING_SERVER);
    let mut h = harness(&server, vec![("dyn", changing)]).await;
    let open = |allowlist: &str| ConversationSpec {
        mcp_allowlist: Some(vec![allowlist.to_owned()]),
        ..ConversationSpec::default()
    };
    let alpha_only = h.engine.create_conversation(open("dyn__alpha")).unwrap();
    let beta_only = h.engine.create_conversation(open("dyn__beta")).unwrap();
    run_in(&mut h, alpha_only, "n").await;
    run_in(&mut h, beta_only, "b").await;
    assert_eq!(mcp_tools(&server, 1), ["dyn__beta"]);
    let root = h.root;
    run_in(&mut h, root, "call alpha").await;
    assert_eq!(mcp_tools(&server, 2), ["dyn__alpha", "dyn__beta"]);

    // The server said its list changed: it is read again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !matches!(
        h.engine.mcp_status()["dyn"],
        ServerStatus::Ready { tools: 3, .. }
    ) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the changed list was not read: {:?}",
            h.engine.mcp_status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    run_in(&mut h, root, "again").await;
    assert_eq!(
        mcp_tools(&server, 4),
        ["dyn__alpha", "dyn__delta", "dyn__gamma"]
    );
    assert_eq!(
        announcements(&server, 4),
        [
            "New tools available:\n- dyn__delta(): The tool delta.\n- dyn__gamma(): The tool \
          gamma.\n\nTools no longer available:\n- dyn__beta"
        ]
    );
    // A view the change does not touch stays as it was, unannounced.
    run_in(&mut h, alpha_only, "n again").await;
    assert_eq!(mcp_tools(&server, 5), ["dyn__alpha"]);
    assert_eq!(announcements(&server, 5), Vec::<String>::new());
    // A view that loses its tool says so.
    run_in(&mut h, beta_only, "b again").await;
    assert_eq!(mcp_tools(&server, 6), Vec::<String>::new());
    assert_eq!(
        announcements(&server, 6),
        ["Tools no longer available:\n- dyn__beta"]
    );
    // Narrowing a conversation's allowlist is announced the same way, once.
    let narrow = ContextChange {
        mcp_allowlist: Some(Some(vec!["dyn__gamma".to_owned()])),
        ..ContextChange::default()
    };
    h.engine.set_context(root, narrow).unwrap();
    run_in(&mut h, root, "narrowed").await;
    assert_eq!(mcp_tools(&server, 7), ["dyn__gamma"]);
    let said = announcements(&server, 7);
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(
        said[1],
        "Tools no longer available:\n- dyn__alpha\n- dyn__delta"
    );
    h.engine.shutdown().await;
}

#[tokio::test]
async fn with_tools_in_the_prompt_a_changed_list_is_announced_once() {
    let call = "<tool_call>\n{\"name\": \"dyn__alpha\", \"arguments\": {}}\n</tool_call>";
    let server = MockModelServer::start(vec![
        MockResponse::text(call),
        MockResponse::text("r1"),
        MockResponse::text("r2"),
    ])
    .await
    .unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let changing = node_server(scripts.path(), "dyn", CHANGING_SERVER);
    let mut h = Harness::with(
        &server,
        coder_core::ProviderKind::OpenAi,
        |config| {
            config.tool_calling = Some(coder_core::ToolCalling::Prompt);
            config.mcp_servers = [("dyn".to_owned(), changing)].into();
        },
        vec![],
    );
    tokio::time::timeout(Duration::from_secs(60), h.engine.mcp_ready())
        .await
        .expect("the server did not settle");
    let root = h.root;
    run_in(&mut h, root, "call alpha").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !matches!(
        h.engine.mcp_status()["dyn"],
        ServerStatus::Ready { tools: 3, .. }
    ) {
        assert!(tokio::time::Instant::now() < deadline, "not read again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run_in(&mut h, root, "again").await;
    // One message says what came and went; the initial description is left alone.
    assert_eq!(
        announcements(&server, 2),
        [
            "New tools available:\n- dyn__delta(): The tool delta.\n- dyn__gamma(): The tool \
          gamma.\n\nTools no longer available:\n- dyn__beta"
        ]
    );
    h.engine.shutdown().await;
}

/// A server offering `alpha` and `beta`; each call appends the tool's name to the file its
/// first argument names.
const RECORDING_SERVER: &str = r#"
const fs = require("fs");
const calls = process.argv[2];
const tool = (name) => ({ name, description: `The tool ${name}.`,
  inputSchema: { type: "object", properties: {} } });
function handle(message) {
  if (message.method === "initialize") {
    initialized(message, "rec");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: ["alpha", "beta"].map(tool) } });
  } else if (message.method === "tools/call") {
    fs.appendFileSync(calls, message.params.name + "\n");
    send({ id: message.id, result: { content: [{ type: "text", text: "ran" }] } });
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

/// A harness with the recording server, `rec`, writing its calls to `calls`.
async fn recording(server: &MockModelServer, scripts: &std::path::Path) -> Harness {
    let mut config = node_server(scripts, "rec", RECORDING_SERVER);
    config
        .args
        .push(scripts.join("calls").display().to_string());
    harness(server, vec![("rec", config)]).await
}

#[tokio::test]
async fn an_mcp_tool_outside_the_allowlist_called_by_name_fails_as_a_result_and_the_turn_goes_on() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("b", "rec__beta", json!({})),
        MockResponse::tool_call("a", "rec__alpha", json!({})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let mut h = recording(&server, scripts.path()).await;
    let narrow = h
        .engine
        .create_conversation(ConversationSpec {
            mcp_allowlist: Some(vec!["rec__alpha".to_owned()]),
            ..ConversationSpec::default()
        })
        .unwrap();
    let task = h.engine.send(narrow, "call both").unwrap();
    let events = h.until_end(task).await;
    let failed: Vec<String> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ToolCallFailed { call_id, error, .. } if call_id == "b" => {
                Some(error.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].starts_with("Error: there is no tool named `rec__beta`. Available tools: "),
        "{}",
        failed[0]
    );
    assert!(failed[0].contains("rec__alpha") && !failed[0].ends_with("rec__beta"));
    // The loop went on: the model read the error, called the allowed tool, and answered.
    let results: Vec<String> = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results, [failed[0].clone()]);
    assert!(matches!(
        &events.last().unwrap().msg,
        EventMsg::TaskComplete { error: None, last_agent_message: Some(text), .. } if text == "done"
    ));
    // The server never heard of the call it was not allowed.
    let calls = std::fs::read_to_string(scripts.path().join("calls")).unwrap();
    assert_eq!(calls, "alpha\n");
    h.engine.shutdown().await;
}

#[tokio::test]
async fn conv_create_without_an_allowlist_inherits_the_callers() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c", "conv_create", json!({"user_instruction": "work"})),
        MockResponse::text("worked"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let mut h = recording(&server, scripts.path()).await;
    let parent = h
        .engine
        .create_conversation(ConversationSpec {
            mcp_allowlist: Some(vec!["rec__alpha".to_owned()]),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(parent, "delegate").unwrap();
    super::support::until_idle(&mut h).await;
    assert_eq!(mcp_tools(&server, 0), ["rec__alpha"]);
    // The worker's request: only what its caller may see.
    let worker_input = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|message| message["content"] == "work");
    assert!(worker_input, "request 1 is the worker's");
    assert_eq!(mcp_tools(&server, 1), ["rec__alpha"]);
    h.engine.shutdown().await;
}

/// A server offering the tools its first argument names (a JSON array), in that order.
const LISTING_SERVER: &str = r#"
const names = JSON.parse(process.argv[2]);
function handle(message) {
  if (message.method === "initialize") {
    initialized(message, "listing");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: names.map((name) => ({ name,
      description: `${name}, as listed.`, inputSchema: { type: "object", properties: {} } })) } });
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

/// One session with servers whose names collide once sanitised, one that lists a tool
/// twice and one with a name too long: the tools offered in its first request, and the
/// warnings about MCP tools its task gave.
async fn offered_once(server: &MockModelServer, index: usize) -> String {
    let scripts = tempfile::tempdir().unwrap();
    let listing = |name: &str, tools: serde_json::Value| {
        let mut config = node_server(scripts.path(), name, LISTING_SERVER);
        config.args.push(tools.to_string());
        (name.to_owned(), config)
    };
    let long = "x".repeat(80);
    let servers = vec![
        listing("z", json!(["two words", "a/b", "m"])),
        listing("a.b", json!(["zeta", "c", "c", long])),
        listing("a_b", json!(["c", "b"])),
    ];
    let mut h = Harness::with(
        server,
        coder_core::ProviderKind::OpenAi,
        |config| config.mcp_servers = servers.into_iter().collect(),
        vec![],
    );
    tokio::time::timeout(Duration::from_secs(60), h.engine.mcp_ready())
        .await
        .expect("the servers did not settle");
    let events = h.run("list").await;
    let warnings: Vec<String> = super::support::warnings(&events)
        .into_iter()
        .filter(|warning| warning.contains("MCP"))
        .collect();
    h.engine.shutdown().await;
    format!(
        "{}\n---\n{}",
        tool_names(server, index).join("\n"),
        warnings.join("\n")
    )
}

/// Seed 003: the tool list is sorted by fully-qualified name, collisions and duplicates
/// are settled the same way every time (a contract, pinned here).
#[tokio::test]
async fn tool_order_and_conflicts_are_the_same_in_every_run() {
    const RUNS: usize = 3;
    let server = MockModelServer::start((0..RUNS).map(|_| MockResponse::text("ok")).collect())
        .await
        .unwrap();
    let mut runs = Vec::new();
    for index in 0..RUNS {
        runs.push(offered_once(&server, index).await);
    }
    for run in &runs[1..] {
        pretty_assertions::assert_eq!(&runs[0], run);
    }
    insta::assert_snapshot!(runs[0]);
}
