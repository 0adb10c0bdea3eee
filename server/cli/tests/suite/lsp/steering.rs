//! Steering through `coder lsp`: input sent while a task runs goes to its model at the next
//! checkpoint, without ending it, with a receipt; queued input can be withdrawn.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::{Client, events};

/// Reads until the `task_complete` of `task`, collecting what arrives into `seen`.
async fn until_task_complete(client: &mut Client, task: &Value, seen: &mut Vec<Value>) {
    loop {
        let message = client.read().await;
        let done = message["params"]["event"]["type"] == "task_complete"
            && message["params"]["event"]["taskId"] == *task;
        seen.push(message);
        if done {
            return;
        }
    }
}

#[tokio::test]
async fn a_steer_reaches_the_model_at_the_next_checkpoint_with_its_receipt() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            // It runs until the test has steered (a file it waits for), however busy the
            // machine is.
            json!({"command": "echo started; while [ ! -e steered ]; do sleep 0.05; done; echo done"}),
        ),
        MockResponse::text("done, with the tests too"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::trusted(workspace.path(), &server, "yolo").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    let task = json!(client.send_text(&root, "make it", &mut seen).await);
    // The command runs: steer while it does.
    loop {
        let message = client.read().await;
        let running = message["params"]["event"]["type"] == "tool_call_output_delta";
        seen.push(message);
        if running {
            break;
        }
    }
    let steered = client
        .request(
            "conversation/steer",
            json!({"conversationId": root, "text": "also run the tests"}),
            &mut seen,
        )
        .await;
    assert_eq!(steered["result"]["steering"], true, "{steered}");
    std::fs::write(workspace.path().join("steered"), "").unwrap();
    let input = steered["result"]["inputId"].clone();
    until_task_complete(&mut client, &task, &mut seen).await;

    let events: Vec<&Value> = events(&seen).collect();
    // One task: the steer did not end it or start another.
    let started = events
        .iter()
        .filter(|e| e["type"] == "task_started")
        .count();
    assert_eq!(started, 1, "{events:?}");
    let receipt = events
        .iter()
        .find(|e| e["type"] == "input_receipt" && e["inputId"] == input)
        .expect("no receipt for the steer");
    assert_eq!(receipt["receipt"], "steered");
    assert_eq!(receipt["step"], 2);
    assert_eq!(receipt["taskId"], task);
    // The second request carries the steer after the command's result.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "{messages:?}");
    assert!(
        last["content"].to_string().contains("also run the tests"),
        "{last}"
    );
    assert_eq!(messages[messages.len() - 2]["role"], "tool");
    client.stop().await;
}

#[tokio::test]
async fn queued_input_can_be_withdrawn_and_never_reaches_the_model() {
    let server = MockModelServer::start(vec![
        // It runs until the test has withdrawn the queued input (a file it waits for).
        MockResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "while [ ! -e withdrawn ]; do sleep 0.05; done"}),
        ),
        MockResponse::text("slept"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::trusted(workspace.path(), &server, "yolo").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    let task = json!(client.send_text(&root, "sleep", &mut seen).await);
    let input = json!(client.send_text(&root, "and then this", &mut seen).await);
    let withdrawn = client
        .request(
            "conversation/withdraw",
            json!({"inputId": input}),
            &mut seen,
        )
        .await;
    assert_eq!(withdrawn["result"]["withdrawn"], true, "{withdrawn}");
    std::fs::write(workspace.path().join("withdrawn"), "").unwrap();
    until_task_complete(&mut client, &task, &mut seen).await;
    let again = client
        .request(
            "conversation/withdraw",
            json!({"inputId": input}),
            &mut seen,
        )
        .await;
    assert_eq!(again["result"]["withdrawn"], false, "{again}");

    let receipts: Vec<(String, Value)> = events(&seen)
        .filter(|e| e["type"] == "input_receipt")
        .map(|e| {
            (
                e["receipt"].as_str().unwrap().to_owned(),
                e["inputId"].clone(),
            )
        })
        .collect();
    assert_eq!(
        receipts,
        vec![
            ("started".to_owned(), task.clone()),
            ("queued".to_owned(), input.clone()),
            ("dropped".to_owned(), input.clone()),
        ]
    );
    assert!(events(&seen).any(|e| e["type"] == "task_dropped"
        && e["taskId"] == input
        && e["reason"] == "withdrawn"));
    assert_eq!(
        server.requests().len(),
        2,
        "the withdrawn input reached the model"
    );
    client.stop().await;
}
