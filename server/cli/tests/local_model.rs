//! `coder exec` against a real model: llama.cpp's OpenAI-compatible server running
//! SmolLM2-135M-Instruct. The model is tiny, so this asserts on protocol behaviour (deltas
//! stream, usage is reported, the task completes), never on its words.
//!
//! Run it with `scripts/with-local-model.sh cargo test -p coder --features local-model-tests
//! --test local_model`; the script starts the server and sets `OPENAI_BASE_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;

#[tokio::test]
async fn a_real_model_streams_reports_usage_and_completes() {
    let base_url = std::env::var("OPENAI_BASE_URL")
        .expect("OPENAI_BASE_URL is not set: run this test through scripts/with-local-model.sh");
    let workspace = tempfile::tempdir().unwrap();
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
            .args([
                "exec",
                "--json",
                "--max-steps",
                "3",
                "Say hello in one short sentence.",
            ])
            .current_dir(workspace.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("HOME", workspace.path())
            .env("OPENAI_BASE_URL", &base_url)
            .output(),
    )
    .await
    .expect("coder exec against the local model took over 5 minutes")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "coder exec failed: {stderr}");

    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };

    for (i, event) in events.iter().enumerate() {
        assert_eq!(
            event["seq"], i as u64,
            "events arrive in seq order without gaps"
        );
    }
    assert_eq!(of_type("task_started").len(), 1);
    let deltas = of_type("agent_message_delta");
    assert!(
        deltas.len() > 1,
        "the reply streamed in pieces: {events:#?}"
    );
    let streamed: String = deltas
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    let usage = of_type("token_count");
    assert!(!usage.is_empty(), "usage was reported");
    assert!(usage[0]["last"]["inputTokens"].as_u64().unwrap() > 0);
    assert!(usage[0]["last"]["outputTokens"].as_u64().unwrap() > 0);
    let complete = of_type("task_complete");
    assert_eq!(complete.len(), 1);
    let last = complete[0]["lastAgentMessage"].as_str().unwrap_or_default();
    assert!(
        !last.is_empty() && streamed.contains(last),
        "{last:?} vs {streamed:?}"
    );
    assert!(of_type("error").is_empty(), "{stderr}");
    assert_eq!(events.last().unwrap()["state"], "idle");
}

/// A session snapshot is a Chat Completions request: its `messages` and `tools`, sent as
/// they are to the local llama.cpp server and to the mock, are accepted by both.
#[tokio::test]
async fn a_saved_session_replays_against_the_local_server_and_the_mock() {
    use coder_testkit::{Chunk, MockModelServer, MockResponse};

    let base_url = std::env::var("OPENAI_BASE_URL")
        .expect("OPENAI_BASE_URL is not set: run this test through scripts/with-local-model.sh");
    // A session with a tool call, its result and a reply, recorded against the mock.
    let mock = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::thinking("Read the notes first."),
            Chunk::tool_call("call_1", "read", serde_json::json!({"path": "notes.txt"})),
            Chunk::usage(50, 10),
        ]),
        MockResponse::stream(vec![
            Chunk::text("The notes say hello."),
            Chunk::usage(80, 5),
        ]),
        MockResponse::text("Replayed."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "hello\n").unwrap();
    // Only `read` besides the conversation tools, so the request fits the small model's
    // context.
    let disabled: Vec<String> = coder_core::tools::ToolRegistry::builtin()
        .iter()
        .map(|tool| tool.name().to_owned())
        .filter(|name| name != "read")
        .collect();
    std::fs::create_dir_all(workspace.path().join(".coder")).unwrap();
    std::fs::write(
        workspace.path().join(".coder/config.json"),
        serde_json::json!({"tools": {"disabled": disabled}}).to_string(),
    )
    .unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
        .args(["exec", "--auto-approve", "What do the notes say?"])
        .current_dir(workspace.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("HOME", workspace.path())
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .env("CODER_MODEL", "smollm2")
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sessions = workspace.path().join(".coder/sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "json"))
        .expect("coder exec saved its session");
    let saved: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let messages = saved["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles[0], "system");
    assert!(roles.contains(&"tool"), "{roles:?}");
    assert_eq!(*roles.last().unwrap(), "assistant");

    let request = serde_json::json!({
        "model": saved["model"],
        "messages": saved["messages"],
        "tools": saved["tools"],
        "max_tokens": 4,
        "stream": false,
    });
    let client = reqwest::Client::new();
    for url in [base_url.clone(), mock.openai_base_url()] {
        let answer = client
            .post(format!("{url}/chat/completions"))
            .json(&request)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let body = answer.text().await.unwrap();
        assert!(
            status.is_success(),
            "{url} refused the snapshot: {status} {body}"
        );
    }
    // The mock saw the snapshot's messages as they are.
    assert_eq!(
        mock.requests().last().unwrap().body["messages"],
        saved["messages"]
    );
}
