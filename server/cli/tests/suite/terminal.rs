//! What reaches a person's terminal, or a pipe standing in for one.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

/// The server's log on stderr carries no ANSI escape when stderr is a pipe (with or without
/// `NO_COLOR`): a malformed frame makes `coder lsp` log a warning.
#[tokio::test]
async fn the_log_through_a_pipe_has_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    for no_color in ["", "1"] {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
            .args(["lsp", "--stdio"])
            .current_dir(dir.path())
            .env_clear()
            .envs(crate::suite::kept_env())
            .env("HOME", dir.path())
            .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
            .env("NO_COLOR", no_color)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"Content-Length: 5\r\n\r\n{nope")
            .await
            .unwrap();
        drop(stdin);
        let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("coder lsp did not end when its input closed")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("WARN"), "no warning logged: {stderr}");
        assert!(!out.stderr.contains(&0x1b), "colour codes in: {stderr:?}");
    }
}

/// `coder exec` at a terminal, in plan mode, whose model proposes a plan (`exit_plan_mode`)
/// answered by typing `answer` at the prompt; returns the requests the model received.
async fn plan_answered_at_the_terminal(answer: &str) -> Vec<serde_json::Value> {
    use coder_testkit::{MockModelServer, MockResponse};
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "p1",
            "exit_plan_mode",
            serde_json::json!({"plan": "1. Add greet.\n2. Test it."}),
        ),
        MockResponse::text("on it"),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pty = nix::pty::openpty(None, None).unwrap();
    let terminal = crate::suite::read_terminal(
        std::fs::File::from(pty.master),
        Some(("[y] Yes, carry out the plan", format!("{answer}\n"))),
    );
    let home = dir.path().join(".home");
    let mut command = tokio::process::Command::new("setsid");
    command
        // A test that fails (a prompt never answered) ends its coder too.
        .kill_on_drop(true)
        .args([
            "--ctty",
            env!("CARGO_BIN_EXE_coder"),
            "exec",
            "--mode",
            "plan",
        ])
        .arg("plan a greeting")
        .current_dir(dir.path())
        .env_clear()
        .envs(crate::suite::kept_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "k")
        .env("CODER_MODEL", "mock-model")
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave))
        .stdout(Stdio::piped());
    // Not `output()`: tokio's sets stderr to a pipe whatever was asked.
    let child = command.spawn().unwrap();
    // The command holds the terminal's other side: the reader ends once it is gone.
    drop(command);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("coder exec did not finish in 60 s")
        .unwrap();
    let seen = terminal.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{seen} {stdout}");
    assert!(
        seen.contains("1. Add greet."),
        "the plan was not shown: {seen} {stdout}"
    );
    server.requests().into_iter().map(|r| r.body).collect()
}

fn tool_names(body: &serde_json::Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect()
}

/// The three answers to a plan at `coder exec`'s terminal prompt, each checked in what the
/// model is sent next: `y` starts editing with the history kept, `c` clears the context and
/// starts from the plan, `n` keeps planning.
#[tokio::test]
async fn a_plan_is_answered_at_the_terminal_with_its_three_answers() {
    let start = plan_answered_at_the_terminal("y").await;
    let after = &start[1];
    assert!(tool_names(after).contains(&"todo_write"));
    assert!(!tool_names(after).contains(&"exit_plan_mode"));
    assert_eq!(after["messages"][1]["content"], "plan a greeting");

    let clear = plan_answered_at_the_terminal("c").await;
    let messages = clear[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    let only = messages[1]["content"].as_str().unwrap();
    assert!(only.starts_with("The user approved this plan"), "{only}");
    assert!(only.contains("1. Add greet."), "{only}");
    assert!(!tool_names(&clear[1]).contains(&"exit_plan_mode"));

    let keep = plan_answered_at_the_terminal("n").await;
    assert!(tool_names(&keep[1]).contains(&"exit_plan_mode"));
    assert!(!tool_names(&keep[1]).contains(&"todo_write"));
}
