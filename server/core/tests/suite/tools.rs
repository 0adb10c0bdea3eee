//! Tool calls: round trips in both formats, parallel calls, refusals, the step limit.

use std::sync::Arc;
use std::time::Duration;

use coder_core::ProviderKind;
use coder_protocol::{EventMsg, Role};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{BOTH, Harness, SlowTool, assert_history_valid, kinds};

#[tokio::test]
async fn a_read_call_round_trips_in_both_formats() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![
            MockResponse::stream(vec![
                Chunk::text("Reading."),
                Chunk::tool_call("call_1", "read", json!({"path": "notes.txt"})),
            ]),
            MockResponse::text("It says hi."),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        h.write("notes.txt", "hi there\n");
        let events = h.run("what is in notes.txt?").await;
        let order: Vec<String> = kinds(&events)
            .into_iter()
            .filter(|k| k != "token_count")
            .collect();
        assert_eq!(
            order[2..],
            [
                "agent_message_delta",
                "agent_message",
                "tool_calls_requested",
                "reply_complete",
                "tool_call_started",
                "tool_call_completed",
                "agent_message_delta",
                "agent_message",
                "reply_complete",
                "task_complete",
            ],
            "{kind:?}"
        );
        assert!(events.iter().any(|e| e.msg
            == EventMsg::ToolCallStarted {
                call_id: "call_1".into(),
                tool_name: "read".into(),
                arguments: json!({"path": "notes.txt"}),
                kind: coder_protocol::ToolKind::Read,
                locations: vec![coder_protocol::ToolLocation::path(
                    h.workspace.path().join("notes.txt").to_string_lossy()
                )],
                title: format!("Read {}", h.workspace.path().join("notes.txt").display()),
            }));
        let second = &server.requests()[1].body;
        let result = match kind {
            ProviderKind::OpenAi => {
                let messages = second["messages"].as_array().unwrap();
                let tool = messages.last().unwrap();
                assert_eq!(tool["role"], "tool");
                assert_eq!(tool["tool_call_id"], "call_1");
                assert_eq!(messages[3]["tool_calls"][0]["function"]["name"], "read");
                tool["content"].as_str().unwrap().to_owned()
            }
            ProviderKind::Anthropic => {
                let messages = second["messages"].as_array().unwrap();
                assert_eq!(messages[1]["content"][1]["type"], "tool_use");
                assert_eq!(
                    messages[1]["content"][1]["input"],
                    json!({"path": "notes.txt"})
                );
                let block = &messages[2]["content"][0];
                assert_eq!(block["type"], "tool_result");
                assert_eq!(block["tool_use_id"], "call_1");
                block["content"].as_str().unwrap().to_owned()
            }
        };
        assert_eq!(result, "     1\thi there\n");
        assert_history_valid(&super::support::without_reminders(
            h.engine.history(h.root).unwrap(),
        ));
    }
}

/// Providers refuse a request whose history holds a tool call named or identified
/// outside `^[a-zA-Z0-9_-]+$` (OpenAI: "Invalid 'messages[9].tool_calls[0].function.name':
/// string does not match pattern"), so a model that once calls `functions.read` would
/// otherwise end its conversation: every later request fails. Such a call is recorded, and
/// sent back, under a name and id of that alphabet; it fails as a call of no tool does.
#[tokio::test]
async fn a_call_named_outside_the_providers_alphabet_is_sent_back_within_it() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![
            MockResponse::stream(vec![
                Chunk::tool_call("call.1 x", "functions.read", json!({"path": "a"})),
                Chunk::tool_call("call:1/x", "read", json!({"path": "notes.txt"})),
            ]),
            MockResponse::text("done"),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        h.write("notes.txt", "hi there\n");
        let events = h.run("go").await;
        assert!(
            matches!(
                events.last().map(|e| &e.msg),
                Some(EventMsg::TaskComplete { error: None, .. })
            ),
            "{kind:?}"
        );
        let second = &server.requests()[1].body;
        let valid = |text: &str| {
            !text.is_empty()
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        let messages = second["messages"].as_array().unwrap();
        let (names, ids, result_ids): (Vec<String>, Vec<String>, Vec<String>) = match kind {
            ProviderKind::OpenAi => {
                let calls = messages
                    .iter()
                    .find_map(|m| m["tool_calls"].as_array())
                    .unwrap();
                (
                    calls
                        .iter()
                        .map(|c| c["function"]["name"].as_str().unwrap().to_owned())
                        .collect(),
                    calls
                        .iter()
                        .map(|c| c["id"].as_str().unwrap().to_owned())
                        .collect(),
                    messages
                        .iter()
                        .filter(|m| m["role"] == "tool")
                        .map(|m| m["tool_call_id"].as_str().unwrap().to_owned())
                        .collect(),
                )
            }
            ProviderKind::Anthropic => {
                let blocks: Vec<&serde_json::Value> = messages
                    .iter()
                    .flat_map(|m| m["content"].as_array().into_iter().flatten())
                    .collect();
                let uses: Vec<&&serde_json::Value> =
                    blocks.iter().filter(|b| b["type"] == "tool_use").collect();
                (
                    uses.iter()
                        .map(|b| b["name"].as_str().unwrap().to_owned())
                        .collect(),
                    uses.iter()
                        .map(|b| b["id"].as_str().unwrap().to_owned())
                        .collect(),
                    blocks
                        .iter()
                        .filter(|b| b["type"] == "tool_result")
                        .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
                        .collect(),
                )
            }
        };
        assert_eq!(names, ["functions_read", "read"], "{kind:?}");
        assert!(ids.iter().all(|id| valid(id)), "{kind:?}: {ids:?}");
        assert_ne!(ids[0], ids[1], "{kind:?}");
        assert_eq!(result_ids, ids, "{kind:?}: each result answers its call");
        // The call of a real tool still ran.
        assert!(events.iter().any(|e| matches!(
            &e.msg,
            EventMsg::ToolCallCompleted { tool_name, .. } if tool_name == "read"
        )));
    }
}

