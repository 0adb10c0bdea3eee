//! `coder exec` as a user runs it: a real process, a real HTTP model.

use std::path::Path;
use std::process::Output;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

pub(crate) const SECRET: &str = "sk-test-secret-never-printed";

/// Runs `coder exec` in `workspace` with a clean environment plus `env`.
pub(crate) async fn coder(workspace: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = workspace.join(".home");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command
        .arg("exec")
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .envs(crate::suite::kept_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .envs(env.iter().copied());
    tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("coder exec did not finish in 60 s")
        .unwrap()
}

/// [`coder`] against the mock model `server`, with key `key`.
pub(crate) async fn coder_on(
    workspace: &Path,
    server: &coder_testkit::MockModelServer,
    key: &str,
    args: &[&str],
) -> Output {
    let url = server.openai_base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", key),
        ("CODER_MODEL", "mock-model"),
    ];
    coder(workspace, args, &env).await
}

/// Starts `coder exec args` in `workspace` against the mock model `server`, its output
/// piped, for a test that watches the running process.
pub(crate) fn spawn_on(
    workspace: &Path,
    server: &MockModelServer,
    args: &[&str],
) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
        .arg("exec")
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .envs(crate::suite::kept_env())
        .env("HOME", workspace.join(".home"))
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", SECRET)
        .env("CODER_MODEL", "mock-model")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

pub(crate) fn openai_env(server: &MockModelServer) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_BASE_URL", server.openai_base_url()),
        ("OPENAI_API_KEY", SECRET.to_owned()),
        ("CODER_MODEL", "mock-model".to_owned()),
    ]
}

pub(crate) fn as_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

pub(crate) fn text(bytes: &[u8]) -> String {
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
    let mut env = openai_env(&server);
    // A model coder knows: its window comes from the table, and no warning says it guessed.
    env.push(("CODER_MODEL", "gpt-4o-mini".to_owned()));
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
            "input_receipt",
            "task_started",
            "agent_message_delta",
            "agent_message_delta",
            "agent_message",
            "reply_complete",
            "token_count",
            "task_complete",
            "state_changed",
        ]
    );
    assert_eq!(events[1]["receipt"], "started");
    assert_eq!(events[1]["inputId"], events[1]["taskId"]);
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["seq"], i as u64);
        assert!(event["conversationId"].is_string());
        assert!(event["taskId"].is_string());
    }
    assert_eq!(events[2]["input"], "hi");
    assert_eq!(events[6]["text"], "ab");
    assert_eq!(events[7]["total"]["inputTokens"], 5);
    assert_eq!(events[7]["contextTokens"], 7);
    assert_eq!(events[7]["contextWindow"], 128_000);
    assert_eq!(events[8]["lastAgentMessage"], "ab");
    assert_eq!(events[9]["state"], "idle");
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
async fn a_base_url_the_http_client_cannot_parse_is_refused_at_once() {
    // It was retried four times, as if the network were down, for about 13 s.
    let dir = tempfile::tempdir().unwrap();
    let out = coder(
        dir.path(),
        &["hi"],
        &[("OPENAI_BASE_URL", "http://exa mple.com/v1")],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: the base URL `http://exa mple.com/v1` (from OPENAI_BASE_URL) is not a valid URL: invalid international domain name\n"
    );
}

#[tokio::test]
async fn a_trusted_workspace_config_selects_anthropic() {
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
    let out = coder(
        dir.path(),
        &["--trust", "hi"],
        &[("ANTHROPIC_API_KEY", SECRET)],
    )
    .await;
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
    let told = server.requests()[1].body["messages"][4]["content"].clone();
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

#[tokio::test]
async fn the_step_limit_exits_3_with_the_reason_on_stderr() {
    let calls = || {
        (0..2)
            .map(|i| MockResponse::tool_call(&format!("c{i}"), "read", json!({"path": "f.txt"})))
            .collect::<Vec<_>>()
    };
    let server = MockModelServer::start(calls()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "x\n").unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["--max-steps", "2", "loop"], &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let reasons: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("step limit"))
        .collect();
    assert_eq!(reasons.len(), 1, "{stderr}");
    assert!(
        reasons[0].contains("stopped after 2 model calls"),
        "{stderr}"
    );

    // With --json the events go to stdout; the reason still reaches stderr, once.
    server.push(calls());
    let out = coder(
        dir.path(),
        &["--json", "--max-steps", "2", "loop"],
        &as_refs(&env),
    )
    .await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: stopped after 2 model calls"),
        "{stderr}"
    );
    let last_task_event: Value = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .rfind(|event| event["type"] == "task_complete")
        .unwrap();
    assert_eq!(last_task_event["stepLimit"], 2);
}

