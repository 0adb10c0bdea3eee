//! The workspace path constraint: file tools refuse escapes, and the OS sandbox stops
//! commands that write outside the workspace unless a person approves a re-run.

use coder_core::ProviderKind;
use coder_protocol::{EventMsg, Mode, PermissionDecision};
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::support::{Harness, answer_with, last_tool_result};

#[tokio::test]
async fn file_tools_refuse_dotdot_absolute_and_symlinked_escapes() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let secret = outside.path().join("secret.txt");
    let cases = vec![
        ("read", json!({"path": "../secret.txt"})),
        ("read", json!({"path": secret.to_str().unwrap()})),
        ("read", json!({"path": "link/secret.txt"})),
        ("write", json!({"path": "link/new.txt", "content": "x"})),
        (
            "edit",
            json!({"path": secret.to_str().unwrap(), "old_string": "secret", "new_string": "x"}),
        ),
        ("grep", json!({"pattern": "secret", "path": "link"})),
        ("glob", json!({"pattern": "*", "path": "link"})),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: link/p.txt\n+x\n*** End Patch"}),
        ),
    ];
    for (tool, arguments) in cases {
        let server = MockModelServer::start(vec![
            MockResponse::tool_call("c1", tool, arguments.clone()),
            MockResponse::text("done"),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, ProviderKind::OpenAi);
        std::os::unix::fs::symlink(outside.path(), h.workspace.path().join("link")).unwrap();
        h.run("escape").await;
        let result = last_tool_result(&server);
        assert!(
            result.contains("outside the workspace"),
            "{tool} {arguments}: {result}"
        );
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[tokio::test]
async fn the_sandbox_stops_writes_outside_the_workspace_even_in_yolo() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!("echo inside > inside.txt && touch {}", target.display());
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Yolo,
        vec![],
    );
    answer_with(&h.engine, PermissionDecision::Deny { message: None });
    let events = h.run("escape").await;
    assert!(h.workspace.path().join("inside.txt").exists());
    assert!(
        !target.exists(),
        "the sandbox let a write outside the workspace through"
    );
    let asked = events.iter().any(|e| {
        matches!(&e.msg,
        EventMsg::PermissionRequested { summary, options, .. }
            if summary.contains("without the sandbox")
                && super::option_ids(options) == ["allow_once", "deny", "refuse"])
    });
    assert!(asked, "no request to re-run outside the sandbox");
    let result = last_tool_result(&server);
    // The read-only mount says so; Landlock alone (no namespaces) says "Permission denied".
    assert!(
        result.contains("Read-only file system") || result.contains("Permission denied"),
        "{result}"
    );
    assert!(result.contains("was not approved"), "{result}");
}

#[tokio::test]
async fn an_approved_rerun_runs_outside_the_sandbox() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("approved.txt");
    let command = format!("touch {}", target.display());
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Yolo,
        vec![],
    );
    answer_with(&h.engine, PermissionDecision::AllowOnce);
    h.run("escape").await;
    assert!(target.exists());
    assert!(last_tool_result(&server).starts_with("Exit code: 0"));
}

#[tokio::test]
async fn the_commands_private_temp_dir_is_made_when_needed_and_gone_after_shutdown() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "echo \"$TMPDIR\""})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Yolo,
        vec![],
    );
    h.run("where is tmp?").await;
    let result = last_tool_result(&server);
    let temp_dir = std::path::PathBuf::from(
        result
            .lines()
            .find(|line| line.contains("coder-sandbox-"))
            .unwrap_or_else(|| panic!("no private TMPDIR in {result}"))
            .trim(),
    );
    assert!(temp_dir.is_dir(), "{}", temp_dir.display());
    h.engine.shutdown().await;
    assert!(!temp_dir.exists(), "{} is left behind", temp_dir.display());
}

