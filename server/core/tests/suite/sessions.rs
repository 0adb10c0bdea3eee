//! Session snapshots and resuming, and switching the session's model.

use coder_core::model::ModelSettings;
use coder_core::{ConversationSpec, Engine, ErrorKind, ProviderKind, SessionSnapshot};
use coder_protocol::{EventMsg, Mode, TodoStatus};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, config, until_idle, until_saved};

fn read_snapshot(engine: &Engine) -> SessionSnapshot {
    let path = engine.snapshot_path().expect("saving is on");
    serde_json::from_slice(&std::fs::read(path).expect("no snapshot written")).unwrap()
}

#[tokio::test]
async fn going_idle_saves_every_conversation_and_a_fresh_engine_resumes_them() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "t",
            "todo_write",
            json!({"todos": [{"content": "check", "status": "in_progress"}]}),
        ),
        MockResponse::text("root answer"),
        MockResponse::text("side answer"),
        MockResponse::text("after resume"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let side = h
        .engine
        .create_conversation(ConversationSpec {
            base_instructions: Some("You are the side conversation.".into()),
            user_instructions: Some("Answer in French.".into()),
            mode: Some(Mode::Plan),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(h.root, "root question").unwrap();
    h.engine.send(side, "side question").unwrap();
    until_idle(&mut h).await;

    let saved: SessionSnapshot = serde_json::from_slice(&until_saved(&h.engine).await).unwrap();
    assert_eq!(saved.session_id, h.engine.session_id());
    assert_eq!(saved.root.conversation_id, h.root);
    assert_eq!(saved.root.model, "mock-model");
    let roles: Vec<String> = saved
        .root
        .messages
        .iter()
        .map(|m| format!("{:?}", m.role))
        .collect();
    assert_eq!(
        roles,
        ["System", "User", "User", "Assistant", "Tool", "Assistant"],
        "the input and its reminders, then the turn"
    );
    assert_eq!(saved.conversations.len(), 1);
    let system = saved.conversations[0].messages[0]
        .content
        .as_deref()
        .unwrap();
    assert!(
        system.starts_with("You are the side conversation."),
        "{system}"
    );
    // The user instructions are the conversation's own, beside their message.
    assert_eq!(
        saved.conversations[0].user_instructions.as_deref(),
        Some("Answer in French.")
    );

    // A second engine on the same workspace takes the session up.
    let workspace = h.workspace.path().to_path_buf();
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, &workspace)).unwrap();
    // Each conversation's first input brought a reminder message; the side conversation's
    // user instructions are its first.
    assert_eq!(engine.resume(saved.session_id).unwrap(), 9);
    assert_eq!(engine.session_id(), saved.session_id);
    assert_eq!(engine.root_conversation(), h.root);
    assert_eq!(engine.mode(side).unwrap(), Mode::Plan);
    assert_eq!(
        engine.conversation_history(side, None).unwrap()[2]
            .text
            .as_deref(),
        Some("side answer")
    );
    let mut events = engine.subscribe();
    let task = engine.send(h.root, "and now?").unwrap();
    while let Some(event) = events.recv().await {
        if event.task_id == Some(task) && matches!(event.msg, EventMsg::TaskComplete { .. }) {
            break;
        }
    }
    let request = server.requests().pop().unwrap();
    let messages = request.body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"], "root question");
    assert_eq!(messages.last().unwrap()["content"], "and now?");
    engine.shutdown().await;
    let saved = read_snapshot(&engine);
    assert_eq!(
        saved.root.messages.last().unwrap().content.as_deref(),
        Some("after resume")
    );
    assert_eq!(saved.root.todos[0].status, TodoStatus::InProgress);
}

