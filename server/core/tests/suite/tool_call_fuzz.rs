//! A seeded fuzz test of the model's tool calls, which a hostile model (or a prompt
//! injection) controls whole: names that are no tool's, arguments that are no JSON, and
//! arguments of the right shape with hostile values (paths out of the workspace, through a
//! symlink, absolute, with NUL; numbers past every integer; patterns that are no pattern;
//! patches that are no patch; text of a megabyte). Every call must end in
//! `tool_call_completed` or `tool_call_failed` (one without a name is left out of the
//! reply, with a warning), every task must end, nothing outside the
//! workspace may change, and the engine must go on serving. Commands (`bash`) come from a
//! fixed list of harmless ones: the fuzz never composes a command. The seed is printed;
//! `CODER_FUZZ_SEED=<n>` replays a run.

use coder_core::ProviderKind;
use coder_protocol::{EventMsg, PermissionDecision};
use coder_testkit::fuzz::{Rng, mutate};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::support::{Harness, answer_with, entries_under};

/// Model replies of tool calls, each its own task.
const ROUNDS: usize = 40;

/// Tools a call names: coder's own (the conversation tools left out: a conversation they
/// create would take the next scripted replies), and names of no tool.
const NAMES: &[&str] = &[
    "read",
    "write",
    "edit",
    "apply_patch",
    "glob",
    "grep",
    "skill",
    "todo_write",
    "exit_plan_mode",
    "bash",
    "",
    "READ",
    "read ",
    "../read",
    "mcp__x__y",
    "\u{202e}daer",
];

/// The only commands `bash` is given.
const COMMANDS: &[&str] = &[
    "true",
    "false",
    "exit 3",
    "echo hello",
    "ls -la",
    "cat a.txt",
    "printf '\\033]52;c;aGk=\\007\\033[2J'",
    "head -c 3000000 /dev/zero | tr '\\0' x",
    "sleep 0.05",
];

/// Paths a call names.
fn paths(outside: &str) -> Vec<String> {
    let mut paths: Vec<String> = [
        "a.txt",
        "src/lib.rs",
        "new.txt",
        "",
        ".",
        "..",
        "../outside/planted.txt",
        "link/planted.txt",
        "link",
        "src/../../outside/canary.txt",
        "~/planted.txt",
        "a.txt\0/etc/passwd",
        "/etc/passwd",
        ".git/config",
        ".coder/config.json",
        "dir/",
        "\u{0}",
        "x/y/z/w/v/u/t/s/r/q.txt",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    paths.push(format!("{outside}/planted.txt"));
    paths.push(format!("{outside}/canary.txt"));
    paths.push("p".repeat(5_000));
    paths
}

/// A value for a text argument.
fn text(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => json!(""),
        1 => json!("x".repeat(1 + rng.index(1 << 20))),
        2 => json!("line\nline\r\n\u{1b}[31mred\u{0}"),
        3 => json!(rng.index(1000)),
        4 => Value::Null,
        _ => json!("hello"),
    }
}

/// A number argument: in range, or (half the time) not one.
fn number(rng: &mut Rng) -> Value {
    if rng.chance(2) {
        return json!(1 + rng.index(50));
    }
    rng.pick(&[
        json!(0),
        json!(1),
        json!(-1),
        json!(3.5),
        json!(1e300),
        json!(u64::MAX),
        json!("10"),
        Value::Null,
    ])
    .clone()
}

