//! The OS sandbox seen through `coder exec` and `coder lsp`: a command the policy allows
//! still cannot change anything outside the writable roots (metadata included), cannot
//! change coder's own files in the workspace, and has no network unless configured or a
//! person approves a re-run.

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Output;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::lsp::Client;

/// Runs `coder exec --mode yolo` in `workspace` with a clean environment, the user-level
/// configuration in `home` (`CODER_HOME`), plus `env`.
pub(super) async fn coder(
    workspace: &Path,
    home: &Path,
    server: &MockModelServer,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    coder_under(&[], workspace, home, server, args, env).await
}

/// [`coder`], started through `wrapper` (a program and its arguments) when not empty.
async fn coder_under(
    wrapper: &[&str],
    workspace: &Path,
    home: &Path,
    server: &MockModelServer,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let coder = Path::new(env!("CARGO_BIN_EXE_coder"));
    coder_at(coder, wrapper, workspace, home, server, args, env).await
}

/// [`coder_under`] with the binary at `coder`.
pub(super) async fn coder_at(
    coder: &Path,
    wrapper: &[&str],
    workspace: &Path,
    home: &Path,
    server: &MockModelServer,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut command = match wrapper.split_first() {
        Some((program, rest)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(rest).arg(coder);
            command
        }
        None => tokio::process::Command::new(coder),
    };
    command
        .args(["exec", "--mode", "yolo"])
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .envs(crate::suite::kept_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODER_HOME", home)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "k")
        .env("CODER_MODEL", "mock-model")
        .envs(env.iter().copied());
    tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("coder exec did not finish in 60 s")
        .unwrap()
}

/// A model that runs `command` with `bash` once, then says "done".
pub(super) async fn model_running(command: &str) -> MockModelServer {
    MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap()
}

/// A model that runs `script` as a file in `workspace`: the policy reads a command line, not
/// what a script it runs does, so a script is how a command reaches coder's own files and
/// only the sandbox stands in its way.
async fn model_running_script(workspace: &Path, script: &str) -> MockModelServer {
    std::fs::write(workspace.join("attack.sh"), script).unwrap();
    model_running("bash attack.sh").await
}

/// What the model was told the `bash` call returned.
pub(super) fn tool_result(server: &MockModelServer) -> String {
    let requests = server.requests();
    let messages = requests
        .last()
        .and_then(|r| r.body["messages"].as_array().cloned())
        .unwrap_or_default();
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn xattr_of(path: &Path) -> Option<Vec<u8>> {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg("import os, sys\ntry: sys.stdout.write(os.getxattr(sys.argv[1], 'user.coder').decode())\nexcept OSError: sys.exit(1)")
        .arg(path)
        .output()
        .unwrap();
    out.status.success().then_some(out.stdout)
}

/// A session killed before it could clean up (SIGKILL, a crash, the machine's power) leaves
/// its private temporary directory, and what its commands wrote there, in the system's
/// temporary directory. The next session to run a confined command removes it; it leaves
/// alone the directory a live session holds, one made a moment ago (a session between
/// making it and taking hold of it) and any other directory.
#[tokio::test]
async fn a_killed_sessions_temporary_directory_is_removed_by_the_next_session() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| {
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("left.txt"), "x").unwrap();
        dir
    };
    let age = |dir: &Path| {
        let made = std::process::Command::new("touch")
            .args(["-d", "2 minutes ago"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(made.success());
    };
    let abandoned = dir("coder-sandbox-abandoned");
    age(&abandoned);
    let live = dir("coder-sandbox-live");
    age(&live);
    let held = nix::fcntl::Flock::lock(
        std::fs::File::open(&live).unwrap(),
        nix::fcntl::FlockArg::LockExclusiveNonblock,
    )
    .unwrap();
    let fresh = dir("coder-sandbox-fresh");
    let other = dir("coder-other");
    age(&other);

    let server = model_running("echo hi > note.txt").await;
    let tmpdir = tmp.path().to_str().unwrap();
    let out = coder(
        workspace.path(),
        home.path(),
        &server,
        &["run it"],
        &[("TMPDIR", tmpdir)],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        workspace.path().join("note.txt").exists(),
        "the command did not run"
    );
    assert!(
        !abandoned.exists(),
        "a killed session's directory is left behind"
    );
    for kept in [&live, &fresh, &other] {
        assert!(
            kept.join("left.txt").exists(),
            "{} was removed",
            kept.display()
        );
    }
    drop(held);
    let mut left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["coder-other", "coder-sandbox-fresh", "coder-sandbox-live"],
        "the session's own directory is removed when it ends"
    );
}

#[tokio::test]
async fn commands_cannot_change_metadata_outside_the_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("victim.txt");
    std::fs::write(&file, "untouched\n").unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let f = file.display();
    let command = format!(
        "chmod 600 {f}; chown 65534:65534 {f}; touch -d 2001-01-01 {f}; \
         python3 -c \"import os; os.setxattr('{f}', 'user.coder', b'x')\"; \
         echo inside > inside.txt"
    );
    let server = model_running(&command).await;
    let out = coder(workspace.path(), home.path(), &server, &["go"], &[]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));

    let after = std::fs::metadata(&file).unwrap();
    let result = tool_result(&server);
    assert_eq!(after.mode(), before.mode(), "chmod got through: {result}");
    assert_eq!(
        (after.uid(), after.gid()),
        (before.uid(), before.gid()),
        "chown got through: {result}"
    );
    assert_eq!(
        after.mtime(),
        before.mtime(),
        "touch -d got through: {result}"
    );
    assert_eq!(xattr_of(&file), None, "setxattr got through: {result}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "untouched\n");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("inside.txt")).unwrap(),
        "inside\n",
        "{result}"
    );
}

