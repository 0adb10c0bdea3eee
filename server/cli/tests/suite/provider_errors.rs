//! Provider errors a person can act on, as `coder exec` prints them.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

const SECRET: &str = "sk-test-secret-never-printed";

async fn coder(workspace: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command
        .args(["exec", "hi"])
        .current_dir(workspace)
        .env_clear()
        .env("HOME", workspace.join(".home"))
        .envs(env.iter().copied())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("coder exec did not finish in 30 s")
        .unwrap()
}

/// The one `error:` line of a run that failed, after checking there is exactly one.
fn the_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(!stderr.contains(SECRET));
    errors[0].to_owned()
}

#[tokio::test]
async fn a_401_says_to_check_the_key_and_where_it_came_from() {
    let server = MockModelServer::start(vec![MockResponse::status(401), MockResponse::status(401)])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai_base_url();
    let out = coder(
        dir.path(),
        &[("OPENAI_BASE_URL", &url), ("OPENAI_API_KEY", SECRET)],
    )
    .await;
    let error = the_error(&out);
    assert!(
        error.contains("401") && error.contains("check the API key: it came from OPENAI_API_KEY"),
        "{error}"
    );

    // A key from a config file names the file (the user-level one: a key goes only to an
    // endpoint named by the same file).
    std::fs::create_dir_all(dir.path().join(".home/.config/coder")).unwrap();
    let file = dir.path().join(".home/.config/coder/config.json");
    std::fs::write(
        &file,
        json!({"provider": "openai", "baseUrl": url, "apiKey": SECRET}).to_string(),
    )
    .unwrap();
    let out = coder(dir.path(), &[]).await;
    let error = the_error(&out);
    let named = format!("it came from \"apiKey\" in {}", file.display());
    assert!(error.contains(&named), "{error}");
    assert_eq!(server.requests().len(), 2, "a 401 is not retried");
}

#[tokio::test]
async fn a_404_says_to_check_the_model_name_and_the_v1_in_the_base_url() {
    let server = MockModelServer::start(vec![MockResponse::status(404)])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The base URL without `/v1`, a common mistake.
    let url = server.anthropic_base_url();
    let out = coder(
        dir.path(),
        &[("OPENAI_BASE_URL", &url), ("CODER_MODEL", "no-such-model")],
    )
    .await;
    let error = the_error(&out);
    assert!(
        error.contains("404")
            && error.contains("check the model name \"no-such-model\"")
            && error.contains("whether the base URL needs /v1")
            && error.contains(&format!("{url}/v1/chat/completions")),
        "{error}"
    );
}

#[tokio::test]
async fn nothing_listening_on_a_loopback_address_is_said_at_once_without_retries() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = coder(dir.path(), &[("OPENAI_BASE_URL", &url)]).await;
    let error = the_error(&out);
    assert!(
        error.contains(&format!("nothing is listening at {url}/chat/completions"))
            && error.contains("the model server may have stopped"),
        "{error}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("retrying"), "{stderr}");
}

/// Every file under `dir`, read as text.
fn all_files(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(all_files(&path));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            found.push((path, text));
        }
    }
    found
}

#[tokio::test]
async fn a_long_retry_after_is_capped_by_max_delay_ms() {
    let server = MockModelServer::start(vec![
        MockResponse::rate_limited(100),
        MockResponse::text("made it"),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join(".coder-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.json"),
        json!({"retry": {"initialDelayMs": 10, "maxDelayMs": 50}}).to_string(),
    )
    .unwrap();
    // A repository that raises the cap is not believed: limits only go down until the
    // folder is trusted.
    std::fs::create_dir_all(dir.path().join(".coder")).unwrap();
    std::fs::write(
        dir.path().join(".coder/config.json"),
        json!({"retry": {"maxDelayMs": 3_600_000}}).to_string(),
    )
    .unwrap();
    let url = server.openai_base_url();
    let home = home.to_string_lossy().into_owned();
    // The outer timeout (30 s) only guards against a hang: honouring the provider's 100 s
    // would pass it.
    let out = coder(
        dir.path(),
        &[("OPENAI_BASE_URL", &url), ("CODER_HOME", &home)],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "made it\n");
    assert!(
        stderr.contains("retrying in 0.1s (retry 1 of 4)"),
        "{stderr}"
    );
    assert!(stderr.contains("retry.maxDelayMs"), "{stderr}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_error_body_echoing_the_key_is_redacted_everywhere() {
    let echo = |status| MockResponse::Status {
        status,
        body: format!(
            "{{\"error\":{{\"message\":\"Incorrect API key provided: {SECRET}\",\"headers\":\"Authorization: Bearer {SECRET}\"}}}}"
        ),
        retry_after_secs: Some(0),
    };
    let server = MockModelServer::start(vec![echo(500), echo(400)])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai_base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", SECRET),
    ];
    let out = coder(dir.path(), &env).await;
    // One retry (its warning) and the final error, both shown without the key.
    let error = the_error(&out);
    assert!(
        error.contains("Incorrect API key provided: [redacted]")
            && error.contains("Authorization: Bearer [redacted]"),
        "{error}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the model provider answered 500"),
        "{stderr}"
    );

    // The events of `--json` and the session file hold no key either.
    server.push([echo(500), echo(400)]);
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command
        .args(["exec", "--json", "hi"])
        .current_dir(dir.path())
        .env_clear()
        .env("HOME", dir.path().join(".home"))
        .envs(env)
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("coder exec did not finish in 30 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[redacted]"), "{stdout}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains(SECRET));
    let files = all_files(dir.path());
    assert!(
        files
            .iter()
            .any(|(path, _)| path.starts_with(dir.path().join(".coder")))
    );
    for (path, text) in files {
        assert!(!text.contains(SECRET), "{} holds the key", path.display());
    }
}

#[tokio::test]
async fn a_conversation_too_long_for_the_model_says_so_and_its_kind_is_in_the_json() {
    let body = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let refusal = || MockResponse::Status {
        status: 400,
        body: body.to_owned(),
        retry_after_secs: None,
    };
    let server = MockModelServer::start(vec![refusal(), refusal()])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai_base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", SECRET),
    ];
    let error = the_error(&coder(dir.path(), &env).await);
    assert!(
        error.contains("no longer fits the model's context window"),
        "{error}"
    );

    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command
        .args(["exec", "--json", "hi"])
        .current_dir(dir.path())
        .env_clear()
        .env("HOME", dir.path().join(".home"))
        .envs(env)
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("coder exec did not finish in 30 s")
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "error" || e["type"] == "task_complete")
        .map(|e| {
            if e["type"] == "error" {
                &e["kind"]
            } else {
                &e["error"]
            }
        })
        .collect();
    assert_eq!(kinds, [&json!("context_length_exceeded"); 2]);
}

/// A stream that breaks after some text is asked for again, and the partial reply is
/// discarded: `coder exec`'s stdout (a pipe here) holds what the history keeps, never the
/// first attempt's text.
#[tokio::test]
async fn a_dropped_streams_partial_reply_does_not_stay_on_stdout() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            coder_testkit::Chunk::text("half an ans"),
            coder_testkit::Chunk::text("wer that "),
            coder_testkit::Chunk::text("breaks"),
        ])
        .with_delay(10)
        .with_fault(coder_testkit::StreamFault::Drop { after: 4 }),
        MockResponse::text("the whole answer"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let url = server.openai_base_url();
    let out = coder(
        workspace.path(),
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("OPENAI_API_KEY", SECRET),
            ("CODER_MODEL", "mock-model"),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("discarded"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "the whole answer\n");
}
