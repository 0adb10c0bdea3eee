//! Text and thinking stream through, in both wire formats, with the envelope intact.

use coder_core::ProviderKind;
use coder_protocol::{EngineState, EventMsg, Role, TokenUsage};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{BOTH, Harness, kinds, text_deltas};

#[tokio::test]
async fn text_streams_as_deltas_then_whole_message_usage_and_completion() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![MockResponse::stream(vec![
            Chunk::text("Hel"),
            Chunk::text("lo, "),
            Chunk::text("world"),
            Chunk::usage(12, 3),
        ])])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        let events = h.run("say hello").await;
        let idle = h.events.recv().await.unwrap();

        assert_eq!(
            kinds(&events),
            [
                "state_changed",
                "task_started",
                "agent_message_delta",
                "agent_message_delta",
                "agent_message_delta",
                "agent_message",
                "reply_complete",
                "token_count",
                "task_complete",
            ],
            "{kind:?}"
        );
        assert_eq!(text_deltas(&events), "Hello, world");
        assert_eq!(
            events[0].msg,
            EventMsg::StateChanged {
                state: EngineState::Running
            }
        );
        assert_eq!(
            idle.msg,
            EventMsg::StateChanged {
                state: EngineState::Idle
            }
        );
        assert_eq!(
            events[6].msg,
            EventMsg::ReplyComplete {
                text: "Hello, world".into(),
                reasoning: String::new(),
                tool_calls: Vec::new(),
                interrupted: false,
            }
        );
        assert_eq!(
            events[7].msg,
            EventMsg::TokenCount {
                last: TokenUsage {
                    input_tokens: 12,
                    output_tokens: 3,
                    total_tokens: 15,
                    ..TokenUsage::default()
                },
                total: TokenUsage {
                    input_tokens: 12,
                    output_tokens: 3,
                    total_tokens: 15,
                    ..TokenUsage::default()
                },
                context_tokens: 15,
                context_window: Some(32_000),
            }
        );
        assert_eq!(
            events.last().unwrap().msg,
            EventMsg::TaskComplete {
                last_agent_message: Some("Hello, world".into()),
                step_limit: None,
                error: None,
            }
        );
        // One envelope: the same conversation and task, seq without gaps (the input's
        // `started` receipt among them).
        let task = events[1].task_id;
        let mut all: Vec<&coder_protocol::Event> =
            events.iter().chain(&h.receipts).chain([&idle]).collect();
        all.sort_by_key(|event| event.seq);
        assert_eq!(h.receipts.len(), 1);
        for (i, event) in all.into_iter().enumerate() {
            assert_eq!(event.seq, events[0].seq + i as u64);
            assert_eq!(event.conversation_id, h.root);
            assert_eq!(event.task_id, task);
        }
        let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
        assert_eq!(history.len(), 2);
        assert_eq!(history[1].role, Role::Assistant);
        assert_eq!(history[1].content.as_deref(), Some("Hello, world"));
    }
}

#[tokio::test]
async fn requests_carry_the_prompt_tools_and_credentials_of_each_format() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![MockResponse::text("ok")])
            .await
            .unwrap();
        let mut h = Harness::new(&server, kind);
        h.run("first question").await;
        let request = &server.requests()[0];
        let body = &request.body;
        assert_eq!(body["model"], "mock-model");
        assert_eq!(body["stream"], true);
        match kind {
            ProviderKind::OpenAi => {
                assert_eq!(request.path, "/v1/chat/completions");
                assert_eq!(request.headers["authorization"], "Bearer test-key-123");
                assert_eq!(body["messages"][0]["role"], "system");
                assert_eq!(body["messages"][1]["content"], "first question");
                let names: Vec<&str> = body["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["function"]["name"].as_str().unwrap())
                    .collect();
                assert_eq!(
                    names,
                    [
                        "apply_patch",
                        "ask_user",
                        "bash",
                        "conv_create",
                        "conv_destroy",
                        "conv_history",
                        "conv_list",
                        "conv_send",
                        "edit",
                        "glob",
                        "grep",
                        "read",
                        "skill",
                        "todo_write",
                        "write"
                    ]
                );
                assert_eq!(body["stream_options"]["include_usage"], true);
            }
            ProviderKind::Anthropic => {
                assert_eq!(request.path, "/v1/messages");
                assert_eq!(request.headers["x-api-key"], "test-key-123");
                assert_eq!(request.headers["anthropic-version"], "2023-06-01");
                assert!(
                    body["system"]
                        .as_str()
                        .unwrap()
                        .contains("Working directory")
                );
                assert_eq!(body["messages"][0]["content"][0]["text"], "first question");
                let read = body["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["name"] == "read")
                    .unwrap();
                assert!(read["input_schema"].is_object());
            }
        }
    }
}

