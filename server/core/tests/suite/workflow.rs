//! Seed 004's workflow in the core: a complex request starts a todo list
//! (`requireTodoForComplex`), once, while the conversation has no unfinished todos.

use coder_core::ProviderKind;
use coder_protocol::{Event, EventMsg, Mode, TodoItem, TodoStatus, VerificationStatus};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{Harness, answer_with};
use coder_protocol::PermissionDecision;

fn started(events: &[Event]) -> Vec<Vec<TodoItem>> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::TodoUpdated { todos } => Some(todos.clone()),
            _ => None,
        })
        .collect()
}

/// How many messages of request `request` tell the model a todo list was started.
fn reminders(server: &MockModelServer, request: usize) -> usize {
    server.requests()[request].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|text| text.contains("This request has several parts"))
        })
        .count()
}

#[tokio::test]
async fn a_complex_request_starts_a_todo_list_once_and_a_simple_one_never() {
    let server = MockModelServer::start(vec![
        MockResponse::text("ok"),
        MockResponse::text("ok"),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.require_todo_for_complex = true,
        Vec::new(),
    );
    let events = h.run("重构解析器，并且迁移测试，同时优化性能").await;
    assert_eq!(
        started(&events),
        [vec![TodoItem {
            content: "重构解析器，并且迁移测试，同时优化性能".into(),
            status: TodoStatus::InProgress,
        }]]
    );
    assert_eq!(reminders(&server, 0), 1);
    // The list is unfinished: another complex request starts none.
    let events = h.run("1. add the flag 2. document it").await;
    assert!(started(&events).is_empty());
    // Only the first input's reminder, in the history.
    assert_eq!(reminders(&server, 1), 1);

    let mut simple = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.require_todo_for_complex = true,
        Vec::new(),
    );
    let events = simple.run("hi").await;
    assert!(started(&events).is_empty());
    assert_eq!(reminders(&server, 2), 0);
}

#[tokio::test]
async fn without_the_setting_a_complex_request_starts_nothing() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let events = h.run("重构解析器，并且迁移测试，同时优化性能").await;
    assert!(started(&events).is_empty());
    assert_eq!(reminders(&server, 0), 0);
}

// The auto-verify loop (seed 004 section 6). The project is a Gradle project whose wrapper
// is a shell script: `./gradlew test` passes once a file named `fixed` exists, and says
// what failed otherwise.

const GRADLEW: &str = "#!/bin/sh\nif [ -f fixed ]; then echo 'BUILD SUCCESSFUL'; exit 0; fi\necho 'FAILED: ParserTest > parses_empty_input'\nexit 1\n";

fn gradle_project(h: &Harness) {
    h.write("build.gradle", "");
    h.write("gradlew", GRADLEW);
    make_executable(&h.workspace.path().join("gradlew"));
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn write_call(id: &str, path: &str) -> MockResponse {
    // Each call writes something new: a write that changes nothing is no edit.
    MockResponse::tool_call(
        id,
        "write",
        serde_json::json!({"path": path, "content": format!("{id}\n")}),
    )
}

/// A session whose model edits `src/A.java` once and says "done", then answers `more`.
async fn one_edit(
    more: Vec<MockResponse>,
    adjust: impl FnOnce(&mut coder_core::Config),
) -> (MockModelServer, Harness) {
    let mut script = vec![write_call("c1", "src/A.java"), MockResponse::text("done")];
    script.extend(more);
    let server = MockModelServer::start(script).await.unwrap();
    let h = Harness::with(&server, ProviderKind::OpenAi, adjust, Vec::new());
    (server, h)
}

/// The `verification` events' statuses, in order.
fn verifications(events: &[Event]) -> Vec<(VerificationStatus, String)> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::Verification {
                status, message, ..
            } => Some((*status, message.clone())),
            _ => None,
        })
        .collect()
}

fn statuses(events: &[Event]) -> Vec<VerificationStatus> {
    verifications(events).into_iter().map(|(s, _)| s).collect()
}

/// The `<verification>` messages of request `index`.
fn verification_messages(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|text| text.starts_with("<verification>"))
        .map(str::to_owned)
        .collect()
}

fn auto_edit(config: &mut coder_core::Config) {
    config.mode = Mode::AutoEdit;
}

