//! A repository whose every file coder reads is hostile: a link to `/dev/zero`, to
//! `/dev/stdin`, to `/proc/self/pagemap` or out of the workspace, a FIFO, or deeply nested
//! text, at each place coder looks (configuration, `.mcp.json`, ignore files, project files
//! of auto-verify, rules, skills, commands, saved sessions). `coder lsp` answers every
//! request, through `initialize`, `@` completion, a turn with a `glob` call and an
//! auto-verification, `/model`, `session/list` and `session/resume`, keeps its memory and
//! writes nothing outside the workspace; `coder exec` then runs a task there too.

use std::path::Path;
use std::time::Duration;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::{Client, events, status_kb};

/// The most memory the server may hold at its peak, all of it.
const PEAK_BOUND_KB: u64 = 100 * 1024;

/// Each request must be answered within this (a hang, not a speed: generous).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// The places a repository ships files that coder reads.
const PLACES: [&str; 18] = [
    ".coder/config.json",
    ".mcp.json",
    ".gitignore",
    ".ignore",
    "sub/.gitignore",
    ".git/info/exclude",
    "package.json",
    "Cargo.toml",
    "pyproject.toml",
    "AGENTS.md",
    "CLAUDE.md",
    ".coder/rules/x.md",
    ".coder/skills/x/SKILL.md",
    ".coder/commands/x.md",
    "sub/AGENTS.md",
    "instructions.md",
    ".coder/sessions/019a0000-0000-7000-8000-000000000000.json",
    ".coder/sessions/019a0000-0000-7000-8000-000000000000.jsonl",
];

/// The saved session planted among [`PLACES`].
const PLANTED_SESSION: &str = "019a0000-0000-7000-8000-000000000000";

#[derive(Debug, Clone, Copy)]
enum Hostile {
    Zero,
    Stdin,
    Pagemap,
    Outside,
    Fifo,
    Deep,
}

/// A file outside the workspace that would make coder write there if it were believed: an
/// MCP server (trusted workspace) and a test script that touch `pwned` beside it.
fn outside_file(outside: &Path) -> std::path::PathBuf {
    let pwned = outside.join("pwned");
    let file = outside.join("shared.json");
    let text = json!({
        "mcpServers": {"evil": {"command": "touch", "args": [pwned]}},
        "scripts": {"test": format!("touch {}", pwned.display())},
    });
    std::fs::write(&file, text.to_string()).unwrap();
    file
}

/// Text nested `depth` deep in the file's own language.
fn deep(place: &str, depth: usize) -> String {
    if place.ends_with(".json") {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    } else if place.ends_with(".md") {
        // YAML front matter of flow sequences, which a parser takes quadratic time on.
        format!(
            "---\ndescription: {}{}\n---\nbody\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )
    } else {
        format!("{}x\n", "a/".repeat(depth))
    }
}

fn plant(ws: &Path, outside: &Path, place: &str, hostile: Hostile) {
    let path = ws.join(place);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let link = |target: &Path| std::os::unix::fs::symlink(target, &path).unwrap();
    match hostile {
        Hostile::Zero => link(Path::new("/dev/zero")),
        Hostile::Stdin => link(Path::new("/dev/stdin")),
        Hostile::Pagemap => link(Path::new("/proc/self/pagemap")),
        Hostile::Outside => link(&outside_file(outside)),
        Hostile::Fifo => {
            nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        }
        Hostile::Deep => std::fs::write(&path, deep(place, 120_000)).unwrap(),
    }
}

/// Waits for `work`, failing when it takes longer than [`ANSWER_WITHIN`] or when the
/// server's resident memory passes [`PEAK_BOUND_KB`] meanwhile (so a runaway read fails the
/// test at once instead of taking the machine's memory).
async fn answered<T>(pid: u32, what: &str, work: impl std::future::Future<Output = T>) -> T {
    let watch = async {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            // Gone once the server exits (at `shutdown`).
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let rss = status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok());
            if let Some(rss) = rss.filter(|rss: &u64| *rss > PEAK_BOUND_KB) {
                return rss;
            }
        }
    };
    tokio::select! {
        done = tokio::time::timeout(ANSWER_WITHIN, work) => {
            done.unwrap_or_else(|_| panic!("{what}: no answer within {ANSWER_WITHIN:?}"))
        }
        rss = watch => panic!("{what}: coder lsp's resident memory reached {rss} kB"),
    }
}

/// The turn every door runs in a hostile repository: a `glob` over everything, a write
/// (auto-verify follows it), then answers.
pub(crate) fn script() -> Vec<MockResponse> {
    let mut script = vec![
        MockResponse::tool_call("g", "glob", json!({"pattern": "**/*"})),
        MockResponse::tool_call(
            "w",
            "write",
            json!({"path": "src/lib.rs", "content": "x\n"}),
        ),
    ];
    script.extend((0..6).map(|_| MockResponse::text("Done.")));
    script
}

