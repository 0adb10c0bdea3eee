//! Streaming throughput of `coder exec --json` against a bare HTTP read of the same stream.
//!
//! The mock model streams 20,000 text deltas as fast as it can. In the same run we time
//! (a) `curl` reading the whole SSE body, and (b) `coder exec --json` from process spawn
//! until it has printed every delta as a JSON line. Both are child processes whose stdout
//! this program reads the same way, on its own thread; the mock server runs on another
//! thread. Prints medians and their ratio; the target is a ratio of 1.5 or less.
//!
//! Run: `cargo bench -p coder --bench exec_stream`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coder_testkit::{MockModelServer, MockResponse};

const DELTAS: usize = 20_000;
const RUNS: usize = 9;

fn main() {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (push_tx, push_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let server = MockModelServer::start(Vec::new()).await.unwrap();
            url_tx.send(server.openai_base_url()).unwrap();
            // Each message asks for one more scripted stream.
            loop {
                match push_rx.try_recv() {
                    Ok(()) => server.push([MockResponse::text_deltas(DELTAS, "tok ")]),
                    Err(std::sync::mpsc::TryRecvError::Empty) => {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                }
            }
        });
    });
    let base_url = url_rx.recv().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut bare = Vec::new();
    let mut coder = Vec::new();
    // One warm-up of each, not counted.
    for run in 0..=RUNS {
        push_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let b = bare_read(&base_url);
        push_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let c = coder_exec(&base_url, workspace.path());
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

/// `curl` reads the whole SSE body; we count its frames as they arrive.
fn bare_read(base_url: &str) -> Duration {
    let started = Instant::now();
    let mut child = Command::new("curl")
        .args(["-sN", "-H", "content-type: application/json", "-d"])
        .arg(r#"{"model":"m","stream":true,"messages":[]}"#)
        .arg(format!("{base_url}/chat/completions"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl is needed as the bare HTTP client");
    let frames = count_lines(child.stdout.take().unwrap(), b"data: {", DELTAS);
    let elapsed = started.elapsed();
    assert!(frames >= DELTAS, "bare read saw {frames} frames");
    child.wait().unwrap();
    elapsed
}

/// `coder exec --json` until it has printed every delta.
fn coder_exec(base_url: &str, workspace: &std::path::Path) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_coder"))
        .args(["exec", "--json", "stream please"])
        .current_dir(workspace)
        .env("OPENAI_BASE_URL", base_url)
        .env("OPENAI_API_KEY", "bench")
        .env("HOME", workspace)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deltas = count_lines(
        child.stdout.take().unwrap(),
        b"\"type\":\"agent_message_delta\"",
        DELTAS,
    );
    let elapsed = started.elapsed();
    assert_eq!(deltas, DELTAS, "coder printed {deltas} deltas");
    assert!(child.wait().unwrap().success());
    elapsed
}

/// Counts lines containing `needle` until `want` are seen or the stream ends.
fn count_lines(stdout: std::process::ChildStdout, needle: &[u8], want: usize) -> usize {
    let mut reader = BufReader::with_capacity(256 * 1024, stdout);
    let mut line = Vec::new();
    let mut seen = 0;
    while seen < want {
        line.clear();
        if reader.read_until(b'\n', &mut line).unwrap() == 0 {
            break;
        }
        if line.windows(needle.len()).any(|w| w == needle) {
            seen += 1;
        }
    }
    std::io::copy(&mut reader, &mut std::io::sink()).unwrap();
    seen
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
