//! Seed 000 through the whole engine: the conversation tools, the serial scheduler and its
//! event order, closures, nesting, the depth limit; seed 003's conversation-scoped context.

use std::collections::HashMap;

use coder_core::{ConversationSpec, ProviderKind};
use coder_protocol::methods::DestroyResult;
use coder_protocol::{ConversationId, Event, EventMsg, Mode};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, assert_history_valid, kinds, system_of, tool_payload, until_idle};

/// `(conversation label, event type)`, naming conversations A, B, C by first appearance.
fn trace(events: &[Event]) -> Vec<(String, String)> {
    let mut names: HashMap<ConversationId, String> = HashMap::new();
    let types = kinds(events);
    events
        .iter()
        .zip(types)
        .map(|(event, kind)| {
            let next = ["A", "B", "C", "D"][names.len().min(3)].to_owned();
            let name = names.entry(event.conversation_id).or_insert(next).clone();
            let kind = match &event.msg {
                EventMsg::TurnAborted { reason, .. } => format!("{kind}:{reason:?}"),
                EventMsg::StateChanged { state } => format!("{kind}:{state:?}"),
                _ => kind,
            };
            (name, kind)
        })
        .collect()
}

fn expect(rows: &[(&str, &str)]) -> Vec<(String, String)> {
    rows.iter()
        .map(|(c, k)| (c.to_string(), k.to_string()))
        .collect()
}

#[tokio::test]
async fn create_replaces_the_task_runs_the_new_conversation_then_continues() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "count to two", "base_instruction_text": "You are B."}),
        ),
        MockResponse::text("one two"),
        MockResponse::text("B counted."),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "delegate").unwrap();
    let events = until_idle(&mut h).await;
    assert_eq!(
        trace(&events),
        expect(&[
            ("A", "state_changed:Running"),
            ("A", "task_started"),
            ("A", "tool_calls_requested"),
            ("A", "reply_complete"),
            ("A", "token_count"),
            ("A", "tool_call_started"),
            ("A", "turn_aborted:Replaced"),
            ("B", "task_started"),
            ("B", "agent_message_delta"),
            ("B", "agent_message"),
            ("B", "reply_complete"),
            // B is a worker (seed 001's subagent): it reports no usage.
            ("B", "task_complete"),
            ("A", "task_started"),
            ("A", "tool_call_completed"),
            ("A", "agent_message_delta"),
            ("A", "agent_message"),
            ("A", "reply_complete"),
            ("A", "token_count"),
            ("A", "task_complete"),
            ("A", "state_changed:Idle"),
        ])
    );
    // Three tasks, each with its own id; the continuation is a new task.
    let started: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.msg, EventMsg::TaskStarted { .. }))
        .map(|e| e.task_id)
        .collect();
    assert_eq!(started.len(), 3);
    assert_ne!(started[0], started[2]);
    // The handed-over task named its continuation.
    let continuation = events.iter().find_map(|e| match e.msg {
        EventMsg::TurnAborted { continuation, .. } => continuation,
        _ => None,
    });
    assert_eq!(continuation, started[2]);

    let b = events[7].conversation_id;
    let result = tool_payload(&server, 2, "c1");
    assert_eq!(
        result,
        json!({
            "conversation_id": b.to_string(),
            "first_user_message": "count to two",
            "last_assistant_message": "one two",
        })
    );
    // Instructions stay with their conversation.
    assert!(system_of(&server, 1).starts_with("You are B."));
    assert!(!system_of(&server, 0).contains("You are B."));
    assert!(!system_of(&server, 2).contains("You are B."));
    assert_eq!(
        server.requests()[1].body["messages"][1]["content"],
        "count to two"
    );
    assert_history_valid(&super::support::without_reminders(
        h.engine.history(h.root).unwrap(),
    ));
    assert_history_valid(&h.engine.history(b).unwrap());
}

