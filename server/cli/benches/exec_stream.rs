//! Streaming throughput of `coder exec --json` against the floor: `curl` reading the same
//! pre-rendered reply.
//!
//! Each reply is rendered before the request arrives, as coder-testkit's mock renders it
//! (`MockResponse::prerendered`), and written at once by a plain thread
//! (`coder_testkit::PlainServer`), so reading it costs a client only the read. For each wire format, in rounds that take every size in turn (an empty reply,
//! then 2,500, 5,000, 10,000, 20,000, 40,000 and 80,000 text deltas), after one warm-up
//! round: (a) `curl` posts the request and reads the whole SSE body (a client that does
//! nothing but read); (b) `coder exec --json` runs from process spawn until it exits,
//! having printed every event as a JSON line. Both are child processes whose stdout this
//! program reads to its end the same way.
//!
//! Prints, for 5,000, 20,000 and 80,000 deltas, medians over rounds: the times, the ratio
//! coder/curl (target: <= 2x), the CPU `coder exec` used, and the cost of a delta two ways,
//! each the median of the rounds' own figures: averaged from an empty reply,
//! `(t(n) - t(0)) / n`, and at the margin, `(t(n) - t(n/2)) / (n/2)`, what one more delta
//! adds at that size. Linear means the per-delta costs at 5,000, 20,000 and 80,000 deltas
//! are within 20% of each other.
//!
//! Where people work: in the same rounds, after (b), the same `coder exec` runs in each of
//! `coder_testkit::workspaces`' three workspaces (a plain folder of 20,000 files, a git
//! repository of them, and that repository with a 100 MB untracked file), one after the
//! other (each round starting with the next), with its configuration at the user level so the workspaces stay as made. For the
//! empty reply and each reported size it prints the three medians and each repository's
//! ratio to the plain folder, the median of the run-by-run ratios (target: within 1.2x).
//!
//! Run: `cargo bench -p coder --bench exec_stream` (`-- openai` or `-- anthropic` for one
//! format; `BENCH_RUNS=N` for N samples per point, default 9; `BENCH_FILES=N` files in each
//! workspace).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::ms;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coder_testkit::workspaces::{Workspace, Workspaces, median_ratio};
use coder_testkit::{Chunk, MockResponse, PlainServer};

#[path = "support/spread.rs"]
mod spread;
use spread::spread;

/// The sizes measured: an empty reply, and each reported size with its half (for the cost
/// of a delta at the margin).
const SIZES: [usize; 7] = [0, 2_500, 5_000, 10_000, 20_000, 40_000, 80_000];
/// The sizes reported.
const REPORTED: [usize; 3] = [5_000, 20_000, 80_000];
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

    fn reply(self, deltas: usize) -> String {
        // The reply ends with its usage, as OpenAI's does when asked (`include_usage`) and
        // Anthropic's always: coder then counts no tokens itself.
        let mut chunks: Vec<Chunk> = (0..deltas).map(|_| Chunk::text(PIECE)).collect();
        chunks.push(Chunk::usage(20, deltas as u64));
        let rendered = match self {
            Self::OpenAi => MockResponse::prerendered(&chunks),
            Self::Anthropic => MockResponse::prerendered_anthropic(&chunks),
        };
        rendered
            .rendered_body()
            .expect("a pre-rendered reply has a body")
            .to_owned()
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
    let server = PlainServer::start().unwrap();
    let root = format!("http://{}", server.addr());
    let workspace = tempfile::tempdir().unwrap();
    // 80,000 one-token deltas are past the default maxOutputTokens (8192).
    std::fs::create_dir(workspace.path().join(".coder")).unwrap();
    std::fs::write(
        workspace.path().join(".coder/config.json"),
        r#"{"maxOutputTokens": 100000}"#,
    )
    .unwrap();
    let workspaces = Workspaces::for_bench().unwrap();
    // The same limit for the three workspaces, set at the user level (`HOME` is this
    // directory) so that nothing is written into them.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".config/coder")).unwrap();
    std::fs::write(
        home.path().join(".config/coder/config.json"),
        r#"{"maxOutputTokens": 100000}"#,
    )
    .unwrap();
    for format in [Format::OpenAi, Format::Anthropic] {
        if !filter.is_empty() && !filter.iter().any(|f| f == format.name()) {
            continue;
        }
        let replies: Vec<String> = SIZES.iter().map(|&n| format.reply(n)).collect();
        let mut rounds = Vec::new();
        for run in 0..=runs {
            let mut row = Vec::new();
            for (i, &deltas) in SIZES.iter().enumerate() {
                server.push(&replies[i]);
                let bare = bare_read(&root, format);
                server.push(&replies[i]);
                let (coder, cpu) =
                    coder_exec(&root, format, workspace.path(), workspace.path(), deltas);
                let mut places = [Duration::ZERO; 3];
                for place in Workspace::in_turn(run) {
                    server.push(&replies[i]);
                    places[place.index()] =
                        coder_exec(&root, format, workspaces.path(place), home.path(), deltas).0;
                }
                row.push(Sample {
                    bare,
                    coder,
                    cpu,
                    places,
                });
            }
            if run > 0 {
                rounds.push(row);
            }
        }
        report(format, &rounds);
        report_workspaces(&rounds, workspaces.files());
    }
}

