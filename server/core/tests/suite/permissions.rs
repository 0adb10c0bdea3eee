//! The permission pipeline through the whole engine: modes, presets, rules, requests.

use coder_core::{CommandRule, Config, ProviderKind};
use coder_protocol::{EngineState, EventMsg, Mode, PermissionDecision, PolicyDecision, Preset};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Harness, answer_with, assert_history_valid, kinds};

/// A harness whose model makes `call` and then says "done".
async fn calling(
    tool: &str,
    arguments: Value,
    adjust: impl FnOnce(&mut Config),
) -> (MockModelServer, Harness) {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", tool, arguments),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| balanced(c, adjust),
        vec![],
    );
    (server, h)
}

/// The session defaults a user gets: default mode, balanced preset, then `adjust`.
fn balanced(config: &mut Config, adjust: impl FnOnce(&mut Config)) {
    config.mode = Mode::Default;
    config.preset = Preset::Balanced;
    adjust(config);
}

/// What the model was told about call `c1`.
fn tool_result(server: &MockModelServer) -> String {
    let messages = server.requests()[1].body["messages"].clone();
    messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .expect("no result for c1")
}

fn write_call() -> Value {
    json!({"path": "out.txt", "content": "hello\n"})
}

/// "Always" on a file tool covers the folder the call's files are in: a later call on a file
/// there runs unasked, one elsewhere is asked about.
#[tokio::test]
async fn always_on_a_file_tool_covers_the_folder_of_its_files() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "write", json!({"path": "src/a.rs", "content": "a\n"})),
        MockResponse::tool_call(
            "c2",
            "write",
            json!({"path": "src/deep/b.rs", "content": "b\n"}),
        ),
        MockResponse::tool_call(
            "c3",
            "write",
            json!({"path": "docs/c.md", "content": "c\n"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| balanced(c, |_| {}),
        vec![],
    );
    let requests = answer_with(&h.engine, PermissionDecision::AllowAlways);
    h.run("write them").await;
    let asked: Vec<(String, Option<String>)> = requests
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::PermissionRequested {
                call_id, options, ..
            } => Some((call_id.clone(), options[1].covers.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [
            (
                "c1".to_owned(),
                Some("`write` on files under `src/` for the rest of this session".to_owned())
            ),
            (
                "c3".to_owned(),
                Some("`write` on files under `docs/` for the rest of this session".to_owned())
            ),
        ]
    );
    for file in ["src/a.rs", "src/deep/b.rs", "docs/c.md"] {
        assert!(h.workspace.path().join(file).exists(), "{file}");
    }
}

#[tokio::test]
async fn an_allowed_write_asks_first_then_runs_and_reports_its_diff() {
    let (server, mut h) = calling("write", write_call(), |_| {}).await;
    let requests = answer_with(&h.engine, PermissionDecision::AllowOnce);
    let events = h.run("write it").await;
    let order = kinds(&events);
    let asked = order
        .iter()
        .position(|k| k == "permission_requested")
        .unwrap();
    assert_eq!(
        order[asked..asked + 4],
        [
            "permission_requested",
            "state_changed",
            "state_changed",
            "tool_call_started"
        ]
    );
    assert_eq!(
        events[asked + 1].msg,
        EventMsg::StateChanged {
            state: EngineState::WaitingForPermission
        }
    );
    let request = requests.lock().unwrap()[0].clone();
    let EventMsg::PermissionRequested {
        tool_name,
        arguments,
        summary,
        options,
        ..
    } = request.msg
    else {
        unreachable!()
    };
    assert_eq!(tool_name, "write");
    assert_eq!(arguments, write_call());
    assert!(summary.starts_with("write: out.txt"), "{summary}");
    assert_eq!(
        super::option_ids(&options),
        ["allow_once", "allow_always", "deny", "refuse"]
    );
    assert_eq!(
        options[1].covers.as_deref(),
        Some("`write` on any file for the rest of this session")
    );
    assert_eq!(
        std::fs::read_to_string(h.workspace.path().join("out.txt")).unwrap(),
        "hello\n"
    );
    let diff = events
        .iter()
        .find_map(|e| match &e.msg {
            EventMsg::ToolCallCompleted { diff, .. } => diff.clone(),
            _ => None,
        })
        .unwrap();
    assert!(
        diff.contains("+++ b/out.txt") && diff.contains("+hello"),
        "{diff}"
    );
    assert!(tool_result(&server).contains("+hello"));
}

#[tokio::test]
async fn a_denial_reaches_the_model_and_nothing_is_written() {
    let (server, mut h) = calling("write", write_call(), |_| {}).await;
    answer_with(
        &h.engine,
        PermissionDecision::Deny {
            message: Some("not today".into()),
        },
    );
    let events = h.run("write it").await;
    assert!(!kinds(&events).contains(&"tool_call_started".to_owned()));
    assert!(!h.workspace.path().join("out.txt").exists());
    assert_eq!(tool_result(&server), "The user denied this call: not today");
    assert_history_valid(&h.engine.history(h.root).unwrap());
}

#[tokio::test]
async fn allow_always_covers_later_calls_of_the_same_tool() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "write", write_call()),
        MockResponse::tool_call("c2", "write", json!({"path": "two.txt", "content": "2"})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| balanced(c, |_| {}),
        vec![],
    );
    let requests = answer_with(&h.engine, PermissionDecision::AllowAlways);
    h.run("write twice").await;
    assert_eq!(requests.lock().unwrap().len(), 1);
    assert!(h.workspace.path().join("two.txt").exists());
}

