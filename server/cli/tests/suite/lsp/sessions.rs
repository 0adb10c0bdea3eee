//! Sessions over the wire: the snapshot a session leaves, resuming it through
//! `initializationOptions`, and a conversation with a model of its own.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Client, events, status_kb};

#[tokio::test]
async fn a_saved_session_resumes_with_its_history() {
    let server = MockModelServer::start(vec![
        MockResponse::text("The answer is 42."),
        MockResponse::text("Still 42."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();

    let mut first = Client::start(workspace.path(), &server, "balanced");
    let init = first.initialize(json!({})).await;
    let session = init["result"]["capabilities"]["experimental"]["coder"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        init["result"]["capabilities"]["experimental"]["coder"]["historyLoaded"],
        0
    );
    let root = first.root().await;
    let mut seen = Vec::new();
    first
        .send_text(&root, "What is the answer?", &mut seen)
        .await;
    first.until_events("state_changed", 2, &mut seen).await;
    // Saved before `idle` went out: a session's first task is saved as it ends.
    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved["sessionId"], session);
    assert_eq!(saved["model"], "gpt-5");
    assert_eq!(saved["messages"][3]["content"], "The answer is 42.");
    assert!(
        saved["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["function"]["name"] == "read")
    );
    first.stop().await;

    // A session that does not exist fails `initialize` with a clear error; the connection
    // stays usable.
    let mut second = Client::start(workspace.path(), &server, "balanced");
    let missing = second
        .request(
            "initialize",
            json!({"capabilities": {},
                   "initializationOptions": {"sessionId": "0192f0c4-0000-7000-8000-000000000000"}}),
            &mut Vec::new(),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot resume session"),
        "{missing}"
    );
    let init = second.initialize(json!({})).await;
    assert_eq!(
        init["result"]["capabilities"]["experimental"]["coder"]["historyLoaded"], 0,
        "a plain initialize starts a new session"
    );
    second.stop().await;

    let mut resumed = Client::start(workspace.path(), &server, "balanced");
    let init = resumed
        .request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": {"sessionId": session}}),
            &mut Vec::new(),
        )
        .await;
    let coder = &init["result"]["capabilities"]["experimental"]["coder"];
    assert_eq!(coder["sessionId"], session);
    assert_eq!(
        coder["historyLoaded"], 3,
        "the input, its reminders, the reply"
    );
    resumed
        .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    assert_eq!(
        resumed.root().await,
        root,
        "the root conversation keeps its id"
    );
    let history = resumed
        .request(
            "conversation/history",
            json!({"conversationId": root}),
            &mut Vec::new(),
        )
        .await;
    let entries = history["result"]["entries"].as_array().unwrap().clone();
    assert_eq!(
        entries,
        [
            json!({"role": "user", "text": "What is the answer?", "attachments": []}),
            json!({"role": "assistant", "text": "The answer is 42.", "attachments": []})
        ]
    );
    let mut seen = Vec::new();
    resumed.send_text(&root, "Sure?", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    // The model sees the earlier exchange.
    let request = server.requests().pop().unwrap();
    let contents: Vec<&str> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap())
        .filter(|text| !text.starts_with("<system-reminder>"))
        .collect();
    assert_eq!(
        contents,
        ["What is the answer?", "The answer is 42.", "Sure?"]
    );
    resumed.stop().await;
}

#[tokio::test]
async fn a_conversation_created_with_a_model_uses_it() {
    let server = MockModelServer::start(vec![MockResponse::text("small answer")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    let created = client
        .request(
            "conversation/create",
            json!({"model": "gpt-5-mini"}),
            &mut seen,
        )
        .await;
    let conversation = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    client.send_text(&conversation, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let started = events(&seen).find(|e| e["type"] == "task_started").unwrap();
    assert_eq!(started["model"], "gpt-5-mini");
    assert_eq!(server.requests()[0].body["model"], "gpt-5-mini");
    client.stop().await;
}

#[tokio::test]
async fn a_session_killed_during_a_handoff_resumes_with_the_pending_call_closed() {
    let server = MockModelServer::start(vec![
        MockResponse::text("First answer."),
        MockResponse::text("Carrying on."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut first, session, root) = Client::session(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    first.send_text(&root, "Delegate this.", &mut seen).await;
    first.until_events("state_changed", 2, &mut seen).await;
    first.stop().await;

    // What a SIGKILL between the handoff and its continuation leaves on disk: the root's
    // `conv_create` call without a result.
    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let mut saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    saved["messages"].as_array_mut().unwrap().push(json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{"id": "handoff-1", "type": "function",
                        "function": {"name": "conv_create",
                                     "arguments": "{\"user_instruction\":\"Summarise.\"}"}}]
    }));
    std::fs::write(&path, saved.to_string()).unwrap();

    let mut resumed = Client::start(workspace.path(), &server, "balanced");
    let mut seen = Vec::new();
    resumed
        .request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": {"sessionId": session}}),
            &mut seen,
        )
        .await;
    resumed
        .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    resumed.send_text(&root, "Go on.", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    let request = server.requests().pop().unwrap();
    let messages: Vec<serde_json::Value> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let content = m["content"].as_str().unwrap_or("");
            // The first input's reminders, by their tag.
            let content = if content.starts_with("<system-reminder>") {
                "<system-reminder>"
            } else {
                content
            };
            json!([m["role"], m["tool_call_id"], content])
        })
        .collect();
    assert_eq!(
        messages,
        [
            json!(["user", null, "Delegate this."]),
            json!(["user", null, "<system-reminder>"]),
            json!(["assistant", null, "First answer."]),
            json!(["assistant", null, ""]),
            json!([
                "tool",
                "handoff-1",
                "the session ended before this call finished; it has no result"
            ]),
            json!(["user", null, "Go on."]),
        ],
        "the model gets a valid history"
    );
    assert!(
        events(&seen).any(|e| e["type"] == "warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("ended during 1 tool call"))),
        "the repair is reported"
    );
    resumed.stop().await;
}

#[tokio::test]
async fn a_resume_that_fails_fails_initialize_with_its_kind_and_a_fresh_initialize_works() {
    let server = MockModelServer::start(vec![MockResponse::text("fresh")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let corrupt = "0192f0c4-0000-7000-8000-000000000001";
    let sessions = workspace.path().join(".coder/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join(format!("{corrupt}.json")), "{half a file").unwrap();
    let unknown = "0192f0c4-0000-7000-8000-000000000002";
    let mut client = Client::start(workspace.path(), &server, "balanced");
    for (session, kind) in [(corrupt, "invalid_params"), (unknown, "not_found")] {
        let failed = client
            .request(
                "initialize",
                json!({"capabilities": {}, "initializationOptions": {"sessionId": session}}),
                &mut Vec::new(),
            )
            .await;
        assert_eq!(failed["error"]["code"], -32602, "{failed}");
        assert_eq!(failed["error"]["data"]["kind"], kind, "{failed}");
        let message = failed["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("cannot resume session {session}: ")),
            "{message}"
        );
    }
    // Initialized again without it, the session is new and works.
    let init = client.initialize(json!({})).await;
    let coder = &init["result"]["capabilities"]["experimental"]["coder"];
    assert_eq!(coder["historyLoaded"], 0);
    assert_ne!(coder["sessionId"], corrupt);
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "hello", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
}

#[tokio::test]
async fn session_list_names_saved_sessions_and_session_resume_takes_one_up() {
    let server = MockModelServer::start(vec![
        MockResponse::text("Saved answer."),
        MockResponse::text("Resumed answer."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut first, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    first
        .send_text(&root, "Remember the number 7", &mut seen)
        .await;
    first.until_events("state_changed", 2, &mut seen).await;
    first.stop().await;
    // Not a snapshot: left out of the listing.
    std::fs::write(
        workspace.path().join(".coder/sessions/broken.json"),
        "{not json",
    )
    .unwrap();

    let (mut second, fresh_root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let listed = second.request("session/list", json!({}), &mut seen).await;
    let sessions = listed["result"]["sessions"].as_array().unwrap();
    // The first session; this one has saved nothing yet.
    assert_eq!(sessions.len(), 1, "{listed}");
    let saved = &sessions[0];
    assert_eq!(saved["title"], "Remember the number 7");
    assert_eq!(saved["conversations"], 1);
    assert!(saved["messages"].as_u64().unwrap() >= 2, "{saved}");
    assert_eq!(saved["model"], "gpt-5");
    assert!(saved["savedAt"].as_str().unwrap().contains('T'));
    let id = saved["sessionId"].as_str().unwrap().to_owned();

    let resumed = second
        .request("session/resume", json!({"sessionId": id}), &mut seen)
        .await;
    assert_eq!(resumed["result"]["sessionId"], id.as_str(), "{resumed}");
    assert!(resumed["result"]["messages"].as_u64().unwrap() >= 2);
    // The resumed root is the saved one, with its history.
    let root = second.root().await;
    assert_ne!(root, fresh_root);
    second.send_text(&root, "Which number?", &mut seen).await;
    second.until_events("task_complete", 1, &mut seen).await;
    let sent = server.requests()[1].body["messages"].clone();
    assert!(
        sent.as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"] == "Remember the number 7"),
        "{sent}"
    );

    // The session it now is cannot be taken up again; an unknown id is not found. The
    // server goes on.
    let itself = second
        .request("session/resume", json!({"sessionId": id}), &mut seen)
        .await;
    assert_eq!(
        itself["error"]["data"]["kind"], "invalid_params",
        "{itself}"
    );
    assert!(
        itself["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the session itself"),
        "{itself}"
    );
    second.stop().await;
    let (mut third, _) = Client::ready(workspace.path(), &server, "balanced").await;
    let unknown = third
        .request(
            "session/resume",
            json!({"sessionId": "0192f0c4-0000-7000-8000-000000000000"}),
            &mut Vec::new(),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(unknown["error"]["data"]["kind"], "not_found", "{unknown}");
    let bad = third
        .request("session/resume", json!({"sessionId": 5}), &mut Vec::new())
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    third.stop().await;
}

/// The saved files of `session` in `workspace`: whether its snapshot and journal exist.
fn saved_files(workspace: &std::path::Path, session: &str) -> (bool, bool) {
    let dir = workspace.join(".coder/sessions");
    (
        dir.join(format!("{session}.json")).exists(),
        dir.join(format!("{session}.jsonl")).exists(),
    )
}

/// [`last_request`] without the reminders coder adds after an input.
fn said_without_reminders(server: &MockModelServer) -> Vec<serde_json::Value> {
    last_request(server)
        .into_iter()
        .filter(|m| {
            !m[2]
                .as_str()
                .is_some_and(|text| text.starts_with("<system-reminder>"))
        })
        .collect()
}

/// The non-system messages of the model's last request, as `[role, tool_call_id, content]`.
fn last_request(server: &MockModelServer) -> Vec<serde_json::Value> {
    server.requests().pop().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| json!([m["role"], m["tool_call_id"], m["content"]]))
        .collect()
}

#[tokio::test]
async fn a_session_killed_during_a_tool_of_its_first_task_resumes_from_its_journal() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("slow", "bash", json!({"command": "sleep 3"})),
        MockResponse::text("Resumed fine."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut first, session, root) = Client::session(workspace.path(), &server, "yolo").await;
    let mut seen = Vec::new();
    first
        .send_text(&root, "Run the slow thing.", &mut seen)
        .await;
    first.until_events("tool_call_started", 1, &mut seen).await;
    first.child.kill().await.unwrap();
    // No snapshot was ever written; the journal holds what the task recorded.
    assert_eq!(saved_files(workspace.path(), &session), (false, true));

    let mut seen = Vec::new();
    let (mut resumed, init) =
        Client::resuming(workspace.path(), &server, "yolo", &session, &mut seen).await;
    assert!(
        init["result"]["capabilities"]["experimental"]["coder"]["historyLoaded"]
            .as_u64()
            .unwrap()
            >= 3,
        "{init}"
    );
    assert_eq!(resumed.root().await, root);
    // A session with a journal and no snapshot is listed too.
    let listed = resumed.request("session/list", json!({}), &mut seen).await;
    let ours = listed["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|saved| saved["sessionId"] == session.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(ours["title"], "Run the slow thing.");
    resumed.send_text(&root, "Go on.", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    let messages = last_request(&server);
    assert_eq!(messages[0], json!(["user", null, "Run the slow thing."]));
    let call = messages
        .iter()
        .position(|m| m[0] == "assistant")
        .expect("the tool call was kept");
    assert_eq!(
        messages[call + 1],
        json!([
            "tool",
            "slow",
            "the session ended before this call finished; it has no result"
        ])
    );
    assert_eq!(messages.last().unwrap(), &json!(["user", null, "Go on."]));
    resumed.stop().await;
    // Saved whole at the end, the journal folded in.
    assert_eq!(saved_files(workspace.path(), &session), (true, false));
}

#[tokio::test]
async fn a_session_killed_while_a_reply_streams_keeps_every_finished_turn() {
    let server = MockModelServer::start(vec![
        MockResponse::text("First answer."),
        MockResponse::stream(vec![
            coder_testkit::Chunk::text("Half a"),
            coder_testkit::Chunk::text(" reply that never ends"),
        ])
        .with_delay(5_000),
        MockResponse::text("Resumed fine."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut first, session, root) = Client::session(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    first.send_text(&root, "First question.", &mut seen).await;
    first.until_events("state_changed", 2, &mut seen).await;
    // A session's first task is saved as it ends: the snapshot holds it, the journal is
    // folded in.
    assert_eq!(saved_files(workspace.path(), &session), (true, false));
    first.send_text(&root, "Second question.", &mut seen).await;
    assert!(
        server
            .wait_for(std::time::Duration::from_secs(10), |requests| requests
                .len()
                == 2)
            .await
    );
    first.child.kill().await.unwrap();
    assert_eq!(saved_files(workspace.path(), &session), (true, true));

    let mut seen = Vec::new();
    let (mut resumed, _) =
        Client::resuming(workspace.path(), &server, "balanced", &session, &mut seen).await;
    resumed.send_text(&root, "Go on.", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    let said = said_without_reminders(&server);
    assert_eq!(
        said,
        [
            json!(["user", null, "First question."]),
            json!(["assistant", null, "First answer."]),
            json!(["user", null, "Second question."]),
            json!(["user", null, "Go on."]),
        ]
    );
    resumed.stop().await;
}

#[tokio::test]
async fn a_session_left_idle_folds_its_journal_and_one_killed_at_idle_loses_nothing() {
    let server = MockModelServer::start(vec![
        MockResponse::text("First answer."),
        MockResponse::text("Second answer."),
        MockResponse::text("Third answer."),
        MockResponse::text("Resumed fine."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut first, session, root) = Client::session(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    first.send_text(&root, "First question.", &mut seen).await;
    first.until_events("state_changed", 2, &mut seen).await;
    first.send_text(&root, "Second question.", &mut seen).await;
    first.until_events("state_changed", 4, &mut seen).await;
    // `idle` does not wait for the disk; once the session has stayed idle a moment, the
    // snapshot holds both tasks and the journal is folded into it.
    let folded = async {
        while saved_files(workspace.path(), &session) != (true, false) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), folded)
        .await
        .expect("the snapshot was written and the journal folded within 10 s of idle");
    // A third task, and the process killed as soon as it is idle: whether its snapshot was
    // written yet or not, nothing is lost.
    first.send_text(&root, "Third question.", &mut seen).await;
    first.until_events("state_changed", 6, &mut seen).await;
    first.child.kill().await.unwrap();

    let mut seen = Vec::new();
    let (mut resumed, _) =
        Client::resuming(workspace.path(), &server, "balanced", &session, &mut seen).await;
    resumed.send_text(&root, "Go on.", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    assert_eq!(
        said_without_reminders(&server),
        [
            json!(["user", null, "First question."]),
            json!(["assistant", null, "First answer."]),
            json!(["user", null, "Second question."]),
            json!(["assistant", null, "Second answer."]),
            json!(["user", null, "Third question."]),
            json!(["assistant", null, "Third answer."]),
            json!(["user", null, "Go on."]),
        ]
    );
    resumed.stop().await;
}

#[tokio::test]
async fn a_session_killed_while_a_handoffs_target_runs_resumes_with_the_call_closed() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "handoff-1",
            "conv_create",
            json!({"user_instruction": "Summarise the notes."}),
        ),
        // The target's reply, which the kill interrupts.
        MockResponse::stream(vec![coder_testkit::Chunk::text("Working on it")]).with_delay(5_000),
        MockResponse::text("Carrying on."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut first, session, root) = Client::session(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    first.send_text(&root, "Delegate this.", &mut seen).await;
    // The target's model call is under way: between T_target and T_cont.
    assert!(
        server
            .wait_for(std::time::Duration::from_secs(10), |requests| requests
                .len()
                == 2)
            .await
    );
    first.child.kill().await.unwrap();
    // The handoff saved a snapshot as its task ended; the target's task is in the journal.
    assert_eq!(saved_files(workspace.path(), &session), (true, true));
    // The snapshot replays as it is: the call the target was still answering is closed.
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            workspace
                .path()
                .join(format!(".coder/sessions/{session}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let last = saved["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "handoff-1");
    assert_eq!(
        last["content"],
        "this call was still running when the session was saved; its result is not in this snapshot"
    );
    assert_eq!(saved["runningCalls"], json!(["handoff-1"]));

    // The repair's warning may come before the answer to `initialize`: kept in `seen`.
    let mut seen = Vec::new();
    let (mut resumed, _) =
        Client::resuming(workspace.path(), &server, "balanced", &session, &mut seen).await;
    let listed = resumed
        .request("conversation/list", json!({}), &mut seen)
        .await;
    let conversations = listed["result"]["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 2, "the target came back too: {listed}");
    resumed.send_text(&root, "Go on.", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    let said = said_without_reminders(&server);
    assert_eq!(
        said,
        [
            json!(["user", null, "Delegate this."]),
            json!(["assistant", null, ""]),
            json!([
                "tool",
                "handoff-1",
                "the session ended before this call finished; it has no result"
            ]),
            json!(["user", null, "Go on."]),
        ]
    );
    assert!(
        events(&seen).any(|e| e["type"] == "warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("ended during 1 tool call"))),
        "the repair is reported"
    );
    resumed.stop().await;
}

/// The size of the session files a hostile repository ships: past the 128 MiB coder reads
/// as a session (a file git stores in a few kilobytes, as a clone writes it out).
const HOSTILE_BYTES: u64 = 160 << 20;

#[tokio::test]
async fn session_files_past_the_ceiling_cost_no_memory_and_are_refused_by_name() {
    let server = MockModelServer::start(vec![MockResponse::text("Still here.")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let sessions = workspace.path().join(".coder/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // A snapshot and a journal (of a session with no snapshot), each one line with no end,
    // as a repository could ship them under `.coder/sessions/`.
    let snapshot = "0192f0c4-0000-7000-8000-000000000001";
    let journal = "0192f0c4-0000-7000-8000-000000000002";
    for name in [format!("{snapshot}.json"), format!("{journal}.jsonl")] {
        let file = std::fs::File::create(sessions.join(name)).unwrap();
        file.set_len(HOSTILE_BYTES).unwrap();
    }
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let pid = client.child.id().unwrap();
    let before = status_kb(pid, "VmHWM:");
    let mut seen = Vec::new();

    let listed = client.request("session/list", json!({}), &mut seen).await;
    assert_eq!(listed["result"]["sessions"], json!([]), "{listed}");
    let mut refusals = Vec::new();
    for id in [snapshot, journal] {
        refusals.push(
            client
                .request("session/resume", json!({"sessionId": id}), &mut seen)
                .await,
        );
    }
    let peak = status_kb(pid, "VmHWM:");
    assert!(
        peak < before + 32 * 1024,
        "peak resident memory rose from {before} kB to {peak} kB reading session files"
    );
    for refused in refusals {
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("larger than") && message.contains("128 MiB"),
            "{refused}"
        );
    }

    // The session goes on.
    client.send_text(&root, "Hello", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
}

/// Writes a saved session of 300 conversations (past the size a save writes again after
/// every turn) whose root asked one question; returns its id and its root's.
fn write_large_session(workspace: &std::path::Path) -> (String, String) {
    let conversation = |id: coder_protocol::ConversationId, question: &str| {
        json!({"conversationId": id, "model": "mock-model", "mode": "default",
            "messages": [{"role": "user", "content": question},
                         {"role": "assistant", "content": "Noted."}]})
    };
    let (session, root) = (
        coder_protocol::SessionId::new(),
        coder_protocol::ConversationId::new(),
    );
    let mut file = conversation(root, "Old question.");
    file["version"] = json!(2);
    file["sessionId"] = json!(session);
    file["savedAt"] = json!("2026-11-25T00:00:00.000Z");
    file["conversations"] = (0..300)
        .map(|at| {
            let question = format!("Question {at}: {}", "where is the parser? ".repeat(40));
            conversation(coder_protocol::ConversationId::new(), &question)
        })
        .collect();
    let dir = workspace.join(".coder/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{session}.json")), file.to_string()).unwrap();
    (session.to_string(), root.to_string())
}

#[tokio::test]
async fn a_large_session_saves_its_turns_in_the_journal_and_one_killed_after_a_turn_keeps_them() {
    let server = MockModelServer::start(vec![
        MockResponse::text("First answer."),
        MockResponse::text("Second answer."),
        MockResponse::text("Resumed fine."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (session, root) = write_large_session(workspace.path());
    let path = workspace
        .path()
        .join(format!(".coder/sessions/{session}.json"));
    let before = std::fs::read(&path).unwrap();
    let mut seen = Vec::new();
    let (mut first, _) =
        Client::resuming(workspace.path(), &server, "balanced", &session, &mut seen).await;
    first.send_text(&root, "First question.", &mut seen).await;
    first.until_events("task_complete", 1, &mut seen).await;
    // Once the session has stayed idle a moment (half a second), its save has passed: the
    // journal holds the turn, and the large snapshot is not written again for it.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert_eq!(saved_files(workspace.path(), &session), (true, true));
    assert!(
        std::fs::read(&path).unwrap() == before,
        "the snapshot was written again after one turn"
    );
    // A second turn, and the process killed as soon as it completes.
    first.send_text(&root, "Second question.", &mut seen).await;
    first.until_events("task_complete", 2, &mut seen).await;
    first.child.kill().await.unwrap();

    let mut seen = Vec::new();
    let (mut resumed, _) =
        Client::resuming(workspace.path(), &server, "balanced", &session, &mut seen).await;
    resumed.send_text(&root, "Go on.", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    assert_eq!(
        said_without_reminders(&server),
        [
            json!(["user", null, "Old question."]),
            json!(["assistant", null, "Noted."]),
            json!(["user", null, "First question."]),
            json!(["assistant", null, "First answer."]),
            json!(["user", null, "Second question."]),
            json!(["assistant", null, "Second answer."]),
            json!(["user", null, "Go on."]),
        ]
    );
    resumed.stop().await;
    // Written whole at the end, the journal folded in.
    assert_eq!(saved_files(workspace.path(), &session), (true, false));
}
