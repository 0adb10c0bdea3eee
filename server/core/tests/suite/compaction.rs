//! Compaction (seed 001) against a real HTTP mock: automatic before a request that would
//! pass `compactThreshold` of the window, asked for, after the provider refuses a request as
//! too long, and never for a worker, which fails clearly instead. What is replaced is
//! archived; the summary request is a per-turn override (seed 003) with no tools.

use coder_core::{ConversationSpec, ErrorKind, ProviderKind};
use coder_protocol::{ChatMessage, CompactTrigger, Event, EventMsg, Role};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Harness, assert_history_valid, kinds, until_idle, until_saved, warnings};

/// About `tokens` tokens of text.
fn words(tokens: usize) -> String {
    "alpha ".repeat(tokens)
}

/// An engine whose root conversation has short instructions and no tools, so the requests
/// are about their messages; its window is `window` tokens, compacted at `threshold`.
fn harness(server: &MockModelServer, window: u64, threshold: f64) -> Harness {
    let mut h = Harness::with(
        server,
        ProviderKind::OpenAi,
        |config| {
            config.context_window = Some(window);
            config.compact_threshold = threshold;
            config.disabled_tools = coder_core::tools::ToolRegistry::builtin()
                .iter()
                .map(|tool| tool.name().to_owned())
                .collect();
        },
        Vec::new(),
    );
    let spec = ConversationSpec {
        base_instructions: Some("Be brief.".into()),
        ..ConversationSpec::default()
    };
    h.root = h.engine.conversation_create(spec).unwrap();
    h
}

fn compacted(events: &[Event]) -> Vec<(CompactTrigger, u64, u64, f64, String, usize)> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::Compacted {
                trigger,
                token_before,
                token_compact,
                compact_rate,
                summary,
                archived_messages,
                ..
            } => Some((
                *trigger,
                *token_before,
                *token_compact,
                *compact_rate,
                summary.clone(),
                *archived_messages,
            )),
            _ => None,
        })
        .collect()
}

fn context_tokens(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::TokenCount { context_tokens, .. } => Some(*context_tokens),
            _ => None,
        })
        .collect()
}

