//! Streaming throughput of `coder exec --json` against the floor: `curl` reading the same
//! pre-rendered reply.
//!
//! The mock model (on its own thread) serves each reply rendered before the request arrives
//! and written at once (`MockResponse::prerendered`), so reading it costs a client only the
//! read. For each wire format and each size (an empty reply, then 5,000, 20,000 and 80,000
//! text deltas), alternating, after one warm-up: (a) `curl` posts the request and reads the
//! whole SSE body (a client that does nothing but read); (b) `coder exec --json` runs from
//! process spawn until it exits, having printed every event as a JSON line. Both are child
//! processes whose stdout this program reads to its end the same way.
//!
//! Prints medians, the ratio coder/curl at each size (target: <= 2x), and the per-delta
//! cost, defined as `(t(n) - t(empty reply)) / n`: the time one more delta adds, with
//! process start-up and the request taken out. Linear means the per-delta costs at 5,000,
//! 20,000 and 80,000 deltas are within 20% of each other.
//!
//! Run: `cargo bench -p coder --bench exec_stream` (`-- openai` or `-- anthropic` for one
//! format; `BENCH_RUNS=N` for N samples per point, default 9).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coder_testkit::{Chunk, MockModelServer, MockResponse};

const SIZES: [usize; 4] = [0, 5_000, 20_000, 80_000];
const PIECE: &str = "tok ";

#[derive(Clone, Copy, PartialEq)]
enum Format {
    OpenAi,
    Anthropic,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    fn reply(self, deltas: usize) -> MockResponse {
        // The reply ends with its usage, as OpenAI's does when asked (`include_usage`) and
        // Anthropic's always: coder then counts no tokens itself.
        let mut chunks: Vec<Chunk> = (0..deltas).map(|_| Chunk::text(PIECE)).collect();
        chunks.push(Chunk::usage(20, deltas as u64));
        match self {
            Self::OpenAi => MockResponse::prerendered(&chunks),
            Self::Anthropic => MockResponse::prerendered_anthropic(&chunks),
        }
    }
}

/// The mock server on a thread of its own; `push` scripts the next reply.
struct Mock {
    push: std::sync::mpsc::Sender<MockResponse>,
    root: String,
}

impl Mock {
    fn start() -> Self {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (push, push_rx) = std::sync::mpsc::channel::<MockResponse>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let server = MockModelServer::start(Vec::new()).await.unwrap();
                server.forget_bodies();
                url_tx.send(server.anthropic_base_url()).unwrap();
                loop {
                    match push_rx.try_recv() {
                        Ok(reply) => server.push([reply]),
                        Err(std::sync::mpsc::TryRecvError::Empty) => {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                    }
                }
            });
        });
        Self {
            push,
            root: url_rx.recv().unwrap(),
        }
    }

    /// Scripts `reply` and waits until the server thread has taken it.
    fn script(&self, reply: MockResponse) {
        self.push.send(reply).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9);
    let mock = Mock::start();
    let workspace = tempfile::tempdir().unwrap();
    // 80,000 one-token deltas are past the default maxOutputTokens (8192).
    std::fs::create_dir(workspace.path().join(".coder")).unwrap();
    std::fs::write(
        workspace.path().join(".coder/config.json"),
        r#"{"maxOutputTokens": 100000}"#,
    )
    .unwrap();
    for format in [Format::OpenAi, Format::Anthropic] {
        if !filter.is_empty() && !filter.iter().any(|f| f == format.name()) {
            continue;
        }
        let replies: Vec<MockResponse> = SIZES.iter().map(|&n| format.reply(n)).collect();
        let mut bare = vec![Vec::new(); SIZES.len()];
        let mut coder = vec![Vec::new(); SIZES.len()];
        for run in 0..=runs {
            for (i, &deltas) in SIZES.iter().enumerate() {
                mock.script(replies[i].clone());
                let b = bare_read(&mock.root, format);
                mock.script(replies[i].clone());
                let c = coder_exec(&mock.root, format, workspace.path(), deltas);
                if run > 0 {
                    bare[i].push(b);
                    coder[i].push(c);
                }
            }
        }
        report(format, &mut bare, &mut coder, runs);
    }
}

