//! Sessions on disk against their floors, through the public engine:
//!
//! - **resume**: `Engine::resume` of a saved session of 10,000 messages, against reading the
//!   same file and parsing it into the snapshot's types (the least a resume must do);
//! - **persist a turn**: the time between a reply's `reply_complete` and its `token_count`,
//!   which is where the reply and its usage are written to the journal (two synced lines),
//!   in a resumed session of 10,000 messages, in a fresh one, and in a fresh one that saves
//!   nothing (the floor: the same events without a journal);
//! - **the session lock during a save**: the longest a probe that takes the session's lock
//!   (`queued_tasks`) waits while the engine writes the snapshot of a session of 1,000
//!   conversations, against the same probe while nothing is saved.
//!
//! `cargo bench -p coder-core --bench sessions` (`BENCH_RUNS=N` samples, default 20).

// A benchmark fails loudly on anything unexpected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coder_core::{ApiKey, Config, Engine, ProviderConfig, ProviderKind, SessionSnapshot};
use coder_protocol::{Event, EventMsg, SessionId};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::{Value, json};

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Four messages of one exchange with a tool call, about 1.2 KB in all.
fn exchange(turn: usize) -> [Value; 4] {
    let call = format!("call-{turn}");
    [
        json!({"role": "user", "content": format!("Turn {turn}: {}", "please look at the parser again. ".repeat(6))}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": call, "type": "function",
            "function": {"name": "read", "arguments": format!("{{\"path\":\"src/parser_{turn}.rs\"}}")}}]}),
        json!({"role": "tool", "tool_call_id": call, "name": "read", "content": "fn parse(input: &str) -> Result<Ast, Error> { Ok(Ast::new(input)) }\n".repeat(10)}),
        json!({"role": "assistant", "content": format!("Turn {turn}: {}", "The parser handles that case now. ".repeat(5))}),
    ]
}

fn conversation(id: uuid::Uuid, messages: usize) -> Value {
    let messages: Vec<Value> = (0..messages.div_ceil(4))
        .flat_map(exchange)
        .take(messages)
        .collect();
    json!({"conversationId": id, "model": "mock-model", "messages": messages})
}

/// Writes a saved session: a root of `root_messages` messages and `others` conversations
/// of `each` messages.
fn write_session(workspace: &Path, root_messages: usize, others: usize, each: usize) -> SessionId {
    let session = SessionId::new();
    let mut file = conversation(uuid::Uuid::now_v7(), root_messages);
    file["version"] = json!(1);
    file["sessionId"] = json!(session);
    file["savedAt"] = json!("2026-11-25T00:00:00.000Z");
    file["conversations"] = (0..others)
        .map(|_| conversation(uuid::Uuid::now_v7(), each))
        .collect();
    let dir = workspace.join(".coder/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{session}.json")), file.to_string()).unwrap();
    session
}

fn engine(workspace: &Path, server: &MockModelServer, save: bool) -> Engine {
    let provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: server.openai_base_url(),
        api_key: Some(ApiKey::new("bench")),
    };
    let mut config = Config::new(workspace, provider, "mock-model");
    config.context_window = Some(10_000_000);
    config.save_sessions = save;
    config.sandbox = false;
    Engine::new(config).unwrap()
}

fn reply() -> MockResponse {
    MockResponse::prerendered(&[Chunk::text("Done."), Chunk::usage(1_000, 2)])
}

