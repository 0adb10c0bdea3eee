//! `coder lsp`: cold start and event throughput, measured in one run (see
//! docs/benchmarks.md).
//!
//! - Cold start: process spawn to the `initialize` result, median of 20, alternating with
//!   `codex app-server` (installed from npm by `scripts/setup-codex.sh`; skipped with a
//!   message when that fails).
//! - Throughput: replies of 5,000, 20,000 and 80,000 deltas, rendered as coder-testkit's
//!   mock renders them and written at once by a plain thread (`coder_testkit::PlainServer`:
//!   the axum mock's serving was most of the floor at 5,000 deltas), read through
//!   `coder lsp` by a client that only counts bytes until the
//!   task's end event, against a raw TCP read of the same reply on a connection kept alive
//!   between samples, as coder's HTTP client keeps its own (the floor; the same read on a
//!   new connection each time is printed beside it). Beside them, the same kept-alive read
//!   done by a relay: a process between the client's pipes, where `coder lsp` sits, that
//!   does nothing else (one line in, the read, one line out): the part of coder's time that
//!   any server in its place would take; and the same relay forwarding every byte it reads
//!   to the client, which reads them all: the cheapest server that passes a reply on. Every size is measured in each round
//!   (one delta, and each reported size with its half), so the machine's drift touches
//!   all sizes alike. Per size: the ratio, the CPU the server spent
//!   (its CPU clock, all threads), and the cost of a delta two ways, each the median of the
//!   rounds' own figures: averaged from one delta, `(t(n) - t(1)) / (n - 1)`, and at the
//!   margin, `(t(n) - t(n/2)) / (n/2)`, what one more delta adds at that size; and what
//!   coder adds to the floor (the paired differences, read the same way). Where people
//!   work: in the same rounds, three more `coder lsp` servers, one in each of
//!   `coder_testkit::workspaces`' workspaces (a plain folder of 20,000 files, a git
//!   repository of them, and that repository with a 100 MB untracked file; configured at the
//!   user level so the workspaces stay as made), take the same reply one after the other
//!   (each round starting with the next);
//!   per size, each repository's ratio to the plain folder is the median of the run-by-run
//!   ratios (target: within 1.2x).
//! - Replay: a reconnecting client's `session/subscribe` for the last 100,000 events of a
//!   session, against the same answer written by a process that only forwards it.
//! - Memory: resident set of a session holding 1,000 conversations of 20 messages each
//!   (10 exchanges), built over the protocol.
//! - Live output: a `bash` call printing 100 MB in 64-byte lines, its output streamed to
//!   the client as `tool_call_output_delta`s, against the floor in the same rounds: the same
//!   command read to its end from a pipe by this process. The call's own duration
//!   (`durationMs`) and the whole task, each the median of the run-by-run ratios; then the
//!   peak resident set of a server whose client reads nothing while the call runs, against
//!   one whose client reads everything.
//!
//! Run: `cargo bench -p coder --bench lsp`; name measures to run only those, as in
//! `cargo bench -p coder --bench lsp -- memory` (`cold`, `throughput`, `live`, `replay`,
//! `memory`).
//! `BENCH_RUNS=N` sets the throughput rounds, `BENCH_SIZES=5000,20000` the sizes reported;
//! `CODER_BIN` names the `coder` binary to measure (another build, for an A/B run);
//! `BENCH_FILES=N` the files in each workspace of the throughput measure.
//! `BENCH_EVENTS=1` prints, for each throughput sample, the frames and bytes the client read
//! and when each event arrived (microseconds after the request left), and when the bare
//! read's first bytes came: where a task's time goes, seen from the client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::{median, ms};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use coder_testkit::workspaces::{Workspace, Workspaces, median_ratio};
use coder_testkit::{Chunk, MockModelServer, MockResponse, PageAligned, PlainServer};
use serde_json::{Value, json};

#[path = "support/codex.rs"]
mod codex;
#[path = "support/install.rs"]
mod install;
#[path = "support/spread.rs"]
mod spread;
use spread::spread;

const CONVERSATIONS: usize = 1_000;
const EXCHANGES: usize = 10;

/// Writes `message` with LSP framing, in one write (the pipe is not buffered: `write!`
/// straight to it would make one system call per piece, and wake the server for each).
fn write_frame(out: &mut impl Write, message: &Value) {
    let body = message.to_string();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    out.write_all(frame.as_bytes()).unwrap();
}

struct Lsp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Lsp {
    fn spawn(base_url: &str, workspace: &std::path::Path) -> Self {
        Self::spawn_with_home(base_url, workspace, workspace)
    }

    /// `coder lsp` in `workspace`, with `home` as its `HOME` (where its user-level
    /// configuration is).
    fn spawn_with_home(
        base_url: &str,
        workspace: &std::path::Path,
        home: &std::path::Path,
    ) -> Self {
        let mut child = Command::new(coder_binary())
            .args(["lsp", "--stdio"])
            .current_dir(workspace)
            .env("OPENAI_BASE_URL", base_url)
            .env("OPENAI_API_KEY", "bench")
            .env("HOME", home)
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
        write_frame(&mut self.stdin, message);
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        self.read_into(&mut body);
        body
    }