fn report(format: Format, bare: &mut [Vec<Duration>], coder: &mut [Vec<Duration>], runs: usize) {
    let bare: Vec<f64> = bare.iter_mut().map(|s| median_ms(s)).collect();
    let coder: Vec<f64> = coder.iter_mut().map(|s| median_ms(s)).collect();
    println!(
        "\n{} format, medians of {runs} (per delta = (t(n) - t(empty reply)) / n):",
        format.name()
    );
    println!(
        "{:>7}  {:>10}  {:>10}  {:>6}  {:>16}  {:>16}",
        "deltas", "curl ms", "coder ms", "ratio", "curl us/delta", "coder us/delta"
    );
    let mut per_delta = Vec::new();
    for (i, &n) in SIZES.iter().enumerate() {
        let ratio = coder[i] / bare[i];
        if n == 0 {
            println!(
                "{n:>7}  {:>10.1}  {:>10.1}  {ratio:>5.2}x  {:>16}  {:>16}",
                bare[i], coder[i], "", ""
            );
            continue;
        }
        let bare_per = (bare[i] - bare[0]) * 1000.0 / n as f64;
        let coder_per = (coder[i] - coder[0]) * 1000.0 / n as f64;
        per_delta.push(coder_per);
        println!(
            "{n:>7}  {:>10.1}  {:>10.1}  {ratio:>5.2}x  {bare_per:>16.3}  {coder_per:>16.3}",
            bare[i], coder[i]
        );
    }
    let max = per_delta.iter().copied().fold(f64::MIN, f64::max);
    let min = per_delta.iter().copied().fold(f64::MAX, f64::min);
    println!(
        "coder's per-delta cost: {min:.3} to {max:.3} us, spread {:.0}% (target <= 20%); ratio target <= 2x at every size",
        (max / min - 1.0) * 100.0
    );
}

/// `curl` posts the request and reads the whole body to its end.
fn bare_read(root: &str, format: Format) -> Duration {
    let (path, body) = match format {
        Format::OpenAi => (
            "/v1/chat/completions",
            r#"{"model":"m","stream":true,"messages":[]}"#,
        ),
        Format::Anthropic => (
            "/v1/messages",
            r#"{"model":"m","stream":true,"max_tokens":8,"messages":[]}"#,
        ),
    };
    let started = Instant::now();
    let mut child = Command::new("curl")
        .args(["-sN", "-H", "content-type: application/json", "-d", body])
        .arg(format!("{root}{path}"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl is needed as the bare HTTP client");
    let bytes = read_all(child.stdout.take().unwrap());
    child.wait().unwrap();
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("[DONE]") || text.contains("message_stop"),
        "curl read an incomplete reply: {}",
        &text[..text.len().min(300)]
    );
    elapsed
}

/// `coder exec --json` from spawn until it exits; checks it printed the whole text.
fn coder_exec(root: &str, format: Format, workspace: &std::path::Path, deltas: usize) -> Duration {
    let mut command = Command::new(coder_binary());
    command
        .args(["exec", "--json", "--trust", "stream please"])
        .current_dir(workspace)
        .env_clear()
        .env("HOME", workspace)
        .env("CODER_MODEL", "mock-model")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match format {
        Format::OpenAi => command
            .env("OPENAI_BASE_URL", format!("{root}/v1"))
            .env("OPENAI_API_KEY", "bench"),
        Format::Anthropic => command
            .env("ANTHROPIC_BASE_URL", root)
            .env("ANTHROPIC_API_KEY", "bench"),
    };
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    let bytes = read_all(child.stdout.take().unwrap());
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    if !status.success() {
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let tail = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(600)..]).into_owned();
        panic!("coder exec failed ({status}): {stderr} {tail}");
    }
    // Deltas that arrived in one read are printed as one: what must hold is that every
    // piece of text was printed, in order.
    let text: String = bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice::<serde_json::Value>(line).unwrap())
        .filter(|event| event["type"] == "agent_message_delta")
        .map(|event| event["delta"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        text == PIECE.repeat(deltas),
        "coder printed {} of {} bytes of text",
        text.len(),
        PIECE.len() * deltas
    );
    elapsed
}

fn read_all(mut stdout: std::process::ChildStdout) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(1 << 20);
    stdout.read_to_end(&mut bytes).unwrap();
    bytes
}

fn median_ms(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

/// The `coder` under test: this build's, or the binary `CODER_BIN` names (to compare two
/// builds with the same bench).
fn coder_binary() -> std::ffi::OsString {
    std::env::var_os("CODER_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_coder").into())
}
