//! Tool processes, as a hostile repository or model would try them through `coder exec` and
//! `coder lsp`: reaching the person's terminal, reading coder's secrets from the
//! environment, leaving processes behind, and surviving the end of coder.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use coder_testkit::{Chunk, MockModelServer, MockResponse, RecordedRequest};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

const KEY: &str = "sk-test-provider-key-0042";

/// A number no other test uses, for `sleep` arguments that mark a test's processes.
fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("1000.{}{nanos:09}", std::process::id())
}

/// The pids of running processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .is_some_and(|end| stat[end + 1..].trim_start().starts_with('Z'));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .collect()
}

/// The live processes whose command line holds `marker` once those being killed had up to
/// 5 s to end (a process sent SIGKILL as its parent exits is not gone at that instant, and
/// a loaded machine makes the moment longer).
async fn survivors(marker: &str) -> Vec<i32> {
    for _ in 0..100 {
        if processes_with(marker).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    processes_with(marker)
}

/// Kills what a test's processes left behind, whatever the test found.
struct KillMarked(String);

impl Drop for KillMarked {
    fn drop(&mut self) {
        for pid in processes_with(&self.0) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Waits (bounded) until a process marked `marker` runs.
async fn until_running(marker: &str) {
    for _ in 0..600 {
        if !processes_with(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no process marked {marker} started");
}

/// `coder exec` in `workspace` with a clean environment plus the mock model, `HOME` in
/// `home`, `TMPDIR` in `tmp`, and `env`.
fn exec_command(
    workspace: &Path,
    home: &Path,
    tmp: &Path,
    server: &MockModelServer,
    env: &[(&str, &str)],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"));
    command.arg("exec");
    in_workspace(&mut command, workspace, home, tmp, server, env);
    command
}

/// `program` running `coder exec` (for example `setsid --ctty`), set up as [`exec_command`].
fn exec_through(
    program: &str,
    args: &[&str],
    dirs: (&Path, &Path, &Path),
    server: &MockModelServer,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .arg(env!("CARGO_BIN_EXE_coder"))
        .arg("exec");
    in_workspace(&mut command, dirs.0, dirs.1, dirs.2, server, &[]);
    command
}

fn in_workspace(
    command: &mut tokio::process::Command,
    workspace: &Path,
    home: &Path,
    tmp: &Path,
    server: &MockModelServer,
    env: &[(&str, &str)],
) {
    command
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("CODER_MODEL", "mock-model")
        .envs(env.iter().copied())
        .kill_on_drop(true);
}

async fn output(mut command: tokio::process::Command) -> Output {
    tokio::time::timeout(Duration::from_secs(180), command.output())
        .await
        .expect("coder exec did not finish in 180 s")
        .unwrap()
}

/// The text of every tool result the model was sent, in order.
fn tool_results(requests: &[RecordedRequest]) -> Vec<String> {
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The session snapshots saved in `workspace`, as text.
fn saved_sessions(workspace: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(workspace.join(".coder/sessions")) else {
        return Vec::new();
    };
    entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect()
}

/// What is left in a private `TMPDIR`: the sandbox's temporary directory must be gone.
fn left_in(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect()
}

/// A command run by the model pushes keystrokes into the terminal coder runs in with
/// `TIOCSTI`; run under a pseudo-terminal, the keys would be echoed on its master side and
/// read by the person's shell after coder exits. The command has no controlling terminal:
/// `/dev/tty` does not open and nothing arrives.
#[tokio::test]
async fn a_command_cannot_push_keystrokes_into_coders_terminal() {
    let inject = r#"perl -e 'open(my $t, "+<", "/dev/tty") or die "no tty: $!\n"; ioctl($t, 0x5412, $_) or die "no TIOCSTI: $!\n" for split //, "INJECTED-KEYS\n"; print "pushed\n"'"#;
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": inject})),
        MockResponse::stream(vec![Chunk::text("done")]),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, home, tmp) = dirs(dir.path());
    let pty = nix::pty::openpty(None, None).unwrap();
    let reader = crate::suite::read_terminal(std::fs::File::from(pty.master), None);
    // `setsid --ctty` makes the terminal coder's controlling terminal, as a shell does.
    let mut in_terminal = exec_through("setsid", &["--ctty"], (&workspace, &home, &tmp), &server);
    in_terminal
        .args(["--json", "--mode", "yolo", "push keys"])
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave))
        .stdout(Stdio::piped());
    // Spawned, not `output()`: tokio's `output()` sets stderr to a pipe whatever was asked,
    // and the terminal must be coder's stderr as well as its stdin.
    let child = in_terminal.spawn().unwrap();
    drop(in_terminal);
    let out = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("coder exec did not finish in 180 s")
        .unwrap();
    let terminal = reader.join().unwrap();
    let results = tool_results(&server.requests());
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        !terminal.contains("INJECTED-KEYS"),
        "keystrokes reached the terminal: {terminal:?}"
    );
    assert!(results[0].contains("no tty"), "{}", results[0]);
    assert!(out.status.success(), "{terminal}");
}

fn dirs(root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (workspace, home, tmp) = (root.join("ws"), root.join("home"), root.join("tmp"));
    for dir in [&workspace, &home, &tmp] {
        std::fs::create_dir_all(dir).unwrap();
    }
    (workspace, home, tmp)
}

/// `echo $OPENAI_API_KEY; env` runs without approval in the permissive modes: the provider
/// key and variables named like secrets are not in the command's environment, so they reach
/// neither the model, nor the events, nor the session file. The user-level pass-through
/// list still passes what it names.
#[tokio::test]
async fn secrets_in_coders_environment_never_reach_a_command() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "echo \"key=$OPENAI_API_KEY\"; env"}),
        ),
        MockResponse::stream(vec![Chunk::text("done")]),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, home, tmp) = dirs(dir.path());
    std::fs::create_dir_all(home.join(".config/coder")).unwrap();
    std::fs::write(
        home.join(".config/coder/config.json"),
        json!({"tools": {"env": {"passThrough": ["ALLOWED_TOKEN"]}}}).to_string(),
    )
    .unwrap();
    let with_key = format!("https://user:{KEY}@example.invalid");
    let command = {
        let mut command = exec_command(
            &workspace,
            &home,
            &tmp,
            &server,
            &[
                ("DEPLOY_TOKEN", "tok-deploy-9911"),
                ("db_password", "pw-hunter2-77"),
                ("MIRROR_URL", &with_key),
                ("ALLOWED_TOKEN", "tok-allowed-5"),
                ("VISIBLE", "plain-value"),
            ],
        );
        command.args(["--json", "--mode", "yolo", "show the environment"]);
        command
    };
    let out = output(command).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&server.requests());
    assert_eq!(results.len(), 1);
    // The command ran and printed its environment, with what may pass.
    assert!(results[0].contains("key=\n"), "{}", results[0]);
    assert!(results[0].contains("VISIBLE=plain-value"), "{}", results[0]);
    assert!(
        results[0].contains("ALLOWED_TOKEN=tok-allowed-5"),
        "{}",
        results[0]
    );
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect();
    let places = [
        ("the model requests", bodies.join("\n")),
        (
            "the events",
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        ("the session file", saved_sessions(&workspace).join("\n")),
    ];
    assert!(!places[2].1.is_empty(), "no session saved");
    for (place, text) in &places {
        for secret in [KEY, "tok-deploy-9911", "pw-hunter2-77"] {
            assert!(!text.contains(secret), "{secret} reached {place}");
        }
    }
}