fn messages(server: &MockModelServer, request: usize) -> Vec<Value> {
    server.requests()[request].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

fn is_summary(message: &ChatMessage) -> bool {
    message.role == Role::User
        && message
            .content
            .as_deref()
            .is_some_and(|text| text.starts_with("<conversation-summary>"))
}

#[tokio::test]
async fn a_request_that_would_pass_the_threshold_is_compacted_first_and_nothing_is_lost() {
    // The provider reports no usage: every figure is counted locally.
    let server = MockModelServer::start(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
        MockResponse::text("SUMMARY: the person sent three long texts."),
        MockResponse::text("four"),
    ])
    .await
    .unwrap();
    let mut h = harness(&server, 20_000, 0.5);
    for _ in 0..3 {
        let events = h.run(&words(3_000)).await;
        assert!(compacted(&events).is_empty());
    }
    let history_before = h.engine.history(h.root).unwrap();
    assert_eq!(history_before.len(), 6);

    let events = h.run(&format!("LAST {}", words(3_000))).await;
    let done = compacted(&events);
    assert_eq!(done.len(), 1, "{:?}", kinds(&events));
    let (trigger, before, after, rate, summary, archived) = done[0].clone();
    assert_eq!(trigger, CompactTrigger::Auto);
    assert!(before > 10_000, "the request held {before} tokens");
    assert!(after < before / 2, "{after} of {before}");
    assert_eq!(
        rate,
        ((after as f64 / before as f64) * 1000.0).round() / 1000.0
    );
    assert_eq!(summary, "SUMMARY: the person sent three long texts.");
    assert_eq!(archived, 6);
    // `compacted`, then a `token_count` of the compacted context, then the reply.
    let order: Vec<String> = kinds(&events)
        .into_iter()
        .filter(|kind| ["compacted", "token_count", "agent_message"].contains(&kind.as_str()))
        .collect();
    assert_eq!(
        order,
        ["compacted", "token_count", "agent_message", "token_count"]
    );
    assert_eq!(context_tokens(&events)[0], after);

    // The summary request: the compaction prompt instead of the conversation's, no tools,
    // the older part as one transcript.
    let summary_request = &server.requests()[3].body;
    let sent = summary_request["messages"].as_array().unwrap();
    assert!(
        sent[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You summarise a coding agent's conversation"),
        "{}",
        sent[0]["content"]
    );
    assert_eq!(sent.len(), 2);
    let transcript = sent[1]["content"].as_str().unwrap();
    assert!(transcript.starts_with("## User\nalpha"), "{transcript:.80}");
    assert!(transcript.contains("## Assistant\nthree"));
    assert!(!transcript.contains("LAST"));
    assert!(summary_request.get("tools").is_none_or(Value::is_null));

    // The request after it: the conversation's own instructions, the summary, the turn kept.
    let next = messages(&server, 4);
    assert_eq!(
        next[0]["content"].as_str().unwrap().contains("Be brief."),
        true
    );
    assert!(
        next[1]["content"]
            .as_str()
            .unwrap()
            .contains("SUMMARY: the person sent three long texts.")
    );
    assert!(next[2]["content"].as_str().unwrap().starts_with("LAST"));
    assert_eq!(next.len(), 3);

    // The history is the summary, the kept turn and the reply; the archive has the rest.
    let history = h.engine.history(h.root).unwrap();
    assert!(is_summary(&history[0]));
    assert_eq!(history.len(), 3);
    assert_history_valid(&history);
    let archive = h.engine.archive(h.root).unwrap();
    assert_eq!(archive.len(), 1);
    assert_eq!(archive[0].index, 0);
    assert_eq!(archive[0].trigger, CompactTrigger::Auto);
    assert_eq!(archive[0].messages, history_before);

    // The snapshot keeps the archive, and its messages are the compacted history.
    until_idle(&mut h).await;
    let snapshot: Value = serde_json::from_slice(&until_saved(&h.engine).await).unwrap();
    let root = snapshot["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["conversationId"] == h.root.to_string())
        .cloned()
        .unwrap_or_else(|| snapshot.clone());
    assert_eq!(root["archived"].as_array().unwrap().len(), 1);
    assert_eq!(root["archived"][0]["messages"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn compaction_on_request_summarises_all_but_the_last_turn() {
    let server = MockModelServer::start(vec![
        MockResponse::text("first answer"),
        MockResponse::text("second answer"),
        MockResponse::text("The person asked twice."),
        MockResponse::text("third answer"),
    ])
    .await
    .unwrap();
    let mut h = harness(&server, 100_000, 0.8);
    h.run("first question").await;
    h.run("second question").await;
    let task = h.engine.compact(h.root).unwrap();
    let events = h.until_end(task).await;
    let lifecycle: Vec<String> = kinds(&events)
        .into_iter()
        .filter(|kind| kind != "state_changed")
        .collect();
    assert_eq!(
        lifecycle,
        ["task_started", "compacted", "token_count", "task_complete"]
    );
    let (trigger, _, _, _, summary, archived) = compacted(&events)[0].clone();
    assert_eq!(
        (trigger, summary.as_str(), archived),
        (CompactTrigger::Manual, "The person asked twice.", 2)
    );
    let history = h.engine.history(h.root).unwrap();
    assert!(is_summary(&history[0]));
    assert_eq!(history[1].content.as_deref(), Some("second question"));
    assert_eq!(history.len(), 3);

    // The next task goes on from the summary.
    h.run("third question").await;
    let next = messages(&server, 3);
    assert!(
        next[1]["content"]
            .as_str()
            .unwrap()
            .contains("The person asked twice.")
    );
    assert_eq!(next.last().unwrap()["content"], "third question");
}

/// `/compact <instructions>`: the summary request carries what the person asked it to keep,
/// after the compaction prompt's own rules.
#[tokio::test]
async fn compact_with_instructions_tells_the_summary_request_what_to_keep() {
    let server = MockModelServer::start(vec![
        MockResponse::text("first answer"),
        MockResponse::text("second answer"),
        MockResponse::text("The parser notes, kept."),
    ])
    .await
    .unwrap();
    let mut h = harness(&server, 100_000, 0.8);
    h.run("first question").await;
    h.run("second question").await;
    let said = h
        .engine
        .command(h.root, "/compact keep the parser notes verbatim")
        .unwrap();
    let task = said.task_id.expect("/compact queues a task");
    let events = h.until_end(task).await;
    let request = &server.requests()[2].body;
    let system = messages(&server, 2)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        system.starts_with("You summarise a coding agent's conversation")
            && system.contains("keep the parser notes verbatim"),
        "{request}"
    );
    let (_, _, _, _, summary, _) = compacted(&events)[0].clone();
    assert_eq!(summary, "The parser notes, kept.");
}

#[tokio::test]
async fn compacting_a_single_turn_changes_nothing_and_says_so() {
    let server = MockModelServer::start(vec![MockResponse::text("only answer")])
        .await
        .unwrap();
    let mut h = harness(&server, 100_000, 0.8);
    h.run("only question").await;
    let before = h.engine.history(h.root).unwrap();
    let task = h.engine.compact(h.root).unwrap();
    let events = h.until_end(task).await;
    assert!(compacted(&events).is_empty());
    let said = warnings(&events);
    assert!(said[0].contains("nothing to compact"), "{said:?}");
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete { error: None, .. }
    ));
    assert_eq!(h.engine.history(h.root).unwrap(), before);
    assert!(h.engine.archive(h.root).unwrap().is_empty());
    // No model call was made for it.
    assert_eq!(server.requests().len(), 1);
}

fn too_long() -> MockResponse {
    MockResponse::Status {
        status: 400,
        body: json!({"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 8192 tokens."}}).to_string(),
        retry_after_secs: None,
    }
}

#[tokio::test]
async fn a_request_the_provider_finds_too_long_is_compacted_and_sent_again() {
    let server = MockModelServer::start(vec![
        MockResponse::text("a1"),
        MockResponse::text("a2"),
        too_long(),
        MockResponse::text("Two questions were asked."),
        MockResponse::text("a3"),
    ])
    .await
    .unwrap();
    let mut h = harness(&server, 100_000, 0.8);
    h.run("q1").await;
    h.run("q2").await;
    let events = h.run("q3").await;
    let said = warnings(&events);
    assert!(
        said.iter()
            .any(|w| w.contains("maximum context length") && w.contains("compacting")),
        "{said:?}"
    );
    assert_eq!(compacted(&events).len(), 1);
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete { error: None, .. }
    ));
    let retried = messages(&server, 4);
    assert!(
        retried[1]["content"]
            .as_str()
            .unwrap()
            .contains("Two questions were asked.")
    );
    assert_eq!(retried.last().unwrap()["content"], "q3");
    assert_history_valid(&h.engine.history(h.root).unwrap());
}

