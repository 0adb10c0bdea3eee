//! `session/subscribe` through `coder lsp`: a client picks the event stream up again from a
//! `seq`, and gets the events it missed from the engine's buffer, byte for byte as their
//! notifications carried them, or, once they are no longer kept, a snapshot of the session.

use std::collections::BTreeMap;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::Client;

/// Reads until the engine is idle again: each event notification's `seq` and its event as
/// the server wrote it.
async fn until_idle(client: &mut Client) -> Vec<(u64, String)> {
    let mut notified = Vec::new();
    loop {
        let text = client.read_text().await;
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["method"] != "conversation/event" {
            continue;
        }
        let event = &message["params"]["event"];
        notified.push((event["seq"].as_u64().unwrap(), raw_event(&text)));
        if event["type"] == "state_changed" && event["state"] == "idle" {
            return notified;
        }
    }
}

/// The event of a `conversation/event` notification, as written.
fn raw_event(notification: &str) -> String {
    let top: BTreeMap<String, Box<RawValue>> = serde_json::from_str(notification).unwrap();
    let params: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(top["params"].get()).unwrap();
    params["event"].get().to_owned()
}

/// Reads into `seen` until a `state_changed` to `state` is among it.
async fn until_state(client: &mut Client, seen: &mut Vec<Value>, state: &str) {
    while !super::events(seen).any(|e| e["type"] == "state_changed" && e["state"] == state) {
        seen.push(client.read().await);
    }
}

/// Sends `session/subscribe` from `from_seq` and reads its answer, as written.
async fn subscribe(client: &mut Client, id: i64, from_seq: Value) -> String {
    client
        .write(
            json!({"jsonrpc": "2.0", "id": id, "method": "session/subscribe",
                      "params": {"fromSeq": from_seq}}),
        )
        .await;
    loop {
        let text = client.read_text().await;
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["id"] == id && message.get("method").is_none() {
            return text;
        }
    }
}

/// The events of a `session/subscribe` answer holding events, each as written.
fn answered_events(answer: &str) -> Vec<String> {
    let top: BTreeMap<String, Box<RawValue>> = serde_json::from_str(answer).unwrap();
    let result: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(top["result"].get()).unwrap_or_else(|_| panic!("{answer}"));
    let events: Vec<Box<RawValue>> = serde_json::from_str(result["events"].get()).unwrap();
    events.iter().map(|event| event.get().to_owned()).collect()
}

#[tokio::test]
async fn a_client_asking_from_a_seq_in_the_middle_of_a_turn_gets_exactly_the_events_after_it() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::thinking("Looking "),
            Chunk::thinking("around."),
            Chunk::text("Let "),
            Chunk::text("me "),
            Chunk::text("look."),
            Chunk::tool_call("c1", "bash", json!({"command": "echo hi"})),
        ]),
        MockResponse::text_deltas(20, "word "),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "yolo").await;
    client
        .write(
            json!({"jsonrpc": "2.0", "id": 100, "method": "conversation/send",
                      "params": {"conversationId": root, "text": "go"}}),
        )
        .await;
    let notified = until_idle(&mut client).await;
    // A reader that keeps up gets every event, none merged.
    let seqs: Vec<u64> = notified.iter().map(|(seq, _)| *seq).collect();
    let first = seqs[0];
    assert_eq!(seqs, (first..first + seqs.len() as u64).collect::<Vec<_>>());
    assert!(seqs.len() > 30, "{seqs:?}");

    // From the middle of the second reply's deltas: exactly the events after, byte for
    // byte, none lost and none twice.
    let middle = notified.len() - 12;
    let answer = subscribe(&mut client, 200, json!(notified[middle].0)).await;
    let expected: Vec<String> = notified[middle..].iter().map(|(_, e)| e.clone()).collect();
    assert_eq!(answered_events(&answer), expected);
    // From the start: every event of the session.
    let answer = subscribe(&mut client, 201, json!(0)).await;
    let all: Vec<String> = notified.iter().map(|(_, e)| e.clone()).collect();
    let answered = answered_events(&answer);
    assert_eq!(answered[answered.len() - all.len()..], all[..]);

    // From the next event: nothing yet. From past it: a clear error, and the server goes on.
    let next = notified.last().unwrap().0 + 1;
    let answer = subscribe(&mut client, 202, json!(next)).await;
    assert_eq!(answered_events(&answer), Vec::<String>::new());
    let answer: Value =
        serde_json::from_str(&subscribe(&mut client, 203, json!(next + 1)).await).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["error"]["data"]["kind"], "invalid_params");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("fromSeq {}", next + 1)),
        "{answer}"
    );
    let answer: Value =
        serde_json::from_str(&subscribe(&mut client, 204, json!("soon")).await).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    client.stop().await;
}