#[tokio::test]
async fn a_used_session_at_rest_takes_up_another_and_bad_ids_are_refused() {
    let server = MockModelServer::start(vec![
        MockResponse::text("noted heron"),
        MockResponse::text("noted larch"),
        MockResponse::text("it was heron"),
        MockResponse::text("slow").with_delay(300),
    ])
    .await
    .unwrap();
    // A first session, saved.
    let mut first = Harness::new(&server, ProviderKind::OpenAi);
    first.run("the word is heron").await;
    until_idle(&mut first).await;
    let saved = first.engine.session_id();
    first.engine.shutdown().await;

    // A second one, used, then at rest: it takes up the first.
    let workspace = first.workspace.path().to_path_buf();
    let second = Engine::new(config(&server, ProviderKind::OpenAi, &workspace)).unwrap();
    let mut events = second.subscribe();
    let root = second.root_conversation();
    second.send(root, "the word is larch").unwrap();
    while let Some(event) = events.recv().await {
        if event.msg
            == (EventMsg::StateChanged {
                state: coder_protocol::EngineState::Idle,
            })
        {
            break;
        }
    }
    let own = second.session_id();
    let err = second.resume(own).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert!(err.message().contains("the session itself"), "{err}");
    let loaded = second.resume(saved).unwrap();
    assert!(loaded >= 2, "{loaded}");
    assert_eq!(second.session_id(), saved);
    let root = second.root_conversation();
    second.send(root, "what was the word?").unwrap();
    while let Some(event) = events.recv().await {
        if matches!(event.msg, EventMsg::TaskComplete { .. }) {
            break;
        }
    }
    let sent = server.requests().pop().unwrap().body["messages"].to_string();
    assert!(sent.contains("heron") && !sent.contains("larch"), "{sent}");

    // While a task runs (or waits), nothing is taken up.
    second.send(root, "slowly").unwrap();
    let err = second.resume(own).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy);
    assert!(
        err.message().contains("resume once the session is idle"),
        "{err}"
    );
    second.shutdown().await;

    // The session left behind is on disk whole and can be taken up in turn.
    let third = Engine::new(config(&server, ProviderKind::OpenAi, &workspace)).unwrap();
    third.resume(own).unwrap();
    let history = third.history(third.root_conversation()).unwrap();
    let text = serde_json::to_string(&history).unwrap();
    assert!(text.contains("larch"), "{text}");
    let unknown = coder_protocol::SessionId::new();
    let err = third.resume(unknown).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let err = err.to_string();
    assert!(err.contains("cannot read"), "{err}");
    let corrupt = coder_protocol::SessionId::new();
    let dir = third.snapshot_path().unwrap();
    std::fs::write(
        dir.with_file_name(format!("{corrupt}.json")),
        "{half a file",
    )
    .unwrap();
    let err = third.resume(corrupt).unwrap_err().to_string();
    assert!(err.contains("is not a session snapshot"), "{err}");
    third.shutdown().await;
}

#[tokio::test]
async fn saving_can_be_switched_off() {
    let server = MockModelServer::start(vec![MockResponse::text("hi")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.save_sessions = false,
        Vec::new(),
    );
    h.run("hello").await;
    until_idle(&mut h).await;
    assert_eq!(h.engine.snapshot_path(), None);
    assert!(!h.workspace.path().join(".coder/sessions").exists());
}

#[tokio::test]
async fn a_switched_model_serves_the_next_task() {
    let server = MockModelServer::start(vec![
        MockResponse::text("from the first"),
        MockResponse::text("from the second"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.run("one").await;
    let mut settings = h.engine.model_settings().unwrap();
    settings.model = "second-model".into();
    settings.context_window = Some(32_000);
    h.engine.set_model(settings).unwrap();
    let events = h.run("two").await;
    assert_eq!(server.requests()[0].body["model"], "mock-model");
    assert_eq!(server.requests()[1].body["model"], "second-model");
    assert!(events.iter().any(|e| matches!(
        &e.msg,
        EventMsg::TaskStarted { model, .. } if model == "second-model"
    )));
    assert!(events.iter().any(|e| matches!(
        e.msg,
        EventMsg::TokenCount {
            context_window: Some(32_000),
            ..
        }
    )));
    let ModelSettings { model, .. } = h.engine.model_settings().unwrap();
    assert_eq!(model, "second-model");
}

#[tokio::test]
async fn shutdown_during_a_handoff_closes_the_callers_pending_call() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "handoff-1",
            "conv_create",
            json!({"user_instruction": "Write forever."}),
        ),
        MockResponse::endless(Vec::new(), coder_testkit::Chunk::text("more ")),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "delegate").unwrap();
    // The target is streaming: the root waits for its continuation.
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), h.events.recv())
            .await
            .expect("no delta within 10 s")
            .expect("event stream ended");
        if event.conversation_id != h.root
            && matches!(event.msg, EventMsg::AgentMessageDelta { .. })
        {
            break;
        }
    }
    h.engine.shutdown().await;
    let saved = read_snapshot(&h.engine);
    super::support::assert_history_valid(&saved.root.messages);
    let closing = saved
        .root
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("handoff-1"))
        .and_then(|m| m.content.clone())
        .unwrap();
    let closing: serde_json::Value = serde_json::from_str(&closing).unwrap();
    assert_eq!(closing["finished"], false);
    assert_eq!(
        closing["reason"],
        "the session ended before this call finished"
    );
}