#[tokio::test]
async fn plan_mode_refuses_writes_without_asking() {
    let (server, mut h) = calling("write", write_call(), |c| c.mode = Mode::Plan).await;
    let requests = answer_with(&h.engine, PermissionDecision::AllowOnce);
    h.run("write it").await;
    assert!(requests.lock().unwrap().is_empty());
    assert!(!h.workspace.path().join("out.txt").exists());
    assert!(tool_result(&server).contains("plan mode does not write"));
}

#[tokio::test]
async fn plan_mode_offers_exit_plan_mode_and_no_todo_list() {
    let todos = json!({"todos": [{"content": "read the code", "status": "in_progress"}]});
    let (server, mut h) = calling("todo_write", todos, |c| {
        c.mode = Mode::Plan;
        c.preset = Preset::Strict;
    })
    .await;
    let requests = answer_with(&h.engine, PermissionDecision::AllowOnce);
    let events = h.run("plan it").await;
    assert!(requests.lock().unwrap().is_empty(), "nobody was asked");
    let tools: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.contains(&"exit_plan_mode".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"todo_write".to_owned()), "{tools:?}");
    assert!(tool_result(&server).contains("there is no tool named `todo_write`"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.msg, EventMsg::TodoUpdated { .. })),
        "{:?}",
        kinds(&events)
    );
}