#[tokio::test]
async fn zero_max_steps_and_an_empty_prompt_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = coder(dir.path(), &["--max-steps", "0", "hi"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--max-steps"),
        "{}",
        text(&out.stderr)
    );
    // Whitespace only is empty input, refused by the engine as by every door.
    let out = coder(dir.path(), &[" \n\t "], &[("OPENAI_API_KEY", SECRET)]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: the input is empty: give some text (not only whitespace), an image, or both\n"
    );
}

#[tokio::test]
async fn help_documents_every_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = coder(dir.path(), &["--help"], &[]).await;
    assert!(out.status.success());
    let help = text(&out.stdout);
    for code in ["0 ", "1 ", "2 ", "3 ", "101 ", "130 ", "141 "] {
        assert!(help.contains(&format!("\n  {code}")), "{code}: {help}");
    }
}

/// A bug in one of the run's tasks (a panic, asked for by `CODER_TEST_PANIC` in debug
/// builds) ends the run at once with 101 and a line saying so, instead of the run going on
/// without the task, or waiting for it forever (as a panic while starting an MCP server
/// once left `coder exec`).
#[tokio::test]
async fn a_panic_in_any_task_ends_the_run_with_101() {
    let server = MockModelServer::start(vec![MockResponse::text("never wanted")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut env = openai_env(&server);
    env.push(("CODER_TEST_PANIC", "1".to_owned()));
    let out = coder(dir.path(), &["hello"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "{stderr}");
    assert!(stderr.contains("CODER_TEST_PANIC is set"), "{stderr}");
    assert!(
        stderr.ends_with(
            "error: coder stopped on an internal error (a bug); the message above says where\n"
        ),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

/// `coder exec ... | head -1`: the reader goes away after one line of a long reply.
#[tokio::test]
async fn a_closed_stdout_ends_quietly() {
    // Far more than a pipe buffer holds, so coder is still writing when the reader leaves.
    let server = MockModelServer::start(vec![MockResponse::text_deltas(
        20_000,
        "a line of the reply\n",
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for json in [false, true] {
        if json {
            server.push([MockResponse::text_deltas(20_000, "a line of the reply\n")]);
        }
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
        command
            .arg("exec")
            .args(json.then_some("--json"))
            .arg("talk")
            .current_dir(dir.path())
            .env_clear()
            .envs(crate::suite::kept_env())
            .env("HOME", dir.path().join(".home"))
            .env("OPENAI_BASE_URL", server.openai_base_url())
            // A model coder knows, so stderr holds no warning that it guessed a window.
            .env("CODER_MODEL", "gpt-4o-mini")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        assert!(lines.next_line().await.unwrap().is_some());
        drop(lines);
        let out =
            tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
                .await
                .expect("coder exec did not end after its reader left")
                .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(141),
            "json: {json}, stderr: {stderr}"
        );
        assert_eq!(stderr, "", "json: {json}");
    }
}

/// Runs `git` in `dir`, failing the test when it fails.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.join(".git-home"))
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[tokio::test]
async fn a_run_in_a_git_repository_leaves_git_status_clean() {
    let server = MockModelServer::start(vec![MockResponse::text("done")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let env = openai_env(&server);
    let out = coder(&repo, &["hi"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sessions = repo.join(".coder/sessions");
    assert_eq!(
        std::fs::read_dir(&sessions).unwrap().count(),
        2,
        "a snapshot and its .gitignore"
    );
    assert_eq!(git(&repo, &["status", "--porcelain", "--ignored=no"]), "");
}

#[tokio::test]
async fn the_workspace_is_the_enclosing_git_root_from_a_subdirectory_or_with_cd() {
    let script = || {
        vec![
            MockResponse::tool_call("c1", "read", json!({"path": "notes.txt"})),
            MockResponse::text("read it"),
        ]
    };
    let server = MockModelServer::start(script()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let sub = repo.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), "from the root\n").unwrap();
    std::fs::create_dir(repo.join(".coder")).unwrap();
    std::fs::write(
        repo.join(".coder/config.json"),
        json!({"model": "root-config-model"}).to_string(),
    )
    .unwrap();
    let env = vec![
        ("OPENAI_BASE_URL", server.openai_base_url()),
        ("OPENAI_API_KEY", SECRET.to_owned()),
    ];
    let out = coder(&sub, &["what do the notes say?"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "root-config-model");
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("started coder in src/deep"), "{system}");
    assert_eq!(
        requests[1].body["messages"][4]["content"],
        "     1\tfrom the root\n"
    );
    assert!(repo.join(".coder/sessions").is_dir());
    assert!(!sub.join(".coder").exists());

    // -C applies the same rule to its directory.
    server.push(script());
    let out = coder(
        dir.path(),
        &["-C", sub.to_str().unwrap(), "what do the notes say?"],
        &as_refs(&env),
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests[2].body["model"], "root-config-model");
    assert_eq!(
        requests[3].body["messages"][4]["content"],
        "     1\tfrom the root\n"
    );
}

#[tokio::test]
async fn a_start_folder_that_does_not_exist_is_named_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().canonicalize().unwrap().join("no/such/folder");
    let out = coder(
        dir.path(),
        &["-C", missing.to_str().unwrap(), "hi"],
        &[("OPENAI_API_KEY", SECRET)],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: cannot open the folder {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}

#[tokio::test]
async fn unknown_config_keys_are_warned_about_once_before_the_task() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".coder")).unwrap();
    let file = dir.path().join(".coder/config.json");
    std::fs::write(&file, r#"{"maxStep": 3, "sandbox": {"enabeld": false}}"#).unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["--json", "hi"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = file.canonicalize().unwrap();
    assert_eq!(
        text(&out.stderr),
        format!(
            "warning: {0}: unknown key \"maxStep\" (did you mean \"maxSteps\"?); it is ignored\n\
             warning: {0}: unknown key \"sandbox.enabeld\" (did you mean \"enabled\"?); it is ignored\n",
            file.display()
        )
    );
    assert!(
        !text(&out.stdout).contains("unknown key"),
        "not repeated as events"
    );
}

/// A hostile config file of unknown keys: one of three million characters (its nearest
/// known key took a minute of CPU to look for in a debug build, and the warning quoted it
/// whole) and a hundred more. The warnings are short and few, and the task runs.
#[tokio::test]
async fn a_config_file_of_hostile_unknown_keys_gets_few_short_warnings() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".coder")).unwrap();
    let file = dir.path().join(".coder/config.json");
    let mut keys = serde_json::Map::new();
    keys.insert("k".repeat(3_000_000), json!(1));
    for n in 0..100 {
        keys.insert(format!("unknown{n:03}"), json!(n));
    }
    std::fs::write(&file, Value::Object(keys).to_string()).unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["hi"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "{}",
        &stderr[..stderr.len().min(2_000)]
    );
    assert!(stderr.len() < 10_000, "{} bytes of warnings", stderr.len());
    let file = file.canonicalize().unwrap();
    assert!(stderr.contains(&format!(
        "warning: {}: unknown key \"{}…\" (3000000 characters); it is ignored\n",
        file.display(),
        "k".repeat(80)
    )));
    assert!(stderr.contains(&format!(
        "warning: {}: 81 more unknown keys; they are ignored\n",
        file.display()
    )));
    let about_the_file = stderr
        .lines()
        .filter(|line| line.contains("config.json: "))
        .count();
    assert_eq!(about_the_file, 21, "{stderr}");
}

#[tokio::test]
async fn config_warnings_are_shown_even_when_no_provider_is_configured() {
    // A misspelt key may be why there is no provider: the person sees both.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".coder")).unwrap();
    std::fs::write(
        dir.path().join(".coder/config.json"),
        r#"{"provder": "openai"}"#,
    )
    .unwrap();
    let out = coder(dir.path(), &["hi"], &[]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let warning = stderr.find("unknown key \"provder\"").expect(&stderr);
    let error = stderr.find("no model provider configured").expect(&stderr);
    assert!(warning < error, "{stderr}");
}

#[tokio::test]
async fn a_prompt_over_max_prompt_bytes_is_a_usage_error_and_nothing_is_sent() {
    let server = MockModelServer::start(vec![MockResponse::text("never")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".coder")).unwrap();
    std::fs::write(
        dir.path().join(".coder/config.json"),
        json!({"maxPromptBytes": 10}).to_string(),
    )
    .unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["eleven byte"], &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "error: the prompt is 11 bytes, over the limit of 10 bytes (maxPromptBytes)\n"
    );

    // From stdin, only the limit (and one byte more) is read.
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command
        .args(["exec", "-"])
        .current_dir(dir.path())
        .env_clear()
        .envs(crate::suite::kept_env())
        .env("HOME", dir.path().join(".home"))
        .envs(as_refs(&env))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // More than a pipe holds, and never closed: coder must not wait for the end.
    let _ = tokio::io::AsyncWriteExt::write_all(&mut stdin, &[b'x'; 200_000]).await;
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("coder exec waited for the end of an oversized stdin")
        .unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: the prompt on stdin is over the limit of 10 bytes (maxPromptBytes)\n"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_handoff_completes_with_exit_0_and_the_other_conversation_apart_on_stderr() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "Summarise the plan."}),
        ),
        MockResponse::stream(vec![Chunk::text("The plan, "), Chunk::text("summarised.")]),
        MockResponse::stream(vec![Chunk::text("Root answer.")]),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["delegate"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout), "Root answer.\n", "only the root's reply");
    assert!(
        stderr.contains("]\nThe plan, summarised.\n"),
        "the child's reply is on stderr: {stderr}"
    );
    assert!(stderr.contains("[conversation "), "labelled: {stderr}");
    assert!(!stderr.contains("interrupted"), "{stderr}");
    // The person is told where the work went (seed 000), naming the conversation.
    let said = stderr
        .lines()
        .find(|line| {
            line.starts_with("the current task was replaced by conv_create; running conversation ")
        })
        .unwrap_or_else(|| panic!("the handoff is not said: {stderr}"));
    assert!(said.ends_with(", then continuing"), "{said}");
    let child = said
        .trim_start_matches("the current task was replaced by conv_create; running conversation ")
        .trim_end_matches(", then continuing");
    assert!(
        stderr.contains(&format!("[conversation {child}]")),
        "the named conversation is the one that ran: {stderr}"
    );

    // JSON mode: every event names its conversation; the run still ends with 0.
    server.push([
        MockResponse::tool_call("c2", "conv_create", json!({"user_instruction": "Again."})),
        MockResponse::text("Child again."),
        MockResponse::text("Root again."),
    ]);
    let out = coder(dir.path(), &["--json", "delegate"], &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let completes: Vec<&Value> = lines
        .iter()
        .filter(|e| e["type"] == "task_complete")
        .collect();
    assert_eq!(completes.len(), 2);
    assert_ne!(
        completes[0]["conversationId"],
        completes[1]["conversationId"]
    );
    assert_eq!(completes[1]["lastAgentMessage"], "Root again.");
    let replaced = lines.iter().find(|e| e["type"] == "turn_aborted").unwrap();
    assert_eq!(replaced["replacedBy"]["toolName"], "conv_create");
    assert_eq!(
        replaced["replacedBy"]["conversationId"],
        completes[0]["conversationId"]
    );
}

#[tokio::test]
async fn handoffs_from_one_input_stop_at_max_handoffs_per_input() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "conv_create", json!({"user_instruction": "First."})),
        MockResponse::text("first done"),
        // The continuation hands over again, and again: the chain never ends by itself.
        MockResponse::tool_call("c2", "conv_create", json!({"user_instruction": "Second."})),
        MockResponse::text("second done"),
        MockResponse::tool_call("c3", "conv_create", json!({"user_instruction": "Third."})),
        MockResponse::text("Done here."),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A workspace may lower a limit, untrusted or not.
    std::fs::create_dir_all(dir.path().join(".coder")).unwrap();
    std::fs::write(
        dir.path().join(".coder/config.json"),
        json!({"maxHandoffsPerInput": 2}).to_string(),
    )
    .unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["delegate"], &as_refs(&env)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Done here.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 6, "no third conversation ran");
    let refused = requests[5].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c3")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(refused.contains("maxHandoffsPerInput"), "{refused}");
}

#[tokio::test]
async fn without_a_terminal_a_plan_is_not_approved_and_is_the_answer() {
    let plan = "1. Add greet.\n2. Test it.";
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "p1",
        "exit_plan_mode",
        json!({"plan": plan}),
    )])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("AGENTS.md"), "Use tabs.").unwrap();
    let env = openai_env(&server);
    let out = coder(
        workspace.path(),
        &["--mode", "plan", "plan it"],
        &as_refs(&env),
    )
    .await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), format!("{plan}\n"));
    assert!(
        stderr.contains("permission needed: exit_plan_mode"),
        "{stderr}"
    );
    assert!(stderr.contains("  │ 2. Test it."), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the model is not asked again");
    let reminders = requests[0].body["messages"][2]["content"].as_str().unwrap();
    assert!(reminders.contains("AGENTS.md"), "{reminders}");
    assert!(reminders.contains("Plan mode is on."), "{reminders}");
}

