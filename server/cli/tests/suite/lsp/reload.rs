//! Files the session keeps, changed on disk while `coder lsp` runs: rules, skills, custom
//! commands, configuration and `.mcp.json` are read again, each reload announced by a
//! `workspace_reloaded` event; a broken file keeps its last good version with a `warning`;
//! the engine's own writes and build trees trigger nothing.
//!
//! Every wait is for a message (each read is bounded by the client's timeout), never a
//! sleep.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Client, events};

fn write(path: &std::path::Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// The `workspace_reloaded` events among `seen`.
fn reloads(seen: &[Value]) -> Vec<Value> {
    events(seen)
        .filter(|event| event["type"] == "workspace_reloaded")
        .cloned()
        .collect()
}

/// Reads until `seen` holds `count` reloads of `what`; returns the last.
async fn until_reloaded(
    client: &mut Client,
    what: &str,
    count: usize,
    seen: &mut Vec<Value>,
) -> Value {
    loop {
        let of_what: Vec<Value> = reloads(seen)
            .into_iter()
            .filter(|event| event["what"] == what)
            .collect();
        if of_what.len() >= count {
            return of_what[count - 1].clone();
        }
        seen.push(client.read().await);
    }
}

/// The system prompt of the model request `index`.
fn system_of(server: &MockModelServer, index: usize) -> String {
    server.requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_changed_rules_file_is_in_the_next_tasks_prompt_after_a_reload_event() {
    let server = MockModelServer::start(vec![MockResponse::text("one"), MockResponse::text("two")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    write(&ws.join("AGENTS.md"), "OLD rule text.");
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "first", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(system_of(&server, 0).contains("OLD rule text."));

    write(&ws.join("AGENTS.md"), "NEW rule text.");
    let reload = until_reloaded(&mut client, "rules", 1, &mut seen).await;
    let agents = ws.canonicalize().unwrap().join("AGENTS.md");
    assert_eq!(reload["paths"], json!([agents.display().to_string()]));
    assert_eq!(reload["conversationId"], json!(root), "{reload}");
    assert_eq!(
        reload.get("taskId").cloned().unwrap_or(Value::Null),
        Value::Null,
        "{reload}"
    );
    client.send_text(&root, "second", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;
    let system = system_of(&server, 1);
    assert!(system.contains("NEW rule text."), "{system}");
    assert!(!system.contains("OLD rule text."), "{system}");
    client.stop().await;
}
