//! `coder lsp` driven over real stdio with LSP framing, against the mock model.

mod backpressure;
mod clear;
mod commands_and_skills;
mod compaction;
mod complete_paths;
mod conversations;
mod documents;
mod faults;
mod fuzz;
mod hostile_mcp;
pub(crate) mod hostile_repository;
mod hostile_sessions;
mod idle;
mod large_files;
mod lasting_rules;
mod live_output;
mod mcp_context;
mod mcp_progress;
mod mcp_shutdown;
mod permissions;
mod plan_mode;
mod protocol;
mod redecide;
mod reload;
mod reload_config;
mod reload_mcp;
mod replay;
mod rewind;
mod sessions;
mod setup;
mod stale_writes;
mod stdio;
mod steering;
mod tool_kinds;
mod trust;

use std::process::Stdio;
use std::time::Duration;

use coder_testkit::MockModelServer;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Writes `message` as one LSP frame.
pub(super) async fn write_frame(output: &mut (impl AsyncWrite + Unpin), message: &Value) {
    let body = message.to_string();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    output.write_all(frame.as_bytes()).await.unwrap();
    output.flush().await.unwrap();
}

/// How long a test waits for the next message before it counts as a hang.
const READ_LIMIT: Duration = Duration::from_secs(20);

/// Reads the next LSP frame's body, however long it takes.
async fn read_body(input: &mut (impl AsyncBufRead + Unpin)) -> String {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        assert!(
            input.read_line(&mut line).await.unwrap() > 0,
            "coder lsp closed its output"
        );
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await.unwrap();
    String::from_utf8(body).unwrap()
}

/// A minimal LSP client: framed JSON-RPC over the child's stdio (pipes unless a test
/// connects it otherwise).
pub(super) struct Client<W = ChildStdin, R = ChildStdout> {
    pub child: Child,
    pub stdin: W,
    stdout: BufReader<R>,
    next_id: i64,
    /// The last messages read, shown when the next one does not come.
    recent: std::collections::VecDeque<String>,
}