/// Arguments shaped as `name` takes them, with hostile values.
fn shaped(name: &str, rng: &mut Rng, outside: &str) -> Value {
    let paths = paths(outside);
    // Half the calls name a path a call may use, so the tools' own work is fuzzed too.
    let path = if rng.chance(2) {
        json!(rng.pick(&["a.txt", "src/lib.rs", "new.txt", "src"]))
    } else {
        json!(rng.pick(&paths))
    };
    match name {
        "read" => json!({"path": path, "offset": number(rng), "limit": number(rng)}),
        "write" => json!({"path": path, "content": text(rng)}),
        "edit" => json!({"path": path, "old_string": text(rng), "new_string": text(rng),
            "replace_all": rng.chance(2)}),
        "apply_patch" => {
            let target = rng.pick(&paths).clone();
            let patch = rng.pick(&[
                format!("*** Begin Patch\n*** Add File: {target}\n+planted\n*** End Patch"),
                format!("*** Begin Patch\n*** Delete File: {target}\n*** End Patch"),
                format!("*** Begin Patch\n*** Update File: a.txt\n*** Move to: {target}\n@@\n-one\n+two\n*** End Patch"),
                "*** Begin Patch\n*** Update File: a.txt\n@@\n-nothing like this\n+x\n*** End Patch".to_owned(),
                "not a patch".to_owned(),
                "*** Begin Patch".to_owned(),
            ]).clone();
            json!({"patch": patch})
        }
        "glob" => {
            json!({"pattern": rng.pick(&["**/*", "**/**/**/**/*", "{a,{b,{c,d}}}", "[", "../*", "/*", ""]),
            "path": path})
        }
        "grep" => {
            json!({"pattern": rng.pick(&["(", "a{1000000}", "(a*)*b", "\\", ".*", "planted", ""]),
            "path": path, "glob": rng.pick(&["*", "[", "**"]),
            "output_mode": rng.pick(&["content", "files_with_matches", "count", "nonsense"]),
            "context": number(rng), "head_limit": number(rng)})
        }
        "skill" => {
            json!({"name": rng.pick(&["", "../x", "none", "a".repeat(300).as_str()]), "file": path})
        }
        "todo_write" => json!({"todos": rng.pick(&[
            json!([]),
            json!([{"content": "x", "status": "done?"}]),
            json!([{"content": "x".repeat(100_000), "status": "pending"}]),
            json!((0..2_000).map(|i| json!({"content": i.to_string(), "status": "pending"})).collect::<Vec<_>>()),
            json!("not a list"),
        ])}),
        "exit_plan_mode" => json!({"plan": text(rng)}),
        "bash" => {
            json!({"command": rng.pick(COMMANDS), "timeout_ms": rng.pick(&[json!(5_000), json!(0), json!(-5), Value::Null])})
        }
        _ => json!({"path": path}),
    }
}

/// What a hostile edit of arguments splices in.
const PIECES: &[&[u8]] = &[b"\"path\":\"../outside/planted.txt\""];

/// One call: a name and its arguments as the model streams them (a string, maybe no JSON).
fn call(rng: &mut Rng, outside: &str) -> (String, String) {
    let name = (*rng.pick(NAMES)).to_owned();
    let arguments = shaped(&name, rng, outside).to_string();
    // Mutated arguments never go to `bash`: the fuzz does not compose commands.
    if name != "bash" && rng.chance(3) {
        let bytes = mutate(arguments.as_bytes(), PIECES, rng);
        return (name, String::from_utf8_lossy(&bytes).into_owned());
    }
    (name, arguments)
}