#[tokio::test]
async fn auto_edit_mode_edits_without_asking_but_still_asks_for_commands() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "write", write_call()),
        MockResponse::tool_call("c2", "bash", json!({"command": "touch made-by-bash"})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    // The session allows auto-edit; the conversation is switched to it.
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| balanced(c, |c| c.mode = Mode::AutoEdit),
        vec![],
    );
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    h.engine.set_mode(h.root, Mode::AutoEdit).unwrap();
    let requests = answer_with(&h.engine, PermissionDecision::AllowOnce);
    h.run("go").await;
    let asked: Vec<String> = requests
        .lock()
        .unwrap()
        .iter()
        .map(|e| match &e.msg {
            EventMsg::PermissionRequested { tool_name, .. } => tool_name.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(asked, ["bash"]);
    assert!(h.workspace.path().join("out.txt").exists());
    assert!(h.workspace.path().join("made-by-bash").exists());
}

#[tokio::test]
async fn read_only_commands_run_without_asking_in_the_balanced_preset() {
    let (server, mut h) = calling("bash", json!({"command": "ls"}), |_| {}).await;
    h.write("visible.txt", "");
    let requests = answer_with(&h.engine, PermissionDecision::AllowOnce);
    h.run("list").await;
    assert!(requests.lock().unwrap().is_empty());
    assert!(tool_result(&server).contains("visible.txt"));
}

#[tokio::test]
async fn dangerous_commands_run_with_auto_approval() {
    let (server, mut h) = calling("bash", json!({"command": "rm -rf build"}), |c| {
        c.auto_approve = true;
    })
    .await;
    std::fs::create_dir(h.workspace.path().join("build")).unwrap();
    let events = h.run("clean").await;
    assert!(!kinds(&events).contains(&"permission_requested".to_owned()));
    assert!(!h.workspace.path().join("build").exists());
    let result = tool_result(&server);
    assert!(result.starts_with("Exit code: 0"), "{result}");
}

#[tokio::test]
async fn a_person_may_allow_a_dangerous_command_once_but_not_always() {
    let (_server, mut h) = calling("bash", json!({"command": "rm -rf build"}), |_| {}).await;
    std::fs::create_dir(h.workspace.path().join("build")).unwrap();
    let requests = answer_with(&h.engine, PermissionDecision::AllowOnce);
    h.run("clean").await;
    let EventMsg::PermissionRequested {
        options, summary, ..
    } = &requests.lock().unwrap()[0].msg
    else {
        unreachable!()
    };
    assert_eq!(super::option_ids(options), ["allow_once", "deny", "refuse"]);
    assert!(summary.contains("dangerous command"), "{summary}");
    assert!(!h.workspace.path().join("build").exists());
}

#[tokio::test]
async fn catastrophic_commands_are_refused_outright() {
    let (server, mut h) = calling("bash", json!({"command": "rm -rf ~"}), |c| {
        c.auto_approve = true;
        c.preset = Preset::Yolo;
    })
    .await;
    let events = h.run("wipe").await;
    assert!(!kinds(&events).contains(&"permission_requested".to_owned()));
    assert!(tool_result(&server).starts_with("Permission denied (refused:"));
}

#[tokio::test]
async fn yolo_mode_runs_bash_without_checks() {
    let (_server, mut h) = calling("bash", json!({"command": "rm -rf build"}), |c| {
        c.mode = Mode::Yolo;
    })
    .await;
    std::fs::create_dir(h.workspace.path().join("build")).unwrap();
    let requests = answer_with(&h.engine, PermissionDecision::Deny { message: None });
    h.run("clean").await;
    assert!(requests.lock().unwrap().is_empty());
    assert!(!h.workspace.path().join("build").exists());
}

#[tokio::test]
async fn command_rules_and_disabled_tools_apply() {
    let (server, mut h) = calling("bash", json!({"command": "echo ruled"}), |c| {
        c.preset = Preset::Strict;
        c.permission_rules.commands.push(CommandRule {
            pattern: "echo *".into(),
            decision: PolicyDecision::Allow,
        });
    })
    .await;
    let requests = answer_with(&h.engine, PermissionDecision::Deny { message: None });
    h.run("echo").await;
    assert!(requests.lock().unwrap().is_empty());
    assert!(tool_result(&server).contains("ruled"));

    let (server, mut h) = calling("write", write_call(), |c| {
        c.disabled_tools = vec!["write".into()];
    })
    .await;
    h.run("write").await;
    // A disabled tool is not offered, and calling it anyway finds no such tool.
    let offered = server.requests()[0].body["tools"].to_string();
    assert!(!offered.contains("\"write\""), "{offered}");
    assert!(tool_result(&server).contains("no tool named `write`"));
}

#[tokio::test]
async fn interrupting_while_waiting_for_permission_ends_the_task() {
    let (_server, mut h) = calling("write", write_call(), |_| {}).await;
    let handle = h.engine.clone();
    let root = h.root;
    h.engine.on_event(move |event| {
        if matches!(event.msg, EventMsg::PermissionRequested { .. }) {
            handle.interrupt(root).unwrap();
        }
    });
    let events = h.run("write it").await;
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TurnAborted { .. }
    ));
    assert!(!h.workspace.path().join("out.txt").exists());
    assert_history_valid(&h.engine.history(h.root).unwrap());
}

#[tokio::test]
async fn the_matrix_is_readable_and_follows_mode_and_preset() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    // The session allows yolo; the root starts there, the balanced rows are the default's.
    let h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| balanced(c, |c| c.mode = Mode::Yolo),
        vec![],
    );
    h.engine.set_mode(h.root, Mode::Default).unwrap();
    let matrix = h.engine.permission_matrix(h.root).unwrap();
    let row = |subject: &str| {
        matrix
            .iter()
            .find(|r| r.subject.starts_with(subject))
            .unwrap()
            .decision
    };
    assert_eq!(row("read-only tools"), PolicyDecision::Allow);
    assert_eq!(row("file edits"), PolicyDecision::Ask);
    assert_eq!(row("bash: known read-only"), PolicyDecision::Allow);
    h.engine.set_mode(h.root, Mode::Yolo).unwrap();
    let matrix = h.engine.permission_matrix(h.root).unwrap();
    let protected = matrix
        .iter()
        .find(|r| r.subject.starts_with("protected files"))
        .unwrap();
    assert_eq!(protected.decision, PolicyDecision::Ask);
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    let matrix = h.engine.permission_matrix(h.root).unwrap();
    assert!(
        matrix
            .iter()
            .any(|r| r.subject.starts_with("file edits") && r.decision == PolicyDecision::Deny)
    );
}

