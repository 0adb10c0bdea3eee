//! `grep` in content mode on files far larger than its output: memory stays bounded.

use std::io::Write;
use std::time::Duration;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::json;

/// Writes `total` bytes of `line` repeated into `path`.
fn fill(path: &std::path::Path, line: &[u8], total: usize) {
    let mut file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let block: Vec<u8> = line.iter().copied().cycle().take(1 << 20).collect();
    for _ in 0..total / block.len() {
        file.write_all(&block).unwrap();
    }
    file.flush().unwrap();
}

/// A field of `/proc/<pid>/status`, in kB.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn content_grep_with_a_head_limit_stays_small_on_huge_files() {
    let dir = tempfile::tempdir().unwrap();
    // 256 MB of matching lines (the line length divides 1 MiB, so lines stay whole), and one
    // 64 MB line.
    fill(
        &dir.path().join("big.log"),
        b"a needle in line\n",
        256 << 20,
    );
    let mut giant = vec![b'x'; 64 << 20];
    giant.extend_from_slice(b" needle\n");
    // It sorts first, so it is searched whatever the output holds already.
    std::fs::write(dir.path().join("a-giant.min.js"), giant).unwrap();
    let server = MockModelServer::start(vec![
        // With its usage, as most providers report it: coder then loads no tokenizer, whose
        // tables would be counted here as if they were the search's.
        MockResponse::stream(vec![
            Chunk::tool_call(
                "g1",
                "grep",
                json!({"pattern": "needle", "output_mode": "content", "head_limit": 5}),
            ),
            Chunk::usage(100, 10),
        ]),
        // Slow to answer, so the process is sampled after the search.
        MockResponse::text("done").with_delay(1_000),
    ])
    .await
    .unwrap();
    let child =
        crate::suite::exec::spawn_on(dir.path(), &server, &["--auto-approve", "find the needles"]);
    let pid = child.id().unwrap();
    // The second request carries the grep result: the search is over.
    assert!(
        server
            .wait_for(Duration::from_secs(60), |requests| requests.len() == 2)
            .await,
        "the grep call did not finish"
    );
    let peak = status_kb(pid, "VmHWM:").expect("coder exited too early to be measured");
    eprintln!("grep, 256 MB of matching lines and a 64 MB line: peak resident {peak} kB");
    let resident = status_kb(pid, "VmRSS:").unwrap_or_default();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("coder exec did not finish")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        peak < 50 * 1024,
        "peak resident {peak} kB (now {resident} kB), over 50 MB"
    );
    let result = server.requests()[1].body["messages"][4]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let expected: String = (1..=5)
        .map(|n| format!("big.log:{n}:a needle in line\n"))
        .collect();
    assert_eq!(
        result,
        format!(
            "{expected}(more than 5 lines; showing the first 5. Narrow the pattern, path or glob.)\n\
             (1 files skipped: a line longer than 4 MiB; search them with bash and a tool that cuts lines.)\n"
        )
    );
}