#[tokio::test]
async fn without_a_terminal_a_question_is_not_asked_and_the_model_decides() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "q1",
            "ask_user",
            json!({"questions": [{"question": "Tabs or spaces?", "header": "Indent",
                "options": [{"label": "Tabs", "description": ""},
                            {"label": "Spaces", "description": ""}]}]}),
        ),
        MockResponse::text("Spaces, then."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let env = openai_env(&server);
    let out = coder(workspace.path(), &["format it"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "Spaces, then.\n");
    let requests = server.requests();
    let told = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "q1")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        told.contains("\"Tabs or spaces?\" → not asked: coder exec has no terminal to ask the user this question. Decide yourself"),
        "{told}"
    );
}

#[tokio::test]
async fn a_broken_config_file_is_named_with_its_fault_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".coder")).unwrap();
    std::fs::write(dir.path().join(".coder/config.json"), "{\"model\": ").unwrap();
    let out = coder(dir.path(), &["hi"], &[("OPENAI_API_KEY", SECRET)]).await;
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("config.json is not valid configuration: "),
        "{stderr}"
    );
    let fault = "EOF while parsing a value at line 1 column 10";
    assert_eq!(stderr.matches(fault).count(), 1, "{stderr}");
}

/// The text deltas `coder exec --json` printed, in order.
fn printed_deltas(stdout: &[u8]) -> Vec<String> {
    text(stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "agent_message_delta")
        .map(|event| event["delta"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_burst_of_deltas_is_printed_joined_and_whole_while_a_trickle_is_printed_as_it_comes() {
    let dir = tempfile::tempdir().unwrap();
    // A reply written at once (a local server, a burst after a stall): what one read of the
    // body brings is one event, and no text is lost or reordered.
    let pieces: Vec<String> = (0..2000).map(|i| format!("{i} ")).collect();
    let chunks: Vec<Chunk> = pieces.iter().map(|piece| Chunk::text(piece)).collect();
    let server = MockModelServer::start(vec![MockResponse::prerendered(&chunks)])
        .await
        .unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["--json", "count"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let deltas = printed_deltas(&out.stdout);
    assert_eq!(deltas.concat(), pieces.concat());
    assert!(
        deltas.len() < 200,
        "{} delta events for 2,000 pieces",
        deltas.len()
    );

    // A reply that trickles in is shown piece by piece: nothing waits for what follows.
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::text("one "),
            Chunk::text("two "),
            Chunk::text("three"),
        ])
        .with_delay(150),
    ])
    .await
    .unwrap();
    let env = openai_env(&server);
    let out = coder(dir.path(), &["--json", "count slowly"], &as_refs(&env)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(printed_deltas(&out.stdout), ["one ", "two ", "three"]);
}

/// The inotify instances `pid` holds (links in `/proc/<pid>/fd`).
pub(super) fn inotify_instances(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().contains("inotify"))
        .count()
}