/// One sample: curl's time, `coder exec`'s, the CPU `coder exec` used, and `coder exec`'s
/// time in each of the three workspaces (in [`Workspace::ALL`]'s order).
#[derive(Clone, Copy)]
struct Sample {
    bare: Duration,
    coder: Duration,
    cpu: Duration,
    places: [Duration; 3],
}

/// The median over rounds of `f(round)`.
fn over_rounds(rounds: &[Vec<Sample>], f: impl Fn(&[Sample]) -> f64) -> f64 {
    let mut values: Vec<f64> = rounds.iter().map(|row| f(row)).collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn report(format: Format, rounds: &[Vec<Sample>]) {
    let at = |n: usize| SIZES.iter().position(|&m| m == n).unwrap();
    let ms = |i: usize, pick: fn(&Sample) -> Duration| {
        over_rounds(rounds, |row| pick(&row[i]).as_secs_f64() * 1000.0)
    };
    // Per delta in microseconds, each the median over rounds of that round's figure:
    // averaged from an empty reply, `(t(n) - t(0)) / n`, and at the margin,
    // `(t(n) - t(n/2)) / (n/2)`.
    let from_empty = |n: usize, pick: fn(&Sample) -> Duration| {
        over_rounds(rounds, |row| {
            (pick(&row[at(n)]).as_secs_f64() - pick(&row[0]).as_secs_f64()) * 1e6 / n as f64
        })
    };
    let margin = |n: usize, pick: fn(&Sample) -> Duration| {
        over_rounds(rounds, |row| {
            (pick(&row[at(n)]).as_secs_f64() - pick(&row[at(n / 2)]).as_secs_f64()) * 1e6
                / (n - n / 2) as f64
        })
    };
    println!(
        "\n{} format, medians of {} rounds (per delta in us, from an empty reply (t(n) - t(0)) / n and at the margin (t(n) - t(n/2)) / (n/2)):",
        format.name(),
        rounds.len()
    );
    println!(
        "{:>7}  {:>8}  {:>8}  {:>6}  {:>8}  {:>21}  {:>21}  {:>21}",
        "deltas",
        "curl ms",
        "coder ms",
        "ratio",
        "CPU ms",
        "curl: from 0 / margin",
        "coder: from 0 / margin",
        "CPU: from 0 / margin",
    );
    println!(
        "{:>7}  {:>8.1}  {:>8.1}  {:>5.2}x  {:>8.1}",
        0,
        ms(0, |s| s.bare),
        ms(0, |s| s.coder),
        ms(0, |s| s.coder) / ms(0, |s| s.bare),
        ms(0, |s| s.cpu),
    );
    let mut averaged = Vec::new();
    let mut marginal = Vec::new();
    for n in REPORTED {
        averaged.push(from_empty(n, |s| s.coder));
        marginal.push(margin(n, |s| s.coder));
        println!(
            "{n:>7}  {:>8.1}  {:>8.1}  {:>5.2}x  {:>8.1}  {:>9.3} / {:>9.3}  {:>9.3} / {:>9.3}  {:>9.3} / {:>9.3}",
            ms(at(n), |s| s.bare),
            ms(at(n), |s| s.coder),
            ms(at(n), |s| s.coder) / ms(at(n), |s| s.bare),
            ms(at(n), |s| s.cpu),
            from_empty(n, |s| s.bare),
            margin(n, |s| s.bare),
            from_empty(n, |s| s.coder),
            margin(n, |s| s.coder),
            from_empty(n, |s| s.cpu),
            margin(n, |s| s.cpu),
        );
    }
    println!(
        "coder's per-delta spread across sizes (target <= 20%): from an empty reply {}, at the margin {}; ratio target <= 2x at every size",
        spread(&averaged),
        spread(&marginal)
    );
}

/// `coder exec` in the three workspaces: for the empty reply and each reported size, the
/// medians and each repository's ratio to the plain folder, run by run.
fn report_workspaces(rounds: &[Vec<Sample>], files: usize) {
    println!(
        "where people work: the same coder exec in three workspaces of {files} files (medians; each ratio the median of the run-by-run ratios to the plain folder, target <= 1.2x):"
    );
    println!(
        "| deltas | {} | {} | ratio | {} | ratio | {} / curl |",
        Workspace::Plain.name(),
        Workspace::Repository.name(),
        Workspace::Untracked.name(),
        Workspace::Plain.name(),
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for deltas in std::iter::once(0).chain(REPORTED) {
        let at = SIZES.iter().position(|&m| m == deltas).unwrap();
        let of = |place: Workspace| -> Vec<Duration> {
            rounds
                .iter()
                .map(|row| row[at].places[place.index()])
                .collect()
        };
        let median_ms =
            |place: Workspace| over_rounds(rounds, |row| ms(row[at].places[place.index()]));
        let curl = over_rounds(rounds, |row| ms(row[at].bare));
        println!(
            "| {deltas} | {:.1} ms | {:.1} ms | {:.2}x | {:.1} ms | {:.2}x | {:.2}x |",
            median_ms(Workspace::Plain),
            median_ms(Workspace::Repository),
            median_ratio(&of(Workspace::Repository), &of(Workspace::Plain)),
            median_ms(Workspace::Untracked),
            median_ratio(&of(Workspace::Untracked), &of(Workspace::Plain)),
            median_ms(Workspace::Plain) / curl,
        );
    }
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

/// `coder exec --json` in `workspace` with `home` as its `HOME`, from spawn until it exits,
/// and the CPU it used; checks it printed the whole text.
fn coder_exec(
    root: &str,
    format: Format,
    workspace: &std::path::Path,
    home: &std::path::Path,
    deltas: usize,
) -> (Duration, Duration) {
    let mut command = Command::new(coder_binary());
    command
        .args(["exec", "--json", "--trust", "stream please"])
        .current_dir(workspace)
        .env_clear()
        .env("HOME", home)
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
    let cpu_before = children_cpu();
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    let bytes = read_all(child.stdout.take().unwrap());
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    let cpu = children_cpu() - cpu_before;
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
    (elapsed, cpu)
}

/// The CPU time (user and system) of every child this process has waited for so far.
fn children_cpu() -> Duration {
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let time =
        |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    time(usage.user_time()) + time(usage.system_time())
}

fn read_all(mut stdout: std::process::ChildStdout) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(1 << 20);
    stdout.read_to_end(&mut bytes).unwrap();
    bytes
}

/// The `coder` under test: this build's, or the binary `CODER_BIN` names (to compare two
/// builds with the same bench).
fn coder_binary() -> std::ffi::OsString {
    std::env::var_os("CODER_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_coder").into())
}
