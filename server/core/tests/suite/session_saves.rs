//! What saving costs and what a resume reads: the snapshot of a large session is left to
//! the journal after a turn, an old (version 1) file still resumes and is saved again in
//! the current form, and a resumed conversation's history is read when it is first used.

use std::path::Path;
use std::time::Duration;

use coder_core::{Engine, ErrorKind, ProviderKind, SessionSnapshot};
use coder_protocol::{ConversationId, Role, SessionId};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::config;

/// The tools a version 1 file gave each conversation.
fn old_tools() -> Value {
    json!([{"type": "function", "function": {"name": "read", "description": "Reads a file.",
        "parameters": {"type": "object"}}}])
}

/// A conversation as a version 1 file holds it: its system prompt first, its tools its own.
fn old_conversation(id: ConversationId, question: &str, answer: &str) -> Value {
    json!({
        "conversationId": id,
        "model": "mock-model",
        "messages": [
            {"role": "system", "content": "You are coder (an old prompt)."},
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer},
        ],
        "tools": old_tools(),
        "mode": "default",
    })
}

/// Writes a session file of `conversations` (the first is the root) in `workspace`.
fn write_file(workspace: &Path, version: u32, conversations: Vec<Value>) -> SessionId {
    let session = SessionId::new();
    let mut file = conversations[0].clone();
    file["version"] = json!(version);
    file["sessionId"] = json!(session);
    file["savedAt"] = json!("2026-11-25T00:00:00.000Z");
    file["conversations"] = Value::Array(conversations[1..].to_vec());
    let dir = workspace.join(".coder/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{session}.json")), file.to_string()).unwrap();
    session
}

fn texts(engine: &Engine, conversation: ConversationId) -> Vec<String> {
    engine
        .history(conversation)
        .unwrap()
        .into_iter()
        .map(|message| message.content.unwrap_or_default())
        .collect()
}

async fn until_task_end(engine: &Engine, task: coder_protocol::TaskId) {
    let mut events = engine.subscribe();
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

#[tokio::test]
async fn an_old_session_file_resumes_and_is_saved_again_in_the_current_form() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (root, side) = (ConversationId::new(), ConversationId::new());
    let session = write_file(
        workspace.path(),
        1,
        vec![
            old_conversation(root, "root question", "root answer"),
            old_conversation(side, "side question", "side answer"),
        ],
    );
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    // The system prompts are not the conversations' messages.
    assert_eq!(engine.resume(session).unwrap(), 4);
    let listed: Vec<(ConversationId, usize)> = engine
        .list_conversations()
        .iter()
        .map(|c| (c.id, c.message_count))
        .collect();
    let mut expected = vec![(root, 2), (side, 2)];
    expected.sort();
    assert_eq!(listed, expected);
    assert_eq!(texts(&engine, side), ["side question", "side answer"]);
    engine.shutdown().await;

    // Saved again in version 2, every message kept; it resumes alike.
    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written["version"], 2);
    let saved: SessionSnapshot = serde_json::from_value(written).unwrap();
    assert_eq!(saved.conversations[0].conversation_id, side);
    assert_eq!(saved.conversations[0].messages.len(), 2);
    let again = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    assert_eq!(again.resume(session).unwrap(), 4);
    assert_eq!(texts(&again, side), ["side question", "side answer"]);
    assert_eq!(texts(&again, root), ["root question", "root answer"]);
    again.shutdown().await;
}

#[tokio::test]
async fn a_resumed_conversation_is_read_when_first_used_and_one_that_cannot_be_is_refused_and_kept()
{
    let server = MockModelServer::start(vec![MockResponse::text("still serving")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (root, good, bad) = (
        ConversationId::new(),
        ConversationId::new(),
        ConversationId::new(),
    );
    let mut broken = old_conversation(bad, "bad question", "bad answer");
    broken["messages"][1] = json!({"role": "nobody", "content": 7});
    let session = write_file(
        workspace.path(),
        2,
        vec![
            old_conversation(root, "root question", "root answer"),
            old_conversation(good, "good question", "good answer"),
            broken,
        ],
    );
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    // The resume reads the list of conversations, not their histories: the broken one is
    // refused when it is used, by name, and the others serve.
    assert_eq!(engine.resume(session).unwrap(), 6);
    assert_eq!(engine.list_conversations().len(), 3);
    let err = engine.history(bad).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams, "{err}");
    assert!(err.message().contains(&bad.to_string()), "{err}");
    assert!(engine.send(bad, "hello?").is_err());
    assert_eq!(texts(&engine, good), ["good question", "good answer"]);
    let task = engine.send(root, "go on").unwrap();
    until_task_end(&engine, task).await;
    assert_eq!(
        texts(&engine, root).last().map(String::as_str),
        Some("still serving")
    );
    engine.shutdown().await;
    // Nothing of the file was lost: the broken history is written back as it was read.
    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let kept = written["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["conversationId"] == json!(bad))
        .unwrap();
    assert_eq!(kept["messages"][0], json!({"role": "nobody", "content": 7}));
    assert_eq!(kept["messages"][1]["content"], "bad answer");
}

#[tokio::test]
async fn after_a_turn_a_large_snapshot_is_left_to_the_journal_which_resumes_the_turn() {
    let server = MockModelServer::start(vec![MockResponse::text("the answer")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    // A session of 300 conversations, past the size a save writes again at every turn.
    let root = ConversationId::new();
    let mut conversations = vec![old_conversation(root, "root question", "root answer")];
    for at in 0..300 {
        let question = format!("question {at}: {}", "where is the parser? ".repeat(40));
        conversations.push(old_conversation(ConversationId::new(), &question, "here"));
    }
    let session = write_file(workspace.path(), 2, conversations);
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    engine.resume(session).unwrap();
    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let journal = path.with_extension("jsonl");
    let before = std::fs::read(&path).unwrap();
    assert!(before.len() > 256 << 10, "{} bytes", before.len());
    let task = engine.send(root, "one more question").unwrap();
    until_task_end(&engine, task).await;
    // The session goes idle and its quiet-moment save passes (half a second): the journal
    // holds the turn, the snapshot is as it was.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(journal.exists());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the snapshot was written again"
    );
    // Stopped without a last save (as a killed process is), the turn is in the journal.
    engine.shutdown_now();
    let resumed = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    resumed.resume(session).unwrap();
    let history = resumed.history(root).unwrap();
    let said: Vec<(Role, String)> = history
        .iter()
        .filter(|m| {
            !m.content
                .as_deref()
                .is_some_and(|text| text.starts_with("<system-reminder>"))
        })
        .map(|m| (m.role, m.content.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        said,
        [
            (Role::User, "root question".to_owned()),
            (Role::Assistant, "root answer".to_owned()),
            (Role::User, "one more question".to_owned()),
            (Role::Assistant, "the answer".to_owned()),
        ]
    );
    // Written whole at the end, the journal folded in.
    resumed.shutdown().await;
    assert!(!journal.exists());
    let saved: SessionSnapshot = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(saved.conversations.len(), 300);
    assert_eq!(
        saved
            .root
            .messages
            .last()
            .and_then(|m| m.content.as_deref()),
        Some("the answer")
    );
}
