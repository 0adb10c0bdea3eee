//! What a command may do without asking, seen through the real `coder` binary: commands that
//! look read-only but run programs or write, reads outside the workspace, and "allow always"
//! stretched over a compound command.

use std::path::Path;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::exec::{as_refs, coder, openai_env, text};
use super::lsp::{Client, event_types};

const OUTSIDE_SECRET: &str = "TOP-SECRET-OUTSIDE-42";

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({ "command": command }))
}

fn executable(path: &Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every request body the model received, as one string.
fn everything_sent(server: &MockModelServer) -> String {
    server
        .requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect()
}

/// `coder exec` in the default mode, with no terminal and no auto-approval: a command the
/// policy asks about is denied, so whatever it would have done must not have happened.
#[tokio::test]
async fn commands_that_run_programs_write_or_read_outside_are_not_run_without_asking() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let secret = outside.path().join("id_rsa");
    std::fs::write(&secret, format!("{OUTSIDE_SECRET}\n")).unwrap();
    let numbers: String = (1..=300).map(|n| format!("{n}\n")).collect();
    std::fs::write(ws.join("in.txt"), numbers).unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\n").unwrap();
    executable(
        &ws.join("compress.sh"),
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran-compress\"\nexec cat\n",
    );
    // A bare repository shipped in the workspace whose config runs a program on `git status`.
    let evil = ws.join("evil.git");
    for dir in ["objects", "refs/heads"] {
        std::fs::create_dir_all(evil.join(dir)).unwrap();
    }
    std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    executable(
        &ws.join("fsmonitor.sh"),
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran-fsmonitor\"\n",
    );
    std::fs::write(
        evil.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = {}\n",
            ws.join("fsmonitor.sh").display()
        ),
    )
    .unwrap();

    let commands = [
        "sort -S 1K --compress-prog=./compress.sh in.txt | tail -n 1",
        "sed --i 's/alpha/beta/' notes.txt",
        "sort --out=sorted.txt notes.txt",
        "git --git-dir=evil.git status",
        &format!("cat {}", secret.display()),
        &format!("cd {} && head -n 1 id_rsa", outside.path().display()),
        "head -c 4000 /proc/self/environ",
    ];
    let mut script: Vec<MockResponse> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| bash(&format!("c{index}"), command))
        .collect();
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let env = openai_env(&server);
    let out = coder(ws, &["look around"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    assert!(
        !ws.join("ran-compress").exists(),
        "sort ran its compress program"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "alpha\n",
        "sed --i edited the file"
    );
    assert!(!ws.join("sorted.txt").exists(), "sort --out wrote a file");
    assert!(!ws.join("ran-fsmonitor").exists(), "git ran core.fsmonitor");
    let sent = everything_sent(&server);
    assert!(!sent.contains(OUTSIDE_SECRET), "a file outside was read");
    assert!(!sent.contains("sk-test-secret"), "the environment was read");
    assert_eq!(
        stderr.matches("permission needed: ").count(),
        commands.len(),
        "{stderr}"
    );
}

/// `coder lsp`: after the editor answers "allow always" to `cargo test`, a later
/// `cargo test && touch marker` asks again, while `cargo test` piped into `tail` does not.
#[tokio::test]
async fn allow_always_covers_each_simple_command_not_whatever_follows_it() {
    let server = MockModelServer::start(vec![
        bash("a", "cargo test"),
        MockResponse::text("ran"),
        bash("b", "cargo test 2>&1 | tail -n 3"),
        bash("c", "cargo test && touch marker"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    client.initialize(json!({})).await;
    let conversation = client.root().await;

    let mut seen = Vec::new();
    client.send_text(&conversation, "test", &mut seen).await;
    let ask = next_request_or_completion(&mut client, &mut seen).await;
    let ask = ask.expect("the first cargo test must be asked about");
    assert_eq!(ask["params"]["arguments"]["command"], "cargo test");
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_always"}}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;

    seen.clear();
    client.send_text(&conversation, "again", &mut seen).await;
    let ask = next_request_or_completion(&mut client, &mut seen).await;
    let ask = ask.expect("`cargo test && touch marker` ran without asking");
    assert_eq!(
        ask["params"]["arguments"]["command"],
        "cargo test && touch marker"
    );
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "deny"}}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(!workspace.path().join("marker").exists());
    // The piped `cargo test` ran on the remembered answer: it started without a request.
    let started: Vec<&Value> = super::lsp::events(&seen)
        .filter(|event| event["type"] == "tool_call_started")
        .collect();
    assert_eq!(started.len(), 1, "{:?}", event_types(&seen));
    assert_eq!(started[0]["callId"], "b");
    client.stop().await;
}

/// Reads until a `permission/request` (returned) or the end of the task (`None`).
async fn next_request_or_completion(client: &mut Client, seen: &mut Vec<Value>) -> Option<Value> {
    loop {
        let message = client.read().await;
        if message["method"] == "permission/request" {
            return Some(message);
        }
        let done = message["params"]["event"]["type"] == "task_complete";
        seen.push(message);
        if done {
            return None;
        }
    }
}

/// `coder exec --mode yolo --auto-approve`: commands that would plant a git hook, an MCP
/// server or coder configuration are not run (only a person may allow them), while an
/// ordinary write still runs without asking.
#[tokio::test]
async fn yolo_still_needs_a_person_for_protected_files() {
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    let commands = [
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit",
        "echo '{\"mcpServers\":{}}' | tee .mcp.json",
        "mkdir -p .coder && cp /dev/null .coder/config.json",
        "cd .git && echo '[core]' >> config",
        "echo ordinary > ordinary.txt",
    ];
    let mut script: Vec<MockResponse> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| bash(&format!("c{index}"), command))
        .collect();
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let env = openai_env(&server);
    let out = coder(
        ws,
        &["--mode", "yolo", "--auto-approve", "set things up"],
        &as_refs(&env),
    )
    .await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "{stderr}");
    assert!(!ws.join(".mcp.json").exists(), "{stderr}");
    assert!(!ws.join(".coder/config.json").exists(), "{stderr}");
    assert!(!ws.join(".git/config").exists(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.join("ordinary.txt")).unwrap(),
        "ordinary\n"
    );
    // The last request holds the whole history: four refusals, one result.
    let last = server.requests().last().unwrap().body.to_string();
    assert_eq!(
        last.matches("explicit approval from a person").count(),
        4,
        "{last}"
    );
}