    /// Reads the next frame's body into `body`, reusing its allocation (the throughput
    /// client allocates nothing per frame, as the floor's reader does not).
    fn read_into(&mut self, body: &mut Vec<u8>) {
        read_frame_into(&mut self.stdout, body);
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

    /// Initializes a session that trusts its workspace (the throughput measure's).
    fn initialize_trusted(&mut self) {
        self.request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": {"trustWorkspace": true}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    }

    /// One task of the throughput measure in a conversation of its own, created before and
    /// destroyed after it: the time from `conversation/send` to the task's end, and the
    /// length of the reply's text.
    fn sample(&mut self) -> (Duration, usize) {
        let created = self.request("conversation/create", json!({}));
        let conversation = created["result"]["conversationId"].clone();
        let sample = lsp_read(self, &conversation);
        self.request(
            "conversation/destroy",
            json!({"conversationId": conversation}),
        );
        sample
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

/// Reads the next LSP frame's body from `input` into `body`, reusing its allocation.
fn read_frame_into(input: &mut impl BufRead, body: &mut Vec<u8>) {
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        input.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse().unwrap();
        }
    }
    body.resize(length, 0);
    input.read_exact(body).unwrap();
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn main() {
    if let Ok(relay) = std::env::var(RELAY_ENV) {
        return relay_main(&relay);
    }
    if let Ok(frame) = std::env::var(REPLAY_FLOOR_ENV) {
        return replay_floor_main(&frame);
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(MockModelServer::start(Vec::new()))
        .unwrap();
    server.forget_bodies();
    let base_url = server.openai_base_url();
    let workspace = tempfile::tempdir().unwrap();

    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let run = |name: &str| chosen.is_empty() || chosen.iter().any(|arg| arg == name);
    if run("cold") {
        cold_start(&base_url, workspace.path());
    }
    if run("throughput") {
        // Served by a plain thread, not the axum mock: its serving would be most of the
        // floor at 5,000 deltas.
        throughput(&PlainServer::start().unwrap(), workspace.path());
    }
    if run("live") {
        live(&server, &base_url);
    }
    if run("replay") {
        let workspace = tempfile::tempdir().unwrap();
        replay(&server, &base_url, workspace.path());
    }
    if run("memory") {
        // A workspace of its own, so the snapshot size printed is this session's alone.
        let workspace = tempfile::tempdir().unwrap();
        memory(&server, &base_url, workspace.path());
    }
}

/// Spawn to `initialize` result, coder and Codex alternating, median of 20 each.
fn cold_start(base_url: &str, workspace: &std::path::Path) {
    let codex = codex::binary();
    let codex_home = tempfile::tempdir().unwrap();
    if let Some(codex) = &codex {
        // Codex fills its home on the first start; keep that out of the samples.
        codex::cold_start(codex, codex_home.path());
    }
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let mut lsp = Lsp::spawn(base_url, workspace);
        lsp.request("initialize", json!({"capabilities": {}}));
        ours.push(started.elapsed());
        lsp.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        lsp.stop();
        if let Some(codex) = &codex {
            theirs.push(codex::cold_start(codex, codex_home.path()));
        }
    }
    let ours = median(ours);
    print!(
        "cold start (spawn -> initialize result), median of 20: coder lsp {:.1} ms",
        ms(ours)
    );
    if theirs.is_empty() {
        println!(" (codex app-server not measured) (target < 20 ms)");
    } else {
        let theirs = median(theirs);
        println!(
            "; codex app-server {:.1} ms; ratio {:.3}x (target < 20 ms and faster than Codex)",
            ms(theirs),
            ours.as_secs_f64() / theirs.as_secs_f64()
        );
    }
}

/// Reply sizes the throughput measure reports, in deltas.
const SIZES: [usize; 3] = [5_000, 20_000, 80_000];

/// The sizes to report: [`SIZES`], or `BENCH_SIZES=5000,20000` for others.
fn sizes() -> Vec<usize> {
    let Ok(chosen) = std::env::var("BENCH_SIZES") else {
        return SIZES.to_vec();
    };
    chosen
        .split(',')
        .filter_map(|size| size.trim().parse::<usize>().ok())
        .filter(|&size| size > 1)
        .collect()
}

/// The sizes to measure for `reported`: one delta (the fixed cost of a task; an empty
/// reply is a broken stream to the engine, which retries it), and each reported size and
/// its half (the marginal cost at that size), in ascending order.
fn measured(reported: &[usize]) -> Vec<usize> {
    let mut sizes = vec![1];
    for &size in reported {
        sizes.extend([size / 2, size]);
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Rounds (after one warm-up), each measuring every size once; medians over them are
/// reported. `BENCH_RUNS=N` asks for more: the floor (a raw read of 1 to 14 MB on loopback)
/// moves by 2x from one sample to the next.
fn samples() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// One reply of `deltas` text deltas, rendered before the request and written at once.
fn reply(deltas: usize) -> String {
    // It ends with its usage, as OpenAI's does when asked (`include_usage`): coder then
    // counts no tokens itself.
    let mut chunks: Vec<Chunk> = (0..deltas).map(|_| Chunk::text("tok ")).collect();
    chunks.push(Chunk::usage(20, deltas as u64));
    MockResponse::prerendered(&chunks)
        .rendered_body()
        .expect("a pre-rendered reply has a body")
        .to_owned()
}

/// The floor's request: a POST of `body` with the head lines `extra` (each ending in CRLF).
fn post(addr: std::net::SocketAddr, body: &[u8], extra: &str) -> Vec<u8> {
    let mut request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// The bare read on a new connection (what the floor was until the twelfth round): one
/// POST of `body` over a raw TCP connection opened for it, the reply read to its end; the
/// time its first bytes came (`BENCH_EVENTS=1` prints it beside coder's event arrivals).
fn bare_read(addr: std::net::SocketAddr, body: &[u8], buffer: &mut [u8]) -> Duration {
    let started = Instant::now();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .write_all(&post(addr, body, "connection: close\r\n"))
        .unwrap();
    // Read into one buffer: the cheapest reader there is.
    let n = stream.read(buffer).unwrap();
    let first = started.elapsed();
    if n > 0 {
        while stream.read(buffer).unwrap() > 0 {}
    }
    first
}

/// The floor: one POST of `body` over a raw TCP connection kept alive from one sample to
/// the next (`stream`, opened by the first call), as coder's own HTTP client keeps its
/// connection to the model; the head read and the body read to its `content-length`.
/// Nothing is parsed but the head's length.
fn kept_alive_read(
    stream: &mut Option<std::net::TcpStream>,
    addr: std::net::SocketAddr,
    body: &[u8],
    buffer: &mut [u8],
) -> Duration {
    read_reply(stream, addr, body, buffer, |_| {}, |_| {})
}

/// [`kept_alive_read`], handing the reply's whole length (head and body) to `length_known`
/// once the head is in, and every piece read, as it comes, to `piece`.
fn read_reply(
    stream: &mut Option<std::net::TcpStream>,
    addr: std::net::SocketAddr,
    body: &[u8],
    buffer: &mut [u8],
    length_known: impl FnOnce(usize),
    mut piece: impl FnMut(&[u8]),
) -> Duration {
    let started = Instant::now();
    let stream = stream.get_or_insert_with(|| std::net::TcpStream::connect(addr).unwrap());
    stream.write_all(&post(addr, body, "")).unwrap();
    let mut read = 0;
    let (head, length) = loop {
        read += stream.read(&mut buffer[read..]).unwrap();
        if let Some(end) = buffer[..read].windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .expect("the mock's reply has a length")
                .trim()
                .parse()
                .unwrap();
            break (end + 4, length);
        }
    };
    assert!(length > 0, "the floor read an empty reply");
    length_known(head + length);
    piece(&buffer[..read]);
    let mut left = head + length - read;
    while left > 0 {
        let most = left.min(buffer.len());
        let got = stream.read(&mut buffer[..most]).unwrap();
        piece(&buffer[..got]);
        left -= got;
    }
    started.elapsed()
}

/// `coder lsp` read by a client that only reads and counts bytes until the task's end
/// event; returns the time from `conversation/send` to that event.
/// Sends "go" to `conversation` and reads every frame until the task's end; returns the time and
/// the length of the reply's text.
fn lsp_read(lsp: &mut Lsp, conversation: &Value) -> (Duration, usize) {
    let id = lsp.next_id;
    lsp.next_id += 1;
    let started = Instant::now();
    lsp.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "conversation/send",
        "params": {"conversationId": conversation, "text": "go"}}),
    );
    let mut body = Vec::with_capacity(1 << 20);
    let mut trace = std::env::var_os("BENCH_EVENTS").map(|_| EventTrace::default());
    loop {
        lsp.read_into(&mut body);
        if let Some(trace) = &mut trace {
            trace.frame(&body, started.elapsed());
        }
        // An event's type comes before its payload: look at the head of each frame only.
        if contains(&body[..body.len().min(256)], b"\"type\":\"task_complete\"") {
            let elapsed = started.elapsed();
            if let Some(trace) = trace {
                eprintln!("{trace}");
            }
            // The task must have streamed the whole reply, not ended at a limit.
            let end: Value = serde_json::from_slice(&body).unwrap();
            let event = &end["params"]["event"];
            assert!(event["error"].is_null(), "the task failed: {event}");
            return (
                elapsed,
                event["lastAgentMessage"].as_str().map_or(0, str::len),
            );
        }
    }
}

/// What the client saw of one task (`BENCH_EVENTS=1`): frames, bytes, and each event's type
/// with its arrival in microseconds.
#[derive(Default)]
struct EventTrace {
    frames: usize,
    bytes: usize,
    arrivals: Vec<String>,
}

impl EventTrace {
    fn frame(&mut self, body: &[u8], at: Duration) {
        self.frames += 1;
        self.bytes += body.len();
        let head = String::from_utf8_lossy(&body[..body.len().min(256)]);
        if let Some(start) = head.find("\"type\":\"") {
            let kind = head[start + 8..].split('"').next().unwrap_or_default();
            self.arrivals.push(format!("{kind}@{}", at.as_micros()));
        }
    }
}

impl std::fmt::Display for EventTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} frames, {} bytes: {}",
            self.frames,
            self.bytes,
            self.arrivals.join(" ")
        )
    }
}