/// The results of the calls of the last request, by call id.
fn results_by_call(server: &MockModelServer) -> std::collections::HashMap<String, String> {
    let requests = server.requests();
    let messages = requests.last().unwrap().body["messages"].clone();
    messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every protected file the sandbox holds (`sandbox/protected.rs`: bound read-only, or
/// removed when a command made it) stays as it was when a session that approves without a
/// person lets a command change it; those it does not hold are refused before anything runs.
#[tokio::test]
async fn auto_approved_commands_cannot_change_the_protected_files_the_sandbox_holds() {
    let held = [
        "echo evil > .git/hooks/pre-commit",
        "echo '[alias] x = !id' >> .git/config",
        "echo x > .git/commondir",
        "echo x > .git/config.worktree",
        "echo '{\"mode\": \"yolo\"}' > .coder/config.json",
        "echo x > .vscode/tasks.json",
        "mkdir -p .idea && echo x > .idea/workspace.xml",
        "echo x > .nvim.lua",
        "echo x > .nvimrc",
        "echo x > .exrc",
        "echo x > .mcp.json",
        "echo x > tracked/servers.json",
        "mkdir -p .githooks && echo x > .githooks/pre-commit",
        "echo x > vendor/x/.git/hooks/post-checkout",
    ];
    let not_held = ["echo x > sub/.mcp.json", "echo x > .git/HEAD"];
    let calls: Vec<coder_testkit::Chunk> = held
        .iter()
        .chain(&not_held)
        .enumerate()
        .map(|(index, command)| {
            coder_testkit::Chunk::tool_call(
                &format!("c{index}"),
                "bash",
                json!({"command": command}),
            )
        })
        .collect();
    let server = MockModelServer::start(vec![
        MockResponse::stream(calls),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| {
            c.mode = Mode::Default;
            c.preset = coder_protocol::Preset::Balanced;
            c.auto_approve = true;
        },
        vec![],
    );
    let files = [
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/config", "[core]\n\thooksPath = .githooks\n"),
        (".git/hooks/pre-commit", "#!/bin/sh\n"),
        (".coder/config.json", "{}\n"),
        (".vscode/tasks.json", "{}\n"),
        (".nvimrc", "\" mine\n"),
        ("tracked/servers.json", "{}\n"),
        ("vendor/x/.git/HEAD", "ref: refs/heads/main\n"),
        ("vendor/x/.git/hooks/post-checkout", "#!/bin/sh\n"),
    ];
    for (path, content) in files {
        h.write(path, content);
    }
    std::fs::create_dir(h.workspace.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("tracked/servers.json", h.workspace.path().join(".mcp.json"))
        .unwrap();
    let enforcement = h.engine.sandbox_enforcement();
    assert!(
        enforcement.as_ref().is_some_and(|e| e.read_only_view),
        "this test needs the sandbox's read-only view: {enforcement:?}"
    );

    let events = h.run("set things up").await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::PermissionRequested { .. })),
        "a person was asked"
    );
    let results = results_by_call(&server);
    for (index, command) in held.iter().enumerate() {
        let result = &results[&format!("c{index}")];
        // Approved and run (a re-run outside the sandbox is refused later), and stopped or
        // undone by the sandbox.
        assert!(result.starts_with("Exit code: "), "{command}: {result}");
        assert!(
            !result.starts_with("Exit code: 0\n") || result.contains("removed"),
            "{command}: {result}"
        );
    }
    for (offset, command) in not_held.iter().enumerate() {
        let result = &results[&format!("c{}", held.len() + offset)];
        assert!(
            result.starts_with("bash: ")
                && result.contains("protected files")
                && result.contains("refused"),
            "{command}: {result}"
        );
    }
    let ws = h.workspace.path();
    for (path, content) in files {
        assert_eq!(
            std::fs::read_to_string(ws.join(path)).unwrap(),
            content,
            "{path}"
        );
    }
    for missing in [
        ".git/commondir",
        ".git/config.worktree",
        ".idea",
        ".nvim.lua",
        ".exrc",
        ".githooks",
        "sub/.mcp.json",
    ] {
        assert!(!ws.join(missing).exists(), "{missing} was left");
    }
}

/// Seed 003: a conversation that asks for an unconfined shell in a session with a sandbox
/// keeps the sandbox (the strictest wins): it is told so, and its command still cannot
/// write outside the workspace.
#[tokio::test]
async fn a_conversation_asking_for_an_unconfined_shell_stays_confined() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!("echo inside > inside.txt && touch {}", target.display());
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": command})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Yolo,
        vec![],
    );
    answer_with(&h.engine, PermissionDecision::Deny { message: None });
    let conversation = h
        .engine
        .create_conversation(coder_core::ConversationSpec {
            tools_prefs: Some(coder_protocol::ToolsPrefs {
                shell_mode: Some(coder_protocol::ShellMode::Unconfined),
                ..coder_protocol::ToolsPrefs::default()
            }),
            ..coder_core::ConversationSpec::default()
        })
        .unwrap();
    let mut told = Vec::new();
    while let Ok(event) = h.events.try_recv() {
        if let EventMsg::Warning { message } = event.msg {
            told.push(message);
        }
    }
    assert!(
        told.iter().any(|message| message.contains("unconfined")),
        "{told:?}"
    );
    let task = h.engine.send(conversation, "escape").unwrap();
    h.until_end(task).await;
    assert!(h.workspace.path().join("inside.txt").exists());
    assert!(
        !target.exists(),
        "a conversation's shell preference let a write outside the workspace through"
    );
}