#[tokio::test]
async fn interleaved_parallel_calls_are_assembled_and_answered_in_order() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::ToolCallDelta {
                index: 0,
                id: Some("a".into()),
                name: Some("read".into()),
                arguments: String::new(),
            },
            Chunk::ToolCallDelta {
                index: 1,
                id: Some("b".into()),
                name: Some("read".into()),
                arguments: "{\"path\":".into(),
            },
            Chunk::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "{\"path\":\"one.txt\"}".into(),
            },
            Chunk::ToolCallDelta {
                index: 1,
                id: None,
                name: None,
                arguments: "\"two.txt\"}".into(),
            },
        ]),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.write("one.txt", "1\n");
    h.write("two.txt", "2\n");
    h.run("read both").await;
    let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
    let calls: Vec<_> = history[1]
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.function.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("a", "{\"path\":\"one.txt\"}"),
            ("b", "{\"path\":\"two.txt\"}")
        ]
    );
    assert_eq!(history[2].tool_call_id.as_deref(), Some("a"));
    assert_eq!(history[2].content.as_deref(), Some("     1\t1\n"));
    assert_eq!(history[3].tool_call_id.as_deref(), Some("b"));
    assert_eq!(history[3].content.as_deref(), Some("     1\t2\n"));
}

#[tokio::test]
async fn bad_calls_fail_with_a_readable_result_and_the_task_goes_on() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::tool_call("u", "no_such_tool", json!({})),
            Chunk::ToolCall {
                id: "j".into(),
                name: "read".into(),
                arguments: "{not json".into(),
            },
            Chunk::tool_call("s", "read", json!({"path": 42})),
            Chunk::tool_call("o", "read", json!({"path": "../../etc/passwd"})),
        ]),
        MockResponse::text("sorry"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let events = h.run("go").await;
    let failures: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ToolCallFailed { call_id, error, .. } => {
                Some((call_id.clone(), error.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 4, "{failures:#?}");
    assert!(failures[0].1.contains("no tool named `no_such_tool`"));
    assert!(failures[1].1.contains("not valid JSON"));
    assert!(failures[2].1.contains("invalid arguments for `read`"));
    assert!(failures[3].1.contains("outside the workspace"));
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete { .. }
    ));
    let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
    assert_history_valid(&history);
    assert_eq!(history.iter().filter(|m| m.role == Role::Tool).count(), 4);
}