/// One measured sample: `coder lsp`'s time, the bare read's (the floor, on a kept-alive
/// connection), the bare read's on a new connection, the relays', the CPU the server spent,
/// and `coder lsp`'s time in each of the three workspaces (in [`Workspace::ALL`]'s order).
#[derive(Clone, Copy)]
struct Sample {
    ours: Duration,
    bare: Duration,
    fresh: Duration,
    relayed: Duration,
    forwarded: Duration,
    cpu: Duration,
    places: [Duration; 3],
}

/// Deltas through `coder lsp` against a raw read of the same pre-rendered stream, every
/// size in each round, in one run: the ratio per size, and the cost of a delta at each size
/// two ways: averaged from one delta, `(t(n) - t(1)) / (n - 1)`, and at the margin,
/// `(t(n) - t(n/2)) / (n/2)` within each round.
fn throughput(server: &PlainServer, workspace: &std::path::Path) {
    // 80,000 one-token deltas are past the default maxOutputTokens (8192): without a higher
    // limit the stream is cut at 16,448 events and the bench measures the error path.
    std::fs::create_dir_all(workspace.join(".coder")).unwrap();
    std::fs::write(
        workspace.join(".coder/config.json"),
        r#"{"maxOutputTokens": 100000}"#,
    )
    .unwrap();
    let mut lsp = Lsp::spawn(&server.openai_base_url(), workspace);
    lsp.initialize_trusted();
    // Where people work: a server in each of the three workspaces, with the same limit set
    // at the user level (`HOME` is this directory) so that nothing is written into them.
    let workspaces = Workspaces::for_bench().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".config/coder")).unwrap();
    std::fs::write(
        home.path().join(".config/coder/config.json"),
        r#"{"maxOutputTokens": 100000}"#,
    )
    .unwrap();
    let mut places = Workspace::ALL.map(|place| {
        let mut lsp = Lsp::spawn_with_home(
            &server.openai_base_url(),
            workspaces.path(place),
            home.path(),
        );
        lsp.initialize_trusted();
        lsp
    });
    let clock =
        nix::time::clock_getcpuclockid(nix::unistd::Pid::from_raw(lsp.child.id() as i32)).unwrap();
    let samples = samples();
    let reported = sizes();
    let measured = measured(&reported);
    // The floor reads into a buffer that starts on a page boundary (see `PageAligned`).
    let mut buffer = PageAligned::new(1 << 20);
    // The floor asks with a request as large as coder's (its system prompt and tool
    // schemas): sending it is part of the work. The mock reads both and parses neither.
    server.push(&reply(1));
    lsp.sample();
    let length = server.last_request_length();
    let body = pad(length);
    let mut relay = Relay::spawn(server.addr(), length);
    // Every size in each round, so the machine's drift from one moment to the next touches
    // all sizes alike, and sizes compared within a round were measured seconds apart.
    let mut rounds: Vec<Vec<Sample>> = Vec::new();
    // The floor's connection, kept alive from sample to sample as coder's HTTP client keeps
    // its own.
    let mut kept_alive = None;
    for round in 0..=samples {
        let mut row = Vec::new();
        for &deltas in &measured {
            let before = cpu_time(&clock);
            server.push(&reply(deltas));
            let started = Instant::now();
            let first = bare_read(server.addr(), &body, &mut buffer);
            let fresh = started.elapsed();
            if std::env::var_os("BENCH_EVENTS").is_some() {
                eprintln!(
                    "bare read of {deltas} on a new connection: first bytes@{} end@{}",
                    first.as_micros(),
                    fresh.as_micros()
                );
            }
            server.push(&reply(deltas));
            let bare = kept_alive_read(&mut kept_alive, server.addr(), &body, &mut buffer);
            server.push(&reply(deltas));
            let relayed = relay.read();
            server.push(&reply(deltas));
            let forwarded = relay.forward(&mut buffer);
            server.push(&reply(deltas));
            // A conversation per sample, destroyed after it: one conversation holding every
            // earlier reply (megabytes at 80,000 deltas) would make each request, and the
            // snapshot saved after each task, grow with the sample's index.
            let (ours, text) = lsp.sample();
            assert_eq!(text, deltas * 4, "coder lsp streamed part of the reply");
            // What the server spent on the sample, its bookkeeping after the task's end
            // included as far as it is done by then (the rest falls to the next sample).
            let cpu = cpu_time(&clock) - before;
            let mut times = [Duration::ZERO; 3];
            for place in Workspace::in_turn(round) {
                server.push(&reply(deltas));
                let (time, text) = places[place.index()].sample();
                assert_eq!(text, deltas * 4, "coder lsp streamed part of the reply");
                times[place.index()] = time;
            }
            row.push(Sample {
                ours,
                bare,
                fresh,
                relayed,
                forwarded,
                cpu,
                places: times,
            });
        }
        if round > 0 {
            rounds.push(row);
        }
    }
    lsp.stop();
    relay.stop();
    for lsp in places {
        lsp.stop();
    }
    let index = |deltas: usize| measured.iter().position(|&m| m == deltas).unwrap();
    let of = |deltas: usize, pick: fn(&Sample) -> Duration| -> Vec<f64> {
        let at = index(deltas);
        rounds
            .iter()
            .map(|row| pick(&row[at]).as_secs_f64())
            .collect()
    };
    // The median over rounds of `f(round)`.
    let over_rounds = |f: &dyn Fn(&[Sample]) -> f64| {
        let mut values: Vec<f64> = rounds.iter().map(|row| f(row)).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let med = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let one = index(1);
    println!(
        "throughput (pre-rendered reply written at once; median of {samples} rounds, every size in each):"
    );
    println!(
        "  a reply of one delta: coder lsp {:.2} ms, bare read {:.2} ms (on a new connection {:.2} ms), relayed {:.2} ms; the server's CPU {:.2} ms",
        med(of(1, |s| s.ours)) * 1e3,
        med(of(1, |s| s.bare)) * 1e3,
        med(of(1, |s| s.fresh)) * 1e3,
        med(of(1, |s| s.relayed)) * 1e3,
        med(of(1, |s| s.cpu)) * 1e3,
    );
    let mut averaged = Vec::new();
    let mut marginal = Vec::new();
    for &deltas in &reported {
        let (at, half) = (index(deltas), index(deltas / 2));
        let ours = med(of(deltas, |s| s.ours));
        let bare = med(of(deltas, |s| s.bare));
        let fresh = med(of(deltas, |s| s.fresh));
        // Per delta, averaged from one delta and at the margin; each a median over rounds
        // of that round's figure.
        let from_one = |pick: fn(&Sample) -> Duration| {
            over_rounds(&|row| {
                (pick(&row[at]).as_secs_f64() - pick(&row[one]).as_secs_f64()) * 1e9
                    / (deltas - 1) as f64
            })
        };
        let margin = |pick: fn(&Sample) -> Duration| {
            over_rounds(&|row| {
                (pick(&row[at]).as_secs_f64() - pick(&row[half]).as_secs_f64()) * 1e9
                    / (deltas - deltas / 2) as f64
            })
        };
        // What coder adds to the floor: the median over rounds of (coder lsp - bare read),
        // the two measured back to back, less the same at one delta.
        let added = over_rounds(&|row| {
            let gap = |s: &Sample| s.ours.as_secs_f64() - s.bare.as_secs_f64();
            (gap(&row[at]) - gap(&row[one])) * 1e9 / (deltas - 1) as f64
        });
        averaged.push(from_one(|s| s.ours));
        marginal.push(margin(|s| s.ours));
        println!(
            "  {deltas:>6} deltas: coder lsp {:.1} ms, bare read {:.1} ms, ratio {:.2}x (target <= 2x); on a new connection {:.1} ms, ratio {:.2}x; the server's CPU {:.2} ms",
            ours * 1e3,
            bare * 1e3,
            ours / bare,
            fresh * 1e3,
            ours / fresh,
            med(of(deltas, |s| s.cpu)) * 1e3,
        );
        let relayed = med(of(deltas, |s| s.relayed));
        println!(
            "          relayed (the bare read by a process between the client's pipes, as coder lsp sits): {:.1} ms; coder lsp {:.2}x of it, the relay {:.2}x of the bare read",
            relayed * 1e3,
            ours / relayed,
            relayed / bare,
        );
        let forwarded = med(of(deltas, |s| s.forwarded));
        println!(
            "          forwarded (the relay also writes every byte it reads to the client, which reads them all): {:.1} ms; coder lsp {:.2}x of it, the forwarding relay {:.2}x of the bare read",
            forwarded * 1e3,
            ours / forwarded,
            forwarded / bare,
        );
        println!(
            "          per delta, from one delta: coder lsp {:.0} ns, bare read {:.0} ns (on a new connection {:.0} ns), coder's own {added:.0} ns, the server's CPU {:.0} ns",
            from_one(|s| s.ours),
            from_one(|s| s.bare),
            from_one(|s| s.fresh),
            from_one(|s| s.cpu),
        );
        println!(
            "          per delta, at the margin ({} to {deltas}): coder lsp {:.0} ns, bare read {:.0} ns (on a new connection {:.0} ns), the server's CPU {:.0} ns",
            deltas / 2,
            margin(|s| s.ours),
            margin(|s| s.bare),
            margin(|s| s.fresh),
            margin(|s| s.cpu),
        );
    }
    println!(
        "  coder lsp's per-delta spread across sizes (target: within 20%): from one delta {}, at the margin {}",
        spread(&averaged),
        spread(&marginal)
    );
    println!(
        "  where people work: coder lsp in three workspaces of {} files (medians; each ratio the median of the run-by-run ratios to the plain folder, target <= 1.2x):",
        workspaces.files()
    );
    for deltas in std::iter::once(1).chain(reported.iter().copied()) {
        let at = index(deltas);
        let in_place = |place: Workspace| -> Vec<Duration> {
            rounds
                .iter()
                .map(|row| row[at].places[place.index()])
                .collect()
        };
        let median_ms = |place: Workspace| ms(median(in_place(place)));
        println!(
            "  {deltas:>6} deltas: {} {:.2} ms, {} {:.2} ms ({:.2}x), {} {:.2} ms ({:.2}x); the {} {:.2}x of the bare read",
            Workspace::Plain.name(),
            median_ms(Workspace::Plain),
            Workspace::Repository.name(),
            median_ms(Workspace::Repository),
            median_ratio(
                &in_place(Workspace::Repository),
                &in_place(Workspace::Plain)
            ),
            Workspace::Untracked.name(),
            median_ms(Workspace::Untracked),
            median_ratio(&in_place(Workspace::Untracked), &in_place(Workspace::Plain)),
            Workspace::Plain.name(),
            median(in_place(Workspace::Plain)).as_secs_f64() / med(of(deltas, |s| s.bare)),
        );
    }
}

