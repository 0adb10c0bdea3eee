//! Every snapshot is enough to replay a request (seed 004 section 10): each conversation is
//! written with a system prompt and tools, whether it has sent anything, was taken up from
//! a saved session, or was left unread by a resume; and a session taken up and left
//! unchanged is not written again.

use std::path::PathBuf;
use std::time::Duration;

use coder_core::{ConversationSpec, Engine, ProviderKind, SessionSnapshot};
use coder_protocol::{ConversationId, Mode, SessionId};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::support::{Harness, config, until_saved};

/// The snapshot's file of `session` in `workspace`.
fn snapshot_path(workspace: &std::path::Path, session: SessionId) -> PathBuf {
    workspace.join(format!(".coder/sessions/{session}.json"))
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The system prompt and tools the file gives `conversation`: the root's are its own, the
/// others' are named by their places in `systemPrompts` and `toolSets`.
fn request_parts(file: &Value, conversation: ConversationId) -> (String, Value) {
    let id = Value::String(conversation.to_string());
    if file["conversationId"] == id {
        let first = &file["messages"][0];
        assert_eq!(first["role"], "system", "{file}");
        return (
            first["content"].as_str().unwrap().to_owned(),
            file["tools"].clone(),
        );
    }
    let other = file["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|other| other["conversationId"] == id)
        .unwrap();
    let system = other["systemPrompt"]
        .as_u64()
        .expect("a system prompt named") as usize;
    let tools = other["toolSet"].as_u64().expect("tools named") as usize;
    (
        file["systemPrompts"][system].as_str().unwrap().to_owned(),
        file["toolSets"][tools].clone(),
    )
}

/// Runs `input` in `conversation` to its end: a person's `!command`, or input for the
/// model.
async fn run(engine: &Engine, conversation: ConversationId, input: &str) {
    let mut events = engine.subscribe();
    let task = if input.starts_with('!') {
        engine
            .command(conversation, input)
            .unwrap()
            .task_id
            .unwrap()
    } else {
        engine.send(conversation, input).unwrap()
    };
    let ended = async {
        while let Some(event) = events.recv().await {
            if event.task_id == Some(task) && event.msg.task_end().is_some() {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), ended)
        .await
        .expect("the task ended within 20 s");
}

/// The system prompt and tools the model got in request `at`.
fn sent(server: &MockModelServer, at: usize) -> (String, Value) {
    let body = &server.requests()[at].body;
    (
        body["messages"][0]["content"].as_str().unwrap().to_owned(),
        body["tools"].clone(),
    )
}

#[tokio::test]
async fn conversations_that_sent_nothing_are_saved_with_what_their_first_request_sends() {
    let server = MockModelServer::start(vec![
        MockResponse::text("root answer"),
        MockResponse::text("side answer"),
    ])
    .await
    .unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    let side = h
        .engine
        .create_conversation(ConversationSpec {
            base_instructions: Some("You are the side conversation.".into()),
            mode: Some(Mode::Plan),
            ..ConversationSpec::default()
        })
        .unwrap();
    let root = h.root;
    run(&h.engine, root, "!echo from the person").await;
    h.engine.save().await.unwrap();
    let file = read(&h.engine.snapshot_path().unwrap());
    let (root_system, root_tools) = request_parts(&file, root);
    let (side_system, side_tools) = request_parts(&file, side);
    assert!(!root_tools.as_array().unwrap().is_empty(), "{file}");
    assert!(side_system.starts_with("You are the side conversation."));
    // Plan mode offers other tools than the root's default mode.
    assert_ne!(side_tools, root_tools);

    run(&h.engine, root, "what did I run?").await;
    run(&h.engine, side, "and you?").await;
    assert_eq!(sent(&server, 0), (root_system, root_tools));
    assert_eq!(sent(&server, 1), (side_system, side_tools));
    h.engine.shutdown().await;
}

#[tokio::test]
async fn a_session_taken_up_keeps_the_prompts_and_tools_of_its_file_however_it_is_saved() {
    let server = MockModelServer::start(vec![
        MockResponse::text("root answer"),
        MockResponse::text("side answer"),
    ])
    .await
    .unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    let side = h
        .engine
        .create_conversation(ConversationSpec {
            base_instructions: Some("You are the side conversation.".into()),
            ..ConversationSpec::default()
        })
        .unwrap();
    run(&h.engine, h.root, "root question").await;
    run(&h.engine, side, "side question").await;
    until_saved(&h.engine).await;
    let session = h.engine.session_id();
    h.engine.shutdown().await;
    let path = snapshot_path(h.workspace.path(), session);
    let before = std::fs::read(&path).unwrap();
    let file: Value = serde_json::from_slice(&before).unwrap();
    let (root_parts, side_parts) = (request_parts(&file, h.root), request_parts(&file, side));

    // Taken up, its mode set to the one it has, saved and ended: nothing changed, so
    // nothing is written, not even the time.
    let workspace = h.workspace.path();
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace)).unwrap();
    engine.resume(session).unwrap();
    engine.set_mode(h.root, Mode::Default).unwrap();
    engine.save().await.unwrap();
    engine.shutdown().await;
    assert!(
        std::fs::read(&path).unwrap() == before,
        "the file was rewritten"
    );

    // The rules change what a new request would send; the file goes on saying what the
    // history was sent with.
    std::fs::write(workspace.join("AGENTS.md"), "Answer in haiku.\n").unwrap();
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace)).unwrap();
    engine.resume(session).unwrap();
    // A change to the root only: the side conversation is written as the resume read it.
    run(&engine, h.root, "!echo after the resume").await;
    engine.shutdown().await;
    let file = read(&path);
    assert!(file.to_string().contains("after the resume"));
    assert_eq!(request_parts(&file, h.root), root_parts);
    assert_eq!(request_parts(&file, side), side_parts);
    assert!(!root_parts.0.contains("haiku"));

    // The file reads back whole.
    serde_json::from_value::<SessionSnapshot>(file).unwrap();
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace)).unwrap();
    engine.resume(session).unwrap();
    let listed = engine.list_conversations();
    assert_eq!(listed.len(), 2);
    engine.shutdown().await;
}
