//! `coder lsp` driven over real stdio with LSP framing, against the mock model.

use std::process::Stdio;
use std::time::Duration;

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A minimal LSP client: framed JSON-RPC over the child's stdio.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Client {
    fn start(workspace: &std::path::Path, server: &MockModelServer, preset: &str) -> Self {
        std::fs::create_dir_all(workspace.join(".coder")).unwrap();
        std::fs::write(
            workspace.join(".coder/config.json"),
            json!({"permissions": {"preset": preset}}).to_string(),
        )
        .unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
            .args(["lsp", "--stdio"])
            .current_dir(workspace)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", workspace)
            .env("OPENAI_BASE_URL", server.openai_base_url())
            .env("OPENAI_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    async fn write(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.stdin.write_all(frame.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let read = async {
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                self.stdout.read_line(&mut line).await.unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(value) = line.strip_prefix("Content-Length: ") {
                    length = value.parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            self.stdout.read_exact(&mut body).await.unwrap();
            serde_json::from_slice(&body).unwrap()
        };
        tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .expect("no message from coder lsp within 20 s")
    }

    /// Sends a request and returns its response, collecting what arrives meanwhile.
    async fn request(&mut self, method: &str, params: Value, seen: &mut Vec<Value>) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.read().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            seen.push(message);
        }
    }
}

fn event_types(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "conversation/event")
        .map(|m| m["params"]["event"]["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_conversation_over_stdio_with_a_permission_request() {
    let server = MockModelServer::start(vec![
        MockResponse::text("Hello from coder."),
        MockResponse::tool_call("w", "write", json!({"path": "made.txt", "content": "x\n"})),
        MockResponse::text("Written."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let mut seen = Vec::new();

    let init = client
        .request("initialize", json!({"capabilities": {}}), &mut seen)
        .await;
    let coder = &init["result"]["capabilities"]["experimental"]["coder"];
    assert_eq!(coder["protocolVersion"], "0.1");
    assert!(
        coder["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("conversation/send"))
    );
    client
        .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;

    let created = client
        .request("conversation/create", json!({}), &mut seen)
        .await;
    let conversation = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let sent = client
        .request(
            "conversation/send",
            json!({"conversationId": conversation, "text": "hi"}),
            &mut seen,
        )
        .await;
    let task = sent["result"]["taskId"].as_str().unwrap().to_owned();
    while !event_types(&seen).contains(&"task_complete".to_owned()) {
        seen.push(client.read().await);
    }
    let events: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "conversation/event")
        .map(|m| &m["params"]["event"])
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["conversationId"] == conversation.as_str())
    );
    assert!(events.iter().any(|e| e["taskId"] == task.as_str()));
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "agent_message_delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello from coder.");
    for pair in events.windows(2) {
        assert_eq!(
            pair[1]["seq"].as_u64().unwrap(),
            pair[0]["seq"].as_u64().unwrap() + 1
        );
    }

    // A write asks the editor, which allows it.
    seen.clear();
    client
        .request(
            "conversation/send",
            json!({"conversationId": conversation, "text": "write a file"}),
            &mut seen,
        )
        .await;
    let ask = loop {
        let message = client.read().await;
        if message["method"] == "permission/request" {
            break message;
        }
        seen.push(message);
    };
    assert_eq!(ask["params"]["toolName"], "write");
    assert_eq!(ask["params"]["conversationId"], conversation.as_str());
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_once"}}))
        .await;
    let mut completed = 0;
    while completed == 0 {
        let message = client.read().await;
        if message["params"]["event"]["type"] == "task_complete" {
            completed += 1;
        }
    }
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("made.txt")).unwrap(),
        "x\n"
    );

    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert_eq!(list["result"]["conversations"].as_array().unwrap().len(), 2);
    let unknown = client
        .request(
            "conversation/send",
            json!({"conversationId": "00000000-0000-0000-0000-000000000000", "text": "x"}),
            &mut seen,
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602);

    client.request("shutdown", Value::Null, &mut seen).await;
    client
        .write(json!({"jsonrpc": "2.0", "method": "exit"}))
        .await;
    let status = tokio::time::timeout(Duration::from_secs(10), client.child.wait())
        .await
        .expect("coder lsp did not exit")
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn bad_input_gets_errors_and_the_server_keeps_serving() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let mut seen = Vec::new();

    let early = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert_eq!(early["error"]["code"], -32002, "{early}");

    let body = "{not json";
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    client.stdin.write_all(frame.as_bytes()).await.unwrap();
    let parse_error = client.read().await;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    client
        .stdin
        .write_all(b"Content-Type: nothing-else\r\n\r\n")
        .await
        .unwrap();
    let header_error = client.read().await;
    assert_eq!(header_error["error"]["code"], -32700, "{header_error}");

    let init = client
        .request("initialize", json!({"capabilities": {}}), &mut seen)
        .await;
    assert!(init["result"]["capabilities"].is_object());
    client
        .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    let unknown = client
        .request("conversation/fly", json!({}), &mut seen)
        .await;
    assert_eq!(unknown["error"]["code"], -32601);
    let invalid = client
        .request("conversation/send", json!({"conversationId": 7}), &mut seen)
        .await;
    assert_eq!(invalid["error"]["code"], -32602);
    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert_eq!(list["result"]["conversations"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_client_that_goes_away_mid_task_ends_the_task_and_the_server() {
    let server =
        MockModelServer::start(vec![MockResponse::text_deltas(500, "slow ").with_delay(20)])
            .await
            .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let mut seen = Vec::new();
    client
        .request("initialize", json!({"capabilities": {}}), &mut seen)
        .await;
    client
        .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    let root = list["result"]["conversations"][0]["id"].clone();
    client
        .request(
            "conversation/send",
            json!({"conversationId": root, "text": "talk"}),
            &mut seen,
        )
        .await;
    while !seen
        .iter()
        .any(|m| m["params"]["event"]["type"] == "agent_message_delta")
    {
        seen.push(client.read().await);
    }
    let Client {
        mut child, stdin, ..
    } = client;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("coder lsp did not exit after stdin closed")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        server
            .wait_for(Duration::from_secs(5), |r| r[0].client_disconnected)
            .await,
        "the model stream was still being read"
    );
}