#[tokio::test]
async fn a_summary_request_too_long_for_the_model_loses_its_oldest_turns_first() {
    let server = MockModelServer::start(vec![
        MockResponse::text("a1"),
        MockResponse::text("a2"),
        MockResponse::text("a3"),
        MockResponse::text("a4"),
        too_long(),
        MockResponse::text("Shorter summary."),
    ])
    .await
    .unwrap();
    let mut h = harness(&server, 100_000, 0.8);
    for question in ["q1", "q2", "q3", "q4"] {
        h.run(question).await;
    }
    let task = h.engine.compact(h.root).unwrap();
    let events = h.until_end(task).await;
    assert_eq!(compacted(&events).len(), 1, "{:?}", kinds(&events));
    let first = messages(&server, 4)[1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = messages(&server, 5)[1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(first.starts_with("## User\nq1"), "{first}");
    assert!(
        second.starts_with("[The 2 oldest messages are left out"),
        "{second}"
    );
    assert!(!second.contains("q1") && second.contains("q2"), "{second}");
    // What was not summarised is still archived, and the summary says so.
    let archive = h.engine.archive(h.root).unwrap();
    assert_eq!(archive[0].messages[0].content.as_deref(), Some("q1"));
    let history = h.engine.history(h.root).unwrap();
    assert!(
        history[0]
            .content
            .as_deref()
            .unwrap()
            .contains("2 oldest messages did not fit")
    );
}

#[tokio::test]
async fn a_worker_never_compacts_and_fails_clearly_when_it_overflows() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "read big.txt"}),
        ),
        MockResponse::tool_call("r1", "read", json!({"path": "big.txt"})),
        MockResponse::text("the worker could not finish"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.context_window = Some(24_000),
        Vec::new(),
    );
    h.write("big.txt", &format!("{}\n", words(12)).repeat(2_000));
    h.engine.send(h.root, "delegate").unwrap();
    let events = until_idle(&mut h).await;
    assert!(compacted(&events).is_empty(), "{:?}", compacted(&events));
    let errors: Vec<(String, ErrorKind)> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::Error { message, kind } => Some((message.clone(), *kind)),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].1,
        ErrorKind::ContextLengthExceeded,
        "{errors:?} {:?}",
        server.requests().len()
    );
    assert!(
        errors[0].0.contains("context window of 24000") && errors[0].0.contains("does not compact"),
        "{}",
        errors[0].0
    );
    // The worker's second request was never sent; the caller went on.
    assert_eq!(server.requests().len(), 3);
    for conversation in h.engine.list_conversations() {
        assert_history_valid(&h.engine.history(conversation.id).unwrap());
    }
}
