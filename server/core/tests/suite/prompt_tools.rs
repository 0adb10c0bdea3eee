//! Tool calling through the prompt (seed 002) against a real HTTP mock: the tools go as a
//! description, never as `tools`; calls written in the reply run and never show as text;
//! the history goes back as text.

use coder_core::{ProviderKind, ToolCalling};
use coder_protocol::EventMsg;
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{Harness, assert_history_valid, text_deltas};

fn call_reply() -> MockResponse {
    // The block arrives cut in pieces, as a model streams it.
    MockResponse::stream(vec![
        Chunk::text("Let me read it.\n<tool"),
        Chunk::text("_call>\n{\"name\": \"read\", \"argu"),
        Chunk::text("ments\": {\"path\": \"notes.txt\"}}\n</tool_call>"),
    ])
}

#[tokio::test]
async fn a_call_written_in_the_reply_runs_and_the_history_goes_back_as_text() {
    let server = MockModelServer::start(vec![call_reply(), MockResponse::text("It says hi.")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.tool_calling = Some(ToolCalling::Prompt),
        Vec::new(),
    );
    h.write("notes.txt", "hi\n");
    let events = h.run("What do the notes say?").await;

    // Shown: the text, never the block.
    let shown = text_deltas(&events);
    assert_eq!(shown, "Let me read it.\nIt says hi.");
    let completed: Vec<&str> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ToolCallCompleted { tool_name, .. } => Some(tool_name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(completed, ["read"]);

    let requests = server.requests();
    for request in &requests {
        assert!(request.body.get("tools").is_none(), "{}", request.body);
    }
    let first = requests[0].body["messages"].as_array().unwrap().clone();
    assert_eq!(first[1]["role"], "system");
    let described = first[1]["content"].as_str().unwrap();
    assert!(described.starts_with("Available tools:\n"), "{described}");
    assert!(described.contains("- read(path: string"), "{described}");
    let second = requests[1].body["messages"].as_array().unwrap().clone();
    // The description once, then the history as text.
    let descriptions = second
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|text| text.starts_with("Available tools:"))
        })
        .count();
    assert_eq!(descriptions, 1);
    let call = second.iter().find(|m| m["role"] == "assistant").unwrap();
    assert!(call.get("tool_calls").is_none(), "{call}");
    assert!(
        call["content"].as_str().unwrap().contains(
            "<tool_call>\n{\"arguments\":{\"path\":\"notes.txt\"},\"name\":\"read\"}\n</tool_call>"
        ),
        "{call}"
    );
    let result = second.last().unwrap();
    assert_eq!(result["role"], "user");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("<tool_response name=\"read\">\n"),
        "{result}"
    );
    // The conversation itself keeps real tool calls and results.
    let history = h.engine.history(h.root).unwrap();
    assert!(history.iter().any(|m| !m.tool_calls.is_empty()));
    assert_history_valid(&history);
}

#[tokio::test]
async fn the_bundled_small_model_is_called_through_the_prompt_unless_configured() {
    let server = MockModelServer::start(vec![MockResponse::text("ok"), MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.model = "smollm2".into(),
        Vec::new(),
    );
    h.run("hi").await;
    assert!(server.requests()[0].body.get("tools").is_none());
    let mut native = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| {
            config.model = "smollm2".into();
            config.tool_calling = Some(ToolCalling::Native);
        },
        Vec::new(),
    );
    native.run("hi").await;
    assert!(server.requests()[1].body["tools"].is_array());
}

// Seed 002's six test scenarios ("测试场景") through the engine and the mock model, read
// from the requests the model received: where the initial tools' description is, and that it
// is there once. Clearing is the product's own: `/clear`, a plan approved with a cleared
// context, a compaction.

/// An engine calling tools through the prompt, `adjust`ed.
fn prompted(server: &MockModelServer, adjust: impl FnOnce(&mut coder_core::Config)) -> Harness {
    Harness::with(
        server,
        ProviderKind::OpenAi,
        |config| {
            config.tool_calling = Some(ToolCalling::Prompt);
            adjust(config);
        },
        Vec::new(),
    )
}

/// The messages of request `index`.
fn request(server: &MockModelServer, index: usize) -> Vec<serde_json::Value> {
    server.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

fn content(message: &serde_json::Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

/// Where the tools' description is among `messages`.
fn described_at(messages: &[serde_json::Value]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "system" && content(m).starts_with("Available tools:"))
        .map(|(at, _)| at)
        .collect()
}

/// Where messages announcing tools added later are among `messages`.
fn announced_at(messages: &[serde_json::Value]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| content(m).starts_with("New tools available:"))
        .map(|(at, _)| at)
        .collect()
}

/// A reply that calls `name` with `arguments` the way a model called through the prompt
/// writes it.
fn written_call(name: &str, arguments: serde_json::Value) -> MockResponse {
    let block = serde_json::json!({"name": name, "arguments": arguments});
    MockResponse::text(&format!("<tool_call>\n{block}\n</tool_call>"))
}

