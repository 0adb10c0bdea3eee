//! A rewind of a long session: through the public engine against the testkit's SSE server,
//! in a git repository of 100 committed files, a session of 1,000 turns, each of which
//! writes one of those files with the `write` tool (so every file is changed ten times), then
//! `Engine::rewind` back to the first point: every file goes back to its committed content
//! and the history is cut to nothing, the snapshot written. The floor, in the same run: a
//! program that writes the same 100 files' contents back (`std::fs::write` of each), the
//! least any rewind can do.
//!
//! Prints the rewind's time, the floor's and the ratio; target: the rewind under 1 s.
//!
//! `cargo bench -p coder-core --bench rewind` (`BENCH_TURNS=N`, default 1,000;
//! `BENCH_FILES=N`, default 100).

// A benchmark fails loudly on anything unexpected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use coder_core::{ApiKey, Config, Engine, ProviderConfig, ProviderKind};
use coder_protocol::{EngineState, EventMsg, Preset};
use coder_testkit::bench::ms;
use coder_testkit::{Chunk, MockModelServer, MockResponse};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn file_name(index: usize) -> String {
    format!("src/file_{index:03}.txt")
}

fn original(index: usize) -> String {
    format!("file {index}: {}\n", "the committed content. ".repeat(20))
}

fn engine(workspace: &Path, server: &MockModelServer) -> Engine {
    let provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: server.openai_base_url(),
        api_key: Some(ApiKey::new("bench")),
    };
    let mut config = Config::new(workspace, provider, "mock-model");
    config.context_window = Some(100_000_000);
    config.sandbox = false;
    config.preset = Preset::Yolo;
    Engine::new(config).unwrap()
}

/// Sends `input` and waits until the session is idle again.
async fn turn(engine: &Engine, input: &str) {
    let mut events = engine.subscribe();
    engine.send(engine.root_conversation(), input).unwrap();
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
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let turns = env_or("BENCH_TURNS", 1_000);
    let files = env_or("BENCH_FILES", 100);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    for index in 0..files {
        std::fs::write(ws.join(file_name(index)), original(index)).unwrap();
    }
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "start"]);
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let engine = engine(ws, &server);
    let built = Instant::now();
    for n in 0..turns {
        let index = n % files;
        server.push([
            MockResponse::tool_call(
                &format!("w{n}"),
                "write",
                serde_json::json!({"path": file_name(index), "content": format!("turn {n}\n")}),
            ),
            MockResponse::prerendered(&[Chunk::text("Done."), Chunk::usage(1_000, 2)]),
        ]);
        turn(&engine, &format!("turn {n}: change {}", file_name(index))).await;
        // The bodies of old requests are not kept: a long session would hold them all.
        server.forget_bodies();
    }
    eprintln!(
        "{turns} turns over {files} files in {:.1} s",
        built.elapsed().as_secs_f64()
    );
    let root = engine.root_conversation();
    assert_eq!(engine.rewind_points(root).unwrap().len(), turns);

    let start = Instant::now();
    let rewound = engine.rewind(root, 0, false).await.unwrap();
    let rewind = start.elapsed();
    assert_eq!(rewound.restored.len(), files, "{}", rewound.text);
    assert!(rewound.kept.is_empty(), "{}", rewound.text);
    for index in 0..files {
        assert_eq!(
            std::fs::read_to_string(ws.join(file_name(index))).unwrap(),
            original(index)
        );
    }
    assert!(engine.rewind_points(root).unwrap().is_empty());

    // The floor: the same files' contents written back by a program that knows them.
    for index in 0..files {
        std::fs::write(ws.join(file_name(index)), format!("changed {index}\n")).unwrap();
    }
    let contents: Vec<(String, String)> = (0..files)
        .map(|index| (file_name(index), original(index)))
        .collect();
    let start = Instant::now();
    for (name, content) in &contents {
        std::fs::write(ws.join(name), content).unwrap();
    }
    let floor = start.elapsed().max(Duration::from_nanos(1));
    engine.shutdown().await;
    println!(
        "rewind of {turns} turns, {files} files: {:.1} ms; floor (writing the {files} files back): {:.2} ms; ratio {:.0}x; target under 1 s",
        ms(rewind),
        ms(floor),
        rewind.as_secs_f64() / floor.as_secs_f64()
    );
}
