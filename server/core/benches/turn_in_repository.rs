//! A turn where people work: the same turns in a plain folder (the floor: no checkpoint is
//! taken there), in a git repository of 20,000 committed files, and in that repository with
//! a 100 MB untracked file (made by `coder_testkit::workspaces`, as the `coder` crate's
//! streaming and `rivals` benches make them). For each workspace, through the public engine
//! against the testkit's SSE server, the median of:
//!
//! - **talk**: a one-delta text turn (send to idle);
//! - **command**: a turn whose one tool call runs `printf` into a tracked file, then a text
//!   reply (send to idle), after a first such turn is set aside and timed on its own;
//! - **the first command** of a session whose first turn talked (that turn started the
//!   recorder in the background, once per session), one per workspace. That first turn's
//!   reply comes as a real model's short answer does, its frames 200 ms apart (not timed);
//! - **a command as a session's first turn**, in fresh sessions (`BENCH_FRESH=N`, default
//!   5): the scripted model answers at once, so nothing hides the recorder's start, which
//!   the tool waits for (with a real model, its first reply does);
//! - **/undo** of the last command turn.
//!
//! Before anything is timed, one command runs in a throwaway session in an empty folder, so
//! the process's first command (its first spawn) is paid by none of the workspaces.
//!
//! Prints the times and each repository's ratio to the plain folder (target: within 1.2x).
//!
//! `cargo bench -p coder-core --bench turn_in_repository` (`BENCH_RUNS=N` samples, default
//! 15; `BENCH_FILES=N` files, default 20,000).

// A benchmark fails loudly on anything unexpected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::{median, ms};
use std::path::Path;
use std::time::{Duration, Instant};

use coder_core::{ApiKey, Config, Engine, ProviderConfig, ProviderKind};
use coder_protocol::{EngineState, EventMsg, Preset};
use coder_testkit::workspaces::{TRACKED_FILE, Workspace, Workspaces, median_ratio};
use coder_testkit::{Chunk, MockModelServer, MockResponse};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn engine(workspace: &Path, server: &MockModelServer) -> Engine {
    let provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: server.openai_base_url(),
        api_key: Some(ApiKey::new("bench")),
    };
    let mut config = Config::new(workspace, provider, "mock-model");
    config.context_window = Some(10_000_000);
    config.save_sessions = false;
    config.sandbox = false;
    config.preset = Preset::Yolo;
    Engine::new(config).unwrap()
}

fn text() -> MockResponse {
    MockResponse::prerendered(&[Chunk::text("Done."), Chunk::usage(1_000, 2)])
}

/// Sends `input` and waits until the session is idle again.
async fn turn(engine: &Engine, input: &str) -> Duration {
    let mut events = engine.subscribe();
    let start = Instant::now();
    engine.send(engine.root_conversation(), input).unwrap();
    // Idle: the turn's end is read for `/undo` before it.
    loop {
        let event = events.recv().await.unwrap();
        if event.msg
            == (EventMsg::StateChanged {
                state: EngineState::Idle,
            })
        {
            break;
        }
    }
    start.elapsed()
}

fn command(n: usize) -> MockResponse {
    MockResponse::tool_call(
        &format!("c{n}"),
        "bash",
        serde_json::json!({"command": format!("printf '{n}\\n' > {TRACKED_FILE}")}),
    )
}

/// Each figure's samples, one per run, for each workspace (in [`Workspace::ALL`]'s order).
#[derive(Default)]
struct Samples {
    talk: [Vec<Duration>; 3],
    first_command: [Vec<Duration>; 3],
    first_turn_command: [Vec<Duration>; 3],
    command: [Vec<Duration>; 3],
    undo: [Vec<Duration>; 3],
}

/// The turns in the three workspaces in turn (plain, repository, untracked, plain, ...),
/// so a busy stretch of the machine weighs on the three alike.
async fn measure(
    workspaces: [&Path; 3],
    server: &MockModelServer,
    runs: usize,
    fresh: usize,
) -> Samples {
    let mut samples = Samples::default();
    let empty = tempfile::tempdir().unwrap();
    let warm_up = engine(empty.path(), server);
    server.push([command(0), text()]);
    turn(&warm_up, "change it").await;
    warm_up.shutdown().await;
    for round in 0..fresh {
        for index in (0..3).map(|i| (i + round) % 3) {
            let engine = engine(workspaces[index], server);
            server.push([command(0), text()]);
            samples.first_turn_command[index].push(turn(&engine, "change it").await);
            engine.shutdown().await;
        }
    }
    let engines = workspaces.map(|workspace| engine(workspace, server));
    for engine in &engines {
        let reply = MockResponse::stream(vec![Chunk::text("Done."), Chunk::usage(1_000, 2)]);
        server.push([reply.with_delay(200)]);
        turn(engine, "hi").await;
    }
    for _ in 0..runs {
        for (index, engine) in engines.iter().enumerate() {
            server.push([text()]);
            samples.talk[index].push(turn(engine, "hi").await);
        }
    }
    for (index, engine) in engines.iter().enumerate() {
        server.push([command(0), text()]);
        samples.first_command[index].push(turn(engine, "change it").await);
    }
    for n in 1..=runs {
        for (index, engine) in engines.iter().enumerate() {
            server.push([command(n), text()]);
            samples.command[index].push(turn(engine, "change it").await);
            let start = Instant::now();
            let said = engine.command(engine.root_conversation(), "/undo");
            samples.undo[index].push(start.elapsed());
            if index > 0 {
                let said = said.unwrap().text;
                assert!(said.starts_with("undid the last turn"), "{said}");
            }
        }
    }
    for engine in engines {
        engine.shutdown().await;
    }
    samples
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = env_or("BENCH_RUNS", 15);
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspaces = Workspaces::for_bench().unwrap();
    let files = workspaces.files();

    let fresh = env_or("BENCH_FRESH", 5);
    let samples = measure(workspaces.paths(), &server, runs, fresh).await;

    println!("{files} files, {runs} runs each, the workspaces in turn; medians, ratios run by run");
    println!(
        "| turn | {} | {} | ratio | {} | ratio |",
        Workspace::Plain.name(),
        Workspace::Repository.name(),
        Workspace::Untracked.name()
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let row = |name: &str, of: &[Vec<Duration>; 3]| {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2}x | {:.2} ms | {:.2}x |",
            ms(median(of[0].clone())),
            ms(median(of[1].clone())),
            median_ratio(&of[1], &of[0]),
            ms(median(of[2].clone())),
            median_ratio(&of[2], &of[0]),
        );
    };
    row("talk (one delta)", &samples.talk);
    row("a command (after the first)", &samples.command);
    row(
        "the first command, after a turn that talked",
        &samples.first_command,
    );
    row(
        "a command as a fresh session's first turn (waits for the recorder)",
        &samples.first_turn_command,
    );
    println!(
        "| /undo | refused | {:.2} ms | | {:.2} ms | |",
        ms(median(samples.undo[1].clone())),
        ms(median(samples.undo[2].clone()))
    );
}
