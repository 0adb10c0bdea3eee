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
