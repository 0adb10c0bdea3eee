//! OpenAI's Responses API, the wire format Codex speaks, served over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::{Value, json};

#[tokio::test]
async fn a_request_to_responses_gets_the_scripted_reply_as_response_events() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![
        Chunk::tool_call("call_1", "exec_command", json!({"cmd": "true"})),
        Chunk::usage(10, 2),
    ])])
    .await
    .unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/responses", server.openai_base_url()))
        .body(r#"{"model":"m","stream":true,"input":[]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = response.text().await.unwrap();
    let events: Vec<Value> = body
        .split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let data = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap();
            serde_json::from_str(data).unwrap()
        })
        .collect();
    assert_eq!(events[0]["type"], "response.created");
    let call = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(call["item"]["name"], "exec_command");
    assert_eq!(call["item"]["arguments"], r#"{"cmd":"true"}"#);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(last["response"]["usage"]["total_tokens"], 12);
    assert_eq!(server.requests()[0].path, "/v1/responses");
}
