//! The second round's bounds through the real doors: `/undo`'s records stay out of the
//! repository (`coder lsp`), an untrusted workspace cannot shrink the context window and a
//! range of a file past 64 MiB is read (`coder exec`), and an oversized image is refused
//! with nothing recorded (`coder lsp`).

use std::path::Path;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::exec::{coder_on, text};
use super::lsp::Client;

/// git in `dir`, as a person with an identity.
fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A git repository in `ws` with one commit of `tracked.txt` ("original").
fn repository_with_tracked_txt(ws: &Path) {
    git(ws, &["init", "-q"]);
    std::fs::write(ws.join("tracked.txt"), "original").unwrap();
    git(ws, &["add", "tracked.txt"]);
    git(ws, &["commit", "-q", "-m", "first"]);
}

/// The repository's objects (their names) and refs.
fn objects_and_refs(dir: &Path) -> (Vec<String>, String) {
    let mut objects = Vec::new();
    let mut pending = vec![dir.join(".git/objects")];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else {
                objects.push(entry.path().display().to_string());
            }
        }
    }
    objects.sort();
    let refs = std::process::Command::new("git")
        .arg("for-each-ref")
        .current_dir(dir)
        .output()
        .unwrap();
    (objects, String::from_utf8_lossy(&refs.stdout).into_owned())
}

