//! Plan mode through the engine and the mock model: the reminders of a conversation's
//! first input and of each entry into plan mode, and the three answers to `exit_plan_mode`,
//! each checked in the requests the model received after it.

use coder_protocol::{EventMsg, Mode, ModeChangeReason, PermissionDecision};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, answer_with};
use coder_core::ProviderKind;

const PLAN: &str = "1. Add `greet` to src/lib.rs.\n2. Test it.";

/// The texts of a request's messages, by role (`role: text`).
fn messages(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}: {}",
                m["role"].as_str().unwrap_or_default(),
                m["content"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn tool_names(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn system(server: &MockModelServer, index: usize) -> String {
    server.requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_first_input_names_the_rules_and_plan_mode_reminds_once_per_entry() {
    let server = MockModelServer::start(vec![
        MockResponse::text("a"),
        MockResponse::text("b"),
        MockResponse::text("c"),
    ])
    .await
    .unwrap();
    // The rules file is there when the session starts (a later write reaches the session
    // through the watcher, after its debounce).
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| std::fs::write(config.workspace.join("AGENTS.md"), "Use tabs.").unwrap(),
        Vec::new(),
    );
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    h.run("first").await;
    h.run("second").await;
    h.engine.set_mode(h.root, Mode::Default).unwrap();
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    h.run("third").await;

    let first = messages(&server, 0);
    assert_eq!(first[1], "user: first");
    let reminders = &first[2];
    assert!(reminders.contains("AGENTS.md"), "{reminders}");
    assert!(reminders.contains("take precedence over your default behaviour"));
    assert!(reminders.contains("Plan mode is on."), "{reminders}");
    // Plan mode offers no todo list, so no todo reminder.
    assert!(!reminders.contains("todo_write"), "{reminders}");
    assert_eq!(first.len(), 3);

    let second = messages(&server, 1);
    assert_eq!(second.len(), 5, "{second:#?}");
    assert_eq!(second[4], "user: second");

    let third = messages(&server, 2);
    assert_eq!(third[6], "user: third");
    let again = &third[7];
    assert!(again.contains("Plan mode is on."), "{again}");
    assert!(!again.contains("AGENTS.md"), "{again}");
}

/// A conversation in plan mode (entered from `auto-edit`) whose model calls
/// `exit_plan_mode`, answered with `decision`; returns the events of the task.
async fn exit_with(decision: PermissionDecision) -> (MockModelServer, Harness, Vec<EventMsg>) {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("p1", "exit_plan_mode", json!({"plan": PLAN})),
        MockResponse::text("on it"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Yolo,
        Vec::new(),
    );
    h.engine.set_mode(h.root, Mode::AutoEdit).unwrap();
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    let asked = answer_with(&h.engine, decision);
    let events = h.run("plan a greeting").await;
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let EventMsg::PermissionRequested {
        options,
        human_required,
        arguments,
        ..
    } = &asked[0].msg
    else {
        unreachable!()
    };
    assert_eq!(
        super::option_ids(options),
        [
            "start_editing",
            "clear_context_and_start",
            "keep_planning",
            "refuse"
        ]
    );
    assert!(human_required);
    assert_eq!(arguments["plan"], PLAN);
    // The task's own events (the `set_mode` calls above report theirs outside it).
    let msgs = events
        .into_iter()
        .filter(|e| e.task_id.is_some())
        .map(|e| e.msg)
        .collect();
    (server, h, msgs)
}

fn mode_changes(events: &[EventMsg]) -> Vec<(Mode, Mode, ModeChangeReason)> {
    events
        .iter()
        .filter_map(|e| match e {
            EventMsg::ModeChanged {
                mode,
                previous,
                reason,
            } => Some((*mode, *previous, *reason)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn start_editing_returns_to_the_earlier_mode_with_the_todo_list_and_no_plan_guidance() {
    let (server, h, events) = exit_with(PermissionDecision::StartEditing).await;
    assert!(tool_names(&server, 0).contains(&"exit_plan_mode".to_owned()));
    assert!(system(&server, 0).contains("You are in plan mode."));
    let tools = tool_names(&server, 1);
    assert!(tools.contains(&"todo_write".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"exit_plan_mode".to_owned()), "{tools:?}");
    let after = system(&server, 1);
    assert!(!after.contains("You are in plan mode."), "{after}");
    assert!(after.contains("\n# Mode\nAuto-edit mode:"), "{after}");
    let msgs = messages(&server, 1);
    assert_eq!(msgs[1], "user: plan a greeting");
    assert!(
        msgs.last()
            .unwrap()
            .starts_with("tool: The user approved the plan.")
    );
    assert_eq!(
        mode_changes(&events),
        [(Mode::AutoEdit, Mode::Plan, ModeChangeReason::ExitPlanMode)]
    );
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::AutoEdit);
}

#[tokio::test]
async fn allow_once_from_an_older_client_means_start_editing() {
    let (server, h, _) = exit_with(PermissionDecision::AllowOnce).await;
    assert!(!tool_names(&server, 1).contains(&"exit_plan_mode".to_owned()));
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::AutoEdit);
}

#[tokio::test]
async fn clear_and_start_sends_only_the_plan_with_the_first_input_reminders() {
    let (server, h, events) = exit_with(PermissionDecision::ClearContextAndStart).await;
    let msgs = messages(&server, 1);
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    assert!(msgs[0].starts_with("system: "));
    let only = &msgs[1];
    assert!(
        only.starts_with("user: The user approved this plan"),
        "{only}"
    );
    assert!(only.contains(PLAN), "{only}");
    assert!(
        only.contains("<system-reminder>\nYour todo list is empty."),
        "{only}"
    );
    assert!(!system(&server, 1).contains("You are in plan mode."));
    assert!(tool_names(&server, 1).contains(&"todo_write".to_owned()));
    assert_eq!(
        mode_changes(&events),
        [(Mode::AutoEdit, Mode::Plan, ModeChangeReason::ExitPlanMode)]
    );
    let history = h.engine.history(h.root).unwrap();
    assert_eq!(history.len(), 2, "the plan and the reply: {history:#?}");
}

#[tokio::test]
async fn keep_planning_passes_the_feedback_and_stays_in_plan_mode() {
    let (server, h, events) = exit_with(PermissionDecision::KeepPlanning {
        message: Some("test the edge cases too".into()),
    })
    .await;
    let last = messages(&server, 1).last().cloned().unwrap();
    assert!(last.contains("plan mode stays on"), "{last}");
    assert!(
        last.contains("The user's feedback: test the edge cases too"),
        "{last}"
    );
    assert!(tool_names(&server, 1).contains(&"exit_plan_mode".to_owned()));
    assert!(system(&server, 1).contains("You are in plan mode."));
    assert_eq!(mode_changes(&events), []);
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::Plan);
}

#[tokio::test]
async fn allow_always_is_not_an_answer_to_a_plan() {
    let (server, h, _) = exit_with(PermissionDecision::AllowAlways).await;
    let last = messages(&server, 1).last().cloned().unwrap();
    assert!(
        last.contains("allow_always, which does not answer a plan"),
        "{last}"
    );
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::Plan);
}

#[tokio::test]
async fn set_mode_reports_mode_changed() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    let event = h.events.recv().await.unwrap();
    assert_eq!(event.task_id, None);
    assert_eq!(
        serde_json::to_value(&event.msg).unwrap(),
        json!({"type": "mode_changed", "mode": "plan", "previous": "default", "reason": "set_mode"})
    );
}

/// Sends `text` to `engine`'s root conversation and waits for the task's end.
async fn send_and_wait(engine: &coder_core::Engine, text: &str) {
    let mut events = engine.subscribe();
    let task = engine.send(engine.root_conversation(), text).unwrap();
    while let Some(event) = events.recv().await {
        if event.task_id == Some(task) && matches!(event.msg, EventMsg::TaskComplete { .. }) {
            break;
        }
    }
}

#[tokio::test]
async fn a_resumed_session_gives_the_plan_reminder_once_whether_it_was_due_or_given() {
    let server = MockModelServer::start(vec![
        MockResponse::text("hi"),
        MockResponse::text("planning"),
        MockResponse::text("more"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.run("hello").await;
    // Saved in plan mode with the reminder due: no input came since the switch.
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    h.engine.save().await.unwrap();
    let session = h.engine.session_id();
    let workspace = h.workspace.path().to_path_buf();
    h.engine.shutdown().await;

    let resumed = coder_core::Engine::new(super::support::config(
        &server,
        ProviderKind::OpenAi,
        &workspace,
    ))
    .unwrap();
    resumed.resume(session).unwrap();
    assert_eq!(resumed.mode(h.root).unwrap(), Mode::Plan);
    send_and_wait(&resumed, "plan it").await;
    let after_resume = messages(&server, 1);
    let reminder = after_resume.last().unwrap();
    assert!(reminder.contains("Plan mode is on."), "{after_resume:#?}");
    assert!(!reminder.contains("todo_write"), "{reminder}");
    // Saved again after the reminder was given: the next resume does not repeat it.
    resumed.shutdown().await;

    let again = coder_core::Engine::new(super::support::config(
        &server,
        ProviderKind::OpenAi,
        &workspace,
    ))
    .unwrap();
    again.resume(session).unwrap();
    send_and_wait(&again, "more").await;
    let last = messages(&server, 2);
    assert_eq!(last.last().unwrap(), "user: more", "{last:#?}");
    let plan_reminders = last
        .iter()
        .filter(|m| m.contains("Plan mode is on."))
        .count();
    assert_eq!(plan_reminders, 1, "{last:#?}");
    again.shutdown().await;
}

#[tokio::test]
async fn after_clear_and_start_a_failed_model_call_does_not_repeat_the_first_input_reminders() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("p1", "exit_plan_mode", json!({"plan": PLAN})),
        // The call right after the history was replaced fails (a client error: no retry).
        MockResponse::status(400),
        MockResponse::text("on it"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    let _asked = answer_with(&h.engine, PermissionDecision::ClearContextAndStart);
    h.run("plan a greeting").await;
    h.run("go on").await;
    let msgs = messages(&server, 2);
    assert_eq!(msgs.last().unwrap(), "user: go on", "{msgs:#?}");
    let todo_reminders = msgs
        .iter()
        .filter(|m| m.contains("Your todo list is empty."))
        .count();
    assert_eq!(todo_reminders, 1, "{msgs:#?}");
}

#[tokio::test]
async fn a_plan_approved_returns_to_the_mode_plan_mode_was_entered_from() {
    let plan_then_approve = || {
        vec![
            MockResponse::tool_call("p1", "exit_plan_mode", json!({"plan": PLAN})),
            MockResponse::text("on it"),
        ]
    };
    // Configured `yolo`: `/plan` from it returns to it.
    let server = MockModelServer::start(plan_then_approve()).await.unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Yolo,
        Vec::new(),
    );
    h.engine.command(h.root, "/plan").unwrap();
    let _asked = answer_with(&h.engine, PermissionDecision::StartEditing);
    h.run("plan a greeting").await;
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::Yolo);

    // Configured `default`: `/yolo` is narrowed to it, so the plan returns to `default`.
    let server = MockModelServer::start(plan_then_approve()).await.unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Default,
        Vec::new(),
    );
    h.engine.command(h.root, "/yolo").unwrap();
    h.engine.command(h.root, "/plan").unwrap();
    let _asked = answer_with(&h.engine, PermissionDecision::StartEditing);
    h.run("plan a greeting").await;
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::Default);
}