#[tokio::test]
async fn a_request_whose_asker_goes_away_is_denied() {
    let (server, mut h) = calling("write", write_call(), |_| {}).await;
    let handle = h.engine.clone();
    h.engine.on_event(move |event| {
        if matches!(event.msg, EventMsg::PermissionRequested { .. }) {
            handle.deny_pending_permissions();
        }
    });
    let events = h.run("write it").await;
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete { .. }
    ));
    assert!(!h.workspace.path().join("out.txt").exists());
    assert!(tool_result(&server).contains("went unanswered"));
    assert!(
        h.engine
            .respond_permission("no-such-id", PermissionDecision::AllowOnce)
            .is_err()
    );
}

#[tokio::test]
async fn protected_files_need_a_person_in_yolo_mode_with_auto_approval() {
    for (tool, arguments, file) in [
        (
            "write",
            json!({"path": ".mcp.json", "content": "{}"}),
            ".mcp.json",
        ),
        (
            "write",
            json!({"path": "src/../.git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
            ".git/hooks/pre-commit",
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: .coder/config.json\n+{}\n*** End Patch"}),
            ".coder/config.json",
        ),
    ] {
        let (server, mut h) = calling(tool, arguments, |c| {
            c.mode = Mode::Yolo;
            c.preset = Preset::Yolo;
            c.auto_approve = true;
            c.permission_rules
                .tools
                .insert(tool.into(), PolicyDecision::Allow);
        })
        .await;
        let events = h.run("plant it").await;
        assert!(!kinds(&events).contains(&"permission_requested".to_owned()));
        assert!(
            !h.workspace.path().join(file).exists(),
            "{file} was written"
        );
        let result = tool_result(&server);
        assert!(
            result.contains("protected file")
                && result.contains("this session approves calls without asking a person"),
            "{result}"
        );
    }
}

#[tokio::test]
async fn a_person_may_allow_a_protected_write_once_but_not_always() {
    let (_server, mut h) = calling(
        "edit",
        json!({"path": ".git/config", "old_string": "a", "new_string": "b"}),
        |c| {
            c.mode = Mode::Yolo;
        },
    )
    .await;
    h.write(".git/config", "a\n");
    let requests = answer_with(&h.engine, PermissionDecision::AllowOnce);
    h.run("edit").await;
    let EventMsg::PermissionRequested {
        options, summary, ..
    } = &requests.lock().unwrap()[0].msg
    else {
        unreachable!()
    };
    assert_eq!(super::option_ids(options), ["allow_once", "deny", "refuse"]);
    assert!(summary.contains("protected file"), "{summary}");
    assert_eq!(
        std::fs::read_to_string(h.workspace.path().join(".git/config")).unwrap(),
        "b\n"
    );
}

#[tokio::test]
async fn an_edit_request_carries_its_diff_and_a_change_after_approval_is_refused() {
    let edit = json!({"path": "app.txt", "old_string": "two", "new_string": "TWO"});
    let (server, mut h) = calling("edit", edit, |_| {}).await;
    let file = h.workspace.path().join("app.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    // The person approves what they saw; meanwhile something else changes the file, so the
    // change the edit would now make is not the one approved.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let engine = h.engine.clone();
    let path = file.clone();
    h.engine.on_event(move |event| {
        if let EventMsg::PermissionRequested {
            request_id, diff, ..
        } = &event.msg
        {
            *record.lock().unwrap() = diff.clone();
            std::fs::write(&path, "zero\none\ntwo\nthree\n").unwrap();
            engine
                .respond_permission(request_id, PermissionDecision::AllowOnce)
                .unwrap();
        }
    });
    h.run("edit it").await;
    assert_eq!(
        seen.lock().unwrap().as_deref(),
        Some("--- a/app.txt\n+++ b/app.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "zero\none\ntwo\nthree\n"
    );
    let told = tool_result(&server);
    assert!(
        told.contains("no longer the change the user saw; nothing was written"),
        "{told}"
    );
}