#[tokio::test]
async fn last_active_at_is_saved_and_survives_a_resume() {
    let server = MockModelServer::start(vec![MockResponse::text("hi")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let parse = |at: &str| humantime::parse_rfc3339(at).unwrap();
    let opened = parse(&h.engine.list_conversations()[0].last_active_at);
    let pause = std::time::Duration::from_millis(50);
    tokio::time::sleep(pause).await;
    h.engine.send(h.root, "hello").unwrap();
    until_idle(&mut h).await;
    let active = h.engine.list_conversations()[0].last_active_at.clone();
    // The task made the conversation active: what is saved is that time, not its opening.
    assert!(parse(&active) >= opened + pause, "{active}");
    let saved = read_snapshot(&h.engine);
    assert_eq!(saved.root.last_active_at.as_deref(), Some(active.as_str()));

    // Taken up later, the conversation keeps when it was last active.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let workspace = h.workspace.path().to_path_buf();
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, &workspace)).unwrap();
    engine.resume(saved.session_id).unwrap();
    assert_eq!(engine.list_conversations()[0].last_active_at, active);
    engine.shutdown_now();
}

#[tokio::test]
async fn a_failed_resume_leaves_the_session_fresh_and_usable() {
    let server = MockModelServer::start(vec![MockResponse::text("hi")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let own_id = h.engine.session_id();
    // A file whose root is well-formed but whose other conversation is not: nothing of it
    // may be taken.
    let corrupt = coder_protocol::SessionId::new();
    let sessions = h.workspace.path().join(".coder/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(
        sessions.join(format!("{corrupt}.json")),
        json!({
            "version": 1,
            "sessionId": corrupt.to_string(),
            "model": "m",
            "messages": [{"role": "user", "content": "old question"}],
            "conversations": [{"no": "conversation"}],
        })
        .to_string(),
    )
    .unwrap();
    let unknown = coder_protocol::SessionId::new();
    for (session, kind) in [
        (corrupt, ErrorKind::InvalidParams),
        (unknown, ErrorKind::NotFound),
    ] {
        let err = h.engine.resume(session).unwrap_err();
        assert_eq!(err.kind(), kind, "{err}");
        assert!(
            err.message()
                .starts_with(&format!("cannot resume session {session}: ")),
            "{err}"
        );
        assert_eq!(h.engine.session_id(), own_id);
        let list = h.engine.list_conversations();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].message_count, 0);
    }
    let events = h.run("hello").await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::TaskComplete { .. }))
    );
    assert_eq!(
        super::support::without_reminders(h.engine.history(h.root).unwrap()).len(),
        2
    );
}

#[tokio::test]
async fn a_session_nobody_used_leaves_no_snapshot() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    let path = engine.snapshot_path().unwrap();
    engine.save().await.unwrap();
    engine.shutdown().await;
    assert!(!path.exists(), "{path:?}");
    assert!(engine.saved_sessions().is_empty());
}

