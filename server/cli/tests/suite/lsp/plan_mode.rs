//! Plan mode through `coder lsp`: `conversation/setMode`, and the three answers to the
//! `permission/request` of `exit_plan_mode`, each checked in the `mode_changed` notification
//! and in the next request the model received.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Client, events};

const PLAN: &str = "1. Add `greet` to src/lib.rs.\n2. Test it.";

/// What the model was sent in one request: its tools, system prompt and the other messages
/// (`role: text`).
struct Sent {
    tools: Vec<String>,
    system: String,
    messages: Vec<String>,
}

fn sent(server: &MockModelServer, index: usize) -> Sent {
    let body = &server.requests()[index].body;
    let tools = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let all: Vec<&Value> = body["messages"].as_array().unwrap().iter().collect();
    Sent {
        tools,
        system: all[0]["content"].as_str().unwrap().to_owned(),
        messages: all[1..]
            .iter()
            .map(|m| {
                format!(
                    "{}: {}",
                    m["role"].as_str().unwrap(),
                    m["content"].as_str().unwrap_or_default()
                )
            })
            .collect(),
    }
}

/// `conversation/setMode`, which must succeed.
async fn set_mode(client: &mut Client, conversation: &str, mode: &str, seen: &mut Vec<Value>) {
    let answer = client
        .request(
            "conversation/setMode",
            json!({"conversationId": conversation, "mode": mode}),
            seen,
        )
        .await;
    assert_eq!(answer["result"], json!({}), "{answer}");
}

/// A session in plan mode (entered from `default`) whose model calls `exit_plan_mode`,
/// answered with `answer`; returns the model server and the events of the task.
async fn exit_with(answer: Value) -> (MockModelServer, Vec<Value>) {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("p1", "exit_plan_mode", json!({"plan": PLAN})),
        MockResponse::text("on it"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, conversation) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    set_mode(&mut client, &conversation, "plan", &mut seen).await;
    // Their notifications may follow the answers; only the task's are wanted below.
    client.until_events("mode_changed", 1, &mut seen).await;
    seen.clear();
    client
        .send_text(&conversation, "plan a greeting", &mut seen)
        .await;
    let ask = client.server_request("permission/request", &mut seen).await;
    let params = &ask["params"];
    assert_eq!(params["toolName"], "exit_plan_mode");
    assert_eq!(
        super::super::option_ids(&params["options"]),
        [
            "start_editing",
            "clear_context_and_start",
            "keep_planning",
            "refuse"
        ]
    );
    assert_eq!(params["arguments"]["plan"], PLAN);
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    let events = events(&seen).cloned().collect();
    client.stop().await;
    (server, events)
}

fn mode_changes(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "mode_changed")
        .map(|e| json!({"mode": e["mode"], "previous": e["previous"], "reason": e["reason"]}))
        .collect()
}

fn back_to_default() -> Vec<Value> {
    vec![json!({"mode": "default", "previous": "plan", "reason": "exit_plan_mode"})]
}

#[tokio::test]
async fn set_mode_switches_the_mode_and_reports_it() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, conversation) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    set_mode(&mut client, &conversation, "plan", &mut seen).await;
    client.until_events("mode_changed", 1, &mut seen).await;
    let changed = events(&seen).find(|e| e["type"] == "mode_changed").unwrap();
    assert_eq!(changed["conversationId"], conversation.as_str());
    assert_eq!(
        mode_changes(std::slice::from_ref(changed)),
        [json!({"mode": "plan", "previous": "default", "reason": "set_mode"})]
    );
    client.send_text(&conversation, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let plan = sent(&server, 0);
    assert!(plan.tools.contains(&"exit_plan_mode".to_owned()));
    assert!(plan.system.contains("You are in plan mode."));
    // An unknown mode is the client's error.
    let bad = client
        .request(
            "conversation/setMode",
            json!({"conversationId": conversation, "mode": "reckless"}),
            &mut seen,
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    client.stop().await;
}

#[tokio::test]
async fn start_editing_keeps_the_history_and_leaves_plan_mode() {
    let (server, events) = exit_with(json!({"decision": "start_editing"})).await;
    let before = sent(&server, 0);
    assert!(before.tools.contains(&"exit_plan_mode".to_owned()));
    assert!(!before.tools.contains(&"todo_write".to_owned()));
    assert!(before.system.contains("You are in plan mode."));
    let after = sent(&server, 1);
    assert!(
        after.tools.contains(&"todo_write".to_owned()),
        "{:?}",
        after.tools
    );
    assert!(!after.tools.contains(&"exit_plan_mode".to_owned()));
    assert!(!after.system.contains("You are in plan mode."));
    assert_eq!(after.messages[0], "user: plan a greeting");
    assert!(after.messages[2].starts_with("assistant: "));
    assert!(
        after
            .messages
            .last()
            .unwrap()
            .starts_with("tool: The user approved the plan."),
        "{:#?}",
        after.messages
    );
    assert_eq!(mode_changes(&events), back_to_default());
}

#[tokio::test]
async fn clear_and_start_sends_the_model_only_the_plan() {
    let (server, events) = exit_with(json!({"decision": "clear_context_and_start"})).await;
    let after = sent(&server, 1);
    assert_eq!(after.messages.len(), 1, "{:#?}", after.messages);
    let only = &after.messages[0];
    assert!(
        only.starts_with("user: The user approved this plan"),
        "{only}"
    );
    assert!(only.contains(PLAN), "{only}");
    assert!(!only.contains("plan a greeting"), "{only}");
    assert!(after.tools.contains(&"todo_write".to_owned()));
    assert!(!after.tools.contains(&"exit_plan_mode".to_owned()));
    assert!(!after.system.contains("You are in plan mode."));
    assert_eq!(mode_changes(&events), back_to_default());
}

#[tokio::test]
async fn keep_planning_gives_the_model_the_feedback_and_stays_in_plan_mode() {
    let (server, events) = exit_with(json!({
        "decision": "keep_planning",
        "message": "test the edge cases too"
    }))
    .await;
    let after = sent(&server, 1);
    let last = after.messages.last().unwrap();
    assert!(last.starts_with("tool: "), "{last}");
    assert!(
        last.contains("The user's feedback: test the edge cases too"),
        "{last}"
    );
    assert_eq!(after.messages[0], "user: plan a greeting");
    assert!(after.tools.contains(&"exit_plan_mode".to_owned()));
    assert!(!after.tools.contains(&"todo_write".to_owned()));
    assert!(after.system.contains("You are in plan mode."));
    assert_eq!(mode_changes(&events), Vec::<Value>::new());
}
