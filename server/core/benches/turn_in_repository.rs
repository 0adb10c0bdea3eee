//! A turn where people work: the same turns in a plain folder (the floor: no checkpoint is
//! taken there), in a git repository of 20,000 committed files, and in that repository with
//! a 100 MB untracked file. For each workspace, through the public engine against the
//! testkit's SSE server, the median of:
//!
//! - **talk**: a one-delta text turn (send to idle);
//! - **command**: a turn whose one tool call runs `printf` into a tracked file, then a text
//!   reply (send to idle), after a first such turn (which starts the recorder, once per
//!   session) is set aside and timed on its own;
//! - **/undo** of the last command turn.
//!
//! Prints the times and each repository's ratio to the plain folder (target: within 1.2x).
//!
//! `cargo bench -p coder-core --bench turn_in_repository` (`BENCH_RUNS=N` samples, default
//! 15; `BENCH_FILES=N` files, default 20,000).

// A benchmark fails loudly on anything unexpected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use coder_core::{ApiKey, Config, Engine, ProviderConfig, ProviderKind};
use coder_protocol::{EngineState, EventMsg, Preset};
use coder_testkit::{Chunk, MockModelServer, MockResponse};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// `files` small source files in 100 folders of 10 subfolders, and `tracked.txt`.
fn fill(dir: &Path, files: usize) {
    for index in 0..files {
        let folder = dir.join(format!("src/m{}/s{}", index % 100, (index / 100) % 10));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("f{index}.rs")),
            format!("pub fn f{index}() -> usize {{ {index} }}\n"),
        )
        .unwrap();
    }
    std::fs::write(dir.join("tracked.txt"), "original\n").unwrap();
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

struct Figures {
    talk: Duration,
    first_command: Duration,
    command: Duration,
    undo: Duration,
}

async fn measure(workspace: &Path, server: &MockModelServer, runs: usize) -> Figures {
    let engine = engine(workspace, server);
    let mut talk = Vec::new();
    for _ in 0..runs {
        server.push([text()]);
        talk.push(turn(&engine, "hi").await);
    }
    let command = |n: usize| {
        MockResponse::tool_call(
            &format!("c{n}"),
            "bash",
            serde_json::json!({"command": format!("printf '{n}\\n' > tracked.txt")}),
        )
    };
    server.push([command(0), text()]);
    let first_command = turn(&engine, "change it").await;
    let mut commands = Vec::new();
    let mut undos = Vec::new();
    for n in 1..=runs {
        server.push([command(n), text()]);
        commands.push(turn(&engine, "change it").await);
        let start = Instant::now();
        let said = engine.command(engine.root_conversation(), "/undo");
        undos.push(start.elapsed());
        if workspace.join(".git").exists() {
            let said = said.unwrap().text;
            assert!(said.starts_with("undid the last turn"), "{said}");
        }
    }
    engine.shutdown().await;
    Figures {
        talk: median(talk),
        first_command,
        command: median(commands),
        undo: median(undos),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = env_or("BENCH_RUNS", 15);
    let files = env_or("BENCH_FILES", 20_000);
    let server = MockModelServer::start(Vec::new()).await.unwrap();

    let plain = tempfile::tempdir().unwrap();
    fill(plain.path(), files);
    let repository = tempfile::tempdir().unwrap();
    fill(repository.path(), files);
    git(repository.path(), &["init", "-q"]);
    git(repository.path(), &["add", "."]);
    git(repository.path(), &["commit", "-q", "-m", "files"]);

    let floor = measure(plain.path(), &server, runs).await;
    let repo = measure(repository.path(), &server, runs).await;
    let big = std::fs::File::create(repository.path().join("data.bin")).unwrap();
    // Written, not sparse: reading it costs what a real file costs.
    std::io::Write::write_all(&mut &big, &vec![7u8; 100 << 20]).unwrap();
    drop(big);
    let untracked = measure(repository.path(), &server, runs).await;

    println!("{files} files, {runs} runs each; medians");
    println!("| turn | plain folder | git repository | ratio | + 100 MB untracked | ratio |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let row = |name: &str, of: fn(&Figures) -> Duration| {
        let (a, b, c) = (of(&floor), of(&repo), of(&untracked));
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2}x | {:.2} ms | {:.2}x |",
            ms(a),
            ms(b),
            b.as_secs_f64() / a.as_secs_f64(),
            ms(c),
            c.as_secs_f64() / a.as_secs_f64()
        );
    };
    row("talk (one delta)", |f| f.talk);
    row("a command (after the first)", |f| f.command);
    row("the first command (starts the recorder)", |f| {
        f.first_command
    });
    row("/undo (plain folder: refused)", |f| f.undo);
}