/// The variable that makes this executable the relay, naming the model server's address.
const RELAY_ENV: &str = "CODER_BENCH_RELAY";
/// The variable that gives the relay the length of the request it sends.
const RELAY_LENGTH_ENV: &str = "CODER_BENCH_RELAY_LENGTH";

/// A request body of `length` bytes that the plain server reads and does not parse.
fn pad(length: usize) -> Vec<u8> {
    let body = format!("{{\"pad\":\"{}\"}}", "x".repeat(length - 10)).into_bytes();
    assert_eq!(body.len(), length);
    body
}

/// The cheapest process in `coder lsp`'s place: this bench's executable, started with
/// [`RELAY_ENV`], which for each line on its stdin does the floor's read
/// ([`kept_alive_read`]) and answers with one line. It is the bare read plus the two pipe
/// hops and process wake-ups that any server between an editor and a model has; what
/// `coder lsp` takes beyond it is its own work.
struct Relay {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Relay {
    fn spawn(addr: std::net::SocketAddr, length: usize) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(RELAY_ENV, addr.to_string())
            .env(RELAY_LENGTH_ENV, length.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        }
    }

    /// One exchange through the relay: the time from the ask to its answer.
    fn read(&mut self) -> Duration {
        let started = Instant::now();
        self.stdin.write_all(b"go\n").unwrap();
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        let elapsed = started.elapsed();
        assert_eq!(self.line.trim(), "done", "the relay failed");
        elapsed
    }

