//! A seeded fuzz test of what coder reads back as a session: the snapshot (read whole, and
//! lazily, each conversation on its first use) and the journal under `.coder/sessions/`, which a repository can ship and a crash can cut. The files of a
//! real session are cut, flipped and spliced with hostile pieces (other types, deep
//! nesting, numbers past every integer, invalid UTF-8, long strings); listing and resuming
//! each must return a session or an error, never panic, and the engine must go on serving
//! tasks. The seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.

use coder_core::{Engine, ProviderKind};
use coder_protocol::{EventMsg, SessionId};
use coder_testkit::fuzz::Rng;
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::support::{Harness, config, until_idle};

/// Hostile files written and read.
const ROUNDS: usize = 400;

/// What a hostile edit splices in, beside `JSON_PIECES`.
const PIECES: &[&[u8]] = &[
    b"\"messages\"",
    b"{\"role\":\"tool\"}",
    b"\"role\":\"nobody\"",
    b"\"content\":[{\"type\":\"image_url\"}]",
    b"\"seq\":18446744073709551615",
    b"\"from\":4294967295",
    b"\"destroyed\":\"0192f0c4-0000-7000-8000-000000000000\"",
    b"\"systemPrompt\":4294967296",
    b"\"toolSet\":3",
    b"\"systemPrompts\":[{}]",
    b"\"toolSets\":[[7]]",
    b"\"version\":1",
];

/// `valid` with one to four hostile edits ([`coder_testkit::fuzz::mutate`]).
fn hostile(valid: &[u8], rng: &mut Rng) -> Vec<u8> {
    coder_testkit::fuzz::mutate(valid, PIECES, rng)
}

/// The journal a session killed before its first save leaves, written from its snapshot:
/// the header, a line giving each conversation its state, and a line destroying the last.
fn journal_of(snapshot: &[u8]) -> Vec<u8> {
    let saved: Value = serde_json::from_slice(snapshot).unwrap();
    let mut root = saved.clone();
    let fields = root.as_object_mut().unwrap();
    for session_field in [
        "version",
        "sessionId",
        "savedAt",
        "conversations",
        "journalThrough",
    ] {
        fields.remove(session_field);
    }
    let mut conversations = vec![root];
    conversations.extend(
        saved["conversations"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    let mut lines = vec![json!({
        "journal": 1,
        "sessionId": saved["sessionId"],
        "root": saved["conversationId"],
        "model": saved["model"],
    })];
    for (seq, state) in conversations.iter().enumerate() {
        lines.push(json!({
            "seq": seq + 1,
            "conversation": state["conversationId"],
            "from": 0,
            "messages": [],
            "state": state,
        }));
    }
    if let [_, .., last] = &conversations[..] {
        lines.push(json!({"seq": conversations.len() + 1, "destroyed": last["conversationId"]}));
    }
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend(serde_json::to_vec(&line).unwrap());
        bytes.push(b'\n');
    }
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_session_files_are_listed_or_refused_and_the_engine_goes_on() {
    let server = MockModelServer::start(vec![
        MockResponse::text("noted"),
        MockResponse::text("noted too"),
        MockResponse::text("still serving"),
    ])
    .await
    .unwrap();
    // A real session, with a second conversation that ran a task too (the file shares
    // their prompt and tools), saved.
    let mut first = Harness::new(&server, ProviderKind::OpenAi);
    let side = first
        .engine
        .create_conversation(coder_core::ConversationSpec::default())
        .unwrap();
    first.run("remember heron").await;
    let task = first.engine.send(side, "remember larch").unwrap();
    first.until_end(task).await;
    until_idle(&mut first).await;
    let saved = first.engine.session_id();
    first.engine.shutdown().await;
    let workspace = first.workspace.path().to_path_buf();
    let dir = workspace.join(".coder/sessions");
    let snapshot = std::fs::read(dir.join(format!("{saved}.json"))).unwrap();
    let written: Value = serde_json::from_slice(&snapshot).unwrap();
    assert_eq!(written["conversations"][0]["systemPrompt"], 0);
    // The save folded the session's journal away; one as a crash before it would have left.
    let journal = journal_of(&snapshot);

    let engine = Engine::new(config(&server, ProviderKind::OpenAi, &workspace)).unwrap();
    let mut rng = Rng::new(Rng::seed(0x05e5_510f_11e5));
    let (mut taken, mut refused) = (0, 0);
    for _ in 0..ROUNDS {
        let id = SessionId::new();
        let (with_snapshot, with_journal) = match rng.below(3) {
            0 => (true, false),
            1 => (false, true),
            _ => (true, true),
        };
        if with_snapshot {
            let bytes = hostile(&snapshot, &mut rng);
            // Read whole, as a tool would, it is a snapshot or an error.
            let _ = serde_json::from_slice::<coder_core::SessionSnapshot>(&bytes);
            std::fs::write(dir.join(format!("{id}.json")), bytes).unwrap();
        }
        if with_journal {
            let bytes = hostile(&journal, &mut rng);
            std::fs::write(dir.join(format!("{id}.jsonl")), bytes).unwrap();
        }
        let listed = engine.saved_sessions();
        assert!(
            listed.len() <= ROUNDS + 2,
            "{} sessions listed",
            listed.len()
        );
        match engine.resume(id) {
            Ok(_) => {
                taken += 1;
                // Each conversation kept as written is read on its first use: it is read,
                // or refused by name.
                for listed in engine.list_conversations() {
                    if let Err(err) = engine.history(listed.id) {
                        assert!(err.message().contains(&listed.id.to_string()), "{err}");
                    }
                }
            }
            Err(err) => {
                assert!(!err.message().is_empty());
                refused += 1;
            }
        }
        // Each round's files go, so the listing reads one hostile session at a time.
        let _ = std::fs::remove_file(dir.join(format!("{id}.json")));
        let _ = std::fs::remove_file(dir.join(format!("{id}.jsonl")));
    }
    println!("{taken} hostile sessions taken up, {refused} refused");
    assert!(taken > 0 && refused > 0, "{taken} taken, {refused} refused");

    // The engine goes on: whatever session it holds now serves a task.
    let mut events = engine.subscribe();
    let root = engine.root_conversation();
    engine.send(root, "still there?").unwrap();
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), events.recv())
            .await
            .expect("a task ran to its end within 20 s")
            .expect("the engine's events go on");
        if matches!(event.msg, EventMsg::TaskComplete { .. }) {
            break;
        }
    }
    engine.shutdown().await;
}
