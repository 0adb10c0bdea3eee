//! A stress run with an MCP server, in a process of its own (as `stress.rs`, whose file
//! handle figures a server's pipes would disturb): conversations opened, used (each task
//! calls the server's tool) and closed from several tasks at once, some closed while their
//! task waits or runs, leave no task, no conversation and no holder of the MCP servers
//! behind: what holds the manager (the tools of the views and of running tasks) and the
//! calls under way return to what they were before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use coder_core::mcp::McpServerConfig;
use coder_core::{ApiKey, Config, ConversationSpec, Engine, ProviderConfig, ProviderKind};
use coder_protocol::{ConversationId, EventMsg, Preset, TaskId};
use coder_testkit::mcp::{js_tool, node_mcp_server};
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

/// Workers opening conversations at once, and the conversations each opens.
const WORKERS: usize = 6;
const ROUNDS: usize = 8;

/// A server, `s`, with one tool, `echo`, that answers with its text.
fn server_script() -> String {
    node_mcp_server(&format!(
        r#"
function handle(message) {{
  if (message.method === "initialize") initialized(message, "s");
  else if (message.method === "tools/list") send({{ id: message.id, result: {{ tools: [{}] }} }});
  else if (message.method === "tools/call") send({{ id: message.id, result: {{ content: [{{ type: "text", text: "echoed" }}] }} }});
  else send({{ id: message.id, result: {{}} }});
}}
"#,
        js_tool("echo")
    ))
}

/// Waits (at most 20 s) for the end of `task`: `task_complete`, `turn_aborted` or
/// `task_dropped`. Returns how many of its calls of the MCP tool completed, after checking
/// none failed.
async fn until_end(events: &mut coder_core::EventReceiver, task: TaskId) -> usize {
    let wait = async {
        let mut completed = 0;
        while let Some(event) = events.recv().await {
            if event.task_id != Some(task) {
                continue;
            }
            match &event.msg {
                EventMsg::ToolCallCompleted { tool_name, .. } if tool_name == "s__echo" => {
                    completed += 1;
                }
                EventMsg::ToolCallFailed { error, .. } => panic!("a call failed: {error}"),
                msg if msg.task_end().is_some() => return completed,
                _ => {}
            }
        }
        completed
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .expect("a task did not end within 20 s")
}

/// One worker: opens a conversation, sends it a request whose task calls the MCP tool, and
/// closes it; every third one is closed at once, whatever its task is doing. Returns how
/// many calls of the MCP tool the tasks it waited for made.
async fn worker(engine: Engine, index: usize) -> usize {
    let mut events = engine.subscribe();
    let mut calls = 0;
    for round in 0..ROUNDS {
        let spec = ConversationSpec {
            // Half of them narrowed to the tool, the others seeing every tool.
            mcp_allowlist: index.is_multiple_of(2).then(|| vec!["s__echo".to_owned()]),
            ..ConversationSpec::default()
        };
        let id: ConversationId = engine.create_conversation(spec).unwrap();
        let task = engine.send(id, "echo something").unwrap();
        if !round.is_multiple_of(3) {
            calls += until_end(&mut events, task).await;
        }
        engine.destroy_conversation(id).unwrap();
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_opened_used_and_closed_at_once_leave_no_mcp_holder_and_no_task() {
    let tasks = WORKERS * ROUNDS + 1;
    // Each task calls the tool, then answers; one closed early may take only the call.
    let script: Vec<MockResponse> = (0..tasks * 2)
        .flat_map(|i| {
            [
                MockResponse::tool_call(&format!("c{i}"), "s__echo", json!({"text": "x"})),
                MockResponse::text("done"),
            ]
        })
        .collect();
    let server = MockModelServer::start(script).await.unwrap();
    server.forget_bodies();
    let workspace = tempfile::tempdir().unwrap();
    let script_file = workspace.path().join("s.js");
    std::fs::write(&script_file, server_script()).unwrap();
    let provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: server.openai_base_url(),
        api_key: Some(ApiKey::new("k")),
    };
    let mut config = Config::new(workspace.path(), provider, "m");
    config.preset = Preset::Yolo;
    config.save_sessions = false;
    config.mcp_servers = [(
        "s".to_owned(),
        McpServerConfig {
            command: Some("node".into()),
            args: vec![script_file.display().to_string()],
            enabled: true,
            ..McpServerConfig::default()
        },
    )]
    .into();
    let engine = Engine::new(config).unwrap();
    tokio::time::timeout(Duration::from_secs(60), engine.mcp_ready())
        .await
        .expect("the MCP server did not start within 60 s");
    // The root conversation's own view, built again now that the server is ready.
    let root = engine.root_conversation();
    let mut events = engine.subscribe();
    let warm_up = engine.send(root, "echo once").unwrap();
    until_end(&mut events, warm_up).await;
    let before = engine.mcp_usage();
    assert_eq!(before.holders, 1, "the root's view holds its one tool");
    assert_eq!(before.calls, 0);

    let workers: Vec<_> = (0..WORKERS)
        .map(|index| tokio::spawn(worker(engine.clone(), index)))
        .collect();
    let mut calls = 0;
    for worker in workers {
        calls += worker.await.unwrap();
    }
    assert!(calls > 0, "no task called the MCP tool");
    // Tasks dropped or interrupted by a close end on their own; wait for the session to
    // rest.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while engine.running_task().is_some() || engine.queued_tasks() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session did not come to rest"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(engine.list_conversations().len(), 1);
    assert_eq!(engine.mcp_usage(), before);
    engine.shutdown().await;
}
