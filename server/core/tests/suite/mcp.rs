//! MCP through the whole engine, with the reference servers from npm as real processes.

use std::path::PathBuf;
use std::time::Duration;

use coder_core::mcp::{McpServerConfig, ServerStatus};
use coder_core::{ConversationSpec, ProviderKind};
use coder_protocol::EventMsg;
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::support::{Harness, kinds, last_tool_result, until_idle};

/// Where `scripts/setup-mcp-servers.sh` installed the servers (it runs here if needed).
fn servers_dir() -> PathBuf {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/setup-mcp-servers.sh"
    );
    let output = std::process::Command::new("bash")
        .arg(script)
        .output()
        .expect("bash runs the MCP server setup");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

fn node_server(package: &str, extra: &[&str]) -> McpServerConfig {
    let script = servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    let mut args = vec![script.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    McpServerConfig {
        command: Some("node".into()),
        args,
        enabled: true,
        ..McpServerConfig::default()
    }
}

pub(super) fn everything() -> McpServerConfig {
    node_server("server-everything", &["stdio"])
}

pub(super) async fn harness(
    server: &MockModelServer,
    servers: Vec<(&str, McpServerConfig)>,
) -> Harness {
    let h = Harness::with(
        server,
        ProviderKind::OpenAi,
        |c| {
            c.mcp_servers = servers
                .into_iter()
                .map(|(name, config)| (name.to_owned(), config))
                .collect();
        },
        vec![],
    );
    tokio::time::timeout(Duration::from_secs(60), h.engine.mcp_ready())
        .await
        .expect("MCP servers did not settle in 60 s");
    h
}

pub(super) fn tool_names(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The process id of a ready server.
fn server_pid(h: &Harness, name: &str) -> i32 {
    match h.engine.mcp_status()[name] {
        ServerStatus::Ready { pid: Some(pid), .. } => i32::try_from(pid).unwrap(),
        ref other => panic!("{name} is not ready: {other:?}"),
    }
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn tools_of_real_servers_are_listed_and_called() {
    let workspace_files = tempfile::tempdir().unwrap();
    std::fs::write(workspace_files.path().join("hello.txt"), "hi").unwrap();
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("e", "everything__echo", json!({"message": "ping"})),
        MockResponse::tool_call(
            "f",
            "filesystem__list_directory",
            json!({"path": workspace_files.path().display().to_string()}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let filesystem = node_server(
        "server-filesystem",
        &[&workspace_files.path().display().to_string()],
    );
    let mut h = harness(
        &server,
        vec![("everything", everything()), ("filesystem", filesystem)],
    )
    .await;
    let status = h.engine.mcp_status();
    assert!(
        matches!(status["everything"], ServerStatus::Ready { tools, .. } if tools > 5),
        "{status:?}"
    );
    h.run("use mcp").await;
    let names = tool_names(&server, 0);
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    assert!(names.contains(&"filesystem__list_directory".to_owned()));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are offered in name order");
    let messages = server.requests()[2].body["messages"].clone();
    let results: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results[0], "Echo: ping");
    assert!(results[1].contains("hello.txt"), "{}", results[1]);
    h.engine.shutdown().await;
}

#[tokio::test]
async fn allowlists_isolate_conversations_and_are_checked() {
    let server = MockModelServer::start(vec![MockResponse::text("a"), MockResponse::text("b")])
        .await
        .unwrap();
    let mut h = harness(&server, vec![("everything", everything())]).await;
    let narrow = h
        .engine
        .create_conversation(ConversationSpec {
            mcp_allowlist: Some(vec!["everything/echo".into()]),
            ..ConversationSpec::default()
        })
        .unwrap();
    let warning = h.events.recv().await.unwrap();
    assert!(matches!(&warning.msg,
        EventMsg::Warning { message } if message.contains("read as `everything__echo`")));
    h.run("root").await;
    let task = h.engine.send(narrow, "narrow").unwrap();
    h.events.recv().await.unwrap(); // idle after the root's task
    h.until_end(task).await;
    let root_tools = tool_names(&server, 0);
    let narrow_tools = tool_names(&server, 1);
    assert!(root_tools.contains(&"everything__get-sum".to_owned()));
    let narrow_mcp: Vec<&String> = narrow_tools.iter().filter(|n| n.contains("__")).collect();
    assert_eq!(narrow_mcp, ["everything__echo"]);

    for bad in ["everything__no-such-tool", "echo", "a/b/c"] {
        let err = h
            .engine
            .create_conversation(ConversationSpec {
                mcp_allowlist: Some(vec![bad.into()]),
                ..ConversationSpec::default()
            })
            .unwrap_err();
        assert!(
            err.to_string().contains(bad) || err.to_string().contains("server__tool"),
            "{err}"
        );
    }
    h.engine.shutdown().await;
}

/// The tool results of the model request `index`, in order.
fn tool_results(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn conv_create_checks_the_allowlist_the_model_gives() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "echo", "mcp_allowlist": ["everything__echo", "nosuch__echo"]}),
        ),
        MockResponse::tool_call(
            "c2",
            "conv_create",
            json!({"user_instruction": "echo", "mcp_allowlist": ["everything/echo"]}),
        ),
        MockResponse::text("worker done"),
        MockResponse::text("all done"),
    ])
    .await
    .unwrap();
    let mut h = harness(&server, vec![("everything", everything())]).await;
    h.engine.send(h.root, "delegate").unwrap();
    let events = until_idle(&mut h).await;
    // The first call is refused by name, as a result the model reads; the turn goes on.
    let refused: serde_json::Value = serde_json::from_str(&tool_results(&server, 1)[0]).unwrap();
    assert_eq!(refused["success"], false);
    assert_eq!(
        refused["reason"],
        "mcp_allowlist entry `nosuch__echo` names an unknown MCP server: this session has \
         `everything`"
    );
    // The second opens a worker that sees the one tool, said in the deprecated form.
    let worker_tools: Vec<String> = tool_names(&server, 2)
        .into_iter()
        .filter(|name| name.contains("__"))
        .collect();
    assert_eq!(worker_tools, ["everything__echo"]);
    let worker = events
        .iter()
        .find(|event| {
            matches!(event.msg, EventMsg::TaskStarted { .. }) && event.conversation_id != h.root
        })
        .map(|event| event.conversation_id)
        .expect("the worker's task started");
    let deprecations: Vec<String> = events
        .iter()
        .filter(|event| event.conversation_id == worker)
        .filter_map(|event| match &event.msg {
            EventMsg::Warning { message } if message.contains("deprecated") => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        deprecations,
        [
            "mcp_allowlist uses the deprecated `server/tool` form: `everything/echo` is read as \
          `everything__echo`; write fully-qualified names (`server__tool`)"
        ]
    );
    h.engine.shutdown().await;
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_reported_and_the_others_work() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("e", "everything__echo", json!({"message": "still here"})),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let broken = McpServerConfig {
        command: Some("node".into()),
        args: vec![
            "-e".into(),
            "console.error('config missing: FOO'); process.exit(3)".into(),
        ],
        enabled: true,
        startup_timeout_sec: Some(10.0),
        ..McpServerConfig::default()
    };
    let mut h = harness(
        &server,
        vec![("broken", broken), ("everything", everything())],
    )
    .await;
    let warning = h.events.recv().await.unwrap();
    assert!(matches!(&warning.msg,
        EventMsg::Warning { message } if message.contains("MCP server `broken` failed")));
    let status = h.engine.mcp_status();
    assert!(
        matches!(&status["broken"], ServerStatus::Failed { stderr, .. } if stderr.contains("config missing")),
        "{status:?}"
    );
    h.run("echo").await;
    assert_eq!(last_tool_result(&server), "Echo: still here");
    h.engine.shutdown().await;
}