    /// One exchange through the relay that forwards the reply: it writes the reply's
    /// length on a line, then every byte of the reply as it reads it; the client reads them
    /// all into `buffer` (and looks at none), then the relay's `done`. The cheapest server
    /// in coder's place that passes the reply on: the same bytes through one more pipe.
    fn forward(&mut self, buffer: &mut [u8]) -> Duration {
        let started = Instant::now();
        self.stdin.write_all(b"forward\n").unwrap();
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        let mut left: usize = self.line.trim().parse().expect("the relay's length");
        while left > 0 {
            let most = left.min(buffer.len());
            left -= self.stdout.read(&mut buffer[..most]).unwrap();
        }
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        let elapsed = started.elapsed();
        assert_eq!(self.line.trim(), "done", "the relay failed");
        elapsed
    }

    fn stop(mut self) {
        drop(self.stdin);
        self.child.wait().unwrap();
    }
}

/// The relay's side of [`Relay`]: until stdin ends, one kept-alive exchange with the model
/// server at `addr` per line, answered with `done`.
fn relay_main(addr: &str) {
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    let length: usize = std::env::var(RELAY_LENGTH_ENV).unwrap().parse().unwrap();
    let body = pad(length);
    let mut buffer = PageAligned::new(1 << 20);
    let mut stream = None;
    // Written straight, each piece with one system call, as it is read, into a pipe of 1 MiB
    // as `coder lsp` widens its own.
    let mut stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().unwrap());
    let _ = nix::fcntl::fcntl(&stdout, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
    for line in std::io::stdin().lock().lines() {
        if line.unwrap() == "forward" {
            let mut out = stdout.try_clone().unwrap();
            read_reply(
                &mut stream,
                addr,
                &body,
                &mut buffer,
                |length| stdout.write_all(format!("{length}\n").as_bytes()).unwrap(),
                |piece| out.write_all(piece).unwrap(),
            );
        } else {
            kept_alive_read(&mut stream, addr, &body, &mut buffer);
        }
        stdout.write_all(b"done\n").unwrap();
    }
}

