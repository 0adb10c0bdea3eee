//! `conversation/compact` and `conversation/archive` over the wire: a compaction asked for
//! runs as a task of its own, its `compacted` event carries the sizes and the summary, and
//! what it replaced is read back whole.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Client, event_types, events};

#[tokio::test]
async fn a_compaction_asked_for_reports_its_sizes_and_keeps_what_it_replaced() {
    let server = MockModelServer::start(vec![
        MockResponse::text("First answer."),
        MockResponse::text("Second answer."),
        MockResponse::text("They asked about main.rs, then lib.rs."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&root, "Look at main.rs", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.send_text(&root, "Now lib.rs", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;

    let mut seen = Vec::new();
    let answer = client
        .request(
            "conversation/compact",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    let task = answer["result"]["taskId"].as_str().unwrap().to_owned();
    client.until_events("task_complete", 1, &mut seen).await;
    // The request's receipts: `started` (after `queued` when the last task was still being
    // wound up).
    let receipts: Vec<&str> = events(&seen)
        .filter(|e| e["type"] == "input_receipt" && e["inputId"] == task.as_str())
        .map(|e| e["receipt"].as_str().unwrap())
        .collect();
    assert_eq!(receipts.last(), Some(&"started"), "{receipts:?}");
    let ours: Vec<String> = event_types(&seen)
        .into_iter()
        .filter(|kind| kind != "state_changed" && kind != "input_receipt")
        .collect();
    assert_eq!(
        ours,
        ["task_started", "compacted", "token_count", "task_complete"]
    );
    let compacted = events(&seen)
        .find(|event| event["type"] == "compacted")
        .unwrap()
        .clone();
    assert_eq!(compacted["taskId"], task.as_str());
    assert_eq!(compacted["trigger"], "manual");
    assert_eq!(
        compacted["summary"],
        "They asked about main.rs, then lib.rs."
    );
    let before = compacted["tokenBefore"].as_u64().unwrap();
    let after = compacted["tokenCompact"].as_u64().unwrap();
    assert!(after < before, "{compacted}");
    assert!(compacted["compactRate"].as_f64().unwrap() < 1.0);
    let archived = compacted["archivedMessages"].as_u64().unwrap();
    assert!(archived >= 2, "{compacted}");
    assert_eq!(compacted["segment"], 0);
    let count = events(&seen)
        .find(|event| event["type"] == "token_count")
        .unwrap();
    assert_eq!(count["contextTokens"].as_u64(), Some(after));

    // The summary request was the model's only call for it, with no tools.
    let summary_request = &server.requests()[2].body;
    assert!(summary_request.get("tools").is_none());

    let archive = client
        .request(
            "conversation/archive",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    let segments = archive["result"]["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0]["trigger"], "manual");
    let messages = segments[0]["messages"].as_array().unwrap();
    assert_eq!(messages.len() as u64, archived);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "Look at main.rs");

    // The history now opens with the summary.
    let history = client
        .request(
            "conversation/history",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    let first = history["result"]["entries"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("<conversation-summary>"), "{first}");

    // A conversation that does not exist is a clear error; the server goes on.
    for method in ["conversation/compact", "conversation/archive"] {
        let unknown = client
            .request(
                method,
                json!({"conversationId": "00000000-0000-7000-8000-000000000000"}),
                &mut seen,
            )
            .await;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        assert_eq!(unknown["error"]["data"]["kind"], "not_found", "{unknown}");
    }
    client.stop().await;
}
