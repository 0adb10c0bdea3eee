//! A stress run in a process of its own, so its memory and file-handle figures are not
//! disturbed by other tests: 200 conversations created, messaged and destroyed leave no
//! tasks, memory growth or file handles behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use coder_core::{ApiKey, Config, ConversationSpec, Engine, ProviderConfig, ProviderKind};
use coder_protocol::{EngineState, EventMsg};
use coder_testkit::{MockModelServer, MockResponse};

fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Creates, messages and destroys `count` conversations, one after another.
async fn cycle(engine: &Engine, server: &MockModelServer, count: usize) {
    let mut events = engine.subscribe();
    server.push((0..count).map(|i| MockResponse::text(&format!("reply {i}"))));
    for _ in 0..count {
        let id = engine
            .create_conversation(ConversationSpec::default())
            .unwrap();
        engine.send(id, "hello").unwrap();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
                .await
                .expect("no idle within 20 s")
                .unwrap();
            let idle = EventMsg::StateChanged {
                state: EngineState::Idle,
            };
            if event.msg == idle {
                break;
            }
        }
        engine.destroy_conversation(id).unwrap();
    }
}

#[tokio::test]
async fn two_hundred_conversations_leave_nothing_behind() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    server.forget_bodies();
    let workspace = tempfile::tempdir().unwrap();
    let provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: server.openai_base_url(),
        api_key: Some(ApiKey::new("k")),
    };
    let engine = Engine::new(Config::new(workspace.path(), provider, "m")).unwrap();
    // A warm-up, so allocator pools and the HTTP connection exist before measuring.
    cycle(&engine, &server, 50).await;
    let (files, memory) = (open_files(), resident_kib());
    cycle(&engine, &server, 200).await;
    assert_eq!(engine.list_conversations().len(), 1);
    assert_eq!(engine.running_task(), None);
    assert_eq!(engine.queued_tasks(), 0);
    assert!(
        open_files() <= files + 2,
        "file handles grew from {files} to {}",
        open_files()
    );
    let grown = resident_kib().saturating_sub(memory);
    assert!(grown < 4 * 1024, "resident memory grew by {grown} KiB");
}
