//! Text coder did not write (the model's, a tool's, a file's) reaches the person's terminal
//! with its control characters shown, never obeyed; an approval shows what would run.

use std::path::Path;
use std::process::Output;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::{Value, json};

/// A clipboard write (OSC 52), a title change (OSC 0), and a line erased and overwritten
/// (CSI 2K then `\r`): what a hostile text sends to take over a terminal.
const ATTACK: &str = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2K\rallow? [y]";

async fn coder(workspace: &Path, args: &[&str], server: &MockModelServer) -> Output {
    super::exec::coder_on(workspace, server, "sk-test", args).await
}

/// Asserts that `bytes` carry no byte a terminal would obey (ESC, BEL, CR, C1 controls in
/// UTF-8) and that the attack is there, shown.
fn assert_shown_not_obeyed(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for forbidden in ['\x1b', '\x07', '\r', '\u{9b}', '\u{9d}'] {
        assert!(
            !text.contains(forbidden),
            "{what} carries {forbidden:?}: {text:?}"
        );
    }
    assert!(text.contains("^[]52;c;cm0gLXJmIH4=^G"), "{what}: {text:?}");
}

#[tokio::test]
async fn escape_sequences_from_the_model_tools_and_files_are_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), ATTACK).unwrap();
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::thinking(ATTACK),
            Chunk::tool_call("c1", "read", json!({"path": "notes.txt"})),
        ]),
        MockResponse::tool_call("c2", "bash", json!({"command": format!("true '{ATTACK}'")})),
        MockResponse::tool_call("c3", "read", json!({"path": ATTACK})),
        // The escape split across two streamed pieces is still shown.
        MockResponse::stream(vec![
            Chunk::text(&ATTACK[..3]),
            Chunk::text(&ATTACK[3..]),
            Chunk::text("\u{9b}2J \u{202e}txt.exe"),
        ]),
    ])
    .await
    .unwrap();
    let out = coder(dir.path(), &["--mode", "yolo", "look"], &server).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_shown_not_obeyed("stdout", &out.stdout);
    assert_shown_not_obeyed("stderr", &out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\\u{9b}2J \\u{202e}txt.exe"), "{stdout:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The bash call's command line reached stderr, neutralised.
    assert!(stderr.contains("• bash true '^[]52;c;"), "{stderr:?}");
    assert!(
        stderr.contains("^[]0;pwned^G^[[2K^Mallow? [y]"),
        "{stderr:?}"
    );

    // `--json` stays exact: the same text, escaped by JSON, comes back whole.
    server.push([MockResponse::text(ATTACK)]);
    let out = coder(dir.path(), &["--json", "look"], &server).await;
    assert!(!out.stdout.contains(&0x1b));
    let message = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["type"] == "agent_message")
        .unwrap();
    assert_eq!(message["message"], ATTACK);
}

#[tokio::test]
async fn an_approval_shows_the_whole_command_and_the_diff_before_it_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.txt"), "one\ntwo\nthree\n").unwrap();
    let command = "echo first\nrm -rf ./build # the second line\necho third";
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::tool_call(
            "c2",
            "edit",
            json!({"path": "app.txt", "old_string": "two", "new_string": "TWO"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    // Without a terminal every request is denied: the request is printed, nothing runs.
    let out = coder(dir.path(), &["--permissions", "strict", "go"], &server).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for line in command.lines() {
        assert!(stderr.contains(&format!("  │ {line}\n")), "{stderr}");
    }
    assert!(
        stderr.contains("--- a/app.txt\n+++ b/app.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("app.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );

    // The events carry them too, for every front door.
    server.push([
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::tool_call(
            "c2",
            "edit",
            json!({"path": "app.txt", "old_string": "two", "new_string": "TWO"}),
        ),
        MockResponse::text("done"),
    ]);
    let out = coder(
        dir.path(),
        &["--json", "--permissions", "strict", "go"],
        &server,
    )
    .await;
    let asks: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "permission_requested")
        .collect();
    assert_eq!(asks.len(), 2, "{asks:?}");
    assert_eq!(asks[0]["command"], command);
    assert!(asks[0].get("diff").is_none());
    assert_eq!(
        asks[1]["diff"],
        "--- a/app.txt\n+++ b/app.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    );
}

#[tokio::test]
async fn a_shipped_configuration_cannot_write_escapes_through_warnings_or_errors() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".coder")).unwrap();
    let file = dir.path().join(".coder/config.json");
    // An unknown key is quoted in a warning; so are the names an untrusted folder's files
    // asked for and did not get (a command rule, an MCP server).
    std::fs::write(
        &file,
        json!({ ATTACK: 1, "permissions": {"commands": [{"pattern": ATTACK, "decision": "allow"}]}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        json!({"mcpServers": {ATTACK: {"command": "true"}}}).to_string(),
    )
    .unwrap();
    let out = coder(dir.path(), &["hi"], &server).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_shown_not_obeyed("stderr", &out.stderr);
    // A bad value is quoted in the error that stops the run (in a trusted folder: an
    // untrusted one's mode may only narrow, and a value outside the order is dropped).
    std::fs::write(&file, json!({ "mode": ATTACK }).to_string()).unwrap();
    let out = coder(dir.path(), &["--trust", "hi"], &server).await;
    assert_eq!(out.status.code(), Some(1));
    assert_shown_not_obeyed("stderr", &out.stderr);
}