#[tokio::test]
async fn thinking_streams_separately_and_is_kept_but_not_sent_back() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![
            MockResponse::stream(vec![
                Chunk::thinking("Let me "),
                Chunk::thinking("think."),
                Chunk::text("Answer."),
            ]),
            MockResponse::text("Second."),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        let events = h.run("q").await;
        let reasoning: String = events
            .iter()
            .filter_map(|e| match &e.msg {
                EventMsg::AgentReasoningDelta { delta } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reasoning, "Let me think.", "{kind:?}");
        assert!(events.iter().any(|e| e.msg
            == EventMsg::AgentReasoning {
                text: "Let me think.".into()
            }));
        let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
        assert_eq!(history[1].reasoning.as_deref(), Some("Let me think."));

        h.events.recv().await.unwrap(); // idle
        h.run("again").await;
        let second = server.requests()[1].body.to_string();
        assert!(!second.contains("Let me think."), "{kind:?}: {second}");
        assert!(second.contains("Answer."));
    }
}

#[tokio::test]
async fn inputs_sent_while_a_task_runs_are_queued_and_run_in_order() {
    let server = MockModelServer::start(vec![
        MockResponse::text("one").with_delay(30),
        MockResponse::text("two"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let first = h.engine.send(h.root, "first").unwrap();
    let second = h.engine.send(h.root, "second").unwrap();
    let mut events = h.until_end(first).await;
    events.extend(h.until_end(second).await);
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::TaskComplete {
                last_agent_message, ..
            } => Some((e.task_id.unwrap(), last_agent_message.clone().unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [(first, "one".to_owned()), (second, "two".to_owned())]
    );
    // One running/idle bracket around both tasks.
    assert_eq!(
        kinds(&events)
            .iter()
            .filter(|k| *k == "state_changed")
            .count(),
        1
    );
    // The second request saw the first exchange.
    let messages = &server.requests()[1].body["messages"];
    assert_eq!(
        messages.as_array().unwrap().len(),
        5,
        "with the first input's reminders"
    );
}

#[tokio::test]
async fn configuration_warnings_open_the_first_task_only() {
    let server = MockModelServer::start(vec![MockResponse::text("a"), MockResponse::text("b")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.warnings = vec!["config.json: unknown key \"modle\"".to_owned()],
        vec![],
    );
    let first = h.run("one").await;
    let warnings: Vec<&EventMsg> = first
        .iter()
        .map(|e| &e.msg)
        .filter(|msg| matches!(msg, EventMsg::Warning { .. }))
        .collect();
    assert_eq!(
        warnings,
        [&EventMsg::Warning {
            message: "config.json: unknown key \"modle\"".to_owned()
        }]
    );
    let second = h.run("two").await;
    assert!(
        !second
            .iter()
            .any(|e| matches!(e.msg, EventMsg::Warning { .. }))
    );
}

/// Seed 001 ("Token 追踪"): the usage is published after each reply and also when the task
/// is interrupted, so a front end's count is right after an interrupt.
#[tokio::test]
async fn usage_is_published_again_when_a_task_is_interrupted() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![
        Chunk::tool_call("c1", "read", serde_json::json!({"path": "a.txt"})),
        Chunk::usage(1200, 34),
    ])])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.write("a.txt", "A\n");
    let handle = h.engine.clone();
    let root = h.root;
    let fired = std::sync::atomic::AtomicBool::new(false);
    h.engine.on_event(move |event| {
        if matches!(event.msg, EventMsg::ToolCallCompleted { .. })
            && !fired.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            handle.interrupt(root).unwrap();
        }
    });
    let events = h.run("look").await;
    let counts: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::TokenCount { last, total, .. } => {
                Some((last.total_tokens, total.total_tokens))
            }
            _ => None,
        })
        .collect();
    // After the reply, then at the interrupt: nothing new, the same total.
    assert_eq!(counts, [(1234, 1234), (0, 1234)], "{events:?}");
    let names = kinds(&events);
    let at = names
        .iter()
        .rposition(|kind| kind == "token_count")
        .unwrap();
    assert_eq!(names[at + 1], "turn_aborted", "{names:?}");
}