/// Runs `/clear` in the root conversation; returns how many messages it cleared, as its
/// `context_cleared` event says.
async fn clear(h: &mut Harness) -> usize {
    h.engine.command(h.root, "/clear").unwrap();
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), h.events.recv())
            .await
            .expect("no context_cleared within 10 s")
            .unwrap();
        if let EventMsg::ContextCleared { cleared_messages } = event.msg {
            assert_eq!(event.task_id, None);
            return cleared_messages;
        }
    }
}

#[tokio::test]
async fn scenario_1_the_first_request_describes_the_initial_tools_once_after_the_system_prompt() {
    let server = MockModelServer::start(vec![MockResponse::text("hello")])
        .await
        .unwrap();
    let mut h = prompted(&server, |_| {});
    h.run("hi").await;
    let messages = request(&server, 0);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(described_at(&messages), [1]);
    let described = content(&messages[1]);
    for tool in ["read", "bash", "todo_write", "conv_create"] {
        assert!(described.contains(&format!("\n- {tool}(")), "{described}");
    }
    // Plan mode's tool is not offered in default mode.
    assert!(!described.contains("- exit_plan_mode("), "{described}");
    assert_eq!(content(&messages[2]), "hi");
}

#[tokio::test]
async fn scenario_2_clear_keeps_the_system_prompt_and_the_description_once() {
    let server = MockModelServer::start(vec![
        MockResponse::text("noted"),
        MockResponse::text("which word?"),
    ])
    .await
    .unwrap();
    let mut h = prompted(&server, |_| {});
    h.run("the word is heron").await;
    let before = h.engine.history(h.root).unwrap().len();
    assert_eq!(clear(&mut h).await, before);
    assert!(h.engine.history(h.root).unwrap().is_empty());
    h.run("what was the word?").await;

    let (first, second) = (request(&server, 0), request(&server, 1));
    // The system messages stay: the same system prompt, the same description, once.
    assert_eq!(second[0], first[0]);
    assert_eq!(described_at(&second), [1]);
    assert_eq!(second[1], first[1]);
    // The messages went.
    assert_eq!(content(&second[2]), "what was the word?");
    let sent = serde_json::Value::Array(second).to_string();
    assert!(!sent.contains("heron"), "{sent}");
}

#[tokio::test]
async fn scenario_3_a_context_cleared_of_everything_opens_with_the_description_again() {
    // A plan approved with "clear the context and start": nothing of the old batch stays.
    let plan = "1. Add greet.\n2. Test it.";
    let server = MockModelServer::start(vec![
        written_call("exit_plan_mode", serde_json::json!({"plan": plan})),
        MockResponse::text("on it"),
    ])
    .await
    .unwrap();
    let mut h = prompted(&server, |_| {});
    h.engine
        .set_mode(h.root, coder_protocol::Mode::Plan)
        .unwrap();
    let _asked = super::support::answer_with(
        &h.engine,
        coder_protocol::PermissionDecision::ClearContextAndStart,
    );
    h.run("plan a greeting").await;

    let (planning, after) = (request(&server, 0), request(&server, 1));
    assert_eq!(described_at(&planning), [1]);
    assert!(content(&planning[1]).contains("- exit_plan_mode("));
    assert_eq!(described_at(&after), [1]);
    let described = content(&after[1]);
    // The initial tools still offered: plan mode's own tool is gone with plan mode.
    assert!(described.contains("\n- read("), "{described}");
    assert!(!described.contains("exit_plan_mode"), "{described}");
    assert!(
        content(&after[2]).starts_with("The user approved this plan"),
        "{after:#?}"
    );
    // The todo list came back with the mode: a tool the conversation did not start with,
    // announced once in the new batch.
    assert_eq!(announced_at(&after), [3]);
    assert!(content(&after[3]).contains("- todo_write("));
    assert!(!described.contains("todo_write"), "{described}");
    assert_eq!(after.len(), 4, "{after:#?}");
    let sent = serde_json::Value::Array(after).to_string();
    assert!(!sent.contains("plan a greeting"), "{sent}");
}

#[tokio::test]
async fn scenario_4_batch_after_batch_the_description_is_there_once() {
    let server = MockModelServer::start(vec![
        MockResponse::text("a"),
        MockResponse::text("b"),
        MockResponse::text("c"),
        MockResponse::text("They said b and c."),
        MockResponse::text("d"),
    ])
    .await
    .unwrap();
    let mut h = prompted(&server, |_| {});
    h.run("one").await;
    clear(&mut h).await;
    assert_eq!(clear(&mut h).await, 0, "a second clear has nothing left");
    h.run("two").await;
    h.run("three").await;
    let task = h.engine.compact(h.root).unwrap();
    h.until_end(task).await;
    h.run("four").await;

    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    for (index, _) in requests.iter().enumerate().filter(|(index, _)| *index != 3) {
        let messages = request(&server, index);
        assert_eq!(described_at(&messages), [1], "request {index}");
        assert_eq!(messages[1], request(&server, 0)[1], "request {index}");
    }
    // The summary request has no tools to describe; the batch after it has the summary.
    assert!(described_at(&request(&server, 3)).is_empty());
    let last = request(&server, 4);
    assert!(
        content(&last[2]).starts_with("<conversation-summary>"),
        "{last:#?}"
    );
}

