//! A running command's output reaches the editor while it runs (`tool_call_output_delta`),
//! before the call ends, with the result unchanged.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::{Client, events};

/// A three-second command whose first line arrives while it still runs: the file it writes
/// last does not exist yet when the editor reads that line.
#[tokio::test]
async fn a_running_command_s_lines_arrive_before_it_ends() {
    let command = "for i in 1 2 3; do echo tick $i; echo warn $i >&2; sleep 1; done; touch ended";
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({ "command": command })),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let mut client = Client::trusted(ws, &server, "yolo").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "go", &mut seen).await;
    let mut ended_when_first_line_came = None;
    loop {
        let message = client.read().await;
        let event = &message["params"]["event"];
        if event["type"] == "tool_call_output_delta" && ended_when_first_line_came.is_none() {
            ended_when_first_line_came = Some(ws.join("ended").exists());
        }
        let done = event["type"] == "task_complete";
        seen.push(message);
        if done {
            break;
        }
    }
    assert_eq!(
        ended_when_first_line_came,
        Some(false),
        "the first line came only once the command had ended"
    );
    let events: Vec<&Value> = events(&seen).collect();
    let completed = events
        .iter()
        .position(|e| e["type"] == "tool_call_completed")
        .unwrap();
    let streamed = |stream: &str| -> String {
        events
            .iter()
            .filter(|e| e["type"] == "tool_call_output_delta" && e["stream"] == stream)
            .map(|e| {
                assert_eq!(e["callId"], "c1");
                e["delta"].as_str().unwrap()
            })
            .collect()
    };
    assert_eq!(streamed("stdout"), "tick 1\ntick 2\ntick 3\n");
    assert_eq!(streamed("stderr"), "warn 1\nwarn 2\nwarn 3\n");
    assert!(
        events[completed..]
            .iter()
            .all(|e| e["type"] != "tool_call_output_delta"),
        "a delta came after the call ended"
    );
    let output = events[completed]["output"].as_str().unwrap();
    assert!(
        output.contains("Output:\ntick 1\ntick 2\ntick 3\n"),
        "{output}"
    );
    assert!(
        output.ends_with("Stderr:\nwarn 1\nwarn 2\nwarn 3\n"),
        "{output}"
    );
    client.stop().await;
}
