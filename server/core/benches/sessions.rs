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
//!   conversations, against the same probe while nothing is saved;
//! - **crowded sessions**: sessions of 10, 100, 1,000 and 4,000 conversations, each with one
//!   exchange, built through the engine: the CPU the process spends after one more exchange
//!   until its save is done (the idle save included), the session file's size, `resume`'s
//!   time and its peak heap against the heap the live session held, and the first use of a
//!   resumed conversation.
//!
//! The crowded sessions and the 10,000-message session's turn run in each of the three
//! workspaces of `coder_testkit::workspaces` (a plain folder of 20,000 files, a git
//! repository of them, that repository with a 100 MB untracked file; `BENCH_FILES=N`).
//!
//! `cargo bench -p coder-core --bench sessions` (`BENCH_RUNS=N` samples, default 20;
//! `BENCH_SIZES=10,100` for other crowded sessions; `BENCH_ONLY=crowded` for those alone).

// A benchmark fails loudly on anything unexpected.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The heap is counted by an allocator of the benchmark's own, which wraps the system's.
#![allow(unsafe_code)]

use coder_testkit::bench::{median, ms};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coder_core::{
    ApiKey, Config, ConversationSpec, Engine, ProviderConfig, ProviderKind, SessionSnapshot,
};
use coder_protocol::{ConversationId, Event, EventMsg, SessionId};
use coder_testkit::workspaces::{Workspace, Workspaces};
use coder_testkit::{Chunk, MockModelServer, MockResponse, PlainServer};
use serde_json::{Value, json};

/// The system allocator, counting the bytes in use and their peak.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counters move.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        moved
    }
}

fn grew(bytes: usize) {
    let now = IN_USE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The heap in use now, in bytes.
fn heap() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

/// Starts a new peak from the heap in use now.
fn reset_peak() {
    PEAK.store(heap(), Ordering::Relaxed);
}

/// The CPU time the whole process has used so far (every thread).
fn cpu() -> Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
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
    engine_at(workspace, server.openai_base_url(), save)
}

fn engine_at(workspace: &Path, base_url: String, save: bool) -> Engine {
    let provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url,
        api_key: Some(ApiKey::new("bench")),
    };
    let mut config = Config::new(workspace, provider, "mock-model");
    config.context_window = Some(10_000_000);
    config.max_conversations = 10_000;
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

/// Runs one task of `conversation` to its end.
async fn exchange_in(
    engine: &Engine,
    server: &PlainServer,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<Event>,
    conversation: ConversationId,
    text: String,
) {
    server.push(reply().rendered_body().unwrap());
    let task = engine.send(conversation, text).unwrap();
    loop {
        let event = events.recv().await.unwrap();
        if event.task_id == Some(task) && event.msg.task_end().is_some() {
            break;
        }
    }
}

/// How long a session takes to save once it is idle: the driver's quiet moment, and room
/// for the save to run.
const AFTER_A_TURN: Duration = Duration::from_millis(1_500);

