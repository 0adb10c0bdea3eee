//! A reply that never ends: it keeps streaming until the client goes away.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use futures::StreamExt;

#[tokio::test]
async fn an_endless_reply_streams_past_any_size_until_the_client_leaves() {
    let server = MockModelServer::start(vec![MockResponse::endless(
        vec![Chunk::text("start ")],
        Chunk::text("more "),
    )])
    .await
    .unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut read = Vec::new();
    while read.len() < 4 << 20 {
        read.extend_from_slice(&body.next().await.unwrap().unwrap());
    }
    let text = String::from_utf8_lossy(&read);
    assert!(text.starts_with("data: {"), "{}", &text[..100]);
    assert!(text.contains(r#""content":"start ""#));
    assert!(text.matches(r#""content":"more ""#).count() > 10_000);
    assert!(!text.contains("[DONE]") && !text.contains("finish_reason\":\"stop"));
    drop(body);
    let left = server
        .wait_for(Duration::from_secs(5), |requests| {
            requests[0].client_disconnected
        })
        .await;
    assert!(left, "the server did not notice the client leaving");
}
