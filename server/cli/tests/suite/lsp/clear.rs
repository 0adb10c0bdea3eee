//! `/clear` over the wire (seed 002's clear): `conversation/command` clears the
//! conversation's context, a `context_cleared` event says so, and the next request holds the
//! system prompt and, with tools described in the prompt, their description once, then only
//! what came after.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Client, events};

/// Writes the workspace's `.coder/config.json`.
fn configure(workspace: &std::path::Path, config: Value) {
    std::fs::create_dir_all(workspace.join(".coder")).unwrap();
    std::fs::write(workspace.join(".coder/config.json"), config.to_string()).unwrap();
}

/// The messages of the model's request `index`.
fn request(server: &MockModelServer, index: usize) -> Vec<Value> {
    server.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

fn content(message: &Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

/// Where the tools' description is among `messages`.
fn described_at(messages: &[Value]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "system" && content(m).starts_with("Available tools:"))
        .map(|(at, _)| at)
        .collect()
}

#[tokio::test]
async fn clear_empties_the_context_and_the_next_request_opens_with_the_description_once() {
    let server = MockModelServer::start(vec![
        MockResponse::text("Noted: heron."),
        MockResponse::text("Which word?"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    configure(workspace.path(), json!({"toolCalling": "prompt"}));
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let listed = client.request("command/list", json!({}), &mut seen).await;
    let clear = listed["result"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|command| command["name"] == "clear")
        .cloned()
        .expect("/clear is listed");
    assert_eq!(clear["source"], "builtin");

    client
        .send_text(&root, "The word is heron.", &mut seen)
        .await;
    // Idle again (running, then idle): `/clear` is refused while a task runs.
    client.until_events("state_changed", 2, &mut seen).await;
    let listed = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    let held = listed["result"]["conversations"][0]["messageCount"]
        .as_u64()
        .unwrap();
    assert!(held >= 2, "{listed}");

    let mut seen = Vec::new();
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/clear"}),
            &mut seen,
        )
        .await;
    assert_eq!(
        answer["result"]["text"],
        format!("context cleared: {held} messages left it; the system prompt and the tools stay")
    );
    client.until_events("context_cleared", 1, &mut seen).await;
    let cleared = events(&seen)
        .find(|event| event["type"] == "context_cleared")
        .unwrap();
    assert_eq!(cleared["conversationId"], root.as_str());
    assert_eq!(cleared["taskId"], Value::Null);
    assert_eq!(cleared["clearedMessages"], held);

    client
        .send_text(&root, "What was the word?", &mut seen)
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    let (first, second) = (request(&server, 0), request(&server, 1));
    assert_eq!(second[0], first[0], "the same system prompt");
    assert_eq!(described_at(&second), [1]);
    assert_eq!(second[1], first[1], "the same description");
    assert_eq!(content(&second[2]), "What was the word?");
    let sent = Value::Array(second).to_string();
    assert!(!sent.contains("heron"), "{sent}");

    // A conversation that does not exist is a clear error; the server goes on.
    let unknown = client
        .request(
            "conversation/command",
            json!({"conversationId": "00000000-0000-7000-8000-000000000000", "command": "/clear"}),
            &mut seen,
        )
        .await;
    assert_eq!(unknown["error"]["data"]["kind"], "not_found", "{unknown}");
    client.stop().await;
}

/// Where messages announcing tools added later are among `messages`.
fn announced_at(messages: &[Value]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| content(m).starts_with("New tools available:"))
        .map(|(at, _)| at)
        .collect()
}

#[tokio::test]
async fn a_resumed_conversation_still_describes_only_its_initial_tools_after_a_clear() {
    let server = MockModelServer::start(vec![
        MockResponse::text("Noted."),
        MockResponse::text("Fresh start."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    // The first session has no `grep`: its conversation starts without it.
    configure(
        workspace.path(),
        json!({"toolCalling": "prompt", "tools": {"disabled": ["grep"]}}),
    );
    let (mut client, session, root) = Client::session(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&root, "Remember this.", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(
            workspace
                .path()
                .join(format!(".coder/sessions/{session}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let initial = saved["promptedTools"]["initial"].as_array().unwrap();
    assert!(initial.contains(&json!("read")), "{saved}");
    assert!(!initial.contains(&json!("grep")), "{saved}");

    // The next process offers `grep`: a tool the conversation did not start with.
    configure(workspace.path(), json!({"toolCalling": "prompt"}));
    let mut seen = Vec::new();
    let (mut client, init) =
        Client::resuming(workspace.path(), &server, "balanced", &session, &mut seen).await;
    assert!(init.get("result").is_some(), "{init}");
    let resumed = client.root().await;
    assert_eq!(resumed, root);
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/clear"}),
            &mut seen,
        )
        .await;
    assert!(answer.get("result").is_some(), "{answer}");
    client.send_text(&root, "Start again.", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;

    let (first, next) = (request(&server, 0), request(&server, 1));
    assert_eq!(described_at(&next), [1]);
    // The description names the initial tools, as before the resume, and only them.
    assert_eq!(next[1], first[1]);
    assert!(
        !content(&next[1]).contains("- grep("),
        "{}",
        content(&next[1])
    );
    // `grep` is announced once, as an ordinary message of the new batch.
    let announced = announced_at(&next);
    assert_eq!(announced.len(), 1, "{next:#?}");
    assert!(content(&next[announced[0]]).contains("- grep("));
    assert!(!Value::Array(next).to_string().contains("Remember this."));
    client.stop().await;
}