#[tokio::test]
async fn a_session_with_more_conversations_than_the_limit_is_refused_by_name() {
    let server = MockModelServer::start(vec![MockResponse::text("noted")])
        .await
        .unwrap();
    let mut first = Harness::new(&server, ProviderKind::OpenAi);
    for _ in 0..2 {
        first
            .engine
            .create_conversation(ConversationSpec::default())
            .unwrap();
    }
    first.run("three conversations").await;
    until_idle(&mut first).await;
    let saved = first.engine.session_id();
    first.engine.shutdown().await;

    let workspace = first.workspace.path().to_path_buf();
    let mut narrow = config(&server, ProviderKind::OpenAi, &workspace);
    narrow.max_conversations = 2;
    let second = Engine::new(narrow).unwrap();
    let own = second.session_id();
    let err = second.resume(saved).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded);
    assert!(
        err.message().contains(
            "it holds 3 conversations, more than this session's limit of 2 (maxConversations)"
        ),
        "{err}"
    );
    // Nothing was taken up: the session is the one it was.
    assert_eq!(second.session_id(), own);
    second.shutdown().await;

    let wide = Engine::new(config(&server, ProviderKind::OpenAi, &workspace)).unwrap();
    wide.resume(saved).unwrap();
    wide.shutdown().await;
}

/// The tool messages answering each assistant tool call among `messages`, by call id, in
/// order; a call without one fails the test.
fn results_of_calls(messages: &[serde_json::Value]) -> Vec<(String, String)> {
    let mut results = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let id = call["id"].as_str().unwrap();
            let result = messages[at + 1..]
                .iter()
                .take_while(|later| later["role"] == "tool")
                .find(|later| later["tool_call_id"] == id)
                .unwrap_or_else(|| panic!("call {id} has no tool message in {messages:#?}"));
            assert_eq!(result["name"], call["function"]["name"]);
            results.push((
                id.to_owned(),
                result["content"].as_str().unwrap().to_owned(),
            ));
        }
    }
    results
}

#[tokio::test]
async fn a_snapshot_written_while_calls_run_holds_every_call_closed() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "h1",
            "conv_create",
            json!({"user_instruction": "run the long job"}),
        ),
        MockResponse::tool_call("b1", "bash", json!({"command": "sleep 30"})),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "hand the long job over").unwrap();
    // The root waits for the worker (its `conv_create` call is open), and the worker's
    // command runs.
    let worker = loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), h.events.recv())
            .await
            .expect("the command did not start within 20 s")
            .unwrap();
        if let EventMsg::ToolCallStarted { tool_name, .. } = &event.msg
            && tool_name == "bash"
        {
            break event.conversation_id;
        }
    };
    h.engine.save().await.unwrap();
    let path = h.engine.snapshot_path().unwrap();
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let running = "this call was still running when the session was saved; its result is not in this snapshot";
    assert_eq!(
        results_of_calls(saved["messages"].as_array().unwrap()),
        [("h1".to_owned(), running.to_owned())]
    );
    let others = saved["conversations"].as_array().unwrap();
    assert_eq!(others.len(), 1);
    assert_eq!(others[0]["conversationId"], worker.to_string());
    assert_eq!(
        results_of_calls(others[0]["messages"].as_array().unwrap()),
        [("b1".to_owned(), running.to_owned())]
    );
    // It says which results it wrote, for a resume to take out.
    assert_eq!(saved["runningCalls"], json!(["h1"]));
    assert_eq!(others[0]["runningCalls"], json!(["b1"]));
    // The file is read back as it is.
    let back: SessionSnapshot = serde_json::from_value(saved).unwrap();
    assert_eq!(back.root.conversation_id, h.root);

    // The conversations themselves were not changed: the calls end with their own results.
    h.engine.interrupt_session();
    until_idle(&mut h).await;
    for conversation in [h.root, worker] {
        let history = h.engine.history(conversation).unwrap();
        super::support::assert_history_valid(&history);
        assert!(
            history
                .iter()
                .all(|m| m.content.as_deref() != Some(running)),
            "{history:#?}"
        );
    }
}
