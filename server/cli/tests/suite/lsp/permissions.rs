//! `permission/request` through `coder lsp`: what the editor is shown, and that only a
//! well-formed answer can allow a call.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::Client;

/// Reads until the server's `permission/request`, collecting what arrives meanwhile.
async fn next_ask(client: &mut Client, seen: &mut Vec<Value>) -> Value {
    // It may have arrived before the answer to `conversation/send`, and be in `seen`.
    client.server_request("permission/request", seen).await
}

/// Reads until the task's `task_complete`, leaving any server request unanswered; returns
/// the events seen.
pub(super) async fn until_complete(client: &mut Client, seen: &mut Vec<Value>) -> Vec<Value> {
    loop {
        let message = client.read().await;
        let done = message["params"]["event"]["type"] == "task_complete";
        seen.push(message);
        if done {
            break;
        }
    }
    seen.iter()
        .filter(|m| m["method"] == "conversation/event")
        .map(|m| m["params"]["event"].clone())
        .collect()
}

#[tokio::test]
async fn the_editor_is_shown_the_diff_of_an_edit_before_it_is_made() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "edit",
            json!({"path": "app.txt", "old_string": "two", "new_string": "TWO"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("app.txt"), "one\ntwo\nthree\n").unwrap();
    let (mut client, conversation) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&conversation, "edit it", &mut seen).await;
    let ask = next_ask(&mut client, &mut seen).await;
    assert_eq!(ask["params"]["toolName"], "edit");
    // What the call does and where, for a client that shows calls without knowing tools.
    assert_eq!(ask["params"]["kind"], "edit");
    let app = workspace.path().join("app.txt");
    assert_eq!(
        ask["params"]["locations"],
        json!([{"path": app.to_string_lossy()}])
    );
    assert_eq!(
        ask["params"]["diff"],
        "--- a/app.txt\n+++ b/app.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    );
    // And the file whole, before and after, for an editor's side-by-side view.
    assert_eq!(
        ask["params"]["changes"],
        json!([{"path": app.to_string_lossy(), "oldText": "one\ntwo\nthree\n", "newText": "one\nTWO\nthree\n"}])
    );
    // Nothing is written before the answer.
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("app.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_once"}}))
        .await;
    until_complete(&mut client, &mut seen).await;
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("app.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );
    client.stop().await;
}

#[tokio::test]
async fn a_malformed_answer_is_a_denial_and_the_task_goes_on() {
    let script = || {
        [
            MockResponse::tool_call("c1", "write", json!({"path": "made.txt", "content": "x\n"})),
            MockResponse::text("done"),
        ]
    };
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, conversation) = Client::ready(workspace.path(), &server, "balanced").await;
    let allow = json!({"decision": "allow_once"});
    let error = json!({"code": 1, "message": "m"});
    // Each answer as the whole response body but the id.
    let answers = [
        json!({"result": allow, "error": error}),
        json!({"result": {"decision": "allow_forever"}}),
        json!({"result": "allow_once"}),
        json!({"result": {}}),
        json!({"result": null}),
        json!({"result": {"decision": "allow_once", "error": error}}),
        json!({"error": {"code": "x"}}),
    ];
    for answer in answers {
        server.push(script());
        let mut seen = Vec::new();
        client.send_text(&conversation, "write", &mut seen).await;
        let ask = next_ask(&mut client, &mut seen).await;
        let mut response = answer.clone();
        response["jsonrpc"] = json!("2.0");
        response["id"] = ask["id"].clone();
        client.write(response).await;
        let events = until_complete(&mut client, &mut seen).await;
        assert!(
            !workspace.path().join("made.txt").exists(),
            "{answer} allowed the write"
        );
        let failed = events
            .iter()
            .find(|e| e["type"] == "tool_call_failed")
            .unwrap_or_else(|| panic!("{answer}: no failed call in {events:?}"));
        let error = failed["error"].as_str().unwrap();
        assert!(
            error.starts_with("The user denied this call"),
            "{answer}: {error}"
        );
    }
    client.stop().await;
}

#[tokio::test]
async fn a_request_open_at_shutdown_is_denied_and_the_saved_session_is_valid() {
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "c1",
        "write",
        json!({"path": "made.txt", "content": "x\n"}),
    )])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let init = client.initialize(json!({})).await;
    let session = init["result"]["capabilities"]["experimental"]["coder"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let conversation = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&conversation, "write", &mut seen).await;
    // Asked, and never answered: the editor shuts the server down instead.
    client.server_request("permission/request", &mut seen).await;
    client.stop().await;

    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let messages = saved["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("the call has no result: {messages:#?}"));
    assert!(
        result.starts_with("The session ended before anyone answered this permission request"),
        "{result}"
    );
    assert!(!workspace.path().join("made.txt").exists());
}