async fn run(hostile: Hostile) {
    let server = MockModelServer::start(script()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".config/coder")).unwrap();
    std::fs::write(
        ws.join(".config/coder/config.json"),
        json!({"mode": "yolo", "permissions": {"preset": "yolo"}, "maxVerifyAttempts": 0})
            .to_string(),
    )
    .unwrap();
    for place in PLACES {
        plant(ws, outside.path(), place, hostile);
    }
    let outside_now = || -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .flatten()
            .map(|entry| {
                (
                    entry.path(),
                    std::fs::read(entry.path()).unwrap_or_default(),
                )
            })
            .collect();
        files.sort();
        files
    };
    let before = outside_now();
    let base_url = server.openai_base_url();
    let mut client = Client::spawn(
        ws,
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", "k"),
        ],
    );
    let pid = client.child.id().unwrap();
    let what = format!("{hostile:?}");
    let trusted = json!({"capabilities": {}, "initializationOptions": {"trustWorkspace": true}});
    let init = answered(pid, &what, client.initialize_with(trusted.clone())).await;
    if let Some(error) = init.get("error") {
        // A configuration file that cannot be used is refused as a broken one is, naming
        // the file; without it the session starts.
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("config.json") || message.contains(".mcp.json"),
            "{what}: {init}"
        );
        for place in [".coder/config.json", ".mcp.json"] {
            std::fs::remove_file(ws.join(place)).unwrap();
        }
        let init = answered(pid, &what, client.initialize_with(trusted)).await;
        assert!(init["result"].is_object(), "{what}: {init}");
    }
    let mut seen = Vec::new();
    let completed = answered(
        pid,
        &what,
        client.request(
            "workspace/completePaths",
            json!({"query": "sub"}),
            &mut seen,
        ),
    )
    .await;
    assert!(
        completed["result"]["matches"].is_array(),
        "{what}: {completed}"
    );
    let commands = answered(
        pid,
        &what,
        client.request("command/list", json!({}), &mut seen),
    )
    .await;
    assert!(commands["result"].is_object(), "{what}: {commands}");
    let root = answered(pid, &what, client.root()).await;
    let created = answered(
        pid,
        &what,
        client.request(
            "conversation/create",
            json!({"baseInstructionsFile": "instructions.md"}),
            &mut seen,
        ),
    )
    .await;
    assert!(
        created.get("result").is_some() || created.get("error").is_some(),
        "{what}: {created}"
    );
    answered(
        pid,
        &what,
        client.send_text(&root, "change src/lib.rs and run the tests", &mut seen),
    )
    .await;
    answered(
        pid,
        &what,
        client.until_events("task_complete", 1, &mut seen),
    )
    .await;
    let kinds: Vec<&Value> = events(&seen)
        .filter(|event| event["type"] == "tool_call_completed")
        .map(|event| &event["toolName"])
        .collect();
    assert!(kinds.contains(&&json!("glob")), "{what}: {seen:#?}");
    // The write made auto-verify look at the project files.
    assert!(
        events(&seen).any(|event| event["type"] == "verification"),
        "{what}: {seen:#?}"
    );
    // What reads and writes coder's own files: `/model` (the workspace configuration), the
    // saved sessions' list, and taking one up.
    for (method, params) in [
        (
            "conversation/command",
            json!({"conversationId": root, "command": "/model other-model"}),
        ),
        ("session/list", json!({})),
        ("session/resume", json!({"sessionId": PLANTED_SESSION})),
    ] {
        let answer = answered(pid, &what, client.request(method, params, &mut seen)).await;
        assert!(
            answer.get("result").is_some() || answer.get("error").is_some(),
            "{what}: {method}: {answer}"
        );
    }
    let peak = status_kb(pid, "VmHWM:");
    assert!(
        peak < PEAK_BOUND_KB,
        "{what}: coder lsp's resident memory peaked at {peak} kB"
    );
    answered(pid, &what, client.stop()).await;
    // The same repository through `coder exec`: one task with a `glob` call and a write
    // (auto-verify after it) ends, and writes nothing outside either.
    server.push(script());
    let out = crate::suite::exec::coder_on(
        ws,
        &server,
        "k",
        &["--trust", "--mode", "yolo", "--model", "gpt-5", "go"],
    )
    .await;
    let stderr = crate::suite::exec::text(&out.stderr);
    assert!(out.status.success(), "{what}: coder exec: {stderr}");
    assert!(
        outside_now() == before,
        "{what}: written outside the workspace"
    );
}

#[tokio::test]
async fn links_to_dev_zero_are_not_read() {
    run(Hostile::Zero).await;
}

#[tokio::test]
async fn links_to_dev_stdin_are_not_read() {
    run(Hostile::Stdin).await;
}

#[tokio::test]
async fn links_to_proc_self_pagemap_are_not_read() {
    run(Hostile::Pagemap).await;
}

#[tokio::test]
async fn links_out_of_the_workspace_are_not_followed() {
    run(Hostile::Outside).await;
}

#[tokio::test]
async fn fifos_do_not_hang_coder() {
    run(Hostile::Fifo).await;
}

#[tokio::test]
async fn deeply_nested_files_are_refused_quickly() {
    run(Hostile::Deep).await;
}