/// One crowded session of `size` conversations: built through the engine, one exchange
/// each; then one more exchange and the CPU until its save is done, the file, the live
/// heap; then `resume` in a fresh engine, and the first use of a resumed conversation.
async fn crowded(server: &PlainServer, size: usize, runs: usize, workspace: &Path, name: &str) {
    let heap_before = heap();
    let live = engine_at(workspace, server.openai_base_url(), true);
    let mut events = live.subscribe();
    let mut ids = vec![live.root_conversation()];
    for _ in 1..size {
        ids.push(
            live.create_conversation(ConversationSpec::default())
                .unwrap(),
        );
    }
    let start = Instant::now();
    for (at, id) in ids.iter().enumerate() {
        exchange_in(
            &live,
            server,
            &mut events,
            *id,
            format!("Question {at}: where is the parser?"),
        )
        .await;
    }
    let built = start.elapsed();
    live.save().await.unwrap();
    let session = live.session_id();
    let path = workspace.join(format!(".coder/sessions/{session}.json"));
    let file_bytes = std::fs::metadata(&path).unwrap().len();

    // The CPU of an idle stretch as long as the one after a turn: the floor.
    tokio::time::sleep(AFTER_A_TURN).await;
    let cpu_before = cpu();
    tokio::time::sleep(AFTER_A_TURN).await;
    let idle_cpu = cpu() - cpu_before;
    // One more exchange in the root, and the CPU the process spends from its end until
    // the session has saved it (the journal's lines, the idle save).
    let mut after_turn = Vec::new();
    let mut turn = Vec::new();
    for run in 0..runs.clamp(1, 5) {
        let start = Instant::now();
        exchange_in(
            &live,
            server,
            &mut events,
            ids[0],
            format!("One more, {run}."),
        )
        .await;
        turn.push(start.elapsed());
        let cpu_before = cpu();
        tokio::time::sleep(AFTER_A_TURN).await;
        after_turn.push(cpu() - cpu_before);
    }
    let live_heap = heap() - heap_before;
    live.shutdown().await;
    drop(live);
    drop(events);
    // Each resume starts from the file the live session left (a resumed session saves its
    // conversations without the prompts of their last tasks until they run again).
    let left = std::fs::read(&path).unwrap();
    let journal = path.with_extension("jsonl");

    // Resume in fresh engines: the time, the peak heap and what stays.
    let mut resume = Vec::new();
    let mut peak = 0;
    let mut kept = 0;
    let mut first_use = Vec::new();
    for _ in 0..runs.clamp(1, 5) {
        std::fs::write(&path, &left).unwrap();
        let _ = std::fs::remove_file(&journal);
        let base = heap();
        let fresh = engine_at(workspace, server.openai_base_url(), true);
        let engine_heap = heap() - base;
        reset_peak();
        let start = Instant::now();
        let loaded = fresh.resume(session).unwrap();
        resume.push(start.elapsed());
        assert!(loaded >= 2 * size);
        peak = PEAK.load(Ordering::Relaxed) - base - engine_heap;
        kept = heap() - base - engine_heap;
        let start = Instant::now();
        let history = fresh.conversation_history(ids[size / 2], None).unwrap();
        first_use.push(start.elapsed());
        assert!(!history.is_empty());
        fresh.shutdown().await;
    }
    println!(
        "{name}, {size} conversations (built in {:.1} s): file {:.2} MB; one more exchange {:.2} ms, then {:.2} ms CPU until saved (idle floor {:.2} ms); live heap {:.1} MiB; resume {:.2} ms, peak heap {:.1} MiB ({:.2}x live), kept {:.1} MiB; first use of a resumed conversation {:.3} ms",
        built.as_secs_f64(),
        file_bytes as f64 / 1e6,
        ms(median(turn)),
        ms(median(after_turn)),
        ms(idle_cpu),
        mib(live_heap),
        ms(median(resume)),
        mib(peak),
        peak as f64 / live_heap as f64,
        mib(kept),
        ms(median(first_use)),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    server.forget_bodies();
    let plain = PlainServer::start().unwrap();
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "10,100,1000,4000".to_owned())
        .split(',')
        .filter_map(|size| size.trim().parse().ok())
        .collect();
    let workspaces = Workspaces::for_bench().unwrap();
    for (round, size) in sizes.into_iter().enumerate() {
        // Each size starts with the next workspace: none always runs first.
        for workspace in Workspace::in_turn(round) {
            crowded(
                &plain,
                size,
                runs,
                workspaces.path(workspace),
                workspace.name(),
            )
            .await;
        }
    }
    if std::env::var("BENCH_ONLY").is_ok_and(|only| only == "crowded") {
        return;
    }
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

    // One more turn, in a 10,000-message session (in each workspace) and in fresh ones.
    let mut in_big = Vec::new();
    for workspace in Workspace::ALL {
        let path = workspaces.path(workspace);
        let session = write_session(path, 10_000, 0, 0);
        let big = engine(path, &server, true);
        big.resume(session).unwrap();
        in_big.push(persist_turn(&big, &server, runs).await);
        big.shutdown().await;
    }
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = engine(fresh_dir.path(), &server, true);
    let in_fresh = persist_turn(&fresh, &server, runs).await;
    fresh.shutdown().await;
    let unsaved_dir = tempfile::tempdir().unwrap();
    let unsaved = engine(unsaved_dir.path(), &server, false);
    let without = persist_turn(&unsaved, &server, runs).await;
    unsaved.shutdown().await;
    println!(
        "persist one turn (reply_complete -> token_count, two synced journal lines): 10,000 messages {:.3} ms ({} {:.3} ms, {} {:.3} ms), fresh session {:.3} ms, no journal {:.3} ms (target < 5 ms)",
        ms(in_big[0]),
        Workspace::Repository.name(),
        ms(in_big[1]),
        Workspace::Untracked.name(),
        ms(in_big[2]),
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
