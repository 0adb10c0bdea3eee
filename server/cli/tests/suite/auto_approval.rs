//! Approval without a person (seed 004 section 5), seen through `coder exec --auto-approve`
//! and `coder lsp` with `autoApproveAsk`: every ask is approved without blocking, dangerous
//! commands and plans included, except what would let something run outside the sandbox
//! (a file tool writing a protected file, a command changing protected files with no sandbox
//! holding them, a re-run that loosens the sandbox); catastrophic commands are refused in
//! every case. The model reads why.

use std::path::Path;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::exec::{as_refs, coder, openai_env, text};
use super::lsp::Client;

/// What the model was told about call `id`, from the last request it received.
fn tool_result(server: &MockModelServer, id: &str) -> String {
    let requests = server.requests();
    let messages = requests.last().unwrap().body["messages"].clone();
    messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {id}"))
        .to_owned()
}

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({ "command": command }))
}

/// `coder exec --auto-approve ARGS` in `workspace` (the default mode and preset unless `args`
/// say otherwise) against `server`.
async fn auto_approved(workspace: &Path, server: &MockModelServer, args: &[&str]) -> String {
    let env = openai_env(server);
    let mut all = vec!["--auto-approve"];
    all.extend_from_slice(args);
    let out = coder(workspace, &all, &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// The person's own configuration (`HOME` is `workspace/.home` for `coder exec`).
fn user_config(workspace: &Path, config: Value) {
    let dir = workspace.join(".home/.config/coder");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
}

#[tokio::test]
async fn a_dangerous_command_runs_without_a_person() {
    let server = MockModelServer::start(vec![
        bash("c1", "rm -rf build"),
        MockResponse::text("cleaned"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join("build/out")).unwrap();
    std::fs::write(ws.join("build/out/x.o"), "x").unwrap();
    auto_approved(ws, &server, &["clean up"]).await;
    assert!(!ws.join("build").exists(), "the command did not run");
    assert!(tool_result(&server, "c1").starts_with("Exit code: 0"));
}

#[tokio::test]
async fn catastrophic_commands_are_refused_and_the_model_is_told_why() {
    // In every mode: yolo, which skips every other check of a command, keeps this one.
    for mode in ["default", "yolo"] {
        let server = MockModelServer::start(vec![
            MockResponse::stream(vec![
                Chunk::tool_call("c1", "bash", json!({"command": "rm -rf .git"})),
                Chunk::tool_call("c2", "bash", json!({"command": "rm -rf ~"})),
                Chunk::tool_call("c3", "bash", json!({"command": "rm -rf *"})),
            ]),
            MockResponse::text("refused"),
        ])
        .await
        .unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let ws = workspace.path();
        std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
        std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(ws.join(".home/keep")).unwrap();
        std::fs::write(ws.join("main.rs"), "fn main() {}\n").unwrap();
        auto_approved(ws, &server, &["--mode", mode, "start over"]).await;
        for (id, why) in [
            ("c1", "recursive delete of .git"),
            ("c2", "recursive delete of ~"),
            ("c3", "every file of the workspace"),
        ] {
            let told = tool_result(&server, id);
            assert!(
                told.starts_with("Permission denied (refused: ") && told.contains(why),
                "{id}: {told}"
            );
        }
        assert!(ws.join(".git/HEAD").exists(), "{mode}");
        assert!(ws.join(".home/keep").exists(), "{mode}");
        assert!(ws.join("main.rs").exists(), "{mode}");
    }
}

#[tokio::test]
async fn a_file_tool_writing_a_protected_file_is_refused() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "write",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    auto_approved(ws, &server, &["--mode", "yolo", "add a hook"]).await;
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    let told = tool_result(&server, "c1");
    assert!(
        told.contains("protected file")
            && told.contains("coder writes itself, outside any sandbox"),
        "{told}"
    );
}

/// A command writing a git hook is approved and runs confined, where the hook is read-only;
/// with the sandbox off, the same command is refused before it runs.
#[tokio::test]
async fn a_command_writing_a_git_hook_is_approved_only_where_the_sandbox_holds_it() {
    let hook = "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit";
    let script = || vec![bash("c1", hook), MockResponse::text("done")];
    let server = MockModelServer::start(script()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    auto_approved(ws, &server, &["add a hook"]).await;
    let told = tool_result(&server, "c1");
    assert!(
        told.starts_with("Exit code: 1") && told.contains("Read-only file system"),
        "the command was not run confined: {told}"
    );
    let unchanged = || std::fs::read_to_string(ws.join(".git/hooks/pre-commit")).unwrap();
    assert_eq!(unchanged(), "#!/bin/sh\nexit 0\n");

    user_config(ws, json!({"sandbox": {"enabled": false}}));
    server.push(script());
    auto_approved(ws, &server, &["add a hook"]).await;
    let told = tool_result(&server, "c1");
    assert!(
        told.contains("refused") && told.contains("no sandbox keeps read-only"),
        "{told}"
    );
    assert_eq!(unchanged(), "#!/bin/sh\nexit 0\n");
}

#[tokio::test]
async fn a_plan_is_approved_without_a_person_and_the_next_edit_runs() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "p1",
            "exit_plan_mode",
            json!({"plan": "1. Write notes.txt."}),
        ),
        MockResponse::tool_call(
            "w1",
            "write",
            json!({"path": "notes.txt", "content": "planned\n"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let stderr = auto_approved(ws, &server, &["--mode", "plan", "plan and write notes"]).await;
    let told = tool_result(&server, "p1");
    assert!(told.contains("Plan mode is off"), "{told}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "planned\n",
        "{stderr}"
    );
    // The edit ran in the mode the plan left for: the tools offered next have no plan tool.
    let offered = server.requests()[1].body["tools"].to_string();
    assert!(!offered.contains("exit_plan_mode"), "{offered}");
    // Nobody is there to answer questions: the model is not offered the tool to ask them.
    assert!(!offered.contains("ask_user"), "{offered}");
}

/// `coder lsp` with `autoApproveAsk` in the person's configuration: no request reaches the
/// editor; a dangerous command runs and a protected write is refused with its reason.
#[tokio::test]
async fn the_editor_is_not_asked_when_the_configuration_approves_without_a_person() {
    let server = MockModelServer::start(vec![
        bash("c1", "rm -rf build"),
        MockResponse::tool_call("c2", "write", json!({"path": ".mcp.json", "content": "{}"})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join("build")).unwrap();
    std::fs::create_dir_all(ws.join(".config/coder")).unwrap();
    std::fs::write(
        ws.join(".config/coder/config.json"),
        json!({"autoApproveAsk": true}).to_string(),
    )
    .unwrap();
    let url = server.openai_base_url();
    let mut client = Client::spawn(
        ws,
        &[("OPENAI_BASE_URL", url.as_str()), ("OPENAI_API_KEY", "k")],
    );
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client
        .send_text(&root, "clean and configure", &mut seen)
        .await;
    loop {
        if seen
            .iter()
            .any(|m| m["params"]["event"]["type"] == "task_complete")
        {
            break;
        }
        seen.push(client.read().await);
    }
    assert!(
        !seen.iter().any(|m| m["method"] == "permission/request"),
        "the editor was asked"
    );
    assert!(!ws.join("build").exists());
    assert!(!ws.join(".mcp.json").exists());
    let told = tool_result(&server, "c2");
    assert!(
        told.contains("protected file") && told.contains("without asking a person"),
        "{told}"
    );
    client.stop().await;
}
