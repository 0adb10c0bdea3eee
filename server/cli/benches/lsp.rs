//! `coder lsp`: cold start and event throughput, measured in one run (see
//! docs/benchmarks.md).
//!
//! - Cold start: process spawn to the `initialize` result, median of 20.
//! - Throughput: 20,000 streamed deltas from the mock model to this client reading stdout,
//!   against `curl` reading the same stream.
//!
//! The memory measurement of the LSP issue (1,000 conversations of 20 messages) is not
//! here yet: driven over the protocol it took minutes at the current event throughput.
//!
//! Run: `cargo bench -p coder --bench lsp`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

const DELTAS: usize = 20_000;

struct Lsp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Lsp {
    fn spawn(base_url: &str, workspace: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_coder"))
            .args(["lsp", "--stdio"])
            .current_dir(workspace)
            .env("OPENAI_BASE_URL", base_url)
            .env("OPENAI_API_KEY", "bench")
            .env("HOME", workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Vec<u8> {
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length: ") {
                length = value.parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.stdout.read_exact(&mut body).unwrap();
        body
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message: Value = serde_json::from_slice(&self.read()).unwrap();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.request("initialize", json!({"capabilities": {}}));
        self.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    }

    fn root(&mut self) -> Value {
        let list = self.request("conversation/list", json!({}));
        list["result"]["conversations"][0]["id"].clone()
    }

    /// Reads until `count` task completions have been seen.
    fn until_complete(&mut self, count: usize) {
        let mut seen = 0;
        while seen < count {
            let body = self.read();
            if contains(&body, b"\"type\":\"task_complete\"") {
                seen += 1;
            }
        }
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
        self.child.wait().unwrap();
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(MockModelServer::start(Vec::new()))
        .unwrap();
    server.forget_bodies();
    let base_url = server.openai_base_url();
    let workspace = tempfile::tempdir().unwrap();

    // Cold start.
    let starts: Vec<Duration> = (0..20)
        .map(|_| {
            let started = Instant::now();
            let mut lsp = Lsp::spawn(&base_url, workspace.path());
            lsp.request("initialize", json!({"capabilities": {}}));
            let elapsed = started.elapsed();
            lsp.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
            lsp.stop();
            elapsed
        })
        .collect();
    println!(
        "cold start (spawn -> initialize result), median of 20: {:.1} ms (target < 20 ms)",
        ms(median(starts))
    );

    // Throughput.
    let mut ours = Vec::new();
    let mut bare = Vec::new();
    for run in 0..6 {
        server.push([MockResponse::text_deltas(DELTAS, "tok ")]);
        let started = Instant::now();
        let output = Command::new("curl")
            .args(["-sN", "-H", "content-type: application/json", "-d", "{}"])
            .arg(format!("{base_url}/chat/completions"))
            .output()
            .expect("curl is the bare HTTP client");
        assert!(output.stdout.len() > DELTAS * 10);
        let b = started.elapsed();

        let mut lsp = Lsp::spawn(&base_url, workspace.path());
        lsp.initialize();
        let root = lsp.root();
        server.push([MockResponse::text_deltas(DELTAS, "tok ")]);
        let started = Instant::now();
        lsp.request(
            "conversation/send",
            json!({"conversationId": root, "text": "go"}),
        );
        let mut deltas = 0;
        while deltas < DELTAS {
            if contains(&lsp.read(), b"agent_message_delta") {
                deltas += 1;
            }
        }
        let o = started.elapsed();
        lsp.until_complete(1);
        lsp.stop();
        if run > 0 {
            ours.push(o);
            bare.push(b);
        }
    }
    let (ours, bare) = (median(ours), median(bare));
    println!(
        "throughput: {DELTAS} deltas in {:.1} ms ({:.0}/s); bare read {:.1} ms; ratio {:.2}x (target <= 1.5x)",
        ms(ours),
        DELTAS as f64 / ours.as_secs_f64(),
        ms(bare),
        ours.as_secs_f64() / bare.as_secs_f64()
    );
}
