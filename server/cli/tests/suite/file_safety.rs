//! The file tools' guarantees through the real binary: a write cannot be raced out of the
//! workspace, and the files that configure coder and git are not written without a person.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::lsp::{Client, event_types};

/// Runs `coder exec` in `workspace` against `server` with a clean environment.
async fn coder(workspace: &Path, server: &MockModelServer, args: &[&str]) -> Output {
    super::exec::coder_on(workspace, server, "k", args).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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

/// Swaps `<workspace>/d` between a directory and a link to `outside` until dropped.
struct Racer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Racer {
    fn start(workspace: &Path, outside: &Path) -> Self {
        let d = workspace.join("d");
        let parked = workspace.join("d.parked");
        std::fs::create_dir(&d).unwrap();
        let outside = outside.to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let _ = std::fs::rename(&d, &parked);
                let _ = std::os::unix::fs::symlink(&outside, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::rename(&parked, &d);
                // Longer in the real state than in the swapped one, so writes get through
                // on a loaded machine too and the test is never vacuous.
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Racer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coder_exec_writes_cannot_be_raced_out_of_the_workspace() {
    const WRITES: usize = 150;
    let calls: Vec<Chunk> = (0..WRITES)
        .map(|i| {
            let arguments = json!({"path": format!("d/f{i}.txt"), "content": "x\n"});
            Chunk::tool_call(&format!("w{i}"), "write", arguments)
        })
        .collect();
    // On a loaded machine the racer can be descheduled in its swapped state for a whole
    // run, so that no write gets through and the run proves nothing: such a run is tried
    // again (up to three runs); none may ever let a write out.
    let mut written = 0;
    for _ in 0..3 {
        let server = MockModelServer::start(vec![
            MockResponse::stream(calls.clone()),
            MockResponse::text("ok"),
        ])
        .await
        .unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let racer = Racer::start(workspace.path(), outside.path());
        let out = coder(workspace.path(), &server, &["--mode", "yolo", "write them"]).await;
        drop(racer);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let escaped: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name())
            .collect();
        written = (0..WRITES)
            .filter(|i| tool_result(&server, &format!("w{i}")).starts_with("Created"))
            .count();
        assert!(
            escaped.is_empty(),
            "{} of {WRITES} writes landed outside the workspace: {escaped:?}",
            escaped.len()
        );
        if written > 0 {
            break;
        }
    }
    assert!(written > 0, "no write got through the racer at all");
}

#[tokio::test]
async fn coder_exec_in_yolo_mode_does_not_let_the_model_plant_a_git_repository() {
    // `HEAD`, `objects/`, `refs/` and a `config` naming an fsmonitor: the person's next `git
    // status` in `x` would run it.
    let config = "[core]\n\tfsmonitor = \"touch pwned; false\"\n";
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "write",
            json!({"path": "x/HEAD", "content": "ref: refs/heads/main\n"}),
        ),
        MockResponse::tool_call(
            "c2",
            "write",
            json!({"path": "x/objects/info/keep", "content": ""}),
        ),
        MockResponse::tool_call("c3", "write", json!({"path": "x/refs/keep", "content": ""})),
        MockResponse::tool_call(
            "c4",
            "write",
            json!({"path": "x/config", "content": config}),
        ),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let out = coder(
        workspace.path(),
        &server,
        &["--mode", "yolo", "--auto-approve", "go"],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(workspace.path().join("x/HEAD").exists());
    assert!(
        !workspace.path().join("x/config").exists(),
        "the repository was planted"
    );
    let told = tool_result(&server, "c4");
    assert!(told.contains("make a git repository"), "{told}");
}

#[tokio::test]
async fn coder_exec_in_yolo_mode_does_not_let_the_model_plant_mcp_json() {
    let planted = json!({"mcpServers": {"x": {"command": "sh", "args": ["-c", "touch pwned"]}}});
    let script = || {
        vec![
            MockResponse::tool_call(
                "c1",
                "write",
                json!({"path": ".mcp.json", "content": planted.to_string()}),
            ),
            MockResponse::text("ok"),
        ]
    };
    let server = MockModelServer::start(script()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    for args in [
        &["--mode", "yolo", "set up mcp"][..],
        &["--mode", "yolo", "--auto-approve", "set up mcp"][..],
    ] {
        let out = coder(workspace.path(), &server, args).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(!workspace.path().join(".mcp.json").exists(), "{args:?}");
        let told = tool_result(&server, "c1");
        assert!(
            told.contains(".mcp.json: .mcp.json names MCP servers whose commands coder starts"),
            "{args:?}: {told}"
        );
        let stderr = text(&out.stderr);
        assert!(stderr.contains("protected file"), "{args:?}: {stderr}");
        server.push(script());
    }
}

#[tokio::test]
async fn coder_lsp_asks_the_editor_for_a_protected_write_without_allow_always() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "write",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "yolo");
    let mut seen = Vec::new();
    client.initialize(json!({})).await;
    let created = client
        .request("conversation/create", json!({"mode": "yolo"}), &mut seen)
        .await;
    let conversation = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    client
        .send_text(&conversation, "install a hook", &mut seen)
        .await;
    // The request may arrive before the answer to `conversation/send`.
    let ask: Value = client.server_request("permission/request", &mut seen).await;
    assert_eq!(ask["params"]["toolName"], "write");
    let title = ask["params"]["title"].as_str().unwrap();
    assert!(
        title.starts_with("Edit /") && title.ends_with(".git/hooks/pre-commit"),
        "{title}"
    );
    // A protected file is asked about every time: no "allow always".
    assert_eq!(
        super::option_ids(&ask["params"]["options"]),
        ["allow_once", "deny", "refuse"]
    );
    let summary = ask["params"]["summary"].as_str().unwrap();
    assert!(summary.contains("protected file"), "{summary}");
    assert!(!workspace.path().join(".git/hooks/pre-commit").exists());
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_once"}}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(event_types(&seen).contains(&"tool_call_completed".to_owned()));
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh\n"
    );
    client.stop().await;
}

/// What runs is protected where no name says so: the hooks folder `core.hooksPath` names
/// (husky's `.husky/_`), a tracked folder `.git/hooks` links to, the file `.mcp.json` links
/// to, and an editor's files that run programs (`.vscode/tasks.json`). In `yolo` with
/// automatic approval, neither the file tools nor a confined command change them.
#[tokio::test]
async fn coder_exec_in_yolo_mode_protects_what_git_hooks_links_and_editors_run() {
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(ws)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "core.hooksPath", ".husky/_"]);
    for dir in [".husky/_", "githooks", "tracked"] {
        std::fs::create_dir_all(ws.join(dir)).unwrap();
    }
    std::fs::write(ws.join(".husky/_/pre-commit"), "#!/bin/sh\nnpm test\n").unwrap();
    std::fs::write(ws.join("githooks/pre-commit"), "#!/bin/sh\ntrue\n").unwrap();
    std::fs::write(ws.join("tracked/mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    std::fs::remove_dir_all(ws.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink("../githooks", ws.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink("tracked/mcp.json", ws.join(".mcp.json")).unwrap();
    let evil = "#!/bin/sh\ntouch pwned\n";
    let targets = [
        ".husky/_/pre-commit",
        "githooks/pre-commit",
        "tracked/mcp.json",
        ".vscode/tasks.json",
    ];
    let mut script: Vec<MockResponse> = targets
        .iter()
        .enumerate()
        .map(|(i, path)| {
            MockResponse::tool_call(
                &format!("w{i}"),
                "write",
                json!({"path": path, "content": evil}),
            )
        })
        .collect();
    // The same writes by a command the analysis cannot read: the sandbox stops them.
    script.push(MockResponse::tool_call(
        "c1",
        "bash",
        json!({"command": "python3 -c \"import sys\nfor p in sys.argv[1:]:\n  try:\n    import os; os.makedirs(os.path.dirname(p), exist_ok=True); open(p, 'w').write('evil')\n  except OSError as e: print(p, e)\" .husky/_/pre-commit githooks/pre-commit tracked/mcp.json .vscode/tasks.json"}),
    ));
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let out = coder(ws, &server, &["--mode", "yolo", "--auto-approve", "go"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (i, path) in targets.iter().enumerate() {
        let told = tool_result(&server, &format!("w{i}"));
        assert!(told.contains("protected"), "{path}: {told}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join(".husky/_/pre-commit")).unwrap(),
        "#!/bin/sh\nnpm test\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("githooks/pre-commit")).unwrap(),
        "#!/bin/sh\ntrue\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("tracked/mcp.json")).unwrap(),
        r#"{"mcpServers": {}}"#
    );
    assert!(!ws.join(".vscode").exists());
}
