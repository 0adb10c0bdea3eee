//! What the terminal's Markdown rendering and its live lines cost, against the floor.
//!
//! A Markdown answer of 1,000 and 10,000 lines (headings, paragraphs with inline styles
//! long enough to wrap, lists, tables and code blocks, in turn) is pre-rendered as a
//! model's stream of 4-byte deltas and written at once by `coder_testkit::PlainServer`.
//! In rounds that take every size in turn, after one warm-up round, four programs read
//! it, each from spawn to exit:
//! - **curl**: reads the stream bare (the floor);
//! - **plain**: `coder exec` with its output to pipes (the answer as it streamed, no
//!   rendering, no live lines);
//! - **rendered**: `coder exec` with stdout on a terminal and stderr to a pipe (the
//!   Markdown rendered block by block, no live lines);
//! - **live**: `coder exec` with both on a terminal (the rendering, plus the block being
//!   written and the status line drawn below the output as the interactive terminal
//!   draws them).
//!
//! The terminal is a pseudo-terminal 100 columns wide whose output this program reads.
//! Prints medians, each program's ratio to curl, and the cost of a line in each
//! (`(t(n) - t(0)) / n`): linear means the per-line costs at 1,000 and 10,000 lines are
//! within 20% of each other. Then the same for a 20,000-delta answer of plain prose (one
//! paragraph per 50 deltas): the live lines' cost is `live` against `rendered`.
//!
//! Run: `cargo bench -p coder --bench terminal_render` (`BENCH_RUNS=N` rounds, default 7).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coder_testkit::{Chunk, MockResponse, PlainServer};

#[path = "support/spread.rs"]
mod spread;
use spread::spread;

const LINES: [usize; 3] = [0, 1_000, 10_000];
const PROSE_DELTAS: usize = 20_000;

/// The programs measured, in the order they run.
#[derive(Clone, Copy, PartialEq)]
enum Reader {
    Curl,
    Plain,
    Rendered,
    Live,
}

const READERS: [Reader; 4] = [Reader::Curl, Reader::Plain, Reader::Rendered, Reader::Live];

impl Reader {
    fn name(self) -> &'static str {
        match self {
            Self::Curl => "curl",
            Self::Plain => "plain",
            Self::Rendered => "rendered",
            Self::Live => "live",
        }
    }
}

/// A Markdown answer of `lines` lines.
fn markdown(lines: usize) -> String {
    const PATTERN: [&str; 16] = [
        "## Section",
        "A paragraph with **bold**, *italic*, `code` and a [link](https://example.com/a/b), long enough to wrap once at a hundred columns.",
        "",
        "- an item with `code`",
        "- another item that is a little longer",
        "",
        "| name | size | note |",
        "|:-----|-----:|------|",
        "| main.rs | 120 | the entry |",
        "",
        "```rust",
        "fn main() { println!(\"{}\", 1 + 2); }",
        "```",
        "",
        "> a quoted line",
        "",
    ];
    let mut text = String::new();
    for at in 0..lines {
        text.push_str(PATTERN[at % PATTERN.len()]);
        text.push('\n');
    }
    text
}

/// Prose: sentences of ten deltas, a paragraph per fifty.
fn prose(deltas: usize) -> Vec<String> {
    (0..deltas)
        .map(|at| match at % 50 {
            49 => "end.\n\n".to_owned(),
            n if n % 10 == 9 => "word. ".to_owned(),
            _ => "word ".to_owned(),
        })
        .collect()
}

/// `text` as a model streams it: deltas of 4 bytes (whole characters).
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(4)
        .map(|piece| piece.iter().collect())
        .collect()
}

fn reply(deltas: &[String]) -> String {
    let mut chunks: Vec<Chunk> = deltas.iter().map(|delta| Chunk::text(delta)).collect();
    chunks.push(Chunk::usage(20, deltas.len() as u64));
    MockResponse::prerendered(&chunks)
        .rendered_body()
        .expect("a pre-rendered reply has a body")
        .to_owned()
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let server = PlainServer::start().unwrap();
    let root = format!("http://{}", server.addr());
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".config/coder")).unwrap();
    std::fs::write(
        home.path().join(".config/coder/config.json"),
        r#"{"maxOutputTokens": 1000000}"#,
    )
    .unwrap();
    let answers: Vec<String> = LINES
        .iter()
        .map(|&lines| reply(&pieces(&markdown(lines))))
        .chain(std::iter::once(reply(&prose(PROSE_DELTAS))))
        .collect();
    // rounds[run][answer][reader]
    let mut rounds: Vec<Vec<[Duration; 4]>> = Vec::new();
    for run in 0..=runs {
        let mut row = Vec::new();
        for (index, answer) in answers.iter().enumerate() {
            let expect = match index {
                0 => "",
                _ if index < LINES.len() => "Section",
                _ => "word",
            };
            let mut times = [Duration::ZERO; 4];
            for (at, reader) in READERS.into_iter().enumerate() {
                server.push(answer);
                times[at] = read(reader, expect, &root, workspace.path(), home.path());
            }
            row.push(times);
        }
        if run > 0 {
            rounds.push(row);
        }
    }
    report(&rounds);
}