/// How many events the replay measure asks for again: the engine's buffer holds this many.
const REPLAYED: usize = 100_000;

/// The variable that makes this executable the replay's floor: it names a file holding one
/// frame, which it writes whole to its stdout for each line on its stdin.
const REPLAY_FLOOR_ENV: &str = "CODER_BENCH_REPLAY_FRAME";

/// A reconnecting client's `session/subscribe` for the last 100,000 events of a session
/// (one reply of 100,000 deltas, text and thinking in turn), from the request to the last byte of the answer, against
/// the floor: a process in `coder lsp`'s place that writes the same answer, already
/// serialized, when asked (one line in, one write out). Rounds alternate the two.
fn replay(server: &MockModelServer, base_url: &str, workspace: &std::path::Path) {
    // Text and thinking alternate: the engine joins consecutive pieces of one kind that a
    // read of the body delivers, so one kind alone would be a few events.
    let mut chunks: Vec<Chunk> = (0..REPLAYED)
        .map(|i| {
            if i % 2 == 0 {
                Chunk::text("tok ")
            } else {
                Chunk::thinking("hm ")
            }
        })
        .collect();
    chunks.push(Chunk::usage(20, REPLAYED as u64));
    server.push([MockResponse::prerendered(&chunks)]);
    drop(chunks);
    let mut lsp = Lsp::spawn(base_url, workspace);
    lsp.initialize();
    let created = lsp.request("conversation/create", json!({}));
    let conversation = created["result"]["conversationId"].clone();
    lsp.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "conversation/send",
                     "params": {"conversationId": conversation, "text": "go"}}),
    );
    // Every event of the turn, to its last (the engine idle again).
    let mut body = Vec::new();
    let last_seq = loop {
        lsp.read_into(&mut body);
        if !contains(&body, b"\"method\":\"conversation/event\"") {
            continue;
        }
        let message: Value = serde_json::from_slice(&body).unwrap();
        let event = &message["params"]["event"];
        if event["type"] == "state_changed" && event["state"] == "idle" {
            break event["seq"].as_u64().unwrap();
        }
    };
    let from_seq = last_seq + 1 - REPLAYED as u64;

    let mut answer = Vec::new();
    let mut ours = Vec::new();
    let mut floor = Vec::new();
    let mut floor_child: Option<(Child, ChildStdin, BufReader<ChildStdout>)> = None;
    let frame_file = tempfile::NamedTempFile::new().unwrap();
    let rounds = samples().max(10);
    for round in 0..=rounds {
        let started = Instant::now();
        lsp.send(
            &json!({"jsonrpc": "2.0", "id": 1_000_000 + round, "method": "session/subscribe",
                         "params": {"fromSeq": from_seq}}),
        );
        // Skip the notifications still on their way: the answer is the one response (a
        // notification names its method first).
        loop {
            lsp.read_into(&mut body);
            if !contains(&body[..body.len().min(40)], b"\"method\"") {
                break;
            }
        }
        let elapsed = started.elapsed();
        if round == 0 {
            // The warm-up: check the answer, and hand its bytes to the floor.
            let parsed: Value = serde_json::from_slice(&body).unwrap();
            let events = parsed["result"]["events"].as_array().unwrap_or_else(|| {
                panic!(
                    "not events: {}",
                    String::from_utf8_lossy(&body[..body.len().min(600)])
                )
            });
            assert_eq!(events.len(), REPLAYED);
            assert_eq!(events[0]["seq"], from_seq);
            answer = body.clone();
            let mut framed = format!("Content-Length: {}\r\n\r\n", answer.len()).into_bytes();
            framed.extend_from_slice(&answer);
            std::fs::write(frame_file.path(), &framed).unwrap();
            let mut child = Command::new(std::env::current_exe().unwrap())
                .env(REPLAY_FLOOR_ENV, frame_file.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
            floor_child = Some((child, stdin, stdout));
        } else {
            assert_eq!(
                body.len(),
                answer.len(),
                "every answer holds the same events"
            );
            ours.push(elapsed);
        }
        let (_, stdin, stdout) = floor_child.as_mut().unwrap();
        let started = Instant::now();
        stdin.write_all(b"go\n").unwrap();
        read_frame_into(stdout, &mut body);
        let elapsed = started.elapsed();
        assert_eq!(body.len(), answer.len());
        if round > 0 {
            floor.push(elapsed);
        }
    }
    if let Some((mut child, stdin, _)) = floor_child {
        drop(stdin);
        child.wait().unwrap();
    }
    lsp.stop();
    let (ours, floor) = (median(ours), median(floor));
    println!(
        "replay of {REPLAYED} buffered events to a reconnecting client ({:.1} MB answer), median of {rounds}: coder lsp {:.1} ms; floor (the same bytes written by a relay) {:.1} ms; ratio {:.2}x (target < 100 ms)",
        answer.len() as f64 / 1e6,
        ms(ours),
        ms(floor),
        ours.as_secs_f64() / floor.as_secs_f64()
    );
}