#[tokio::test]
async fn send_runs_the_target_and_returns_its_last_message() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let b = h
        .engine
        .create_conversation(ConversationSpec {
            user_instructions: Some("You keep score.".into()),
            ..ConversationSpec::default()
        })
        .unwrap();
    server.push([
        MockResponse::tool_call(
            "s1",
            "conv_send",
            json!({"conversation_id": b.to_string(), "text": "score?"}),
        ),
        MockResponse::text("3-1"),
        MockResponse::text("It is 3-1."),
    ]);
    h.engine.send(h.root, "ask B").unwrap();
    let events = until_idle(&mut h).await;
    let rows = trace(&events);
    let aborted = rows
        .iter()
        .position(|r| r.1 == "turn_aborted:Replaced")
        .unwrap();
    assert_eq!(rows[aborted + 1].1, "task_started");
    assert_ne!(rows[aborted + 1].0, rows[aborted].0);
    assert_eq!(rows.last().unwrap().1, "state_changed:Idle");
    assert_eq!(
        tool_payload(&server, 2, "s1"),
        json!({"conversation_id": b.to_string(), "last_assistant_message": "3-1"})
    );
    // B's user instructions are its first message; its request carried them.
    let b_messages = server.requests()[1].body["messages"].clone();
    assert_eq!(b_messages[1]["content"], "You keep score.");
    assert_eq!(b_messages[2]["content"], "score?");
}

#[tokio::test]
async fn nested_creates_run_innermost_first_and_close_every_call() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("a1", "conv_create", json!({"user_instruction": "B, plan"})),
        MockResponse::tool_call("b1", "conv_create", json!({"user_instruction": "C, do"})),
        MockResponse::text("C done"),
        MockResponse::text("B done"),
        MockResponse::text("A done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "go").unwrap();
    let events = until_idle(&mut h).await;
    let lifecycle: Vec<(String, String)> = trace(&events)
        .into_iter()
        .filter(|(_, k)| {
            k == "task_started" || k == "task_complete" || k.starts_with("turn_aborted")
        })
        .collect();
    assert_eq!(
        lifecycle,
        expect(&[
            ("A", "task_started"),
            ("A", "turn_aborted:Replaced"),
            ("B", "task_started"),
            ("B", "turn_aborted:Replaced"),
            ("C", "task_started"),
            ("C", "task_complete"),
            ("B", "task_started"),
            ("B", "task_complete"),
            ("A", "task_started"),
            ("A", "task_complete"),
        ])
    );
    assert_eq!(
        tool_payload(&server, 3, "b1")["last_assistant_message"],
        "C done"
    );
    assert_eq!(
        tool_payload(&server, 4, "a1")["last_assistant_message"],
        "B done"
    );
    for conversation in h.engine.list_conversations() {
        assert_history_valid(&h.engine.history(conversation.id).unwrap());
    }
}

#[tokio::test]
async fn the_depth_limit_returns_an_error_instead_of_nesting() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("a1", "conv_create", json!({"user_instruction": "B"})),
        MockResponse::tool_call("b1", "conv_create", json!({"user_instruction": "C"})),
        MockResponse::text("B did it alone"),
        MockResponse::text("A done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.max_interrupt_chain_depth = 1,
        vec![],
    );
    h.engine.send(h.root, "go").unwrap();
    let events = until_idle(&mut h).await;
    let refused = tool_payload(&server, 2, "b1");
    assert_eq!(refused["success"], false);
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("the limit is 1")
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e.msg, EventMsg::TurnAborted { .. }))
            .count(),
        1
    );
    assert_eq!(h.engine.list_conversations().len(), 2);
    assert_eq!(
        tool_payload(&server, 3, "a1")["last_assistant_message"],
        "B did it alone"
    );
}

