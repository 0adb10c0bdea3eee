//! `.mcp.json` read again while `coder lsp` runs: in a trusted folder a server added is
//! started and its tools offered from the next task, a server removed is stopped (its
//! process ends); in an untrusted folder nothing starts.
//!
//! Every wait is for a message (each read is bounded by the client's timeout), never a
//! sleep.

use std::path::{Path, PathBuf};

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::reload::{until_reloaded, write};
use super::{Client, events, node_mcp_server};
use crate::suite::everything_script;

/// A `.mcp.json` server that writes its process id to `pid_file`, then is the reference
/// server (the same process).
fn server_writing_its_pid(pid_file: &Path) -> Value {
    json!({
        "command": "sh",
        "args": ["-c", format!("echo $$ > '{}'; exec node '{}' stdio",
            pid_file.display(), everything_script().display())],
    })
}

/// Writes a `.mcp.json` whose one server, `ev`, is started by `sh -c script`.
fn write_shell_server(ws: &Path, script: &str) {
    let command = json!({"command": "sh", "args": ["-c", script]});
    write(
        &ws.join(".mcp.json"),
        &json!({"mcpServers": {"ev": command}}).to_string(),
    );
}

/// The tool names offered in the model request `index`.
fn tool_names(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Kills the process named by a pid file when the test ends, whatever happened.
struct KillOnDrop(PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status();
        }
    }
}

