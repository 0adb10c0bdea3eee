//! `coder exec` as a user runs it: a real process, a real HTTP model.

use std::path::Path;
use std::process::Output;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const SECRET: &str = "sk-test-secret-never-printed";

/// Runs `coder exec` in `workspace` with a clean environment plus `env`.
async fn coder(workspace: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = workspace.join(".home");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command
        .arg("exec")
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .envs(env.iter().copied());
    tokio::time::timeout(std::time::Duration::from_secs(30), command.output())
        .await
        .expect("coder exec did not finish in 30 s")
        .unwrap()
}

fn openai_env(server: &MockModelServer) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_BASE_URL", server.openai_base_url()),
        ("OPENAI_API_KEY", SECRET.to_owned()),
        ("CODER_MODEL", "mock-model".to_owned()),
    ]
}

fn as_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn streams_the_reply_to_stdout_and_tool_lines_to_stderr() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "read", json!({"path": "hello.txt"})),
        MockResponse::stream(vec![Chunk::text("The file "), Chunk::text("says hi.")]),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hi\n").unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["what does hello.txt say?"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "The file says hi.\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("• read hello.txt → 1\thi ("),
        "stderr: {stderr}"
    );
    assert!(!stderr.contains(SECRET) && !text(&out.stdout).contains(SECRET));
    let sent = &server.requests()[0].body;
    assert_eq!(sent["messages"][1]["content"], "what does hello.txt say?");
}

#[tokio::test]
async fn json_mode_prints_every_event_as_a_line() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![
        Chunk::text("a"),
        Chunk::text("b"),
        Chunk::usage(5, 2),
    ])])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["--json", "hi"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "state_changed",
            "task_started",
            "agent_message_delta",
            "agent_message_delta",
            "agent_message",
            "token_count",
            "task_complete",
            "state_changed",
        ]
    );
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["seq"], i as u64);
        assert!(event["conversationId"].is_string());
        assert!(event["taskId"].is_string());
    }
    assert_eq!(events[5]["total"]["inputTokens"], 5);
    assert_eq!(events[6]["lastAgentMessage"], "ab");
    assert_eq!(events[7]["state"], "idle");
    assert!(!text(&out.stdout).contains(SECRET));
}

#[tokio::test]
async fn a_provider_that_keeps_failing_exits_non_zero_with_one_line() {
    let server = MockModelServer::start(vec![MockResponse::status(400)])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["hi"], &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("400"), "{stderr}");
}

#[tokio::test]
async fn no_provider_configured_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let out = coder(dir.path(), &["hi"], &[]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: no model provider configured"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);
}

#[tokio::test]
async fn a_base_url_that_is_not_http_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = coder(
        dir.path(),
        &["hi"],
        &[("OPENAI_BASE_URL", "127.0.0.1:9/v1")],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: the base URL `127.0.0.1:9/v1` (from OPENAI_BASE_URL) must start with http:// or https://\n"
    );
}

#[tokio::test]
async fn workspace_config_selects_anthropic() {
    let server = MockModelServer::start(vec![MockResponse::text("from claude")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".coder")).unwrap();
    std::fs::write(
        dir.path().join(".coder/config.json"),
        json!({
            "provider": "anthropic",
            "model": "claude-test",
            "baseUrl": server.anthropic_base_url(),
        })
        .to_string(),
    )
    .unwrap();
    let out = coder(dir.path(), &["hi"], &[("ANTHROPIC_API_KEY", SECRET)]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "from claude\n");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.body["model"], "claude-test");
}

#[tokio::test]
async fn without_a_terminal_approvals_are_denied_unless_auto_approve() {
    let script = || {
        vec![
            MockResponse::tool_call("c1", "write", json!({"path": "made.txt", "content": "x\n"})),
            MockResponse::text("ok"),
        ]
    };
    let server = MockModelServer::start(script()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["write a file"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.path().join("made.txt").exists());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("permission needed: write: made.txt"),
        "{stderr}"
    );
    let told = server.requests()[1].body["messages"][3]["content"].clone();
    assert!(told.as_str().unwrap().contains("--auto-approve"), "{told}");

    server.push(script());
    let out = coder(
        dir.path(),
        &["--auto-approve", "write a file"],
        &as_refs(&env),
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "x\n"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("• write made.txt → Created made.txt (1 lines). ("),
        "{stderr}"
    );
    assert!(stderr.contains("+++ b/made.txt"), "{stderr}");
}