/// 100 calls each leave a background process behind (`cmd &`, `nohup`, and `setsid` in a
/// subshell, which leaves the command's session), with coder limited to 64 file
/// descriptors: every call runs, and no process outlives its call.
#[tokio::test]
async fn background_processes_end_with_their_call_and_leak_no_descriptors() {
    let marker = marker();
    let _cleanup = KillMarked(marker.clone());
    let commands = [
        format!("sleep {marker} &"),
        format!("nohup sleep {marker} &"),
        format!("(setsid sleep {marker} &)"),
    ];
    let mut script: Vec<MockResponse> = (0..100)
        .map(|i| {
            MockResponse::tool_call(
                &format!("c{i}"),
                "bash",
                json!({"command": commands[i % commands.len()]}),
            )
        })
        .collect();
    script.push(MockResponse::stream(vec![Chunk::text("done")]));
    let server = MockModelServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, home, tmp) = dirs(dir.path());
    // `ulimit -n 64` for coder only: the shell replaces itself with it.
    let mut command = exec_through(
        "bash",
        &["-c", "ulimit -n 64 && exec \"$0\" \"$@\""],
        (&workspace, &home, &tmp),
        &server,
    );
    command.args([
        "--mode",
        "yolo",
        "--max-steps",
        "200",
        "leave processes behind",
    ]);
    let out = output(command).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let results = tool_results(&server.requests());
    assert_eq!(results.len(), 100, "{stderr}");
    for (i, result) in results.iter().enumerate() {
        assert!(result.starts_with("Exit code: 0\n"), "call {i}: {result}");
    }
    assert_eq!(processes_with(&marker), Vec::<i32>::new(), "survivors");
}