#[tokio::test]
async fn a_failed_verification_sends_the_model_back_and_passes_after_its_fix() {
    let server = MockModelServer::start(vec![
        write_call("c1", "src/Parser.java"),
        MockResponse::text("done"),
        write_call("c2", "fixed"),
        MockResponse::text("fixed it"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, auto_edit, Vec::new());
    gradle_project(&h);
    let events = h.run("make the parser accept empty input").await;
    assert_eq!(
        statuses(&events),
        [VerificationStatus::Retrying, VerificationStatus::Passed]
    );
    // The failure went back to the model with its output and the instruction.
    let sent = verification_messages(&server, 2);
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].contains("`./gradlew test` exited with 1"),
        "{}",
        sent[0]
    );
    assert!(sent[0].contains("FAILED: ParserTest > parses_empty_input"));
    assert!(sent[0].contains("Fix it and verify again"));
    // Each run is shown as a `bash` call.
    let runs: Vec<&str> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ToolCallStarted {
                call_id, arguments, ..
            } if call_id.starts_with("verify_") => arguments["command"].as_str(),
            _ => None,
        })
        .collect();
    assert_eq!(runs, ["./gradlew test", "./gradlew test"]);
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete { .. }
    ));
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn verification_gives_up_after_two_retries() {
    let server = MockModelServer::start(vec![
        write_call("c1", "src/A.java"),
        MockResponse::text("done"),
        write_call("c2", "src/A.java"),
        MockResponse::text("tried"),
        write_call("c3", "src/A.java"),
        MockResponse::text("tried again"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, auto_edit, Vec::new());
    gradle_project(&h);
    let events = h.run("change A").await;
    assert_eq!(
        statuses(&events),
        [
            VerificationStatus::Retrying,
            VerificationStatus::Retrying,
            VerificationStatus::Failed
        ]
    );
    let (_, last) = verifications(&events).pop().unwrap();
    assert!(last.contains("after 2 automatic retries"), "{last}");
    // No fourth round: six model calls, and the last failure is in the history.
    assert_eq!(server.requests().len(), 6);
    let history = h.engine.history(h.root).unwrap();
    let last = history.last().unwrap().content.clone().unwrap();
    assert!(last.contains("No automatic retry is left"), "{last}");
}

#[tokio::test]
async fn max_verify_attempts_lowers_the_retries() {
    let (server, mut h) = one_edit(Vec::new(), |config| {
        config.mode = Mode::AutoEdit;
        config.workflow.max_verify_attempts = 0;
    })
    .await;
    gradle_project(&h);
    let events = h.run("change A").await;
    assert_eq!(statuses(&events), [VerificationStatus::Failed]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn with_no_command_for_the_project_it_says_verification_did_not_run() {
    let server =
        MockModelServer::start(vec![write_call("c1", "main.c"), MockResponse::text("done")])
            .await
            .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, auto_edit, Vec::new());
    // A Makefile project: `make test` is not allowlisted, so nothing runs in its place.
    h.write("Makefile", "test:\n\ttrue\n");
    let events = h.run("fix main").await;
    let found = verifications(&events);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, VerificationStatus::NotRun);
    assert!(
        found[0]
            .1
            .starts_with("auto-verification did not run: no allowlisted"),
        "{}",
        found[0].1
    );
    assert!(!events.iter().any(|e| matches!(
        &e.msg,
        EventMsg::ToolCallStarted { tool_name, .. } if tool_name == "bash"
    )));
}

#[tokio::test]
async fn a_command_the_permissions_ask_for_is_put_to_the_person() {
    // The auto-edit preset asks before other commands: the verification is asked about as
    // any bash call would be; allowed, it runs; declined, the person is told it did not.
    for (decision, expected) in [
        (PermissionDecision::AllowOnce, VerificationStatus::Passed),
        (
            PermissionDecision::Deny {
                message: Some("not now".to_owned()),
            },
            VerificationStatus::NotRun,
        ),
    ] {
        let (_server, mut h) = one_edit(Vec::new(), |config| {
            config.mode = Mode::AutoEdit;
            config.preset = coder_protocol::Preset::AutoEdit;
        })
        .await;
        gradle_project(&h);
        h.write("fixed", "");
        let asked = answer_with(&h.engine, decision);
        let events = h.run("change A").await;
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{asked:?}");
        let EventMsg::PermissionRequested {
            tool_name, summary, ..
        } = &asked[0].msg
        else {
            unreachable!()
        };
        assert_eq!(tool_name, "bash");
        assert!(summary.contains("./gradlew test"), "{summary}");
        assert!(summary.contains("auto-verification"), "{summary}");
        let found = verifications(&events);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, expected, "{found:?}");
        if expected == VerificationStatus::NotRun {
            assert!(found[0].1.contains("not now"), "{}", found[0].1);
        }
    }
}

#[tokio::test]
async fn a_retry_without_edits_still_gets_its_verdict() {
    // The model answers "fix it" with text alone: the command runs again, and the task
    // ends on a verdict, not on "retrying".
    let (_server, mut h) = one_edit(
        vec![
            MockResponse::text("it is fine as it is"),
            MockResponse::text("still fine"),
        ],
        auto_edit,
    )
    .await;
    gradle_project(&h);
    let events = h.run("change A").await;
    assert_eq!(
        statuses(&events),
        [
            VerificationStatus::Retrying,
            VerificationStatus::Retrying,
            VerificationStatus::Failed
        ]
    );
}

#[tokio::test]
async fn an_environment_failure_is_a_best_effort_warning_without_retries() {
    let (server, mut h) = one_edit(Vec::new(), auto_edit).await;
    // The wrapper is there but cannot be executed (exit code 126).
    h.write("build.gradle", "");
    h.write("gradlew", GRADLEW);
    let events = h.run("change A").await;
    let found = verifications(&events);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, VerificationStatus::Environment);
    assert!(found[0].1.contains("best-effort"), "{}", found[0].1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn the_mode_and_the_request_decide_whether_it_applies() {
    // default mode: only when asked; documentation edits never; plan mode never.
    let server = MockModelServer::start(vec![
        write_call("c1", "src/A.java"),
        MockResponse::text("done"),
        write_call("c2", "src/A.java"),
        MockResponse::text("done"),
        write_call("c3", "docs/guide.md"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    gradle_project(&h);
    h.write("fixed", "");
    let events = h.run("change A").await;
    assert!(statuses(&events).is_empty());
    let events = h.run("change A and verify it").await;
    assert_eq!(statuses(&events), [VerificationStatus::Passed]);
    let events = h.run("document A, then run ./gradlew test").await;
    assert!(statuses(&events).is_empty(), "documentation only");

    let server = MockModelServer::start(vec![
        write_call("c1", "src/A.java"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut off = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| {
            config.mode = Mode::AutoEdit;
            config.workflow.auto_verify_after_edit = false;
        },
        Vec::new(),
    );
    gradle_project(&off);
    let events = off.run("change A").await;
    assert!(statuses(&events).is_empty(), "switched off");
}

/// Seed 004 section 6: a turn that wrote nothing starts no verification, in the modes
/// where it would otherwise apply by itself.
#[tokio::test]
async fn a_turn_without_edits_starts_no_verification() {
    for mode in [Mode::AutoEdit, Mode::Yolo] {
        let server = MockModelServer::start(vec![
            MockResponse::tool_call("r1", "read", serde_json::json!({"path": "src/A.java"})),
            MockResponse::text("read it"),
        ])
        .await
        .unwrap();
        let mut h = Harness::with(
            &server,
            ProviderKind::OpenAi,
            |config| config.mode = mode,
            Vec::new(),
        );
        gradle_project(&h);
        h.write("src/A.java", "class A {}\n");
        let events = h.run("look at A and verify it").await;
        assert!(statuses(&events).is_empty(), "{mode:?}: {events:?}");
        assert_eq!(
            server.requests().len(),
            2,
            "{mode:?}: no verification round"
        );
    }
}

/// In `yolo` verification applies by itself, as in `auto-edit` (plan mode's refusal is a
/// unit test of the mode check: no edit can happen there to reach it).
#[tokio::test]
async fn yolo_verifies_by_itself() {
    let (_server, mut h) = one_edit(Vec::new(), |config| config.mode = Mode::Yolo).await;
    gradle_project(&h);
    h.write("fixed", "");
    let events = h.run("change A").await;
    assert_eq!(statuses(&events), [VerificationStatus::Passed]);
}

/// With `bash` switched off (`tools.disabled`) verification cannot run, and says so.
#[tokio::test]
async fn with_bash_switched_off_verification_says_it_did_not_run() {
    let (_server, mut h) = one_edit(Vec::new(), |config| {
        config.mode = Mode::AutoEdit;
        config.disabled_tools = vec!["bash".to_owned()];
    })
    .await;
    gradle_project(&h);
    h.write("fixed", "");
    let events = h.run("change A").await;
    let found = verifications(&events);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, VerificationStatus::NotRun);
    assert!(found[0].1.contains("bash"), "{}", found[0].1);
    assert!(!events.iter().any(|e| matches!(
        &e.msg,
        EventMsg::ToolCallStarted { tool_name, .. } if tool_name == "bash"
    )));
}