#[tokio::test]
async fn list_history_and_destroy_do_not_interrupt() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let b = h
        .engine
        .create_conversation(ConversationSpec {
            user_instructions: Some("hello B".into()),
            ..ConversationSpec::default()
        })
        .unwrap();
    let root = h.root.to_string();
    let unknown = ConversationId::new().to_string();
    server.push([
        MockResponse::stream(vec![
            coder_testkit::Chunk::tool_call("l", "conv_list", json!({})),
            coder_testkit::Chunk::tool_call(
                "h",
                "conv_history",
                json!({"conversation_id": b.to_string(), "limit": 5}),
            ),
        ]),
        MockResponse::stream(vec![
            coder_testkit::Chunk::tool_call("d1", "conv_destroy", json!({"conversation_id": root})),
            coder_testkit::Chunk::tool_call(
                "d2",
                "conv_destroy",
                json!({"conversation_id": unknown}),
            ),
            coder_testkit::Chunk::tool_call(
                "d3",
                "conv_destroy",
                json!({"conversation_id": b.to_string()}),
            ),
        ]),
        MockResponse::text("done"),
    ]);
    h.engine.send(h.root, "inspect").unwrap();
    let events = until_idle(&mut h).await;
    assert!(!kinds(&events).iter().any(|k| k == "turn_aborted"));
    let list = tool_payload(&server, 1, "l");
    let ids: Vec<&str> = list["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(
        list["conversations"][0]["last_active_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(
        tool_payload(&server, 1, "h"),
        json!({"entries": [{"role": "user", "text": "hello B", "attachments": []}]})
    );
    assert_eq!(tool_payload(&server, 2, "d1")["ok"], false);
    assert!(
        tool_payload(&server, 2, "d1")["reason"]
            .as_str()
            .unwrap()
            .contains("root")
    );
    assert_eq!(
        tool_payload(&server, 2, "d2"),
        json!({"ok": false, "reason": "conversation not found"})
    );
    assert_eq!(tool_payload(&server, 2, "d3"), json!({"ok": true}));
    assert_eq!(h.engine.list_conversations().len(), 1);
}

/// `conv_history` of an id no conversation has, and `conv_send` with neither text nor
/// items, fail as results the model reads; neither interrupts, and nothing runs on the
/// target.
#[tokio::test]
async fn history_of_an_unknown_id_and_an_empty_send_fail_without_interrupting() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let other = h
        .engine
        .create_conversation(ConversationSpec::default())
        .unwrap();
    server.push([
        MockResponse::stream(vec![
            coder_testkit::Chunk::tool_call(
                "h",
                "conv_history",
                json!({"conversation_id": ConversationId::new().to_string()}),
            ),
            coder_testkit::Chunk::tool_call(
                "e",
                "conv_send",
                json!({"conversation_id": other.to_string()}),
            ),
        ]),
        MockResponse::text("ok"),
    ]);
    h.engine.send(h.root, "try").unwrap();
    let events = until_idle(&mut h).await;
    assert!(!kinds(&events).iter().any(|k| k == "turn_aborted"));
    let history = tool_payload(&server, 1, "h");
    assert_eq!(
        history,
        json!({"ok": false, "reason": "conversation not found"})
    );
    let messages = server.requests()[1].body["messages"].clone();
    let empty = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "e")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(empty.contains("text") && empty.contains("items"), "{empty}");
    assert!(
        h.engine
            .conversation_history(other, None)
            .unwrap()
            .is_empty()
    );
    assert_eq!(server.requests().len(), 2, "no task ran on the target");
}

#[tokio::test]
async fn history_keeps_messages_only() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            coder_testkit::Chunk::text("Looking."),
            coder_testkit::Chunk::tool_call("r", "read", json!({"path": "a.txt"})),
        ]),
        MockResponse::tool_call("g", "glob", json!({"pattern": "*"})),
        MockResponse::text("Found it."),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.write("a.txt", "x\n");
    h.run("find a").await;
    let entries = h.engine.conversation_history(h.root, None).unwrap();
    let texts: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e.role.as_str(), e.text.as_deref().unwrap()))
        .collect();
    assert_eq!(
        texts,
        [
            ("user", "find a"),
            ("assistant", "Looking."),
            ("assistant", "Found it.")
        ]
    );
    let last = h.engine.conversation_history(h.root, Some(1)).unwrap();
    assert_eq!(last[0].text.as_deref(), Some("Found it."));
}

