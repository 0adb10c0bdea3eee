//! Streaming throughput of `coder exec --json` against a bare HTTP read of the same stream.
//!
//! The mock model streams 20,000 text deltas as fast as it can. In the same run we time
//! (a) `curl` reading the whole SSE body, and (b) `coder exec --json` from
//! process spawn until it has printed every delta as a JSON line. Prints medians and their
//! ratio; the target is a ratio of 1.5 or less.
//!
//! Run: `cargo bench -p coder --bench exec_stream`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use coder_testkit::{MockModelServer, MockResponse};
use tokio::io::{AsyncBufReadExt, BufReader};

const DELTAS: usize = 20_000;
const RUNS: usize = 7;

#[tokio::main]
async fn main() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut bare = Vec::new();
    let mut coder = Vec::new();
    // One warm-up of each, not counted.
    for run in 0..=RUNS {
        server.push([MockResponse::text_deltas(DELTAS, "tok ")]);
        let b = bare_read(&server).await;
        server.push([MockResponse::text_deltas(DELTAS, "tok ")]);
        let c = coder_exec(&server, workspace.path()).await;
        if run > 0 {
            bare.push(b);
            coder.push(c);
        }
    }
    let bare = median(&mut bare);
    let coder = median(&mut coder);
    println!("deltas per run:          {DELTAS}");
    println!("bare HTTP read (median): {:.1} ms", ms(bare));
    println!("coder exec --json:       {:.1} ms", ms(coder));
    println!(
        "ratio coder/bare:        {:.2}x (target <= 1.5x)",
        coder.as_secs_f64() / bare.as_secs_f64()
    );
}

/// Reads the whole SSE body with `curl`, a bare HTTP client in its own process like coder.
async fn bare_read(server: &MockModelServer) -> Duration {
    let started = Instant::now();
    let output = tokio::process::Command::new("curl")
        .args(["-sN", "-H", "content-type: application/json", "-d"])
        .arg(r#"{"model":"m","stream":true,"messages":[]}"#)
        .arg(format!("{}/chat/completions", server.openai_base_url()))
        .output()
        .await
        .expect("curl is needed as the bare HTTP client");
    let elapsed = started.elapsed();
    let frames = output.stdout.windows(2).filter(|w| w == b"\n\n").count();
    assert!(frames >= DELTAS, "bare read saw {frames} frames");
    elapsed
}

/// Spawns `coder exec --json` and waits until it has printed every delta.
async fn coder_exec(server: &MockModelServer, workspace: &std::path::Path) -> Duration {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
        .args(["exec", "--json", "stream please"])
        .current_dir(workspace)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("HOME", workspace)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut deltas = 0usize;
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("\"type\":\"agent_message_delta\"") {
            deltas += 1;
            if deltas == DELTAS {
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(deltas, DELTAS, "coder printed {deltas} deltas");
    while lines.next_line().await.unwrap().is_some() {}
    assert!(child.wait().await.unwrap().success());
    elapsed
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
