//! `coder lsp` over the kinds of stdio editors give it: Node (every VS Code extension) and
//! Neovim start their servers with Unix socket pairs, not pipes (libuv makes a child's
//! stdio that way), and some clients hand one socket for both directions. The server reads
//! and writes them as non-blocking streams of its runtime; a whole task streams over each.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};

/// A framed JSON-RPC client over any pair of streams.
struct Peer<R, W> {
    input: BufReader<R>,
    output: W,
    next_id: i64,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Peer<R, W> {
    async fn write(&mut self, message: Value) {
        super::write_frame(&mut self.output, &message).await;
    }

    async fn read(&mut self) -> Value {
        super::read_frame(&mut self.input).await
    }

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

    /// The handshake, a conversation, and one task whose reply streams in 300 deltas: every
    /// delta's text arrives, in order, before `task_complete`.
    async fn one_task(&mut self) {
        let mut seen = Vec::new();
        let init = self.request("initialize", json!({"capabilities": {}}), &mut seen);
        assert!(init.await.get("result").is_some());
        self.write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            .await;
        let created = self
            .request("conversation/create", json!({}), &mut seen)
            .await;
        let conversation = created["result"]["conversationId"].clone();
        let sent = self
            .request(
                "conversation/send",
                json!({"conversationId": conversation, "text": "go"}),
                &mut seen,
            )
            .await;
        assert!(sent["result"]["taskId"].is_string(), "{sent}");
        let mut text = String::new();
        let mut events = seen.into_iter();
        loop {
            let message = match events.next() {
                Some(message) => message,
                None => self.read().await,
            };
            let event = &message["params"]["event"];
            match event["type"].as_str() {
                Some("agent_message_delta") => text.push_str(event["delta"].as_str().unwrap()),
                Some("task_complete") => {
                    assert!(event["error"].is_null(), "{event}");
                    break;
                }
                _ => {}
            }
        }
        let expected: String = (0..300).map(|n| format!("w{n} ")).collect();
        assert_eq!(text, expected);
        self.write(json!({"jsonrpc": "2.0", "id": 0, "method": "shutdown"}))
            .await;
        self.write(json!({"jsonrpc": "2.0", "method": "exit"}))
            .await;
    }
}

fn reply() -> MockResponse {
    MockResponse::stream((0..300).map(|n| Chunk::text(&format!("w{n} "))).collect())
}

/// `coder lsp` with `stdin` and `stdout` as given, against `server`.
fn spawn(
    workspace: &std::path::Path,
    server: &MockModelServer,
    stdin: Stdio,
    stdout: Stdio,
) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
        .args(["lsp", "--stdio"])
        .current_dir(workspace)
        .env_clear()
        .envs(crate::suite::kept_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "k")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// One end of a new socket pair for the child, the other as the test's stream.
fn socket_pair() -> (OwnedFd, tokio::net::UnixStream) {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    (
        theirs.into(),
        tokio::net::UnixStream::from_std(ours).unwrap(),
    )
}

async fn ends_by_itself(mut child: tokio::process::Child) {
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("coder lsp did not exit after `exit`")
        .unwrap();
    assert!(status.success(), "{status}");
}

/// One task through `coder lsp` whose stdin and stdout are `child_in` and `child_out`,
/// the test reading `input` and writing `output`; then `exit`, and the server ends.
async fn one_task_over(
    (child_in, child_out): (OwnedFd, OwnedFd),
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin,
) {
    let workspace = tempfile::tempdir().unwrap();
    let server = MockModelServer::start(vec![reply()]).await.unwrap();
    let child = spawn(workspace.path(), &server, child_in.into(), child_out.into());
    let mut peer = Peer {
        input: BufReader::new(input),
        output,
        next_id: 1,
    };
    peer.one_task().await;
    ends_by_itself(child).await;
}

#[tokio::test]
async fn a_task_streams_over_socket_pairs_as_node_and_neovim_connect_them() {
    let (child_in, ours_in) = socket_pair();
    let (child_out, ours_out) = socket_pair();
    one_task_over((child_in, child_out), ours_out, ours_in).await;
}

#[tokio::test]
async fn a_task_streams_over_one_socket_for_both_directions() {
    let (child_end, ours) = socket_pair();
    let child_out = child_end.try_clone().unwrap();
    let (read, write) = ours.into_split();
    one_task_over((child_end, child_out), read, write).await;
}