/// `coder exec` runs one task: it reads the rules at that task's start and watches
/// nothing, so its exit is not held by the kernel releasing an inotify instance (4 to 20 ms
/// a run, docs/benchmarks.md).
#[tokio::test]
async fn exec_reads_the_rules_at_its_task_and_watches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Always answer in haiku.").unwrap();
    let server = MockModelServer::start(vec![MockResponse::text("done").with_delay(1_000)])
        .await
        .unwrap();
    let child = spawn_on(dir.path(), &server, &["hello"]);
    let pid = child.id().unwrap();
    assert!(
        server
            .wait_for(std::time::Duration::from_secs(30), |requests| requests
                .len()
                == 1)
            .await,
        "no request reached the model"
    );
    let watching = inotify_instances(pid);
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("coder exec did not finish")
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(watching, 0, "coder exec holds an inotify instance");
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("Always answer in haiku."), "{system}");
}

/// `coder exec --json` prints a running command's lines as they come: the first arrives
/// while the command still runs (the file it writes last does not exist yet).
#[tokio::test]
async fn json_mode_prints_a_running_command_s_lines_before_it_ends() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "for i in 1 2 3; do echo tick $i; sleep 1; done; touch ended"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_on(dir.path(), &server, &["--json", "--auto-approve", "count"]);
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let mut first_line_before_the_end = None;
    let mut streamed = String::new();
    while let Some(line) =
        tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
            .await
            .expect("coder exec stopped writing")
            .unwrap()
    {
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "tool_call_output_delta" {
            first_line_before_the_end.get_or_insert(!dir.path().join("ended").exists());
            streamed.push_str(event["delta"].as_str().unwrap());
        }
    }
    assert!(child.wait().await.unwrap().success());
    assert_eq!(first_line_before_the_end, Some(true));
    assert_eq!(streamed, "tick 1\ntick 2\ntick 3\n");
}
