//! `coder exec` against a real model: llama.cpp's OpenAI-compatible server running
//! SmolLM2-135M-Instruct. The model is tiny, so this asserts on protocol behaviour (deltas
//! stream, usage is reported, the task completes), never on its words.
//!
//! Run it with `scripts/with-local-model.sh cargo test -p coder --features local-model-tests
//! --test local_model`; the script starts the server and sets `OPENAI_BASE_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;

/// `coder exec ARGS` in `workspace` against the server at `base_url`, as model `smollm2`,
/// with no key and the workspace as home.
async fn exec(workspace: &std::path::Path, base_url: &str, args: &[&str]) -> std::process::Output {
    tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
            .arg("exec")
            .args(args)
            .current_dir(workspace)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("HOME", workspace)
            .env("OPENAI_BASE_URL", base_url)
            .env("CODER_MODEL", "smollm2")
            .output(),
    )
    .await
    .expect("coder exec took over 5 minutes")
    .unwrap()
}

#[tokio::test]
async fn a_real_model_streams_reports_usage_and_completes() {
    let base_url = std::env::var("OPENAI_BASE_URL")
        .expect("OPENAI_BASE_URL is not set: run this test through scripts/with-local-model.sh");
    let workspace = tempfile::tempdir().unwrap();
    let output = exec(
        workspace.path(),
        &base_url,
        &[
            "--json",
            "--max-steps",
            "3",
            "Say hello in one short sentence.",
        ],
    )
    .await;
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
    let output = exec(
        workspace.path(),
        &mock.openai_base_url(),
        &["--auto-approve", "What do the notes say?"],
    )
    .await;
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

/// One HTTP exchange relayed to `upstream`, the request's JSON body changed by `change`.
/// The answer is relayed whole, as it came.
async fn relay(
    mut client: tokio::net::TcpStream,
    upstream: &str,
    change: impl FnOnce(&mut Value),
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = Vec::new();
    let mut buffer = [0u8; 65536];
    let (head_end, length) = loop {
        let read = client.read(&mut buffer).await?;
        if read == 0 {
            return Ok(());
        }
        request.extend_from_slice(&buffer[..read]);
        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while request.len() < head_end + length {
        let read = client.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        request.extend_from_slice(&buffer[..read]);
    }
    let head = String::from_utf8_lossy(&request[..head_end]).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut body: Value = serde_json::from_slice(&request[head_end..]).unwrap_or(Value::Null);
    change(&mut body);
    let answer = reqwest::Client::new()
        .post(format!("{upstream}{path}"))
        .json(&body)
        .send()
        .await
        .map_err(std::io::Error::other)?;
    let status = answer.status();
    let bytes = answer.bytes().await.map_err(std::io::Error::other)?;
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        bytes.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(&bytes).await?;
    client.shutdown().await
}

/// Tool calling through the prompt with the real model: coder describes the tools in the
/// prompt (the default for SmolLM2), the model writes a call, coder reads it from the text
/// and runs it, and the result goes back as text. The model is too small to choose a call
/// by itself, so a relay in front of the server adds a grammar to the first request that
/// makes it write this one (llama.cpp's `grammar`); what it writes, what coder does with it
/// and the second request are all real.
#[tokio::test]
async fn the_real_model_calls_a_tool_through_the_prompt() {
    let base_url = std::env::var("OPENAI_BASE_URL")
        .expect("OPENAI_BASE_URL is not set: run this test through scripts/with-local-model.sh");
    let upstream = base_url.trim_end_matches("/v1").to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let recorded = seen.clone();
    let relaying = tokio::spawn(async move {
        // Two model calls: the forced call, then the answer after its result.
        for turn in 0..2 {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let recorded = recorded.clone();
            relay(client, &upstream, move |body| {
                recorded.lock().unwrap().push(body.clone());
                if turn == 0 {
                    body["grammar"] = Value::String(
                        r#"root ::= "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>""#
                            .to_owned(),
                    );
                }
                body["max_tokens"] = serde_json::json!(48);
            })
            .await
            .unwrap();
        }
    });
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("notes.txt"),
        "The meeting is at noon.\n",
    )
    .unwrap();
    let output = exec(
        workspace.path(),
        &relay_url,
        &["--json", "--max-steps", "2", "What do the notes say?"],
    )
    .await;
    relaying.abort();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };
    let completed = of_type("tool_call_completed");
    assert_eq!(completed.len(), 1, "{stderr} {events:#?}");
    assert_eq!(completed[0]["toolName"], "read");
    assert!(
        completed[0]["output"]
            .as_str()
            .unwrap()
            .contains("The meeting is at noon."),
        "{}",
        completed[0]
    );
    // The block was never shown as text.
    let shown: String = of_type("agent_message_delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(!shown.contains("<tool_call>"), "{shown}");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(
            request.get("tools").is_none(),
            "tools went natively: {request}"
        );
    }
    let second = requests[1]["messages"].as_array().unwrap();
    assert!(
        second.iter().any(|m| m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(|text| text.starts_with("<tool_response name=\"read\">"))),
        "{second:#?}"
    );
    assert_eq!(of_type("task_complete").len(), 1);
}