/// The median over rounds of `f(round)`.
fn median(rounds: &[Vec<[Duration; 4]>], f: impl Fn(&[[Duration; 4]]) -> f64) -> f64 {
    let mut values: Vec<f64> = rounds.iter().map(|row| f(row)).collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn report(rounds: &[Vec<[Duration; 4]>]) {
    let ms = |answer: usize, reader: usize| {
        median(rounds, |row| row[answer][reader].as_secs_f64() * 1000.0)
    };
    let ratio = |answer: usize, reader: usize| {
        median(rounds, |row| {
            row[answer][reader].as_secs_f64() / row[answer][0].as_secs_f64()
        })
    };
    println!(
        "\nMarkdown answers, medians of {} rounds (ratios to curl, each the median of the rounds' own):",
        rounds.len()
    );
    println!(
        "| lines | curl ms | plain ms | rendered ms | live ms | plain / curl | rendered / curl | live / curl | live / rendered |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (answer, lines) in LINES.iter().enumerate() {
        println!(
            "| {lines} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.2}x | {:.2}x | {:.2}x |",
            ms(answer, 0),
            ms(answer, 1),
            ms(answer, 2),
            ms(answer, 3),
            ratio(answer, 1),
            ratio(answer, 2),
            ratio(answer, 3),
            median(rounds, |row| row[answer][3].as_secs_f64()
                / row[answer][2].as_secs_f64()),
        );
    }
    let per_line = |reader: usize, answer: usize| {
        median(rounds, |row| {
            (row[answer][reader].as_secs_f64() - row[0][reader].as_secs_f64()) * 1e6
                / LINES[answer] as f64
        })
    };
    for (at, reader) in READERS.into_iter().enumerate() {
        let costs = [per_line(at, 1), per_line(at, 2)];
        println!(
            "{}: per line {:.1} us at 1,000 lines, {:.1} us at 10,000 (spread {}, linear within 20%)",
            reader.name(),
            costs[0],
            costs[1],
            spread(&costs)
        );
    }
    let prose = LINES.len();
    println!(
        "\n{PROSE_DELTAS} deltas of prose: curl {:.1} ms, plain {:.1} ms, rendered {:.1} ms, live {:.1} ms; live / rendered {:.2}x, rendered / plain {:.2}x",
        ms(prose, 0),
        ms(prose, 1),
        ms(prose, 2),
        ms(prose, 3),
        median(rounds, |row| row[prose][3].as_secs_f64()
            / row[prose][2].as_secs_f64()),
        median(rounds, |row| row[prose][2].as_secs_f64()
            / row[prose][1].as_secs_f64()),
    );
}

/// One program reading the answer the server holds, from spawn to exit.
/// `expect` is a word the output must hold.
fn read(
    reader: Reader,
    expect: &str,
    root: &str,
    workspace: &std::path::Path,
    home: &std::path::Path,
) -> Duration {
    if reader == Reader::Curl {
        let started = Instant::now();
        let mut child = Command::new("curl")
            .args(["-sN", "-H", "content-type: application/json", "-d"])
            .arg(r#"{"model":"m","stream":true,"messages":[]}"#)
            .arg(format!("{root}/v1/chat/completions"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("curl is needed as the bare HTTP client");
        let mut bytes = Vec::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        child.wait().unwrap();
        return started.elapsed();
    }
    let mut command = Command::new(coder_binary());
    command
        .args(["exec", "--trust", "answer please"])
        .current_dir(workspace)
        .env_clear()
        .env("HOME", home)
        .env("TERM", "xterm-256color")
        .env("CODER_MODEL", "mock-model")
        .env("OPENAI_BASE_URL", format!("{root}/v1"))
        .env("OPENAI_API_KEY", "bench")
        .stdin(Stdio::null());
    let terminal = (reader != Reader::Plain).then(|| {
        let size = nix::pty::Winsize {
            ws_row: 50,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        nix::pty::openpty(Some(&size), None).unwrap()
    });
    match &terminal {
        Some(pty) => {
            let slave = || Stdio::from(OwnedFd::try_clone(&pty.slave).unwrap());
            command.stdout(slave());
            if reader == Reader::Live {
                command.stderr(slave());
            } else {
                command.stderr(Stdio::null());
            }
        }
        None => {
            command.stdout(Stdio::piped()).stderr(Stdio::null());
        }
    }
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    // The command holds its copies of the terminal's side: dropped, the terminal reads
    // its end once the child exits.
    drop(command);
    let mut bytes = Vec::with_capacity(1 << 20);
    match terminal {
        Some(pty) => {
            drop(pty.slave);
            let mut master = std::fs::File::from(pty.master);
            // Ends with EIO once the child has exited and closed its side.
            let mut buf = vec![0; 1 << 16];
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                bytes.extend_from_slice(&buf[..n]);
            }
        }
        None => {
            child
                .stdout
                .take()
                .unwrap()
                .read_to_end(&mut bytes)
                .unwrap();
        }
    }
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    assert!(status.success(), "coder exec failed ({status})");
    assert!(
        String::from_utf8_lossy(&bytes).contains(expect),
        "{} did not show {expect:?}",
        reader.name()
    );
    elapsed
}

/// The `coder` under test: this build's, or the binary `CODER_BIN` names.
fn coder_binary() -> std::ffi::OsString {
    std::env::var_os("CODER_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_coder").into())
}