#[tokio::test]
async fn create_errors_do_not_interrupt() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            coder_testkit::Chunk::tool_call(
                "x",
                "conv_create",
                json!({"user_instruction": "u", "base_instruction_text": "t", "base_instruction_file": "f.md"}),
            ),
            coder_testkit::Chunk::tool_call(
                "f",
                "conv_create",
                json!({"user_instruction": "u", "base_instruction_file": "missing.md"}),
            ),
            coder_testkit::Chunk::tool_call("n", "conv_create", json!({})),
            coder_testkit::Chunk::tool_call(
                "s",
                "conv_send",
                json!({"conversation_id": ConversationId::new().to_string(), "text": "hi"}),
            ),
        ]),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "try").unwrap();
    let events = until_idle(&mut h).await;
    assert!(!kinds(&events).iter().any(|k| k == "turn_aborted"));
    assert!(
        tool_payload(&server, 1, "x")["reason"]
            .as_str()
            .unwrap()
            .contains("mutually exclusive")
    );
    assert!(
        tool_payload(&server, 1, "f")["reason"]
            .as_str()
            .unwrap()
            .contains("missing.md")
    );
    assert_eq!(tool_payload(&server, 1, "s")["success"], false);
    let messages = server.requests()[1].body["messages"].clone();
    let missing = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "n")
        .unwrap()["content"]
        .clone();
    assert!(missing.as_str().unwrap().contains("user_instruction"));
    assert_eq!(h.engine.list_conversations().len(), 1);
}