/// `coder lsp` in `cwd` with a clean environment plus `env` (no provider unless `env`
/// names one), `HOME` in `cwd`; stdin and stdout are for the caller to set.
pub(super) fn lsp_command(cwd: &std::path::Path, env: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command
        .args(["lsp", "--stdio"])
        .current_dir(cwd)
        .env_clear()
        .envs(crate::suite::kept_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", cwd)
        .envs(env.iter().copied())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    command
}

impl Client {
    pub fn start(workspace: &std::path::Path, server: &MockModelServer, preset: &str) -> Self {
        Self::start_with(workspace, server, preset, &[])
    }

    /// Starts `coder lsp` in `workspace` with the permission `preset` and extra environment.
    pub fn start_with(
        workspace: &std::path::Path,
        server: &MockModelServer,
        preset: &str,
        env: &[(&str, &str)],
    ) -> Self {
        // The person's own setting, in the user-level file (`HOME` is the workspace): a
        // workspace file may only narrow it.
        std::fs::create_dir_all(workspace.join(".coder")).unwrap();
        std::fs::create_dir_all(workspace.join(".config/coder")).unwrap();
        std::fs::write(
            workspace.join(".config/coder/config.json"),
            json!({"permissions": {"preset": preset}}).to_string(),
        )
        .unwrap();
        let base_url = server.openai_base_url();
        let mut all = vec![
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", "k"),
        ];
        all.extend_from_slice(env);
        Self::spawn(workspace, &all)
    }

    /// Starts `coder lsp` in `cwd` with a clean environment plus `env` (no provider unless
    /// `env` names one), `HOME` in `cwd`.
    pub fn spawn(cwd: &std::path::Path, env: &[(&str, &str)]) -> Self {
        let mut child = lsp_command(cwd, env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        Client::over(child, stdin, stdout)
    }

    /// [`Client::start`], `initialize` without options, and the root conversation's id.
    pub async fn ready(
        workspace: &std::path::Path,
        server: &MockModelServer,
        preset: &str,
    ) -> (Self, String) {
        let mut client = Self::start(workspace, server, preset);
        client.initialize(json!({})).await;
        let root = client.root().await;
        (client, root)
    }

    /// [`Client::start`], then `initialize` with the workspace trusted by the editor
    /// (`trustWorkspace`): its own `.coder/config.json` and `.mcp.json` apply whole.
    pub async fn trusted(
        workspace: &std::path::Path,
        server: &MockModelServer,
        preset: &str,
    ) -> Self {
        let mut client = Self::start(workspace, server, preset);
        client
            .initialize_with(
                json!({"capabilities": {}, "initializationOptions": {"trustWorkspace": true}}),
            )
            .await;
        client
    }

    /// [`Client::start`], `initialize` without options, and the new session's id and root
    /// conversation.
    pub async fn session(
        workspace: &std::path::Path,
        server: &MockModelServer,
        preset: &str,
    ) -> (Self, String, String) {
        let mut client = Self::start(workspace, server, preset);
        let init = client.initialize(json!({})).await;
        let session = session_id(&init);
        let root = client.root().await;
        (client, session, root)
    }

    /// [`Client::start`] and an `initialize` that resumes `session`; what arrives before its
    /// answer (a resume's warnings) goes to `seen`.
    pub async fn resuming(
        workspace: &std::path::Path,
        server: &MockModelServer,
        preset: &str,
        session: &str,
        seen: &mut Vec<Value>,
    ) -> (Self, Value) {
        let mut client = Self::start(workspace, server, preset);
        let init = client
            .request(
                "initialize",
                json!({"capabilities": {}, "initializationOptions": {"sessionId": session}}),
                seen,
            )
            .await;
        if init.get("result").is_some() {
            client
                .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                .await;
        }
        (client, init)
    }
}

impl<W: AsyncWrite + Unpin, R: AsyncRead + Unpin> Client<W, R> {
    /// A client of `child` that writes to `stdin` and reads `stdout`.
    pub fn over(child: Child, stdin: W, stdout: R) -> Self {
        Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            next_id: 1,
            recent: std::collections::VecDeque::new(),
        }
    }

    pub async fn write(&mut self, message: Value) {
        write_frame(&mut self.stdin, &message).await;
    }

    pub async fn write_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    pub async fn read(&mut self) -> Value {
        serde_json::from_str(&self.read_text().await).unwrap()
    }

    /// The next message's body, byte for byte. A hang fails the test with the last
    /// messages read before it, which say where the session stopped.
    pub async fn read_text(&mut self) -> String {
        let Ok(text) = tokio::time::timeout(READ_LIMIT, read_body(&mut self.stdout)).await else {
            let recent: Vec<&str> = self.recent.iter().map(String::as_str).collect();
            panic!(
                "no message from coder lsp within 20 s; the last ones read:\n{}",
                recent.join("\n")
            );
        };
        if self.recent.len() == 12 {
            self.recent.pop_front();
        }
        self.recent.push_back(text.chars().take(400).collect());
        text
    }

    /// Sends a request and returns its response, collecting what arrives meanwhile.
    pub async fn request(&mut self, method: &str, params: Value, seen: &mut Vec<Value>) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(id, seen).await
    }

    /// Reads until the response to request `id`, collecting what arrives meanwhile.
    pub async fn response(&mut self, id: i64, seen: &mut Vec<Value>) -> Value {
        loop {
            let message = self.read().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            seen.push(message);
        }
    }

    /// `conversation/send` with `text`; returns the task id.
    pub async fn send_text(
        &mut self,
        conversation: &str,
        text: &str,
        seen: &mut Vec<Value>,
    ) -> String {
        let sent = self
            .request(
                "conversation/send",
                json!({"conversationId": conversation, "text": text}),
                seen,
            )
            .await;
        sent["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("conversation/send failed: {sent}"))
            .to_owned()
    }

    /// The `initialize` / `initialized` handshake with `capabilities`.
    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        self.initialize_with(json!({"capabilities": capabilities}))
            .await
    }

    /// `initialize` with `params`, then `initialized` when it succeeded.
    pub async fn initialize_with(&mut self, params: Value) -> Value {
        let init = self.request("initialize", params, &mut Vec::new()).await;
        if init.get("result").is_some() {
            self.write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                .await;
        }
        init
    }

    /// The root conversation's id.
    pub async fn root(&mut self) -> String {
        let list = self
            .request("conversation/list", json!({}), &mut Vec::new())
            .await;
        list["result"]["conversations"][0]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Reads messages into `seen` until `count` events of type `kind` have been seen in all.
    pub async fn until_events(&mut self, kind: &str, count: usize, seen: &mut Vec<Value>) {
        while event_types(seen).iter().filter(|t| *t == kind).count() < count {
            seen.push(self.read().await);
        }
    }

    /// The next request from the server with `method`, taken from `seen` when it arrived
    /// while something else was being read (a request can come before the answer to the
    /// `conversation/send` that caused it); other messages go to `seen`.
    pub async fn server_request(&mut self, method: &str, seen: &mut Vec<Value>) -> Value {
        if let Some(at) = seen.iter().position(|message| message["method"] == method) {
            return seen.remove(at);
        }
        loop {
            let message = self.read().await;
            if message["method"] == method {
                return message;
            }
            seen.push(message);
        }
    }

    /// `shutdown` then `exit`; the server must exit 0.
    pub async fn stop(mut self) {
        self.request("shutdown", Value::Null, &mut Vec::new()).await;
        self.write(json!({"jsonrpc": "2.0", "method": "exit"}))
            .await;
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("coder lsp did not exit")
            .unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// The custom commands of a `command/list` answer (the built-in ones come first).
pub(super) fn custom_commands(answer: &Value) -> Value {
    let commands = answer["result"]["commands"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Value::Array(
        commands
            .into_iter()
            .filter(|command| command["source"] != "builtin")
            .collect(),
    )
}

/// The session id an `initialize` answer names.
pub(super) fn session_id(init: &Value) -> String {
    init["result"]["capabilities"]["experimental"]["coder"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session id in {init}"))
        .to_owned()
}

/// The `type` of every `conversation/event` notification among `messages`, in order.
pub(super) fn event_types(messages: &[Value]) -> Vec<String> {
    events(messages)
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// The events among `messages`, in order.
pub(super) fn events(messages: &[Value]) -> impl Iterator<Item = &Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "conversation/event")
        .map(|m| &m["params"]["event"])
}

/// A memory figure of process `pid` from `/proc/<pid>/status`, in kB: `VmRSS:` (resident
/// now) or `VmHWM:` (the peak of resident memory).
pub fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Resident memory of process `pid` now, in kB.
pub fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS:")
}

pub use coder_testkit::mcp::node_mcp_server;