#[tokio::test]
async fn a_server_killed_mid_session_fails_its_calls_clearly() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("e", "everything__echo", json!({"message": "x"})),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let mut h = harness(&server, vec![("everything", everything())]).await;
    let pid = server_pid(&h, "everything");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let events = h.run("echo").await;
    let result = last_tool_result(&server);
    assert!(result.contains("everything"), "{result}");
    assert!(kinds(&events).contains(&"tool_call_failed".to_owned()));
    assert!(matches!(
        h.engine.mcp_status()["everything"],
        ServerStatus::Failed { .. }
    ));
    // A refreshed view no longer offers the dead server's tools.
    server.push([MockResponse::text("fine")]);
    h.engine.refresh_mcp_view(h.root).unwrap();
    h.events.recv().await.unwrap(); // idle
    h.run("again").await;
    let tools = tool_names(&server, 2);
    assert!(
        !tools.iter().any(|t| t.starts_with("everything__")),
        "{tools:?}"
    );
}

#[tokio::test]
async fn tool_timeouts_and_interrupts_stop_long_calls() {
    let long = json!({"duration": 30, "steps": 30});
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "t",
            "everything__trigger-long-running-operation",
            long.clone(),
        ),
        MockResponse::text("timed out"),
        MockResponse::tool_call("i", "everything__trigger-long-running-operation", long),
    ])
    .await
    .unwrap();
    let mut config = everything();
    config.tool_timeout_sec = Some(1.0);
    let mut h = harness(&server, vec![("everything", config)]).await;
    let started = tokio::time::Instant::now();
    h.run("wait").await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        last_tool_result(&server).contains("did not answer within 1s"),
        "{}",
        last_tool_result(&server)
    );

    h.events.recv().await.unwrap(); // idle
    let handle = h.engine.clone();
    let root = h.root;
    h.engine.on_event(move |event| {
        if matches!(&event.msg, EventMsg::ToolCallStarted { call_id, .. } if call_id == "i") {
            handle.interrupt(root).unwrap();
        }
    });
    let started = tokio::time::Instant::now();
    let events = h.run("wait again").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnAborted { .. }
    ));
    h.engine.shutdown().await;
}