/// SIGTERM and SIGHUP to `coder exec` while a command runs: the command is killed, the
/// session file holds the interrupted turn, the sandbox's temporary directory is removed,
/// and the exit code says which signal it was.
#[tokio::test]
async fn sigterm_and_sighup_end_the_command_and_save_the_session() {
    for (signal, code) in [(Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let marker = marker();
        let _cleanup = KillMarked(marker.clone());
        let server = MockModelServer::start(vec![MockResponse::tool_call(
            "c1",
            "bash",
            json!({"command": format!("sleep {marker}")}),
        )])
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (workspace, home, tmp) = dirs(dir.path());
        let mut command = exec_command(&workspace, &home, &tmp, &server, &[]);
        command
            .args(["--json", "--mode", "yolo", "run a long command"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = command.spawn().unwrap();
        until_running(&marker).await;
        kill(Pid::from_raw(child.id().unwrap() as i32), signal).unwrap();
        let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("coder exec did not end after the signal")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{signal}: {stderr}");
        assert_eq!(processes_with(&marker), Vec::<i32>::new(), "{signal}");
        let sessions = saved_sessions(&workspace);
        assert_eq!(sessions.len(), 1, "{signal}: {stderr}");
        let session: Value = serde_json::from_str(&sessions[0]).unwrap();
        let text = session.to_string();
        assert!(text.contains("run a long command"), "{signal}: {text}");
        assert!(
            text.contains("\"c1\""),
            "{signal}: the tool call is not saved: {text}"
        );
        assert_eq!(left_in(&tmp), Vec::<PathBuf>::new(), "{signal}");
    }
}

/// SIGTERM to `coder lsp` while a task's command runs: the command is killed, the session
/// is saved, and the server exits with 143.
#[tokio::test]
async fn sigterm_to_coder_lsp_ends_the_command_and_saves_the_session() {
    let marker = marker();
    let _cleanup = KillMarked(marker.clone());
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "c1",
        "bash",
        json!({"command": format!("sleep {marker}")}),
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, _home, tmp) = dirs(dir.path());
    let tmp_text = tmp.to_string_lossy().into_owned();
    let mut client =
        super::lsp::Client::start_with(&workspace, &server, "yolo", &[("TMPDIR", &tmp_text)]);
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client
        .send_text(&root, "run a long command", &mut seen)
        .await;
    until_running(&marker).await;
    kill(
        Pid::from_raw(client.child.id().unwrap() as i32),
        Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .expect("coder lsp did not end after SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(143));
    assert_eq!(processes_with(&marker), Vec::<i32>::new());
    let sessions = saved_sessions(&workspace);
    assert_eq!(sessions.len(), 1);
    assert!(
        sessions[0].contains("run a long command"),
        "{}",
        sessions[0]
    );
    assert!(sessions[0].contains("\"c1\""), "{}", sessions[0]);
    assert_eq!(left_in(&tmp), Vec::<PathBuf>::new());
}

/// `coder lsp` killed outright (SIGKILL: nothing of it runs after) while its session watches
/// the workspace and a turn has run: nothing of its own is left in `TMPDIR`.
#[tokio::test]
async fn a_killed_coder_lsp_leaves_nothing_in_tmpdir() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![Chunk::text("done")])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, _home, tmp) = dirs(dir.path());
    let tmp_text = tmp.to_string_lossy().into_owned();
    let mut client =
        super::lsp::Client::start_with(&workspace, &server, "yolo", &[("TMPDIR", &tmp_text)]);
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "say done", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    kill(
        Pid::from_raw(client.child.id().unwrap() as i32),
        Signal::SIGKILL,
    )
    .unwrap();
    tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .expect("coder lsp did not end after SIGKILL")
        .unwrap();
    assert_eq!(left_in(&tmp), Vec::<PathBuf>::new());
}

/// An MCP server from the user's configuration is started without coder's secrets, with
/// what its own `env` names.
#[tokio::test]
async fn an_mcp_server_gets_no_inherited_secrets_but_its_own_env() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![Chunk::text("done")])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, home, tmp) = dirs(dir.path());
    let dump = dir.path().join("mcp-env.txt");
    std::fs::create_dir_all(home.join(".config/coder")).unwrap();
    std::fs::write(
        home.join(".config/coder/config.json"),
        json!({"mcpServers": {"dump": {
            "command": "bash",
            "args": ["-c", format!("env > {}", dump.display())],
            "env": {"SERVICE_TOKEN": "tok-for-the-server-3"},
        }}})
        .to_string(),
    )
    .unwrap();
    let mut command = exec_command(
        &workspace,
        &home,
        &tmp,
        &server,
        &[("DEPLOY_TOKEN", "tok-deploy-9911")],
    );
    command.args(["--json", "hi"]);
    let out = output(command).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(
        env.contains("SERVICE_TOKEN=tok-for-the-server-3\n"),
        "{env}"
    );
    assert!(env.contains("HOME="), "{env}");
    assert!(!env.contains(KEY), "{env}");
    assert!(!env.contains("tok-deploy-9911"), "{env}");
}