#[tokio::test]
async fn inheritance_and_tool_prefs_shape_the_new_conversation() {
    let server = MockModelServer::start(vec![
        MockResponse::text("parent ready"),
        MockResponse::tool_call(
            "c",
            "conv_create",
            json!({"user_instruction": "child", "internal_tools": {"include_apply_patch_tool": false, "include_plan_tool": true}}),
        ),
        MockResponse::text("child done"),
        MockResponse::text("parent done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let parent = h
        .engine
        .create_conversation(ConversationSpec {
            base_instructions: Some("Parent rules.".into()),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(parent, "hi").unwrap();
    h.engine.send(parent, "make a child").unwrap();
    until_idle(&mut h).await;
    // The child inherits the parent's base instructions; its prefs drop apply_patch.
    assert!(system_of(&server, 2).starts_with("Parent rules."));
    assert!(!system_of(&server, 2).contains("apply_patch tool is not available"));
    let child_tools = server.requests()[2].body["tools"].to_string();
    assert!(!child_tools.contains("\"apply_patch\""));
    assert!(
        server.requests()[1].body["tools"]
            .to_string()
            .contains("\"apply_patch\"")
    );
}

#[tokio::test]
async fn destroying_a_running_conversation_interrupts_only_it() {
    let server = MockModelServer::start(vec![
        MockResponse::text_deltas(200, "b ").with_delay(20),
        MockResponse::text("root still fine"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let b = h
        .engine
        .create_conversation(ConversationSpec::default())
        .unwrap();
    let handle = h.engine.clone();
    h.engine.on_event(move |event| {
        if event.conversation_id == b && matches!(event.msg, EventMsg::AgentMessageDelta { .. }) {
            let _ = handle.destroy_conversation(b);
        }
    });
    h.engine.send(b, "talk").unwrap();
    h.engine.send(h.root, "and you?").unwrap();
    let events = until_idle(&mut h).await;
    let rows = trace(&events);
    assert!(
        rows.contains(&("A".to_owned(), "turn_aborted:Interrupted".to_owned())),
        "{rows:?}"
    );
    assert!(events.iter().any(|e| e.conversation_id == h.root
        && e.msg
            == EventMsg::TaskComplete {
                last_agent_message: Some("root still fine".into()),
                step_limit: None,
                error: None,
            }));
    assert!(h.engine.history(b).is_err());
    assert!(h.engine.destroy_conversation(h.root).is_err());
}

#[tokio::test]
async fn a_conversation_cannot_be_looser_than_the_session() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let b = h
        .engine
        .create_conversation(ConversationSpec {
            mode: Some(Mode::Yolo),
            ..ConversationSpec::default()
        })
        .unwrap();
    assert_eq!(h.engine.mode(b).unwrap(), Mode::Default);
    let warning = h.events.recv().await.unwrap();
    assert_eq!(warning.conversation_id, b);
    assert!(matches!(&warning.msg,
        EventMsg::Warning { message } if message.contains("looser than the session's default")));
    let c = h
        .engine
        .create_conversation(ConversationSpec {
            mode: Some(Mode::Plan),
            ..ConversationSpec::default()
        })
        .unwrap();
    assert_eq!(h.engine.mode(c).unwrap(), Mode::Plan);
}

#[tokio::test]
async fn a_per_task_override_wins_once_and_never_writes_back() {
    let server = MockModelServer::start(vec![
        MockResponse::text("summary"),
        MockResponse::text("normal"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let b = h
        .engine
        .create_conversation(ConversationSpec {
            base_instructions: Some("B's own rules.".into()),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine
        .send_with_instructions(
            b,
            vec![coder_protocol::InputItem::Text {
                text: "compact".into(),
            }],
            "Summarise the conversation.".into(),
        )
        .unwrap();
    h.engine.send(b, "go on").unwrap();
    until_idle(&mut h).await;
    assert!(system_of(&server, 0).starts_with("Summarise the conversation."));
    assert!(system_of(&server, 1).starts_with("B's own rules."));
}

#[tokio::test]
async fn each_conversation_has_a_stable_prompt_cache_key() {
    let server = MockModelServer::start(vec![
        MockResponse::text("1"),
        MockResponse::text("2"),
        MockResponse::text("3"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.prompt_cache_key = true,
        vec![],
    );
    let b = h
        .engine
        .create_conversation(ConversationSpec {
            base_instructions: Some("Different.".into()),
            // Asking to run commands outside the session's sandbox only narrows to it.
            tools_prefs: Some(coder_protocol::ToolsPrefs {
                shell_mode: Some(coder_protocol::ShellMode::Unconfined),
                ..Default::default()
            }),
            ..ConversationSpec::default()
        })
        .unwrap();
    let warning = h.events.recv().await.unwrap();
    assert!(
        matches!(&warning.msg, EventMsg::Warning { message } if message.contains("it uses `sandboxed`")),
        "{warning:?}"
    );
    h.engine.send(h.root, "a").unwrap();
    h.engine.send(h.root, "b").unwrap();
    h.engine.send(b, "c").unwrap();
    until_idle(&mut h).await;
    let key = |i: usize| {
        server.requests()[i].body["prompt_cache_key"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(key(0).starts_with("coder-"));
    assert_eq!(key(0), key(1));
    assert_ne!(key(0), key(2));
}

/// Without base instructions a conversation gets the built-in prompt (see also
/// `patch_instructions.rs`: what follows it when `apply_patch` is missing).
#[tokio::test]
async fn the_built_in_prompt_is_the_fallback() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let b = h
        .engine
        .create_conversation(ConversationSpec::default())
        .unwrap();
    h.engine.send(b, "hi").unwrap();
    until_idle(&mut h).await;
    let system = system_of(&server, 0);
    assert!(system.starts_with("You are coder"), "{system}");
}

#[tokio::test]
async fn a_front_doors_first_conversation_is_the_root_shaped_by_its_spec() {
    let server = MockModelServer::start(vec![MockResponse::text("reviewed")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let first = h
        .engine
        .conversation_create(ConversationSpec {
            base_instructions: Some("You review Rust.".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(first, h.root);
    let next = h
        .engine
        .conversation_create(ConversationSpec::default())
        .unwrap();
    assert_ne!(
        next, h.root,
        "a second create, before anything was sent, is new"
    );
    assert!(h.engine.destroy_conversation(next).is_ok());
    h.engine.send(first, "look").unwrap();
    until_idle(&mut h).await;
    let system = &server.requests()[0].body["messages"][0];
    assert_eq!(system["role"], "system");
    assert!(
        system["content"]
            .as_str()
            .unwrap()
            .starts_with("You review Rust."),
        "{system}"
    );
    let second = h
        .engine
        .conversation_create(ConversationSpec::default())
        .unwrap();
    assert_ne!(second, h.root, "only the first one is the root");
    assert_eq!(h.engine.list_conversations().len(), 2);
    assert!(h.engine.destroy_conversation(first).is_err());
}

#[tokio::test]
async fn once_the_root_was_used_a_front_door_gets_a_new_conversation() {
    let server = MockModelServer::start(vec![MockResponse::text("hi")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "hello").unwrap();
    until_idle(&mut h).await;
    let created = h
        .engine
        .conversation_create(ConversationSpec::default())
        .unwrap();
    assert_ne!(created, h.root);
}

#[tokio::test]
async fn a_root_whose_mode_was_set_is_not_replaced_by_a_create() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    let created = h
        .engine
        .conversation_create(ConversationSpec::default())
        .unwrap();
    assert_ne!(created, h.root);
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::Plan);
}

#[tokio::test]
async fn set_mode_cannot_loosen_a_conversation_past_the_session() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.set_mode(h.root, Mode::Yolo).unwrap();
    assert_eq!(h.engine.mode(h.root).unwrap(), Mode::Default);
    let warning = h.events.recv().await.unwrap();
    assert_eq!(warning.conversation_id, h.root);
    assert_eq!(
        warning.msg,
        EventMsg::Warning {
            message:
                "mode yolo is looser than the session's default; the conversation uses default"
                    .into()
        }
    );
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    assert_eq!(
        h.engine.mode(h.root).unwrap(),
        Mode::Plan,
        "narrowing stays free"
    );
}

#[tokio::test]
async fn the_front_doors_destroy_answers_every_refusal_as_not_ok_with_a_reason() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    let other = h
        .engine
        .create_conversation(ConversationSpec::default())
        .unwrap();
    assert_eq!(
        h.engine.conversation_destroy(other),
        DestroyResult {
            ok: true,
            reason: None
        }
    );
    assert_eq!(
        h.engine.conversation_destroy(other),
        DestroyResult {
            ok: false,
            reason: Some(format!("no conversation with id {other}"))
        }
    );
    assert_eq!(
        h.engine.conversation_destroy(h.root),
        DestroyResult {
            ok: false,
            reason: Some("the root conversation cannot be destroyed".to_owned())
        }
    );
}

#[tokio::test]
async fn the_system_prompt_holds_environment_and_mode_and_follows_a_mode_change() {
    let server = MockModelServer::start(vec![MockResponse::text("a"), MockResponse::text("b")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.set_mode(h.root, Mode::Plan).unwrap();
    h.engine.send(h.root, "plan it").unwrap();
    until_idle(&mut h).await;
    h.engine.set_mode(h.root, Mode::Default).unwrap();
    h.engine.send(h.root, "now do it").unwrap();
    until_idle(&mut h).await;
    let planning = system_of(&server, 0);
    for section in [
        "\n# Environment\nWorking directory: ",
        "\nPlatform: ",
        "\nGit repository: ",
        "\nToday's date: ",
        "\n# Mode\nYou are in plan mode.",
    ] {
        assert!(planning.contains(section), "{section:?} in {planning}");
    }
    let editing = system_of(&server, 1);
    assert!(!editing.contains("plan mode"), "{editing}");
    assert!(editing.contains("\n# Mode\nDefault mode:"), "{editing}");
}

/// Policies only narrow (seed 003): a conversation that asks for a tool the session
/// disabled does not get it, and a `warning` names the tool and why.
#[tokio::test]
async fn a_tool_the_session_disabled_stays_hidden_and_the_conversation_is_told() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.disabled_tools = vec!["apply_patch".into()],
        Vec::new(),
    );
    let asking = h
        .engine
        .create_conversation(ConversationSpec {
            tools_prefs: Some(coder_protocol::ToolsPrefs {
                include_apply_patch_tool: Some(true),
                ..Default::default()
            }),
            ..ConversationSpec::default()
        })
        .unwrap();
    let warning = loop {
        let event = h.events.recv().await.unwrap();
        if let EventMsg::Warning { message } = event.msg
            && event.conversation_id == asking
        {
            break message;
        }
    };
    assert!(
        warning.contains("`apply_patch`") && warning.contains("tools.disabled"),
        "{warning}"
    );
    h.engine.send(asking, "go").unwrap();
    until_idle(&mut h).await;
    let offered = server.requests()[0].body["tools"].to_string();
    assert!(!offered.contains("\"apply_patch\""), "{offered}");
}

/// When `id` was last active, as `list_conversations` says.
fn active_at(engine: &coder_core::Engine, id: ConversationId) -> std::time::SystemTime {
    let listed = engine
        .list_conversations()
        .into_iter()
        .find(|c| c.id == id)
        .unwrap()
        .last_active_at;
    humantime::parse_rfc3339(&listed).unwrap()
}

/// Seed 000: `last_active_at` is refreshed when history is recorded. Read while the task
/// waits for a person (the input and the model's call recorded, the task not complete), it
/// has moved past the conversation's start.
#[tokio::test]
async fn last_active_at_moves_when_history_is_recorded_before_the_task_completes() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("b1", "bash", json!({"command": "touch made"})),
        MockResponse::text("left as it is"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.preset = coder_protocol::Preset::Strict,
        Vec::new(),
    );
    let started = active_at(&h.engine, h.root);
    let pause = std::time::Duration::from_millis(50);
    tokio::time::sleep(pause).await;
    h.engine.send(h.root, "make a file").unwrap();
    let request_id = loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), h.events.recv())
            .await
            .expect("no permission request within 20 s")
            .unwrap();
        if let EventMsg::PermissionRequested { request_id, .. } = event.msg {
            break request_id;
        }
    };
    let recorded = active_at(&h.engine, h.root);
    assert!(
        recorded >= started + pause,
        "recording left last_active_at at {recorded:?} (the start: {started:?})"
    );
    h.engine
        .respond_permission(
            &request_id,
            coder_protocol::PermissionDecision::Deny { message: None },
        )
        .unwrap();
    until_idle(&mut h).await;
}

/// Seed 000: `last_active_at` is refreshed at `task_complete` too. A compaction with
/// nothing to compact records nothing; its completion alone moves the time.
#[tokio::test]
async fn last_active_at_moves_when_a_task_completes_without_recording() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let started = active_at(&h.engine, h.root);
    let pause = std::time::Duration::from_millis(50);
    tokio::time::sleep(pause).await;
    h.engine.compact(h.root).unwrap();
    let events = until_idle(&mut h).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::TaskComplete { error: None, .. })),
        "{:?}",
        kinds(&events)
    );
    assert_eq!(
        h.engine.history(h.root).unwrap(),
        [],
        "nothing was recorded"
    );
    let completed = active_at(&h.engine, h.root);
    assert!(
        completed >= started + pause,
        "task_complete left last_active_at at {completed:?} (the start: {started:?})"
    );
}
