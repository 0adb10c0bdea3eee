//! A subscriber from a `seq` (`Engine::subscribe_from`) while a reply streams: what it
//! missed and the live stream are taken in one step, so it gets every event from that `seq`
//! on exactly once, in order, as the first subscriber got them.

use std::time::Duration;

use coder_core::{ProviderKind, Replay};
use coder_protocol::{Event, EventMsg};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_joining_mid_stream_gets_each_event_from_its_seq_once() {
    let chunks: Vec<Chunk> = (0..3_000).map(|i| Chunk::text(&format!("{i} "))).collect();
    let server = MockModelServer::start(vec![MockResponse::stream(chunks)])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let task = h.engine.send(h.root, "count").unwrap();
    // Join while the reply streams, from a seq the first subscriber already had.
    let mut first = Vec::new();
    while first.len() < 50 {
        first.push(h.events.recv().await.unwrap());
    }
    let from = first[20].seq;
    let (replay, mut live) = h.engine.subscribe_from(from).unwrap();
    let Replay::Events { events, next_seq } = replay else {
        panic!("the events from {from} are kept");
    };
    let mut second: Vec<Event> = events.into_events();
    assert_eq!(second.first().map(|e| e.seq), Some(from));
    assert_eq!(second.len() as u64, next_seq - from);
    first.extend(h.until_end(task).await);
    let last = first.last().unwrap().seq;
    while second.last().is_none_or(|e| e.seq < last) {
        let event = tokio::time::timeout(Duration::from_secs(20), live.recv())
            .await
            .expect("the second subscriber got the end")
            .unwrap();
        second.push(event);
    }
    let expected: Vec<Event> = first.into_iter().filter(|e| e.seq >= from).collect();
    assert_eq!(second, expected);
    assert!(matches!(
        second.last().unwrap().msg,
        EventMsg::TaskComplete { .. }
    ));

    // From the next event: nothing missed; past it: a clear error.
    let idle = loop {
        let event = h.events.recv().await.unwrap();
        if matches!(event.msg, EventMsg::StateChanged { .. }) {
            break event;
        }
    };
    let next = idle.seq + 1;
    let (replay, _) = h.engine.subscribe_from(next).unwrap();
    assert_eq!(replay.next_seq(), next);
    let err = h.engine.subscribe_from(next + 1).unwrap_err();
    assert_eq!(err.kind(), coder_core::ErrorKind::InvalidParams);
    assert!(err.to_string().contains("past the next event"), "{err}");
    h.engine.shutdown().await;
}