#[tokio::test]
async fn a_client_asking_from_before_the_kept_events_gets_a_snapshot_with_what_waits_and_runs() {
    let server = MockModelServer::start(vec![
        MockResponse::text("Saved answer."),
        MockResponse::text("Fresh answer."),
        MockResponse::tool_call("s1", "bash", json!({"command": "sleep 30"})),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut first, saved, root) = Client::session(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    first.send_text(&root, "Remember 7", &mut seen).await;
    first.until_events("state_changed", 2, &mut seen).await;
    first.stop().await;

    // A turn, then a resume: the events before it are no longer kept.
    let (mut client, fresh_root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&fresh_root, "Hello", &mut seen).await;
    client.until_events("state_changed", 2, &mut seen).await;
    let resumed = client
        .request("session/resume", json!({"sessionId": saved}), &mut seen)
        .await;
    assert_eq!(resumed["result"]["sessionId"], saved.as_str(), "{resumed}");
    let root = client.root().await;

    // A turn blocked on a permission request: the snapshot holds it, as it was sent.
    let mut seen = Vec::new();
    client.send_text(&root, "Wait a while", &mut seen).await;
    let ask = client.server_request("permission/request", &mut seen).await;
    until_state(&mut client, &mut seen, "waiting_for_permission").await;
    let asked = super::events(&seen)
        .find(|e| e["type"] == "permission_requested")
        .unwrap()
        .clone();
    let answer: Value = serde_json::from_str(&subscribe(&mut client, 300, json!(0)).await).unwrap();
    let snapshot = &answer["result"]["snapshot"];
    assert_eq!(snapshot["sessionId"], saved.as_str(), "{answer}");
    assert_eq!(snapshot["state"], "waiting_for_permission");
    assert_eq!(snapshot["mode"], "default");
    assert_eq!(snapshot["permissionRequests"], json!([asked]));
    assert_eq!(snapshot["runningTools"], json!([]));
    assert!(snapshot["nextSeq"].as_u64().unwrap() > asked["seq"].as_u64().unwrap());
    let conversations = snapshot["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 1, "{snapshot}");
    assert_eq!(conversations[0]["id"], root.as_str());
    assert_eq!(conversations[0]["isRoot"], true);
    let messages = conversations[0]["messages"].as_array().unwrap();
    let said: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&"Remember 7"), "{said:?}");
    assert!(said.contains(&"Wait a while"), "{said:?}");

    // Allowed, the command runs: the snapshot holds the running call instead.
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_once"}}))
        .await;
    let mut seen = Vec::new();
    until_state(&mut client, &mut seen, "running").await;
    while !super::events(&seen).any(|e| e["type"] == "tool_call_started") {
        seen.push(client.read().await);
    }
    let started = super::events(&seen)
        .find(|e| e["type"] == "tool_call_started")
        .unwrap()
        .clone();
    let answer: Value = serde_json::from_str(&subscribe(&mut client, 301, json!(0)).await).unwrap();
    let snapshot = &answer["result"]["snapshot"];
    assert_eq!(snapshot["state"], "running", "{answer}");
    assert_eq!(snapshot["permissionRequests"], json!([]));
    assert_eq!(snapshot["runningTools"], json!([started]));
    assert_eq!(started["callId"], "s1");

    let interrupted = client
        .request(
            "conversation/interrupt",
            json!({"conversationId": root}),
            &mut Vec::new(),
        )
        .await;
    assert!(interrupted.get("result").is_some(), "{interrupted}");
    client.stop().await;
}