/// A server whose tool `hang` never answers; it writes each `notifications/cancelled` it
/// gets to the file its first argument names.
const HANGING_SERVER: &str = r#"
const fs = require("fs");
process.stdin.on("data", (chunk) => {
  for (const line of String(chunk).split("\n")) {
    if (line.includes('"notifications/cancelled"')) fs.appendFileSync(process.argv[2], line + "\n");
  }
});
function handle(message) {
  if (message.method === "initialize") {
    initialized(message, "hanging");
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: [{ name: "hang",
      inputSchema: { type: "object", properties: {} } }] } });
  } else if (message.method !== "tools/call") {
    send({ id: message.id, result: {} });
  }
}
"#;

#[tokio::test]
async fn a_call_that_times_out_is_cancelled_on_its_server() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("t", "h__hang", json!({})),
        MockResponse::text("timed out"),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cancelled = dir.path().join("cancelled");
    let mut config = super::mcp_views::node_server(dir.path(), "hanging", HANGING_SERVER);
    config.args.push(cancelled.display().to_string());
    config.tool_timeout_sec = Some(1.0);
    let mut h = harness(&server, vec![("h", config)]).await;
    h.run("wait").await;
    assert!(
        last_tool_result(&server).contains("did not answer within 1s"),
        "{}",
        last_tool_result(&server)
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cancelled.exists() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let said = std::fs::read_to_string(&cancelled).unwrap_or_default();
    assert!(said.contains(r#""requestId""#), "no cancellation: {said:?}");
    h.engine.shutdown().await;
}

#[tokio::test]
async fn shutdown_leaves_no_server_processes() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = harness(&server, vec![("everything", everything())]).await;
    let pid = server_pid(&h, "everything");
    assert!(alive(pid));
    h.engine.shutdown().await;
    until_gone(pid, "the server outlived the session").await;
    // A server the session stopped is not reported as one that exited (its stderr ended
    // as any exit's does).
    tokio::time::sleep(Duration::from_millis(300)).await;
    while let Ok(event) = h.events.try_recv() {
        if let EventMsg::Warning { message } = &event.msg {
            assert!(!message.contains("exited"), "{message}");
        }
    }
    assert!(!matches!(
        h.engine.mcp_status()["everything"],
        ServerStatus::Failed { .. }
    ));
}

/// Waits until `pid` has ended, failing with `what` after 10 s.
async fn until_gone(pid: i32, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn shutdown_ends_the_processes_a_server_started() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let helper_file = dir.path().join("helper.pid");
    let mut config = everything();
    let script = config.args.remove(0);
    // A helper the server's launcher leaves behind, deaf to SIGTERM, and the server itself
    // (the process coder started becomes it).
    config.command = Some("sh".into());
    config.args = vec![
        "-c".into(),
        format!(
            "(trap '' TERM; exec sleep 300) </dev/null >/dev/null 2>&1 & echo $! > '{}'; exec node '{script}' stdio",
            helper_file.display()
        ),
    ];
    let mut h = harness(&server, vec![("launched", config)]).await;
    let helper: i32 = std::fs::read_to_string(&helper_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let guard = KillOnDrop(helper);
    assert!(alive(helper));
    let pid = server_pid(&h, "launched");
    h.engine.shutdown().await;
    until_gone(pid, "the server outlived the session").await;
    until_gone(helper, "a process the server started outlived the session").await;
    drop(guard);
    while let Ok(event) = h.events.try_recv() {
        if let EventMsg::Warning { message } = &event.msg {
            assert!(!message.contains("exited"), "{message}");
        }
    }
}

/// The process id a shell wrote to `file`, once it has (within 10 s).
async fn pid_written(file: &std::path::Path) -> i32 {
    for _ in 0..200 {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} was not written", file.display());
}

#[tokio::test]
async fn shutdown_during_a_handshake_ends_the_server_and_what_it_started() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (leader_file, helper_file) = (dir.path().join("leader.pid"), dir.path().join("helper.pid"));
    // A server that never answers `initialize`, with a helper deaf to SIGTERM.
    let config = McpServerConfig {
        command: Some("sh".into()),
        args: vec![
            "-c".into(),
            format!(
                "(trap '' TERM; exec sleep 300) </dev/null >/dev/null 2>&1 & echo $! > '{}'; echo $$ > '{}'; exec sleep 300",
                helper_file.display(),
                leader_file.display()
            ),
        ],
        enabled: true,
        startup_timeout_sec: Some(120.0),
        ..McpServerConfig::default()
    };
    let h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| {
            c.mcp_servers = [("mute".to_owned(), config)].into_iter().collect();
        },
        vec![],
    );
    let leader = pid_written(&leader_file).await;
    let helper = pid_written(&helper_file).await;
    let _guards = (KillOnDrop(leader), KillOnDrop(helper));
    assert!(matches!(
        h.engine.mcp_status()["mute"],
        ServerStatus::Starting
    ));
    h.engine.shutdown().await;
    until_gone(leader, "the server in its handshake outlived the session").await;
    until_gone(helper, "what it started outlived the session").await;
}

/// Kills a process when dropped, whatever the test did.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// A process killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn streamable_http_servers_work_with_headers() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script =
        servers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let _http_server = Killed(
        std::process::Command::new("node")
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the HTTP MCP server did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("e", "web__echo", json!({"message": "over http"})),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let config = McpServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        headers: [("x-coder-test".to_owned(), "1".to_owned())].into(),
        enabled: true,
        ..McpServerConfig::default()
    };
    let mut h = harness(&server, vec![("web", config)]).await;
    assert!(
        matches!(h.engine.mcp_status()["web"], ServerStatus::Ready { .. }),
        "{:?}",
        h.engine.mcp_status()
    );
    h.run("echo over http").await;
    assert_eq!(last_tool_result(&server), "Echo: over http");
    h.engine.shutdown().await;
}