/// The replay floor's side: until stdin ends, the frame in the file `path`, written whole
/// to stdout (a pipe of 1 MiB, as `coder lsp` widens its own) for each line.
fn replay_floor_main(path: &str) {
    let frame = std::fs::read(path).unwrap();
    let mut stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().unwrap());
    let _ = nix::fcntl::fcntl(&stdout, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
    for line in std::io::stdin().lock().lines() {
        line.unwrap();
        stdout.write_all(&frame).unwrap();
    }
}

/// CPU time the process behind `clock` has used so far, all its threads (exited ones
/// included).
fn cpu_time(clock: &nix::time::ClockId) -> Duration {
    Duration::from(nix::time::clock_gettime(*clock).unwrap())
}

/// Resident memory of a session holding 1,000 conversations of 20 messages each.
fn memory(server: &MockModelServer, base_url: &str, workspace: &std::path::Path) {
    let reply = "An answer of about two hundred bytes, as a short assistant reply would be: \
                 it names a file, a function and a line or two of reasoning about what to \
                 change next and why.";
    let question = "A question of about a hundred bytes, as a user would type in an editor.";
    let mut lsp = Lsp::spawn(base_url, workspace);
    lsp.initialize();
    let empty = resident_kib(lsp.child.id());
    let started = Instant::now();
    server.push((0..CONVERSATIONS * EXCHANGES).map(|_| MockResponse::text(reply)));
    let ids: Vec<Value> = (0..CONVERSATIONS)
        .map(|_| lsp.request("conversation/create", json!({}))["result"]["conversationId"].clone())
        .collect();
    // The sends go out from another thread while this one reads: a client that writes
    // 10,000 requests without reading would fill the pipes both ways. Queued, not awaited:
    // the session runs them one after another.
    let stdin = lsp.stdin.as_fd().try_clone_to_owned().unwrap();
    let first_id = lsp.next_id;
    lsp.next_id += (CONVERSATIONS * EXCHANGES) as u64;
    let writer = std::thread::spawn(move || {
        let mut stdin = std::io::BufWriter::new(std::fs::File::from(stdin));
        let sends = ids.iter().flat_map(|id| std::iter::repeat_n(id, EXCHANGES));
        for (n, id) in sends.enumerate() {
            let send = json!({"jsonrpc": "2.0", "id": first_id + n as u64,
                "method": "conversation/send",
                "params": {"conversationId": id, "text": question}});
            write_frame(&mut stdin, &send);
        }
        stdin.flush().unwrap();
    });
    lsp.until_complete(CONVERSATIONS * EXCHANGES);
    writer.join().unwrap();
    let built = started.elapsed();
    let list = lsp.request("conversation/list", json!({}));
    let conversations = list["result"]["conversations"].as_array().unwrap();
    let messages: u64 = conversations
        .iter()
        .map(|c| c["messageCount"].as_u64().unwrap())
        .sum();
    let full = resident_kib(lsp.child.id());
    println!(
        "memory: {} conversations, {messages} messages (built in {:.1} s): resident {:.1} MB; \
         empty session {:.1} MB (target < 100 MB)",
        conversations.len(),
        built.as_secs_f64(),
        full as f64 / 1024.0,
        empty as f64 / 1024.0
    );
    lsp.stop();
    let saved: u64 = std::fs::read_dir(workspace.join(".coder/sessions"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|entry| entry.metadata().ok())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0);
    println!(
        "memory: session snapshots on disk: {:.1} MB",
        saved as f64 / 1e6
    );
}

/// The command of the live output measure: 100 MB in lines of 64 bytes.
fn live_command() -> String {
    format!("yes '{}' | head -c 100000000", "x".repeat(63))
}

