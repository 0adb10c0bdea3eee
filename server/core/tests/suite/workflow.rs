//! Seed 004's workflow in the core: a complex request starts a todo list
//! (`requireTodoForComplex`), once, while the conversation has no unfinished todos.

use coder_core::ProviderKind;
use coder_protocol::{Event, EventMsg, TodoItem, TodoStatus};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::Harness;

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