/// Kills process `pid` at once, as a crash would end it.
fn sigkill(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

/// The process id a server wrote to `pid_file`.
fn pid_in(pid_file: &Path) -> i32 {
    std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The first `warning` whose message holds `needle`, among the events seen or, reading
/// on, the next ones (each read is bounded by the client's timeout).
async fn until_warning(client: &mut Client, needle: &str, seen: &mut Vec<Value>) -> String {
    loop {
        let found = events(seen)
            .filter(|event| event["type"] == "warning")
            .filter_map(|event| event["message"].as_str())
            .find(|message| message.contains(needle));
        if let Some(message) = found {
            return message.to_owned();
        }
        seen.push(client.read().await);
    }
}

/// Waits for the warning that holds the servers `.mcp.json` added or changed, then
/// confirms them as a person would (`/mcp reload`); returns the warning.
async fn confirm_servers(client: &mut Client, root: &str, seen: &mut Vec<Value>) -> String {
    let held = until_warning(client, "not started until you confirm", seen).await;
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/mcp reload"}),
            seen,
        )
        .await;
    let text = answer["result"]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Applying the MCP servers"), "{answer}");
    held
}

async fn run_task(client: &mut Client, root: &str, text: &str, seen: &mut Vec<Value>) {
    let done = events(seen)
        .filter(|event| event["type"] == "task_complete")
        .count();
    client.send_text(root, text, seen).await;
    client.until_events("task_complete", done + 1, seen).await;
}

#[tokio::test]
async fn a_trusted_mcp_json_starts_added_servers_and_stops_removed_ones() {
    let server = MockModelServer::start(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let pid_file = ws.join("server.pid");
    let _kill = KillOnDrop(pid_file.clone());
    let mut client = Client::trusted(ws, &server, "balanced").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    run_task(&mut client, &root, "first", &mut seen).await;
    assert!(
        !tool_names(&server, 0)
            .iter()
            .any(|name| name.starts_with("ev__"))
    );

    write(
        &ws.join(".mcp.json"),
        &json!({"mcpServers": {"ev": server_writing_its_pid(&pid_file)}}).to_string(),
    );
    let held = confirm_servers(&mut client, &root, &mut seen).await;
    assert!(held.contains("`ev` (new) runs sh -c"), "{held}");
    until_reloaded(&mut client, "mcp", 1, &mut seen).await;
    let statuses = |seen: &[Value]| -> Vec<Value> {
        events(seen)
            .filter(|event| event["type"] == "mcp_server_status")
            .map(|event| json!([event["server"], event["state"], event.get("error")]))
            .collect()
    };
    assert_eq!(statuses(&seen), [json!(["ev", "ready", null])]);
    let ready = events(&seen)
        .find(|event| event["type"] == "mcp_server_status")
        .unwrap();
    assert!(ready["tools"].as_u64().unwrap() > 0, "{ready}");
    run_task(&mut client, &root, "second", &mut seen).await;
    let offered = tool_names(&server, 1);
    assert!(offered.contains(&"ev__echo".to_owned()), "{offered:?}");
    let pid = pid_in(&pid_file);
    assert!(alive(pid));

    write(&ws.join(".mcp.json"), r#"{"mcpServers": {}}"#);
    until_reloaded(&mut client, "mcp", 2, &mut seen).await;
    assert!(!alive(pid), "the removed server's process {pid} still runs");
    assert_eq!(
        statuses(&seen),
        [json!(["ev", "ready", null]), json!(["ev", "stopped", null])]
    );
    run_task(&mut client, &root, "third", &mut seen).await;
    let offered = tool_names(&server, 2);
    assert!(
        !offered.iter().any(|name| name.starts_with("ev__")),
        "{offered:?}"
    );
    client.stop().await;
}

#[tokio::test]
async fn an_untrusted_mcp_json_starts_nothing_when_it_changes() {
    let server = MockModelServer::start(vec![MockResponse::text("one")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let marker = ws.join("ran");
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    write(
        &ws.join(".mcp.json"),
        &json!({"mcpServers": {"planted": {"command": "sh",
            "args": ["-c", format!("touch '{}'", marker.display())]}}})
        .to_string(),
    );
    let warning = until_warning(&mut client, ".mcp.json changed", &mut seen).await;
    assert!(warning.contains("not a trusted folder"), "{warning}");
    let root = client.root().await;
    run_task(&mut client, &root, "first", &mut seen).await;
    assert!(!marker.exists(), "the planted server ran");
    let reloads: Vec<&Value> = events(&seen)
        .filter(|event| event["type"] == "workspace_reloaded")
        .collect();
    assert!(reloads.is_empty(), "{reloads:?}");
    client.stop().await;
}

/// A ready stdio MCP server costs an idle session no wake-ups (its exit is seen when its
/// stderr ends, not by a timer), and when it dies while nobody calls it, the status and a
/// warning say so at once.
/// A server whose process started another that keeps its stdout and stderr open (a
/// helper, a child it forgot): when the server itself dies, nothing of its pipes ends, and
/// its exit is still reported at once, not at the next call, which would wait the whole
/// tool timeout for an answer nobody sends.
#[tokio::test]
async fn an_mcp_server_whose_helper_holds_its_pipes_is_reported_when_it_exits() {
    let server = MockModelServer::start(vec![MockResponse::text("one")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let pid_file = ws.join("server.pid");
    let helper_file = ws.join("helper.pid");
    let _kill = KillOnDrop(pid_file.clone());
    let _kill_helper = KillOnDrop(helper_file.clone());
    write_shell_server(
        ws,
        &format!(
            "sleep 300 & echo $! > '{}'; echo $$ > '{}'; exec node '{}' stdio",
            helper_file.display(),
            pid_file.display(),
            everything_script().display()
        ),
    );
    let mut client = Client::trusted(ws, &server, "balanced").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    run_task(&mut client, &root, "first", &mut seen).await;
    assert!(tool_names(&server, 0).contains(&"ev__echo".to_owned()));

    let pid = pid_in(&pid_file);
    let helper = pid_in(&helper_file);
    sigkill(pid);
    assert!(
        alive(helper),
        "the helper holding the pipes ended with the server"
    );
    until_warning(&mut client, "MCP server `ev` failed: it exited", &mut seen).await;
    client.stop().await;
}

#[tokio::test]
async fn an_mcp_server_whose_launcher_exits_while_it_answers_stays_ready() {
    launched_server_outlives_its_launcher(&format!(
        "node '{}' stdio",
        everything_script().display()
    ))
    .await;
}

/// A server that answers every request but `ping`, which it refuses with an error: still
/// an answer.
const PING_REFUSING_SERVER: &str = r#"
function handle(message) {
  if (message.method === "ping") {
    send({ id: message.id, error: { code: -32601, message: "no ping here" } });
  } else if (message.method === "initialize") {
    initialized(message, "no-ping");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: [{ name: "echo",
      inputSchema: { type: "object", properties: {} } }] } });
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

#[tokio::test]
async fn a_launched_mcp_server_that_refuses_ping_with_an_error_still_counts_as_answering() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("no-ping.js");
    std::fs::write(&script, node_mcp_server(PING_REFUSING_SERVER)).unwrap();
    launched_server_outlives_its_launcher(&format!("node '{}'", script.display())).await;
}

/// A `.mcp.json` server `ev` run by a launcher: `server` (a command line) is started in
/// the background, and the launcher exits once [`Launched::release`] tells it to.
struct Launched {
    pid_file: PathBuf,
    launcher_file: PathBuf,
    go: PathBuf,
    _kill: [KillOnDrop; 2],
}

impl Launched {
    fn write(ws: &Path, server_command: &str) -> Self {
        let pid_file = ws.join("server.pid");
        let launcher_file = ws.join("launcher.pid");
        let go = ws.join("go");
        // The server's stdin goes through another descriptor: a shell gives a background
        // command /dev/null otherwise.
        let script = format!(
            "exec 3<&0; {server_command} <&3 3<&- & echo $! > '{}'; echo $$ > '{}'; while [ ! -e '{}' ]; do sleep 0.05; done",
            pid_file.display(),
            launcher_file.display(),
            go.display()
        );
        write_shell_server(ws, &script);
        Self {
            _kill: [
                KillOnDrop(pid_file.clone()),
                KillOnDrop(launcher_file.clone()),
            ],
            pid_file,
            launcher_file,
            go,
        }
    }

    /// Lets the launcher exit, and waits until it has.
    async fn release(&self) {
        let launcher = pid_in(&self.launcher_file);
        std::fs::write(&self.go, "").unwrap();
        for _ in 0..200 {
            if !alive(launcher) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(!alive(launcher), "the launcher did not exit");
    }

    /// Kills the server itself, and waits for coder to report it.
    async fn kill_and_see_it_reported(&self, client: &mut Client, seen: &mut Vec<Value>) {
        sigkill(pid_in(&self.pid_file));
        until_warning(client, "MCP server `ev` failed: it exited", seen).await;
    }
}

/// Every `warning` that says server `ev` failed.
fn failures_reported(seen: &[Value]) -> Vec<String> {
    events(seen)
        .filter(|event| event["type"] == "warning")
        .filter_map(|event| event["message"].as_str())
        .filter(|message| message.contains("`ev` failed"))
        .map(str::to_owned)
        .collect()
}

/// `server` (a command line) started in the background by a launcher that exits once told
/// to, after the server is ready: the process coder started is gone, the one it talks to
/// is not. The server stays ready and offered; its own end is still reported.
async fn launched_server_outlives_its_launcher(server_command: &str) {
    let server = MockModelServer::start(vec![MockResponse::text("one"), MockResponse::text("two")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let launched = Launched::write(ws, server_command);
    let mut client = Client::trusted(ws, &server, "balanced").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    run_task(&mut client, &root, "first", &mut seen).await;
    assert!(tool_names(&server, 0).contains(&"ev__echo".to_owned()));

    launched.release().await;
    run_task(&mut client, &root, "second", &mut seen).await;
    let reported = failures_reported(&seen);
    assert!(
        reported.is_empty(),
        "a server that still answers was reported: {reported:?}"
    );
    assert!(tool_names(&server, 1).contains(&"ev__echo".to_owned()));

    // The server itself ending is still reported.
    launched
        .kill_and_see_it_reported(&mut client, &mut seen)
        .await;
    client.stop().await;
}

/// A server that serves one request at a time: its `slow` tool writes the file named by
/// its first argument, then holds the server for 2.5 s before it answers, so a `ping`
/// sent meanwhile waits behind it.
const SERIAL_SERVER: &str = r#"
const fs = require("fs");
const busy = process.argv[2];
function handle(message) {
  if (message.method === "initialize") {
    initialized(message, "serial");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: [{ name: "slow",
      inputSchema: { type: "object", properties: {} } }] } });
  } else if (message.method === "tools/call") {
    fs.writeFileSync(busy, "");
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2500);
    send({ id: message.id, result: { content: [{ type: "text", text: "slow work done" }] } });
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

#[tokio::test]
async fn a_launched_mcp_server_busy_with_a_long_call_when_its_launcher_exits_stays_ready() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("s1", "ev__slow", json!({})),
        MockResponse::text("one"),
        MockResponse::text("two"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let script = ws.join("serial.js");
    std::fs::write(&script, node_mcp_server(SERIAL_SERVER)).unwrap();
    let busy = ws.join("busy");
    let launched = Launched::write(
        ws,
        &format!("node '{}' '{}'", script.display(), busy.display()),
    );
    let mut client = Client::trusted(ws, &server, "yolo").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "first", &mut seen).await;
    // The launcher exits while the server is in the call: the `ping` that asks whether it
    // is still there waits behind the call, longer than the second coder allows an idle
    // server.
    for _ in 0..500 {
        if busy.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(busy.exists(), "the slow call never started");
    launched.release().await;
    client.until_events("task_complete", 1, &mut seen).await;

    let completed: Vec<&Value> = events(&seen)
        .filter(|event| event["type"] == "tool_call_completed")
        .collect();
    assert_eq!(completed.len(), 1, "{seen:?}");
    assert_eq!(completed[0]["output"], "slow work done");
    let reported = failures_reported(&seen);
    assert!(
        reported.is_empty(),
        "a server that was busy, not gone, was reported: {reported:?}"
    );
    run_task(&mut client, &root, "second", &mut seen).await;
    assert!(tool_names(&server, 2).contains(&"ev__slow".to_owned()));
    assert!(failures_reported(&seen).is_empty());

    launched
        .kill_and_see_it_reported(&mut client, &mut seen)
        .await;
    client.stop().await;
}

#[tokio::test]
async fn a_ready_mcp_server_wakes_nothing_while_idle_and_its_exit_is_reported_without_a_call() {
    let server = MockModelServer::start(vec![MockResponse::text("one")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let pid_file = ws.join("server.pid");
    let _kill = KillOnDrop(pid_file.clone());
    write(
        &ws.join(".mcp.json"),
        &json!({"mcpServers": {"ev": server_writing_its_pid(&pid_file)}}).to_string(),
    );
    let mut client = Client::trusted(ws, &server, "balanced").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    // A task waits for the servers to start: its request offers the server's tools.
    run_task(&mut client, &root, "first", &mut seen).await;
    let offered = tool_names(&server, 0);
    assert!(offered.contains(&"ev__echo".to_owned()), "{offered:?}");
    // Past the quiet save, nothing is due.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let woke = super::idle::wake_ups_over_two_seconds(client.child.id().unwrap()).await;
    let total: u64 = woke.iter().map(|(_, count)| count).sum();
    assert!(
        total <= 4,
        "an idle coder lsp with a ready MCP server woke {total} times in 2 s: {woke:?}"
    );

    let pid = pid_in(&pid_file);
    sigkill(pid);
    until_warning(&mut client, "MCP server `ev` failed: it exited", &mut seen).await;
    client.stop().await;
}

/// A server that answers `initialize` only after the milliseconds its first argument
/// names, then offers one tool, `echo`.
const SLOW_TO_START_SERVER: &str = r#"
const delay = Number(process.argv[2]);
function handle(message) {
  if (message.method === "initialize") {
    setTimeout(() => initialized(message, "slow"), delay);
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: [{ name: "echo",
      inputSchema: { type: "object", properties: {} } }] } });
  } else {
    send({ id: message.id, result: {} });
  }
}
"#;

#[tokio::test]
async fn a_server_added_while_the_first_ones_start_is_not_failed_when_they_are_done() {
    let server = MockModelServer::start(vec![MockResponse::text("one")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let script = ws.join("slow.js");
    std::fs::write(&script, node_mcp_server(SLOW_TO_START_SERVER)).unwrap();
    let slow = |millis: u32| json!({"command": "node", "args": [script, millis.to_string()]});
    // `a` takes three seconds to start, time for the reload to start `b` meanwhile on a
    // slow machine; `b` takes five, so it is still starting when `a`'s start (the
    // session's first) ends.
    write(
        &ws.join(".mcp.json"),
        &json!({"mcpServers": {"a": slow(3_000)}}).to_string(),
    );
    let mut client = Client::trusted(ws, &server, "balanced").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    write(
        &ws.join(".mcp.json"),
        &json!({"mcpServers": {"a": slow(3_000), "b": slow(5_000)}}).to_string(),
    );
    confirm_servers(&mut client, &root, &mut seen).await;
    until_reloaded(&mut client, "mcp", 1, &mut seen).await;
    run_task(&mut client, &root, "first", &mut seen).await;
    let failures: Vec<&str> = events(&seen)
        .filter(|event| event["type"] == "warning")
        .filter_map(|event| event["message"].as_str())
        .filter(|message| message.contains("failed"))
        .collect();
    assert!(failures.is_empty(), "{failures:?}");
    let offered = tool_names(&server, 0);
    for tool in ["a__echo", "b__echo"] {
        assert!(offered.contains(&tool.to_owned()), "{tool}: {offered:?}");
    }
    client.stop().await;
}

/// A command the model runs in a trusted workspace plants `.mcp.json` (under a name the
/// command analysis cannot see) and sleeps: the watcher reads the file while the command
/// runs, and the server it names does not start. The change waits for a person's
/// `/mcp reload`; the sandbox removes the file when the call ends.
#[tokio::test]
async fn an_mcp_json_planted_by_a_sleeping_command_starts_nothing() {
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let marker = ws.join("ran");
    write(
        &ws.join("payload"),
        &json!({"mcpServers": {"planted": {"command": "sh",
            "args": ["-c", format!("touch '{}'", marker.display())]}}})
        .to_string(),
    );
    let plant = "python3 -c \"import shutil; shutil.copy('payload', '.mc' + 'p.json')\"; sleep 3";
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": plant})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut client = Client::trusted(ws, &server, "yolo").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    run_task(&mut client, &root, "go", &mut seen).await;
    let held = until_warning(&mut client, "not started until you confirm", &mut seen).await;
    assert!(held.contains("`planted` (new) runs sh -c"), "{held}");
    // Whatever the watcher reads after the call (the file removed), nothing starts.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    client.stop().await;
    assert!(
        !marker.exists(),
        "the planted server ran outside the sandbox"
    );
    let started: Vec<&Value> = events(&seen)
        .filter(|event| event["type"] == "mcp_server_status")
        .collect();
    assert!(started.is_empty(), "{started:?}");
}