#[tokio::test]
async fn read_only_calls_overlap_and_write_calls_run_one_by_one() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::tool_call("w1", "slow_write", json!({"label": "a"})),
            Chunk::tool_call("w2", "slow_write", json!({"label": "b"})),
        ]),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, |_| {}, slow_tools());
    let started = tokio::time::Instant::now();
    let events = h.run("write twice").await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    let order = kinds(&events);
    let first_done = order
        .iter()
        .position(|k| k == "tool_call_completed")
        .unwrap();
    let second_start = order
        .iter()
        .rposition(|k| k == "tool_call_started")
        .unwrap();
    assert!(first_done < second_start, "{order:?}");

    // Two read-only calls: both start before either completes.
    server.push([
        MockResponse::stream(vec![
            Chunk::tool_call("r1", "slow_read", json!({"label": "a"})),
            Chunk::tool_call("r2", "slow_read", json!({"label": "b"})),
        ]),
        MockResponse::text("done"),
    ]);
    h.events.recv().await.unwrap(); // idle
    let events = h.run("read twice").await;
    let order = kinds(&events);
    let first_done = order
        .iter()
        .position(|k| k == "tool_call_completed")
        .unwrap();
    let second_start = order
        .iter()
        .rposition(|k| k == "tool_call_started")
        .unwrap();
    assert!(second_start < first_done, "{order:?}");
}

fn slow_tools() -> Vec<Arc<dyn coder_core::Tool>> {
    vec![
        Arc::new(SlowTool {
            millis: 150,
            read_only: false,
        }),
        Arc::new(SlowTool {
            millis: 150,
            read_only: true,
        }),
    ]
}

#[tokio::test]
async fn the_step_limit_ends_the_task_with_a_warning() {
    let call = || MockResponse::tool_call("c", "read", json!({"path": "f.txt"}));
    let server = MockModelServer::start(vec![call(), call(), call()])
        .await
        .unwrap();
    let mut h = Harness::with(&server, ProviderKind::OpenAi, |c| c.max_steps = 2, vec![]);
    h.write("f.txt", "x\n");
    let events = h.run("loop").await;
    assert_eq!(server.requests().len(), 2);
    assert!(events.iter().any(|e| matches!(&e.msg,
        EventMsg::Warning { message } if message.contains("step limit"))));
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete {
            step_limit: Some(2),
            ..
        }
    ));
    assert_history_valid(&super::support::without_reminders(
        h.engine.history(h.root).unwrap(),
    ));
}

/// Each built-in tool, called by the model through the engine; what the model gets back.
#[tokio::test]
async fn every_builtin_tool_works_through_the_engine() {
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        ("glob", json!({"pattern": "**/*.rs"}), "src/lib.rs\n"),
        (
            "grep",
            json!({"pattern": "fn \\w+", "output_mode": "content"}),
            "src/lib.rs:1:fn answer() {}",
        ),
        (
            "read",
            json!({"path": "src/lib.rs"}),
            "     1\tfn answer() {}",
        ),
        (
            "write",
            json!({"path": "new.txt", "content": "n\n"}),
            "Created new.txt (1 lines).",
        ),
        (
            "edit",
            json!({"path": "src/lib.rs", "old_string": "answer", "new_string": "reply"}),
            "-fn answer() {}\n+fn reply() {}",
        ),
        (
            "bash",
            json!({"command": "echo hi && exit 4"}),
            "Exit code: 4\n",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let server = MockModelServer::start(vec![
            MockResponse::tool_call("c1", tool, arguments),
            MockResponse::text("done"),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, ProviderKind::OpenAi);
        std::fs::create_dir(h.workspace.path().join("src")).unwrap();
        h.write("src/lib.rs", "fn answer() {}\n");
        let events = h.run("use a tool").await;
        assert!(
            kinds(&events).contains(&"tool_call_completed".to_owned()),
            "{tool}: {events:#?}"
        );
        let messages = server.requests()[1].body["messages"].clone();
        let result = messages.as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(result.contains(expected), "{tool}: {result}");
    }
}

#[tokio::test]
async fn images_read_by_the_model_reach_it_in_each_format() {
    for kind in super::support::BOTH {
        let server = MockModelServer::start(vec![
            MockResponse::tool_call("c1", "read", json!({"path": "shot.png"})),
            MockResponse::text("I see it."),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        std::fs::write(
            h.workspace.path().join("shot.png"),
            [0x89, b'P', b'N', b'G'],
        )
        .unwrap();
        h.run("look at shot.png").await;
        let messages = server.requests()[1].body["messages"].clone();
        let messages = messages.as_array().unwrap();
        match kind {
            ProviderKind::OpenAi => {
                let last = messages.last().unwrap();
                assert_eq!(last["role"], "user");
                assert_eq!(
                    last["content"][1]["image_url"]["url"],
                    "data:image/png;base64,iVBORw=="
                );
                assert_eq!(messages[messages.len() - 2]["role"], "tool");
            }
            ProviderKind::Anthropic => {
                let result = &messages.last().unwrap()["content"][0];
                assert_eq!(result["type"], "tool_result");
                assert_eq!(result["content"][1]["source"]["data"], "iVBORw==");
                assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
            }
        }
    }
}