/// The floor of the live output measure: the command run by bash, its output read to the
/// end from a pipe, 64 KiB at a time.
fn live_floor(command: &str) -> Duration {
    let started = Instant::now();
    let mut child = Command::new("bash")
        .args(["-c", command])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buffer = vec![0; 64 * 1024];
    let mut read = 0;
    loop {
        let n = stdout.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        read += n;
    }
    child.wait().unwrap();
    assert_eq!(read, 100_000_000);
    started.elapsed()
}

/// `coder lsp` in a workspace of its own whose person's setting is `yolo`, so commands run
/// without asking; initialized, with its root conversation's id.
fn live_server(base_url: &str, home: &std::path::Path) -> (Lsp, Value) {
    std::fs::create_dir_all(home.join(".config/coder")).unwrap();
    std::fs::write(
        home.join(".config/coder/config.json"),
        json!({"permissions": {"preset": "yolo"}}).to_string(),
    )
    .unwrap();
    let mut lsp = Lsp::spawn(base_url, home);
    lsp.initialize_trusted();
    let list = lsp.request("conversation/list", json!({}));
    let root = list["result"]["conversations"][0]["id"].clone();
    (lsp, root)
}

/// Live output: see the module's doc.
fn live(server: &MockModelServer, base_url: &str) {
    let command = live_command();
    let home = tempfile::tempdir().unwrap();
    let (mut lsp, root) = live_server(base_url, home.path());
    let (mut floors, mut calls, mut tasks, mut call_ratios, mut task_ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut streamed = 0;
    let mut fixed = Vec::new();
    for _ in 0..samples() {
        // The fixed cost of a call (start the shell, confine it, end it): `true`.
        server.push([
            MockResponse::tool_call("t1", "bash", json!({ "command": "true" })),
            MockResponse::text("done"),
        ]);
        lsp.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "conversation/send",
            "params": {"conversationId": root, "text": "nothing"}}),
        );
        loop {
            let message: Value = serde_json::from_slice(&lsp.read()).unwrap();
            let event = &message["params"]["event"];
            match event["type"].as_str() {
                Some("tool_call_completed") => {
                    fixed.push(Duration::from_millis(event["durationMs"].as_u64().unwrap()))
                }
                Some("task_complete") => break,
                _ => {}
            }
        }
        let floor = live_floor(&command);
        server.push([
            MockResponse::tool_call("c1", "bash", json!({ "command": command })),
            MockResponse::text("done"),
        ]);
        let started = Instant::now();
        lsp.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "conversation/send",
            "params": {"conversationId": root, "text": "print"}}),
        );
        let mut call = Duration::ZERO;
        streamed = 0;
        loop {
            let message: Value = serde_json::from_slice(&lsp.read()).unwrap();
            let event = &message["params"]["event"];
            match event["type"].as_str() {
                Some("tool_call_output_delta") => {
                    streamed += event["delta"].as_str().unwrap().len();
                }
                Some("tool_call_completed") => {
                    call = Duration::from_millis(event["durationMs"].as_u64().unwrap());
                }
                Some("task_complete") => break,
                _ => {}
            }
        }
        let task = started.elapsed();
        call_ratios.push(call.as_secs_f64() / floor.as_secs_f64());
        task_ratios.push(task.as_secs_f64() / floor.as_secs_f64());
        floors.push(floor);
        calls.push(call);
        tasks.push(task);
    }
    lsp.stop();
    println!(
        "live: 100 MB printed, {:.1} MB streamed; floor (a pipe read to its end) {:.1} ms; \
         the call {:.1} ms ({:.2}x, {}), the whole task {:.1} ms ({:.2}x, {}) \
         (target: the call within 1.5x); a call of `true` {:.1} ms",
        streamed as f64 / 1e6,
        ms(median(floors.clone())),
        ms(median(calls.clone())),
        median_f64(&call_ratios),
        spread(&call_ratios),
        ms(median(tasks.clone())),
        median_f64(&task_ratios),
        spread(&task_ratios),
        ms(median(fixed)),
    );

    // Memory: one server whose client reads everything, one whose client reads nothing
    // until the call is over (the model has been sent its result).
    let mut peaks = Vec::new();
    for reads in [true, false] {
        let home = tempfile::tempdir().unwrap();
        let (mut lsp, root) = live_server(base_url, home.path());
        let before = server.requests().len();
        server.push([
            MockResponse::tool_call("c1", "bash", json!({ "command": command })),
            MockResponse::text("done"),
        ]);
        lsp.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "conversation/send",
            "params": {"conversationId": root, "text": "print"}}),
        );
        if reads {
            lsp.until_complete(1);
        } else {
            let deadline = Instant::now() + Duration::from_secs(120);
            while server.requests().len() < before + 2 {
                assert!(Instant::now() < deadline, "the call did not end in 120 s");
                std::thread::sleep(Duration::from_millis(20));
            }
            lsp.until_complete(1);
        }
        peaks.push(peak_kib(lsp.child.id()));
        lsp.stop();
    }
    println!(
        "live: peak resident set, client reading everything {:.1} MB, client reading \
         nothing while the call runs {:.1} MB",
        peaks[0] as f64 / 1024.0,
        peaks[1] as f64 / 1024.0
    );
}

fn median_f64(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// The peak resident set size of process `pid`, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The resident set size of process `pid`, in KiB.
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The `coder` under test: this build's, or the binary `CODER_BIN` names (to compare two
/// builds with the same bench).
fn coder_binary() -> std::ffi::OsString {
    std::env::var_os("CODER_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_coder").into())
}
