//! Stale-write protection through `coder lsp`: a file the agent read and that changed since,
//! on disk or in the editor's buffer, is not edited, written or patched until it is read again.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Client, events};

const STALE: &str = "has changed since you last read it";

fn uri(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

fn rename() -> MockResponse {
    MockResponse::tool_call(
        "e",
        "edit",
        json!({"path": "lib.rs", "old_string": "fn answer", "new_string": "fn reply"}),
    )
}

/// `(tool, error)` of each failed tool call among `seen`, in order.
fn failures(seen: &[Value]) -> Vec<(String, String)> {
    events(seen)
        .filter(|e| e["type"] == "tool_call_failed")
        .map(|e| {
            (
                e["toolName"].as_str().unwrap().to_owned(),
                e["error"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_file_changed_on_disk_after_the_read_is_not_changed_until_read_again() {
    let server = MockModelServer::start(vec![
        // Task 1: read.
        MockResponse::tool_call("r", "read", json!({"path": "lib.rs", "limit": 1})),
        MockResponse::text("Read it."),
        // Task 2, after the file changed on disk: edit, write, apply_patch: all refused.
        rename(),
        MockResponse::tool_call("w", "write", json!({"path": "lib.rs", "content": "gone\n"})),
        MockResponse::tool_call(
            "p",
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Delete File: lib.rs\n*** End Patch"}),
        ),
        MockResponse::text("It changed; I will read it again."),
        // Task 3: a fresh read, then the edit and a second edit of its own result succeed.
        MockResponse::tool_call("r2", "read", json!({"path": "lib.rs"})),
        rename(),
        MockResponse::tool_call(
            "e2",
            "edit",
            json!({"path": "lib.rs", "old_string": "fn reply", "new_string": "fn respond"}),
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
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "read lib.rs", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert_eq!(failures(&seen), vec![]);

    let outside = "fn answer() {}\n// added by the person\n";
    std::fs::write(&file, outside).unwrap();
    client.send_text(&root, "rename answer", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;
    let failed = failures(&seen);
    assert_eq!(
        failed
            .iter()
            .map(|(tool, _)| tool.as_str())
            .collect::<Vec<_>>(),
        ["edit", "write", "apply_patch"]
    );
    for (tool, error) in &failed {
        assert!(
            error.contains(&format!("lib.rs {STALE}")),
            "{tool}: {error}"
        );
        assert!(error.contains("Read the file again"), "{tool}: {error}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), outside);

    client.send_text(&root, "read it again", &mut seen).await;
    client.until_events("task_complete", 3, &mut seen).await;
    assert_eq!(failures(&seen).len(), 3, "{:?}", failures(&seen));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "fn respond() {}\n// added by the person\n"
    );
    client.stop().await;
}

#[tokio::test]
async fn a_buffer_changed_in_the_editor_after_the_read_is_not_edited() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("r", "read", json!({"path": "lib.rs"})),
        MockResponse::text("Read it."),
        rename(),
        MockResponse::text("It changed."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root_dir = workspace.path().canonicalize().unwrap();
    let file = root_dir.join("lib.rs");
    std::fs::write(&file, "fn answer() {}\n").unwrap();
    let mut client = Client::start(&root_dir, &server, "yolo");
    client.initialize(json!({})).await;
    client
        .write(
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri(&file), "languageId": "rust", "version": 1,
                             "text": "fn answer() {}\n"}}}),
        )
        .await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "read lib.rs", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    // The person types in the open buffer; the disk stays as it was.
    client
        .write(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri(&file), "version": 2},
            "contentChanges": [{"text": "fn answer() {}\n// typed\n"}]}}),
        )
        .await;
    client.send_text(&root, "rename answer", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;
    let failed = failures(&seen);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].1.contains(STALE), "{failed:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn answer() {}\n");
    client.stop().await;
}