#[tokio::test]
async fn commands_see_coders_own_files_read_only() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = workspace.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join(".coder")).unwrap();
    let protected = [
        (".git/config", "[core]\n"),
        (".git/hooks/pre-push", "#!/bin/sh\n"),
        (".mcp.json", "{}\n"),
        (".coder/config.json", "{}\n"),
    ];
    for (path, content) in protected {
        std::fs::write(root.join(path), content).unwrap();
    }
    let command = "echo evil > .git/hooks/pre-commit; echo evil >> .git/hooks/pre-push; \
                   echo evil >> .git/config; echo '{\"mcpServers\": {}}' > .mcp.json; \
                   echo '{\"mode\": \"yolo\"}' > .coder/config.json; \
                   chmod 777 .git/config; mkdir -p .coder/planted; \
                   umount .mcp.json; mount -o remount,rw,bind .mcp.json; echo '{}' > .mcp.json; \
                   mv .git .git.old && mkdir .git && echo evil > .git/config; \
                   mv .coder .coder.old && mkdir .coder && echo evil > .coder/config.json; \
                   echo inside > inside.txt; mkdir -p src && echo ok > src/new.rs";
    let server = model_running_script(root, command).await;
    let out = coder(root, home.path(), &server, &["go"], &[]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));

    let result = tool_result(&server);
    for (path, content) in protected {
        assert_eq!(
            std::fs::read_to_string(root.join(path)).unwrap(),
            content,
            "{path} changed: {result}"
        );
    }
    assert!(
        !root.join(".git/hooks/pre-commit").exists(),
        "a hook was planted: {result}"
    );
    assert!(!root.join(".coder/planted").exists(), "{result}");
    assert_eq!(
        std::fs::metadata(root.join(".git/config")).unwrap().mode() & 0o777,
        0o644
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/new.rs")).unwrap(),
        "ok\n"
    );
    assert!(root.join("inside.txt").exists());
}

/// A listener on the test's loopback and a command that connects to it.
fn listener_and_command() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})); print('connected')\""
    );
    (listener, command)
}

fn was_connected(listener: &TcpListener) -> bool {
    listener.accept().is_ok()
}

#[tokio::test]
async fn commands_have_no_network_by_default_and_the_rerun_needs_a_person() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (listener, command) = listener_and_command();
    let server = model_running(&command).await;
    // --auto-approve does not answer for a person: the re-run with network is refused.
    let out = coder(
        workspace.path(),
        home.path(),
        &server,
        &["--auto-approve", "go"],
        &[],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = tool_result(&server);
    assert!(!was_connected(&listener), "the command reached the network");
    assert!(!result.contains("connected\n"), "{result}");
    assert!(result.contains("Connection refused"), "{result}");
    assert!(
        result.contains("with network was not approved"),
        "no re-run was offered: {result}"
    );
}

#[tokio::test]
async fn network_on_in_the_user_configuration_lets_commands_connect() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.json"),
        json!({"sandbox": {"network": "on"}}).to_string(),
    )
    .unwrap();
    let (listener, command) = listener_and_command();
    let server = model_running(&command).await;
    let out = coder(workspace.path(), home.path(), &server, &["go"], &[]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = tool_result(&server);
    assert!(result.contains("connected\n"), "{result}");
    assert!(was_connected(&listener));
}

