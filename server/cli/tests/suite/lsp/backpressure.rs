//! A client that stops reading: the server's memory stays bounded, and no text is lost.

use std::time::Duration;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::json;

use super::{Client, rss_kb};

/// The reply: 20 MB of text in 400,000 deltas of 50 bytes, each numbered so order shows.
const DELTAS: usize = 400_000;
const DELTA_BYTES: usize = 50;

/// How far the server's resident memory may rise over its level after `initialize` while
/// the client is not reading. The reply's text is held a few times whatever the writer
/// does: the engine's growing reply (up to 32 MB of capacity for 20 MB), the merged delta
/// waiting to be written (as much again), the finished `agent_message` and the history
/// message. Measured: +82 MB. What must not be there is a queued event per delta: the
/// writer without merging kept one `Event` (and its `String`) per delta and rose by 164 MB.
/// The engine's event buffer adds its own bound: it keeps the last 100,000 deltas for a
/// client that reconnects (here 5 MB of text and their envelopes, and the allocator's room
/// around them: 20 to 30 MB measured), never one per delta of the stream.
const RSS_BOUND_KB: u64 = 160 * 1024;

fn delta(index: usize) -> String {
    let mut text = format!("<{index:08}>");
    text.extend(std::iter::repeat_n('.', DELTA_BYTES - text.len()));
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_pauses_reading_gets_every_byte_in_order_and_memory_stays_bounded() {
    // The reply ends with its usage, as a provider that reports it does: what is measured
    // is the stream, not the tokenizer coder loads for one that does not (24 MB, once).
    let mut chunks: Vec<Chunk> = (0..DELTAS).map(|i| Chunk::text(&delta(i))).collect();
    chunks.push(Chunk::usage(20, DELTAS as u64));
    let expected: String = (0..DELTAS).map(delta).collect();
    let server = MockModelServer::start(vec![MockResponse::prerendered(&chunks)])
        .await
        .unwrap();
    drop(chunks);
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    // Read at `initialize`: large output ceilings (so the reply is not cut) and no snapshot,
    // in the person's own file (a workspace's file may only lower limits).
    std::fs::write(
        workspace.path().join(".config/coder/config.json"),
        json!({"permissions": {"preset": "balanced"},
               "maxOutputTokens": 100_000_000, "maxReplyBytes": 268_435_456,
               "saveSessions": false})
        .to_string(),
    )
    .unwrap();
    client.initialize(json!({})).await;
    let pid = client.child.id().unwrap();
    let root = client.root().await;
    let before = rss_kb(pid);
    let mut seen = Vec::new();
    client.send_text(&root, "a long one", &mut seen).await;
    client
        .until_events("agent_message_delta", 1, &mut seen)
        .await;

    // Stop reading for 10 s; the server goes on streaming meanwhile.
    let mut peak = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(rss_kb(pid));
    }

    // Read the rest, one message at a time (keeping them all would cost the test more than
    // the server).
    let mut text: String = super::events(&seen)
        .filter(|e| e["type"] == "agent_message_delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    let mut last_seq = super::events(&seen)
        .map(|e| e["seq"].as_u64().unwrap())
        .max();
    let mut deltas = super::events(&seen)
        .filter(|e| e["type"] == "agent_message_delta")
        .count();
    loop {
        let message = client.read().await;
        if message["method"] != "conversation/event" {
            continue;
        }
        let event = &message["params"]["event"];
        let seq = event["seq"].as_u64().unwrap();
        assert!(
            last_seq.is_none_or(|last| last < seq),
            "seq must increase: {last_seq:?} then {seq}"
        );
        last_seq = Some(seq);
        match event["type"].as_str().unwrap() {
            "agent_message_delta" => {
                text.push_str(event["delta"].as_str().unwrap());
                deltas += 1;
            }
            "task_complete" => break,
            _ => {}
        }
    }
    assert!(
        text == expected,
        "the text differs: {} bytes of {}",
        text.len(),
        expected.len()
    );
    println!(
        "resident {before} kB before, peak {peak} kB while paused (+{} kB); {deltas} delta events carried {DELTAS} deltas",
        peak - before
    );
    assert!(
        peak <= before + RSS_BOUND_KB,
        "resident memory rose from {before} kB to {peak} kB while the client paused"
    );
    client.stop().await;
}