/// What the model was told about its tool call `id` in the request after it.
fn tool_result(server: &MockModelServer, id: &str) -> String {
    let requests = server.requests();
    let messages = requests.last().unwrap().body["messages"].clone();
    messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn undo_through_the_editor_writes_nothing_into_the_repository_and_skips_large_files() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "b1",
            "bash",
            json!({"command": "printf changed > tracked.txt && printf more >> big.bin"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    repository_with_tracked_txt(ws);
    std::fs::write(ws.join(".env"), "API_TOKEN=very-secret-value").unwrap();
    std::fs::File::create(ws.join("big.bin"))
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    let before = objects_and_refs(ws);
    let (mut client, root) = Client::ready(ws, &server, "yolo").await;
    let mut seen = Vec::new();
    client.send_text(&root, "change things", &mut seen).await;
    // Running, then idle: the turn's end is recorded.
    client.until_events("state_changed", 2, &mut seen).await;
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/undo"}),
            &mut seen,
        )
        .await;
    let said = answer["result"]["text"].as_str().unwrap_or_default();
    assert!(said.contains("restored tracked.txt"), "{answer}");
    assert!(said.contains("left big.bin: over 16 MiB"), "{answer}");
    client.stop().await;
    assert_eq!(
        std::fs::read_to_string(ws.join("tracked.txt")).unwrap(),
        "original"
    );
    assert_eq!(
        objects_and_refs(ws),
        before,
        "a checkpoint reached the repository"
    );
}

#[tokio::test]
async fn an_untrusted_workspace_cannot_shrink_the_context_window() {
    let server = MockModelServer::start(vec![MockResponse::text("fine")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".coder")).unwrap();
    // Smaller than the system prompt: every request would overflow it.
    std::fs::write(ws.join(".coder/config.json"), r#"{"contextWindow": 1000}"#).unwrap();
    let out = coder_on(ws, &server, "k", &["hi"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "fine\n");
    assert!(stderr.contains("\"contextWindow\""), "{stderr}");
}

#[tokio::test]
async fn a_range_of_a_file_past_64_mib_is_read() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "r1",
            "read",
            json!({"path": "big.log", "offset": 10, "limit": 2}),
        ),
        MockResponse::text("read"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let line = format!("{}\n", "x".repeat(1023));
    let mut body = String::new();
    for n in 1..=12 {
        body.push_str(&format!("line {n}\n"));
    }
    let mut file = std::fs::File::create(ws.join("big.log")).unwrap();
    use std::io::Write;
    file.write_all(body.as_bytes()).unwrap();
    for _ in 0..(65 << 10) {
        file.write_all(line.as_bytes()).unwrap();
    }
    drop(file);
    let out = coder_on(ws, &server, "k", &["read it"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let told = tool_result(&server, "r1");
    assert!(
        told.contains("line 10") && told.contains("line 11") && !told.contains("line 12"),
        "{told}"
    );
}

#[tokio::test]
async fn an_image_past_its_limit_is_refused_and_nothing_is_recorded() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let image = format!("data:image/png;base64,{}", "A".repeat(15 << 20));
    let answer = client
        .request(
            "conversation/send",
            json!({"conversationId": root, "items": [
                {"type": "text", "text": "look"},
                {"type": "image", "image_url": image},
            ]}),
            &mut seen,
        )
        .await;
    assert_eq!(
        answer["error"]["data"]["kind"], "limit_exceeded",
        "{}",
        answer["error"]
    );
    let history = client
        .request(
            "conversation/history",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    assert_eq!(history["result"]["entries"], Value::Array(Vec::new()));
    assert!(server.requests().is_empty(), "the image reached the model");
    client.stop().await;
}

/// What a session costs in git processes, seen through a `git` on `PATH` that logs its
/// calls: the first turn starts the recorder in the background, which lists the repository
/// once (the turn does not wait for it: its git is held until the turn is over); no later
/// turn runs git (their changes are watched); `/undo` of a file git tracked reads its blob.
#[tokio::test]
async fn a_turn_in_a_repository_runs_git_once_per_session_not_per_turn() {
    let server = MockModelServer::start(vec![
        MockResponse::text("just talk"),
        MockResponse::tool_call("b1", "bash", json!({"command": "printf one > tracked.txt"})),
        MockResponse::text("first change"),
        MockResponse::tool_call("b2", "bash", json!({"command": "printf two > tracked.txt"})),
        MockResponse::text("second change"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    repository_with_tracked_txt(ws);
    let bin = tempfile::tempdir().unwrap();
    let (path, log) = logging_git(bin.path());
    let hold = bin.path().join(HOLD);
    std::fs::write(&hold, "").unwrap();
    let calls = || git_calls(&log);
    let mut client = Client::start_with(ws, &server, "yolo", &[("PATH", &path)]);
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut turn = async |text: &str| {
        let before = calls().len();
        let mut seen = Vec::new();
        client.send_text(&root, text, &mut seen).await;
        client.until_events("state_changed", 2, &mut seen).await;
        calls()[before..].to_vec()
    };
    // Every git call is held until `hold` is gone: the turn ends all the same.
    turn("hi").await;
    let mut waited = 0;
    while calls().is_empty() && waited < 600 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(!calls().is_empty(), "the first turn started no recorder");
    std::fs::remove_file(&hold).unwrap();
    turn("change it").await;
    let first = calls();
    assert!(
        first
            .iter()
            .filter(|call| call.contains("ls-files"))
            .count()
            == 1
            && first.len() <= 4,
        "{first:?}"
    );
    assert_eq!(turn("again").await, Vec::<String>::new(), "a later turn");
    assert_eq!(
        std::fs::read_to_string(ws.join("tracked.txt")).unwrap(),
        "two"
    );
    let mut seen = Vec::new();
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/undo"}),
            &mut seen,
        )
        .await;
    assert_eq!(
        answer["result"]["text"],
        "undid the last turn:\n  restored tracked.txt"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("tracked.txt")).unwrap(),
        "one"
    );
    client.stop().await;
}

/// A session that records `/undo`'s checkpoints watches the workspace through the process's
/// one watcher: after a turn whose command changed a file in a repository, `coder lsp`
/// holds one inotify instance (a process holding many sessions would otherwise run out of
/// them, 128 by default), and `/undo` still puts back what the command changed.
#[tokio::test]
async fn checkpoints_watch_through_the_processs_one_watcher() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("b1", "bash", json!({"command": "mkdir -p sub && printf new > sub/made.txt && printf one > tracked.txt"})),
        MockResponse::text("changed"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    repository_with_tracked_txt(ws);
    let mut client = Client::start(ws, &server, "yolo");
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "change it", &mut seen).await;
    client.until_events("state_changed", 2, &mut seen).await;
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/made.txt")).unwrap(),
        "new"
    );
    let pid = client.child.id().unwrap();
    assert_eq!(super::exec::inotify_instances(pid), 1);
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/undo"}),
            &mut seen,
        )
        .await;
    let text = answer["result"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.starts_with("undid the last turn"), "{answer}");
    assert_eq!(
        std::fs::read_to_string(ws.join("tracked.txt")).unwrap(),
        "original"
    );
    assert!(!ws.join("sub").exists(), "{text}");
    client.stop().await;
}

/// While a file of this name is in a [`logging_git`]'s folder, each call waits (at most a
/// minute) before it runs.
const HOLD: &str = "hold";

/// A `git` in `bin` that logs each call's arguments to a file and runs the real one: the
/// `PATH` that finds it first, and the log.
fn logging_git(bin: &Path) -> (String, std::path::PathBuf) {
    let log = bin.join("calls.log");
    let wrapper = bin.join("git");
    let hold = bin.join(HOLD);
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ni=0\nwhile [ -e '{}' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\nexec '{}' \"$@\"\n",
            log.display(),
            hold.display(),
            which_git().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (path, log)
}

/// The calls a [`logging_git`] logged.
fn git_calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A one-shot `coder exec` has no later turn to `/undo` from (the records would go with its
/// process), so a command it runs in a repository waits for no checkpoint: no `git` runs.
#[tokio::test]
async fn a_one_shot_command_in_a_repository_runs_no_git() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("b1", "bash", json!({"command": "printf one > tracked.txt"})),
        MockResponse::text("changed"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    repository_with_tracked_txt(ws);
    let bin = tempfile::tempdir().unwrap();
    let (path, log) = logging_git(bin.path());
    let url = server.openai_base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "k"),
        ("CODER_MODEL", "mock-model"),
        ("PATH", path.as_str()),
    ];
    let out = super::exec::coder(ws, &["--mode", "yolo", "change it"], &env).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(ws.join("tracked.txt")).unwrap(),
        "one"
    );
    assert_eq!(git_calls(&log), Vec::<String>::new());
}

/// The `git` the tests' `PATH` finds.
fn which_git() -> std::path::PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| Path::new(dir).join("git"))
        .find(|candidate| candidate.is_file())
        .unwrap()
}