/// Ctrl-C while a conversation the root handed work to runs a command: that task stops
/// (its command killed), the root's continuation is dropped with its `conv_create` call
/// closed, and exec exits with 130.
#[tokio::test]
async fn ctrl_c_during_a_handoff_stops_the_other_conversation_and_exits_130() {
    let marker = marker();
    let _cleanup = KillMarked(marker.clone());
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "Run the long command."}),
        ),
        MockResponse::tool_call("b1", "bash", json!({"command": format!("sleep {marker}")})),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, home, tmp) = dirs(dir.path());
    let mut command = exec_command(&workspace, &home, &tmp, &server, &[]);
    command
        .args(["--mode", "yolo", "delegate"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    until_running(&marker).await;
    kill(Pid::from_raw(child.id().unwrap() as i32), Signal::SIGINT).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("coder exec did not end after Ctrl-C")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(processes_with(&marker), Vec::<i32>::new());
    assert_eq!(
        server.requests().len(),
        2,
        "the root's continuation never ran"
    );
    let sessions = saved_sessions(&workspace);
    assert_eq!(sessions.len(), 1, "{stderr}");
    let session: Value = serde_json::from_str(&sessions[0]).unwrap();
    let closing = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .expect("the root's conv_create call has a result");
    assert!(
        closing["content"]
            .as_str()
            .unwrap()
            .contains("interrupted by the user"),
        "{closing}"
    );
}

/// A run whose root hands work to another conversation ends with the continuation: exit 0,
/// and the MCP servers it started are gone when coder is.
#[tokio::test]
async fn a_handoff_run_exits_0_and_leaves_no_mcp_server_behind() {
    let marker = marker();
    let _cleanup = KillMarked(marker.clone());
    let servers = std::process::Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/setup-mcp-servers.sh"
        ))
        .output()
        .unwrap();
    assert!(servers.status.success());
    let script = PathBuf::from(String::from_utf8(servers.stdout).unwrap().trim())
        .join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "conv_create", json!({"user_instruction": "Look."})),
        MockResponse::stream(vec![Chunk::text("Looked.")]),
        MockResponse::stream(vec![Chunk::text("All done.")]),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, home, tmp) = dirs(dir.path());
    // The server's allowed directory carries the marker, so its process can be found.
    let allowed = dir.path().join(format!("allowed-{marker}"));
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::create_dir_all(home.join(".config/coder")).unwrap();
    std::fs::write(
        home.join(".config/coder/config.json"),
        json!({"mcpServers": {"fs": {"command": "node", "args": [script, allowed]}}}).to_string(),
    )
    .unwrap();
    let mut command = exec_command(&workspace, &home, &tmp, &server, &[]);
    command.arg("delegate");
    let out = output(command).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "All done.\n");
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(tools.contains("fs__"), "the MCP server ran: {tools}");
    assert_eq!(processes_with(&marker), Vec::<i32>::new(), "{stderr}");
}