#[tokio::test]
async fn an_editor_is_asked_before_a_command_reruns_with_network() {
    let workspace = tempfile::tempdir().unwrap();
    let (listener, command) = listener_and_command();
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let (mut client, conversation) = Client::ready(workspace.path(), &server, "yolo").await;
    let mut seen = Vec::new();
    client.send_text(&conversation, "go", &mut seen).await;
    // The command itself may need an approval first, depending on the workspace's trust.
    let ask = loop {
        // A request may arrive before the answer to `conversation/send`.
        let message = client.server_request("permission/request", &mut seen).await;
        let summary = message["params"]["summary"].as_str().unwrap_or_default();
        if summary.contains("network") {
            break message;
        }
        client
            .write(json!({"jsonrpc": "2.0", "id": message["id"], "result": {"decision": "allow_once"}}))
            .await;
    };
    assert!(!was_connected(&listener), "connected before the approval");
    assert!(
        tool_result(&server).is_empty(),
        "the model saw a result before the re-run"
    );
    assert_eq!(
        super::option_ids(&ask["params"]["options"]),
        ["allow_once", "deny", "refuse"]
    );
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_once"}}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(tool_result(&server).contains("connected\n"));
    assert!(was_connected(&listener));
    client.stop().await;
}

#[tokio::test]
async fn the_log_says_what_the_sandbox_enforces() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let server = MockModelServer::start(vec![MockResponse::text("hi")])
        .await
        .unwrap();
    let out = coder(
        workspace.path(),
        home.path(),
        &server,
        &["go"],
        &[("CODER_LOG", "coder_core=info")],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let line = stderr
        .lines()
        .find(|line| line.contains("sandbox: "))
        .unwrap_or_else(|| panic!("no sandbox line in {stderr}"));
    assert!(line.contains("Landlock ABI"), "{line}");
    assert!(line.contains("network off"), "{line}");
}

#[tokio::test]
async fn what_a_command_creates_at_a_missing_protected_path_is_removed() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = workspace.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let command = "mkdir -p .git/hooks && printf '#!/bin/sh\\nevil\\n' > .git/hooks/pre-commit; \
                   echo '{\"mcpServers\": {\"x\": {\"command\": \"evil\"}}}' > .mcp.json; \
                   echo '{}' > .coder/config.json; echo inside > inside.txt";
    let server = model_running_script(root, command).await;
    let out = coder(root, home.path(), &server, &["go"], &[]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = tool_result(&server);
    assert!(!root.join(".git/hooks").exists(), "{result}");
    assert!(!root.join(".mcp.json").exists(), "{result}");
    assert!(!root.join(".coder/config.json").exists(), "{result}");
    assert!(
        result.contains("The command created .mcp.json, .git/hooks"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    assert!(root.join("inside.txt").exists());
}

#[tokio::test]
async fn git_still_commits_in_the_sandbox() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = workspace.path();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("HOME", home.path())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    let command = "echo hi > a.txt && git add a.txt && \
                   git -c user.name=coder -c user.email=coder@example.com commit -qm one && \
                   git checkout -qb topic && git log --oneline | wc -l";
    let server = model_running(command).await;
    let out = coder(root, home.path(), &server, &["go"], &[]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = tool_result(&server);
    assert!(result.starts_with("Exit code: 0\n"), "{result}");
    assert!(result.contains("Output:\n1\n"), "{result}");
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        config
    );
}

#[tokio::test]
async fn root_without_user_namespaces_still_gets_a_locked_read_only_view() {
    // Root in a user namespace that may make no further ones: what coder meets as root in
    // a container that refuses user namespaces.
    let wrapper = [
        "unshare",
        "--user",
        "--map-root-user",
        "sh",
        "-c",
        "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"",
    ];
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("victim.txt");
    std::fs::write(&file, "untouched\n").unwrap();
    let mode = std::fs::metadata(&file).unwrap().mode();
    std::fs::write(workspace.path().join(".mcp.json"), "{}\n").unwrap();
    let command = format!(
        "unshare --user true && echo nested; chmod 600 {f}; mount -o remount,rw /; \
         umount .mcp.json; echo evil > .mcp.json; echo inside > inside.txt",
        f = file.display()
    );
    let server = model_running_script(workspace.path(), &command).await;
    let out = coder_under(
        &wrapper,
        workspace.path(),
        home.path(),
        &server,
        &["go"],
        &[("CODER_LOG", "coder_core=info")],
    )
    .await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("CAP_SYS_ADMIN dropped"), "{stderr}");
    let result = tool_result(&server);
    assert!(!result.contains("nested"), "{result}");
    assert_eq!(std::fs::metadata(&file).unwrap().mode(), mode, "{result}");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".mcp.json")).unwrap(),
        "{}\n",
        "{result}"
    );
    assert!(workspace.path().join("inside.txt").exists(), "{result}");
}
