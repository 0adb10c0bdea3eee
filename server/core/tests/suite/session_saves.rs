//! What saving costs and what a resume reads: the snapshot of a large session is left to
//! the journal after a turn, an old (version 1) file still resumes and is saved again in
//! the current form (the system prompts and tools of its conversations kept), a resumed conversation's history is read when it is first used and
//! its next request is the one it would have sent had the session gone on, and a session
//! holding images is listed and resumes.

use std::path::Path;
use std::time::Duration;

use coder_core::{ConversationSpec, Engine, ErrorKind, ProviderKind, SessionSnapshot};
use coder_protocol::{Attachment, ConversationId, InputItem, Role, SessionId};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{BOTH, config};

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
    // Its system prompt and tools are kept, in the shared tables.
    let messages = &saved.conversations[0].messages;
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0].role, Role::System);
    assert_eq!(
        messages[0].content.as_deref(),
        Some("You are coder (an old prompt).")
    );
    assert_eq!(
        serde_json::to_value(&saved.conversations[0].tools).unwrap(),
        old_tools()
    );
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

/// A question with a picture pasted beside it.
fn with_picture(question: &str) -> Vec<InputItem> {
    vec![
        InputItem::Text {
            text: question.to_owned(),
        },
        InputItem::Image {
            image_url: "data:image/png;base64,iVBORw0KGgo=".to_owned(),
        },
    ]
}

/// The files of the sessions folder, by name.
fn session_files(workspace: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(workspace.join(".coder/sessions"))
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.file_name(), std::fs::read(entry.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The sessions folder holding `files` and nothing else.
fn put_back(workspace: &Path, files: &[(std::ffi::OsString, Vec<u8>)]) {
    let dir = workspace.join(".coder/sessions");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// The body of the last request `server` received, as sent.
fn last_body(server: &MockModelServer) -> String {
    let requests = server.requests();
    let last = requests.last().expect("a request was sent");
    String::from_utf8(last.raw_body.to_vec()).unwrap()
}

/// Fails, when `got` is not `expected`, with where they first differ.
fn assert_same_bytes(got: &str, expected: &str, what: &str) {
    let (got, expected) = (got.as_bytes(), expected.as_bytes());
    let at = got
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(expected.len()));
    let around = |bytes: &[u8]| {
        String::from_utf8_lossy(&bytes[at.saturating_sub(80)..(at + 80).min(bytes.len())])
            .into_owned()
    };
    assert!(
        got == expected,
        "{what}: {} bytes against {}, first apart at byte {at}:\n{}\nagainst\n{}",
        got.len(),
        expected.len(),
        around(got),
        around(expected)
    );
}

#[tokio::test]
async fn a_resumed_conversation_sends_the_bytes_it_would_have_sent_had_the_session_gone_on() {
    for kind in BOTH {
        let server = MockModelServer::start(Vec::new()).await.unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("shot.png"), [0x89, b'P', b'N', b'G']).unwrap();
        std::fs::write(workspace.path().join("README.md"), "# the project\n").unwrap();
        let engine = Engine::new(config(&server, kind, workspace.path())).unwrap();
        // A conversation other than the root, which a resume reads on its first use: a
        // pasted picture, thinking, tool calls, a tool's image, replies.
        let side = engine
            .create_conversation(ConversationSpec::default())
            .unwrap();
        server.push([
            MockResponse::stream(vec![
                Chunk::thinking("look at the file too"),
                Chunk::tool_call("c1", "read", json!({"path": "shot.png"})),
            ]),
            MockResponse::text("A single pixel."),
            MockResponse::tool_call("c2", "read", json!({"path": "README.md"})),
            MockResponse::text("It names the project."),
        ]);
        let task = engine
            .send_items(side, with_picture("what is in this picture?"))
            .unwrap();
        until_task_end(&engine, task).await;
        let task = engine.send(side, "and the readme?").unwrap();
        until_task_end(&engine, task).await;
        engine.save().await.unwrap();
        let saved = session_files(workspace.path());
        let session = engine.session_id();

        // The session goes on: its next request extends the history its requests kept.
        server.push([MockResponse::text("Done.")]);
        let task = engine.send(side, "one more thing").unwrap();
        until_task_end(&engine, task).await;
        let went_on = last_body(&server);
        engine.shutdown().await;

        // The session as saved before that turn, resumed: the same turn sends the same bytes.
        put_back(workspace.path(), &saved);
        let resumed = Engine::new(config(&server, kind, workspace.path())).unwrap();
        resumed.resume(session).unwrap();
        server.push([MockResponse::text("Done.")]);
        let task = resumed.send(side, "one more thing").unwrap();
        until_task_end(&resumed, task).await;
        let after_resume = last_body(&server);
        assert!(went_on.contains("one more thing"), "{kind:?}: {went_on}");
        assert!(went_on.contains("iVBORw0KGgo="), "{kind:?}: {went_on}");
        assert_same_bytes(&after_resume, &went_on, &format!("{kind:?}"));
        resumed.shutdown().await;
    }
}

#[tokio::test]
async fn a_session_whose_conversations_hold_images_is_listed_and_resumes() {
    let server = MockModelServer::start(vec![
        MockResponse::text("A single pixel."),
        MockResponse::text("The same pixel."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let engine = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    let root = engine.root_conversation();
    let side = engine
        .create_conversation(ConversationSpec::default())
        .unwrap();
    let task = engine
        .send_items(root, with_picture("what is in this picture?"))
        .unwrap();
    until_task_end(&engine, task).await;
    let task = engine
        .send_items(side, with_picture("and in this one?"))
        .unwrap();
    until_task_end(&engine, task).await;
    let session = engine.session_id();
    engine.shutdown().await;

    let again = Engine::new(config(&server, ProviderKind::OpenAi, workspace.path())).unwrap();
    let listed: Vec<_> = again
        .saved_sessions()
        .into_iter()
        .map(|info| {
            (
                info.session_id,
                info.conversations,
                info.messages,
                info.title,
            )
        })
        .collect();
    // Each conversation: the question, the todo list's reminder, the reply.
    assert_eq!(
        listed,
        [(session, 2, 6, Some("what is in this picture?".to_owned()))]
    );
    assert_eq!(again.resume(session).unwrap(), 6);
    for (conversation, question) in [
        (root, "what is in this picture?"),
        (side, "and in this one?"),
    ] {
        let history = again.history(conversation).unwrap();
        assert_eq!(history[0].content.as_deref(), Some(question));
        assert_eq!(
            history[0].attachments,
            [Attachment::Inline {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }]
        );
    }
    again.shutdown().await;
}