#[tokio::test]
async fn scenario_5_without_initial_tools_no_request_describes_any() {
    let server = MockModelServer::start(vec![MockResponse::text("a"), MockResponse::text("b")])
        .await
        .unwrap();
    let mut h = prompted(&server, |config| {
        config.disabled_tools = coder_protocol::tools::BUILTIN_TOOLS
            .iter()
            .chain(coder_protocol::tools::CONVERSATION_TOOLS)
            .map(|name| (*name).to_owned())
            .collect();
    });
    h.run("one").await;
    clear(&mut h).await;
    h.run("two").await;
    for index in 0..2 {
        let messages = request(&server, index);
        assert!(described_at(&messages).is_empty(), "{messages:#?}");
        assert!(announced_at(&messages).is_empty(), "{messages:#?}");
        assert!(server.requests()[index].body.get("tools").is_none());
    }
}

#[tokio::test]
async fn scenario_6_tools_offered_later_are_ordinary_messages_and_leave_the_description_alone() {
    let server = MockModelServer::start(vec![
        MockResponse::text("a"),
        MockResponse::text("b"),
        MockResponse::text("c"),
        MockResponse::text("d"),
    ])
    .await
    .unwrap();
    let mut h = prompted(&server, |_| {});
    h.run("one").await;
    // Plan mode offers `exit_plan_mode`, which the conversation did not start with.
    h.engine.command(h.root, "/plan").unwrap();
    h.run("two").await;
    h.run("three").await;
    clear(&mut h).await;
    h.run("four").await;

    let initial = content(&request(&server, 0)[1]).to_owned();
    for index in 0..4 {
        let messages = request(&server, index);
        assert_eq!(described_at(&messages), [1], "request {index}");
        let described = content(&messages[1]);
        assert!(!described.contains("exit_plan_mode"), "{described}");
        // Only initial tools (those plan mode still offers), as the first request named
        // them.
        for line in described.lines().filter(|line| line.starts_with("- ")) {
            assert!(initial.lines().any(|first| first == line), "{line}");
        }
    }
    // Announced once, as a user message of the batch it arrived in, after that input.
    let second = request(&server, 1);
    assert_eq!(announced_at(&second), [second.len() - 1]);
    assert_eq!(second[second.len() - 1]["role"], "user");
    assert!(content(&second[second.len() - 1]).contains("- exit_plan_mode("));
    let third = request(&server, 2);
    assert_eq!(announced_at(&third).len(), 1, "never twice");
    // Like any message, it went with its batch.
    assert!(announced_at(&request(&server, 3)).is_empty());
}

#[tokio::test]
async fn compaction_keeps_the_initial_tools_described_once() {
    let server = MockModelServer::start(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
        MockResponse::text("SUMMARY: three long texts."),
        MockResponse::text("four"),
    ])
    .await
    .unwrap();
    let mut h = prompted(&server, |config| {
        config.context_window = Some(100_000);
        config.compact_threshold = 0.5;
    });
    // Three texts and the prompt fit in half the window; a fourth does not.
    let long = "alpha ".repeat(12_000);
    for _ in 0..3 {
        h.run(&long).await;
    }
    let events = h.run(&format!("LAST {long}")).await;
    let compactions: Vec<_> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::Compacted { trigger, .. } => Some(*trigger),
            _ => None,
        })
        .collect();
    assert_eq!(compactions, [coder_protocol::CompactTrigger::Auto]);

    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    // The summary request: the transcript alone, no tools and no description.
    let summary = request(&server, 3);
    assert!(described_at(&summary).is_empty(), "{summary:#?}");
    assert!(requests[3].body.get("tools").is_none());
    assert!(!content(&summary[1]).contains("Available tools:"));
    // The new batch opens with the same description, once, then the summary.
    let after = request(&server, 4);
    assert_eq!(described_at(&after), [1]);
    assert_eq!(after[1], request(&server, 0)[1]);
    assert!(
        content(&after[2]).starts_with("<conversation-summary>"),
        "{:.80}",
        content(&after[2])
    );
    assert!(content(after.last().unwrap()).starts_with("LAST"));
    // The history never holds the description: each request is given it.
    let history = h.engine.history(h.root).unwrap();
    assert!(
        history
            .iter()
            .all(|m| m.role != coder_protocol::Role::System)
    );
    assert_history_valid(&history);
}
