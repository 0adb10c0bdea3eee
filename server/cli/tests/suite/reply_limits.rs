//! `coder exec` against a provider that never ends its reply: the run ends with an error
//! naming the limit, exits non-zero, and its memory stays bounded meanwhile.

use std::process::Stdio;
use std::time::{Duration, Instant};

use coder_testkit::{Chunk, MockModelServer, MockResponse};

/// Resident memory a run may reach. A bounded reply (4 MiB of text by default) stays well
/// under it; before replies were bounded, `coder exec` passed it within seconds.
const RSS_BOUND_KB: u64 = 150 * 1024;

/// A child process that is killed if the test ends first.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `coder exec` against `reply` with the default limits, sampling its resident memory
/// until it exits. Returns the exit code, stdout, stderr and the peak resident set in KiB.
async fn run_against(reply: MockResponse, json: bool) -> (Option<i32>, String, String, u64) {
    let server = MockModelServer::start(vec![reply]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command.arg("exec");
    if json {
        command.arg("--json");
    }
    let child = command
        .arg("write forever")
        .current_dir(dir.path())
        .env_clear()
        .env("HOME", dir.path())
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("CODER_MODEL", "mock-model")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Child(child);
    let pid = child.0.id();
    // Drain the pipes on threads so a full pipe never stalls the child.
    let mut stdout = child.0.stdout.take().unwrap();
    let mut stderr = child.0.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut text).unwrap();
        String::from_utf8_lossy(&text).into_owned()
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
        text
    });
    let started = Instant::now();
    let mut peak = 0;
    let code = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status.code();
        }
        peak = peak.max(rss_kb(pid).unwrap_or(0));
        assert!(
            peak < RSS_BOUND_KB,
            "coder exec grew to {peak} KiB of resident memory"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "coder exec did not end within 60 s (peak {peak} KiB)"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    (code, out.join().unwrap(), err.join().unwrap(), peak)
}

#[tokio::test]
async fn an_endless_reply_ends_the_run_with_an_error_and_bounded_memory() {
    let piece = "All work and no play makes a dull model. ".repeat(25);
    let reply = MockResponse::endless(vec![Chunk::text("Here goes: ")], Chunk::text(&piece));
    let (code, stdout, stderr, peak) = run_against(reply, false).await;
    assert_ne!(code, Some(0), "{stderr}");
    assert!(code.is_some(), "killed by a signal: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("maxReplyBytes (4194304 bytes")
            && errors[0].contains("raise \"maxReplyBytes\" in your user configuration"),
        "{stderr}"
    );
    // The reply cut at the limit is not recorded, so a piped stdout, which holds what the
    // history keeps, shows none of it.
    assert!(stdout.is_empty(), "{}", stdout.len());
    eprintln!("peak resident memory: {peak} KiB");
}

#[tokio::test]
async fn an_endless_stream_of_tiny_deltas_ends_at_max_output_tokens_in_json_mode() {
    let reply = MockResponse::endless(Vec::new(), Chunk::text("a"));
    let (code, stdout, stderr, _) = run_against(reply, true).await;
    assert_ne!(code, Some(0), "{stderr}");
    let error = stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|event| event["type"] == "error")
        .unwrap_or_else(|| panic!("no error event: {stderr}"));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("maxOutputTokens (8192 tokens)") && message.contains("16448 events"),
        "{message}"
    );
}

#[tokio::test]
async fn an_endless_line_without_a_newline_ends_the_run_with_bounded_memory() {
    let reply = MockResponse::endless(
        vec![Chunk::text("start")],
        Chunk::Verbatim {
            text: "x".repeat(4096),
        },
    );
    let (code, _, stderr, _) = run_against(reply, false).await;
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("without completing an event"), "{stderr}");
}
