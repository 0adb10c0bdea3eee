//! Text document sync: the tools see what the editor shows, and edits to open documents go
//! through `workspace/applyEdit` when the client can apply them.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Client, events};

/// `file://` URI of `path`.
fn uri(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

async fn open(client: &mut Client, path: &std::path::Path, text: &str) {
    client
        .write(
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri(path), "languageId": "rust", "version": 1, "text": text}}}),
        )
        .await;
}

/// The `output` of the first completed tool call among `seen`.
fn tool_output(seen: &[Value]) -> String {
    events(seen)
        .find(|e| e["type"] == "tool_call_completed")
        .unwrap_or_else(|| panic!("no tool call completed: {seen:?}"))["output"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn read_sees_unsaved_changes_after_did_change() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("r", "read", json!({"path": "lib.rs"})),
        MockResponse::text("I see it."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root_dir = workspace.path().canonicalize().unwrap();
    let file = root_dir.join("lib.rs");
    std::fs::write(&file, "fn on_disk() {}\n").unwrap();
    let mut client = Client::start(&root_dir, &server, "balanced");
    client.initialize(json!({})).await;
    open(&mut client, &file, "fn on_disk() {}\n").await;
    // An incremental change: the first line's name, as the user types it.
    client
        .write(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri(&file), "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 3},
                                          "end": {"line": 0, "character": 10}},
                                "text": "in_buffer"}]}}),
        )
        .await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "read lib.rs", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let output = tool_output(&seen);
    assert!(output.contains("fn in_buffer() {}"), "{output}");
    assert!(!output.contains("on_disk"), "{output}");
    client.stop().await;
}

#[tokio::test]
async fn an_edit_of_an_open_document_goes_through_workspace_apply_edit() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "e",
            "edit",
            json!({"path": "lib.rs", "old_string": "fn answer", "new_string": "fn reply"}),
        ),
        MockResponse::text("Renamed."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root_dir = workspace.path().canonicalize().unwrap();
    let file = root_dir.join("lib.rs");
    std::fs::write(&file, "fn answer() {}\n").unwrap();
    let mut client = Client::start(&root_dir, &server, "yolo");
    client
        .initialize(json!({"workspace": {"applyEdit": true}}))
        .await;
    open(&mut client, &file, "// unsaved\nfn answer() {}\n").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "rename answer", &mut seen).await;
    // The server asks the editor to apply the change, as one line edit of the open buffer.
    let apply = client
        .server_request("workspace/applyEdit", &mut seen)
        .await;
    let change = &apply["params"]["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], uri(&file));
    assert_eq!(change["textDocument"]["version"], 1);
    assert_eq!(
        change["edits"],
        json!([{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}},
                "newText": "fn reply() {}\n"}])
    );
    client
        .write(json!({"jsonrpc": "2.0", "id": apply["id"], "result": {"applied": true}}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    let output = tool_output(&seen);
    assert!(output.contains("open in the editor"), "{output}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "fn answer() {}\n",
        "the disk is the user's to save"
    );
    client.stop().await;
}

#[tokio::test]
async fn without_apply_edit_an_edit_of_an_open_document_goes_to_disk() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "e",
            "edit",
            json!({"path": "lib.rs", "old_string": "fn answer", "new_string": "fn reply"}),
        ),
        MockResponse::text("Renamed."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root_dir = workspace.path().canonicalize().unwrap();
    let file = root_dir.join("lib.rs");
    std::fs::write(&file, "fn answer() {}\n").unwrap();
    let mut client = Client::start(&root_dir, &server, "yolo");
    client.initialize(json!({})).await;
    open(&mut client, &file, "fn answer() {}\n").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "rename answer", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(
        !seen.iter().any(|m| m["method"] == "workspace/applyEdit"),
        "the client did not offer applyEdit"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn reply() {}\n");
    client.stop().await;
}

#[tokio::test]
async fn an_at_reference_attaches_the_unsaved_buffer_and_the_todo_reminder_comes_once() {
    let server = MockModelServer::start(vec![MockResponse::text("ok"), MockResponse::text("ok")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root_dir = workspace.path().canonicalize().unwrap();
    let file = root_dir.join("lib.rs");
    std::fs::write(&file, "fn on_disk() {}\n").unwrap();
    let mut client = Client::start(&root_dir, &server, "balanced");
    client.initialize(json!({})).await;
    open(&mut client, &file, "fn in_buffer() {}\n").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "explain @lib.rs", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.send_text(&root, "and again", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;
    let requests = server.requests();
    let users = |i: usize| -> Vec<String> {
        requests[i].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let first = users(0);
    assert_eq!(first[0], "explain @lib.rs");
    assert!(first[1].contains("     1\tfn in_buffer() {}"), "{first:?}");
    assert!(!first[1].contains("on_disk"), "{first:?}");
    assert!(first[1].contains("todo_write"), "{first:?}");
    let second = users(1);
    assert_eq!(
        second.len(),
        3,
        "no reminders for the second input: {second:?}"
    );
    assert_eq!(second[2], "and again");
    client.stop().await;
}
