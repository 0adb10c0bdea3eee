//! A mode or preset change takes effect for a call already waiting for the editor's
//! answer: the request is withdrawn (`permission_withdrawn`) and the call decided again,
//! without an answer, under what is in force now.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::Client;
use super::permissions::until_complete;

fn touch() -> MockResponse {
    MockResponse::tool_call("c1", "bash", json!({"command": "touch made.txt"}))
}

async fn command(client: &mut Client, conversation: &str, text: &str, seen: &mut Vec<Value>) {
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": conversation, "command": text}),
            seen,
        )
        .await;
    assert!(answer.get("error").is_none(), "{answer}");
}

#[tokio::test]
async fn a_waiting_command_runs_once_the_preset_allows_it() {
    let server = MockModelServer::start(vec![touch(), MockResponse::text("made")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let (mut client, conversation) = Client::ready(ws, &server, "yolo").await;
    let mut seen = Vec::new();
    command(
        &mut client,
        &conversation,
        "/permissions balanced",
        &mut seen,
    )
    .await;
    client.send_text(&conversation, "make it", &mut seen).await;
    let ask = client.server_request("permission/request", &mut seen).await;
    let request_id = ask["params"]["requestId"].clone();
    assert!(!ws.join("made.txt").exists());

    command(&mut client, &conversation, "/permissions yolo", &mut seen).await;
    let events = until_complete(&mut client, &mut seen).await;
    assert!(ws.join("made.txt").exists(), "the call did not run");
    let withdrawn: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "permission_withdrawn")
        .collect();
    assert_eq!(withdrawn.len(), 1, "{events:?}");
    assert_eq!(withdrawn[0]["requestId"], request_id);
    assert!(
        withdrawn[0]["reason"]
            .as_str()
            .unwrap()
            .contains("decided again"),
        "{}",
        withdrawn[0]
    );
    // Asked once: the new preset allowed it without asking again.
    let asked = events
        .iter()
        .filter(|e| e["type"] == "permission_requested")
        .count();
    assert_eq!(asked, 1);
    assert!(
        events.iter().any(|e| e["type"] == "tool_call_completed"),
        "{events:?}"
    );
    // The editor is told the request is no longer wanted, so it can close its prompt.
    let cancel = client.server_request("$/cancelRequest", &mut seen).await;
    assert_eq!(cancel["params"]["id"], ask["id"], "{cancel}");

    // The editor's late answer to the withdrawn request changes nothing, and the server
    // goes on.
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"optionId": "deny"}}))
        .await;
    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert!(list["result"]["conversations"].is_array(), "{list}");
    client.stop().await;
}

#[tokio::test]
async fn a_waiting_command_is_denied_once_plan_mode_is_on() {
    let server = MockModelServer::start(vec![touch(), MockResponse::text("planned instead")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let (mut client, conversation) = Client::ready(ws, &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&conversation, "make it", &mut seen).await;
    let ask = client.server_request("permission/request", &mut seen).await;
    let answer = client
        .request(
            "conversation/setMode",
            json!({"conversationId": conversation, "mode": "plan"}),
            &mut seen,
        )
        .await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    let events = until_complete(&mut client, &mut seen).await;
    assert!(!ws.join("made.txt").exists(), "the call ran in plan mode");
    assert!(events.iter().any(|e| e["type"] == "permission_withdrawn"));
    let cancel = client.server_request("$/cancelRequest", &mut seen).await;
    assert_eq!(cancel["params"]["id"], ask["id"], "{cancel}");
    let failed = events
        .iter()
        .find(|e| e["type"] == "tool_call_failed")
        .expect("the call did not fail");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{failed}"
    );
    client.stop().await;
}