/// The median time from `reply_complete` to `token_count` over `turns` tasks.
async fn persist_turn(engine: &Engine, server: &MockModelServer, turns: usize) -> Duration {
    let marks: Arc<Mutex<Vec<(bool, Instant)>>> = Arc::default();
    let seen = marks.clone();
    engine.on_event(move |event: &Event| {
        let now = Instant::now();
        match event.msg {
            EventMsg::ReplyComplete { .. } => seen.lock().unwrap().push((true, now)),
            EventMsg::TokenCount { .. } => seen.lock().unwrap().push((false, now)),
            _ => {}
        }
    });
    let mut events = engine.subscribe();
    let root = engine.root_conversation();
    for turn in 0..turns {
        server.push([reply()]);
        let task = engine.send(root, format!("one more turn, {turn}")).unwrap();
        loop {
            let event = events.recv().await.unwrap();
            if event.task_id == Some(task) && event.msg.task_end().is_some() {
                break;
            }
        }
    }
    let marks = marks.lock().unwrap().clone();
    let samples = marks
        .windows(2)
        .filter_map(|pair| match pair {
            [(true, complete), (false, counted)] => Some(*counted - *complete),
            _ => None,
        })
        .collect();
    median(samples)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let session = write_session(workspace.path(), 10_000, 0, 0);
    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let bytes = std::fs::metadata(&path).unwrap().len();

    // Resume, against reading and parsing the same file.
    let mut floor = Vec::new();
    let mut resume = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let text = std::fs::read(&path).unwrap();
        let parsed: SessionSnapshot = serde_json::from_slice(&text).unwrap();
        floor.push(start.elapsed());
        assert_eq!(parsed.root.messages.len(), 10_000);
        let engine = engine(workspace.path(), &server, true);
        let start = Instant::now();
        let loaded = engine.resume(session).unwrap();
        resume.push(start.elapsed());
        assert_eq!(loaded, 10_000);
        engine.shutdown().await;
    }
    let (floor, resume) = (median(floor), median(resume));
    println!(
        "resume, 10,000 messages ({:.1} MB): read+parse {:.2} ms, Engine::resume {:.2} ms ({:.2}x; target < 50 ms)",
        bytes as f64 / 1e6,
        ms(floor),
        ms(resume),
        resume.as_secs_f64() / floor.as_secs_f64()
    );

    // One more turn, in a 10,000-message session and in fresh ones.
    let big = engine(workspace.path(), &server, true);
    big.resume(session).unwrap();
    let in_big = persist_turn(&big, &server, runs).await;
    big.shutdown().await;
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = engine(fresh_dir.path(), &server, true);
    let in_fresh = persist_turn(&fresh, &server, runs).await;
    fresh.shutdown().await;
    let unsaved_dir = tempfile::tempdir().unwrap();
    let unsaved = engine(unsaved_dir.path(), &server, false);
    let without = persist_turn(&unsaved, &server, runs).await;
    unsaved.shutdown().await;
    println!(
        "persist one turn (reply_complete -> token_count, two synced journal lines): 10,000 messages {:.3} ms, fresh session {:.3} ms, no journal {:.3} ms (target < 5 ms)",
        ms(in_big),
        ms(in_fresh),
        ms(without)
    );

    // The session lock while a 1,000-conversation session is saved.
    let crowd_dir = tempfile::tempdir().unwrap();
    let crowd = write_session(crowd_dir.path(), 1_000, 999, 10);
    let crowded = Arc::new(engine(crowd_dir.path(), &server, true));
    crowded.resume(crowd).unwrap();
    let probe = |engine: Arc<Engine>, stop: Arc<std::sync::atomic::AtomicBool>| {
        std::thread::spawn(move || {
            let mut longest = Duration::ZERO;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let start = Instant::now();
                std::hint::black_box(engine.queued_tasks());
                longest = longest.max(start.elapsed());
                std::thread::sleep(Duration::from_micros(50));
            }
            longest
        })
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let idle_probe = probe(crowded.clone(), stop.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let quiet = idle_probe.join().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let saving_probe = probe(crowded.clone(), stop.clone());
    let mut saves = Vec::new();
    for _ in 0..runs.min(10) {
        let start = Instant::now();
        crowded.save().await.unwrap();
        saves.push(start.elapsed());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let during = saving_probe.join().unwrap();
    println!(
        "save of 1,000 conversations (11,000 messages): {:.1} ms a save; the longest wait for the session lock {:.3} ms while saving, {:.3} ms while not (target <= 1 ms)",
        ms(median(saves)),
        ms(during),
        ms(quiet)
    );
    crowded.shutdown().await;
}