/// An MCP server that ignores SIGTERM and the end of its input (a real process speaking
/// just enough MCP to be ready), recording `listed` when its tools were asked for, `eof`
/// when its input ends and `term` for each SIGTERM, in the file named by its first
/// argument.
const STUBBORN_MCP_SERVER: &str = r#"
const fs = require("fs");
const log = (line) => fs.appendFileSync(process.argv[1], line + "\n");
process.on("SIGTERM", () => log("term"));
setInterval(() => {}, 1000);
let buffer = "";
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    if (!line.trim()) continue;
    const message = JSON.parse(line);
    if (message.id === undefined) continue;
    let result = {};
    if (message.method === "initialize") {
      result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} },
                 serverInfo: { name: "stubborn", version: "1.0.0" } };
    }
    if (message.method === "tools/list") result = { tools: [] };
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }) + "\n");
    if (message.method === "tools/list") log("listed");
  }
});
process.stdin.on("end", () => log("eof"));
"#;

/// Waits (bounded) until `log` holds the line `line`.
async fn until_logged(log: &Path, line: &str) {
    for _ in 0..600 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l == line) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the MCP server never logged {line}");
}

/// Ctrl-C, then Ctrl-C again while the session's end waits for an MCP server that ignores
/// SIGTERM: coder exits at once with 130, the server killed without the graceful steps
/// (it never got the SIGTERM that comes after the wait), no process left behind.
#[tokio::test]
async fn a_second_ctrl_c_exits_at_once_and_leaves_no_process_behind() {
    let marker = marker();
    let _cleanup = KillMarked(marker.clone());
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "c1",
        "bash",
        json!({"command": format!("sleep {marker}")}),
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (workspace, home, tmp) = dirs(dir.path());
    let log = dir.path().join("mcp.log");
    std::fs::create_dir_all(home.join(".config/coder")).unwrap();
    std::fs::write(
        home.join(".config/coder/config.json"),
        json!({"mcpServers": {"stubborn": {
            "command": "node",
            "args": ["-e", STUBBORN_MCP_SERVER, log, marker],
        }}})
        .to_string(),
    )
    .unwrap();
    let mut command = exec_command(&workspace, &home, &tmp, &server, &[]);
    command
        .args(["--mode", "yolo", "run a long command"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let pid = Pid::from_raw(child.id().unwrap() as i32);
    // Read while it writes, so a full pipe never stops coder.
    let output = tokio::spawn(child.wait_with_output());
    until_logged(&log, "listed").await;
    // The command runs (the MCP server's arguments carry the marker too).
    for _ in 0..600 {
        if processes_with(&marker).len() > 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    kill(pid, Signal::SIGINT).unwrap();
    // The session is ending: its MCP server's input was closed, and the server stays.
    until_logged(&log, "eof").await;
    kill(pid, Signal::SIGINT).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), output)
        .await
        .expect("coder exec did not end after the second Ctrl-C")
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("error: interrupted again; exiting without waiting for the session to end"),
        "{stderr}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        !logged.lines().any(|line| line == "term"),
        "the graceful shutdown went on: {logged}"
    );
    assert_eq!(survivors(&marker).await, Vec::<i32>::new(), "{stderr}");
    assert_eq!(left_in(&tmp), Vec::<PathBuf>::new());
}