/// The calls of a round, each cut to 300 characters, for a failure's message.
fn shown(calls: &[(String, String)]) -> String {
    calls
        .iter()
        .map(|(name, arguments)| {
            let cut: String = arguments.chars().take(300).collect();
            format!("{name:?} {cut}")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Every file under `dir` with its contents, in order.
fn listing(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in entries_under(dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        files.push((entry.display().to_string(), bytes));
    }
    files.sort();
    files
}

#[tokio::test]
async fn hostile_tool_calls_each_end_and_change_nothing_outside_the_workspace() {
    let mut rng = Rng::new(Rng::seed(0x7001_ca11_f022));
    let server = MockModelServer::start(vec![]).await.unwrap();
    // A window no round fills: a reply of megabytes of arguments would otherwise be
    // compacted, a model call of its own (tested elsewhere).
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.context_window = Some(100_000_000),
        vec![],
    );
    let ws = h.workspace.path().to_path_buf();
    // Beside the workspace: a directory no call may change, reached also through a link.
    let around = tempfile::tempdir().unwrap();
    let outside = around.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("canary.txt"), "untouched\n").unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
    let before = listing(&outside);
    // `../outside/...` from the workspace names a sibling of it: nothing may appear there.
    let sibling = ws.parent().unwrap().join("outside");
    let sibling_before = listing(&sibling);
    // What only a person may allow (a protected file, a dangerous command) is asked even in
    // yolo: nobody is here, so it is denied.
    let asked = answer_with(
        &h.engine,
        PermissionDecision::Deny {
            message: Some("nobody is here".to_owned()),
        },
    );
    let outside_text = outside.display().to_string();

    let (mut completed, mut failed) = (0, 0);
    for round in 0..ROUNDS {
        let calls: Vec<(String, String)> = (0..1 + rng.index(6))
            .map(|_| call(&mut rng, &outside_text))
            .collect();
        let chunks: Vec<Chunk> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| Chunk::ToolCall {
                id: format!("c{round}_{i}"),
                name: name.clone(),
                arguments: arguments.clone(),
            })
            .collect();
        // A reply whose calls all lack a name is left empty, and ends the task: no second
        // reply is asked for.
        let named = calls.iter().filter(|(name, _)| !name.is_empty()).count();
        server.push([MockResponse::stream(chunks)]);
        if named > 0 {
            server.push([MockResponse::text("ok")]);
        }
        // A conversation per round: each request holds one round's calls, not all of them.
        let conversation = h
            .engine
            .create_conversation(coder_core::ConversationSpec::default())
            .unwrap();
        let task = h.engine.send(conversation, "go").unwrap();
        let events = h.until_end(task).await;
        let end = events.last().map(|event| &event.msg);
        assert!(
            matches!(end, Some(EventMsg::TaskComplete { error: None, .. })),
            "round {round}: {end:?} ({:?}; the last request's last messages: {}) after calls {}",
            events
                .iter()
                .filter(|event| matches!(
                    event.msg,
                    EventMsg::Error { .. } | EventMsg::Warning { .. }
                ))
                .map(|event| &event.msg)
                .collect::<Vec<_>>(),
            server
                .requests()
                .iter()
                .map(|r| {
                    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
                    format!(
                        "{} messages, the last {}",
                        messages.len(),
                        messages
                            .last()
                            .map(|m| m.to_string().chars().take(200).collect::<String>())
                            .unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join(" // "),
            shown(&calls)
        );
        let ended = events
            .iter()
            .filter(|event| match &event.msg {
                EventMsg::ToolCallCompleted { .. } => {
                    completed += 1;
                    true
                }
                EventMsg::ToolCallFailed { .. } => {
                    failed += 1;
                    true
                }
                _ => false,
            })
            .count();
        // A call without a name is left out of the reply, and said (one that carried
        // nothing either is a stream's noise, left out unsaid).
        if calls
            .iter()
            .any(|(name, arguments)| name.is_empty() && !arguments.trim().is_empty())
        {
            assert!(
                events.iter().any(|event| matches!(
                    &event.msg,
                    EventMsg::Warning { message } if message.contains("without a tool's name")
                )),
                "round {round}: a call without a name went unsaid"
            );
        }
        assert_eq!(
            ended,
            named,
            "round {round}: {} with events {:?}",
            shown(&calls),
            events
                .iter()
                .map(|e| format!("{:?}", e.msg).chars().take(300).collect::<String>())
                .collect::<Vec<_>>()
        );
        assert_eq!(
            listing(&outside),
            before,
            "round {round} changed what is outside: {}",
            shown(&calls)
        );
        // What the model was sent back stays bounded whatever the calls made.
        let sent = server
            .requests()
            .last()
            .map_or(0, |r| r.body.to_string().len());
        assert!(sent < 16 << 20, "round {round}: a request of {sent} bytes");
    }
    println!(
        "{completed} hostile calls completed, {failed} failed, {} asked and denied",
        asked.lock().unwrap().len()
    );
    assert!(
        completed > 0 && failed > 0,
        "{completed} completed, {failed} failed"
    );
    assert!(!around.path().join("planted.txt").exists());
    assert_eq!(
        listing(&sibling),
        sibling_before,
        "a call wrote in {}",
        sibling.display()
    );

    // The engine goes on.
    server.push([MockResponse::text("still here")]);
    let events = h.run("still there?").await;
    assert!(matches!(
        events.last().map(|event| &event.msg),
        Some(EventMsg::TaskComplete { error: None, .. })
    ));
    h.engine.shutdown().await;
}
