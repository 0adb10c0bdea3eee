//! Points, rewinds and forks through `coder lsp`: `conversation/points`,
//! `conversation/rewind` (with and without `dryRun`) and `session/fork`, in a git
//! repository, against the mock model.

use std::path::Path;

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::Client;
use crate::suite::exec::git;

/// A repository with three committed files a session's turns change.
fn repository() -> tempfile::TempDir {
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    for name in ["edited.txt", "deleted.txt", "shared.txt"] {
        std::fs::write(ws.join(name), format!("original {name}\n")).unwrap();
    }
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(
        ws,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "start",
        ],
    );
    workspace
}

fn read(ws: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(name)).ok()
}

/// The three files' contents and whether `created.txt` exists.
fn files(ws: &Path) -> [Option<String>; 4] {
    ["created.txt", "edited.txt", "deleted.txt", "shared.txt"].map(|name| read(ws, name))
}

/// The user messages of the model's last request that a person typed (no reminders).
fn last_inputs(server: &MockModelServer) -> Vec<Value> {
    server.requests().pop().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .filter(|text| {
            !text
                .as_str()
                .is_some_and(|text| text.starts_with("<system-reminder>"))
        })
        .collect()
}

/// The three turns every test here runs: the first creates a file (`write`), the second
/// edits one (`edit`) and writes another (`write`), the third deletes one (`bash`).
fn three_turns() -> Vec<MockResponse> {
    vec![
        MockResponse::tool_call(
            "w1",
            "write",
            json!({"path": "created.txt", "content": "made\n"}),
        ),
        MockResponse::text("one"),
        MockResponse::tool_call(
            "e1",
            "edit",
            json!({"path": "edited.txt", "old_string": "original", "new_string": "changed"}),
        ),
        MockResponse::tool_call(
            "w2",
            "write",
            json!({"path": "shared.txt", "content": "by the model\n"}),
        ),
        MockResponse::text("two"),
        MockResponse::tool_call("b1", "bash", json!({"command": "rm deleted.txt"})),
        MockResponse::text("three"),
    ]
}

/// Sends `first`, `second` and `third`, each to its end.
async fn run_three_turns(client: &mut Client, root: &str, seen: &mut Vec<Value>) {
    for (turn, text) in ["first", "second", "third"].into_iter().enumerate() {
        client.send_text(root, text, seen).await;
        client.until_events("task_complete", turn + 1, seen).await;
        client
            .until_events("state_changed", 2 * (turn + 1), seen)
            .await;
    }
    // `idle` is said just before the session's loop winds up: wait (bounded) until a dry
    // run, which changes nothing, is no longer refused as busy.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let answer = client
            .request(
                "conversation/rewind",
                json!({"conversationId": root, "point": 0, "dryRun": true}),
                seen,
            )
            .await;
        if answer["error"]["data"]["kind"] != "busy" {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "still busy: {answer}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_rewind_restores_three_files_and_the_conversation_and_keeps_the_person_s() {
    let mut script = three_turns();
    script.push(MockResponse::text("four"));
    let server = MockModelServer::start(script).await.unwrap();
    let workspace = repository();
    let ws = workspace.path();
    let (mut client, root) = Client::ready(ws, &server, "yolo").await;
    let mut seen = Vec::new();
    run_three_turns(&mut client, &root, &mut seen).await;
    assert_eq!(
        files(ws),
        [
            Some("made\n".to_owned()),
            Some("changed edited.txt\n".to_owned()),
            None,
            Some("by the model\n".to_owned())
        ]
    );
    // The person changes a file the second turn wrote.
    std::fs::write(ws.join("shared.txt"), "the person's\n").unwrap();

    let points = client
        .request(
            "conversation/points",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    let listed: Vec<(Value, Value)> = points["result"]["points"]
        .as_array()
        .unwrap_or_else(|| panic!("{points}"))
        .iter()
        .map(|point| (point["point"].clone(), point["text"].clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (json!(0), json!("first")),
            (json!(1), json!("second")),
            (json!(2), json!("third"))
        ]
    );

    let rewind = |dry_run: bool| json!({"conversationId": root, "point": 0, "dryRun": dry_run});
    let preview = client
        .request("conversation/rewind", rewind(true), &mut seen)
        .await;
    let before = files(ws);
    let said = &preview["result"];
    assert_eq!(said["dryRun"], true, "{preview}");
    assert_eq!(said["restored"], json!(["deleted.txt", "edited.txt"]));
    assert_eq!(said["removed"], json!(["created.txt"]));
    assert_eq!(said["kept"][0]["path"], "shared.txt");
    assert_eq!(said["kept"][0]["reason"], "changed_since");
    assert_eq!(said["filesRecorded"], true);
    // What putting each file back does to its lines, for a preview.
    assert_eq!(
        said["lineChanges"],
        json!([
            {"path": "created.txt", "added": 0, "removed": 1},
            {"path": "deleted.txt", "added": 1, "removed": 0},
            {"path": "edited.txt", "added": 1, "removed": 1},
        ])
    );
    // The preview changed nothing: the files and the points are as they were.
    assert_eq!(files(ws), before);
    assert_eq!(
        client
            .request(
                "conversation/points",
                json!({"conversationId": root}),
                &mut seen
            )
            .await["result"]["points"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );

    let done = client
        .request("conversation/rewind", rewind(false), &mut seen)
        .await;
    let said = &done["result"];
    assert_eq!(said["dryRun"], false, "{done}");
    assert_eq!(said["restored"], json!(["deleted.txt", "edited.txt"]));
    assert_eq!(said["removed"], json!(["created.txt"]));
    assert_eq!(said["kept"][0]["path"], "shared.txt");
    let text = said["text"].as_str().unwrap();
    assert!(text.contains("shared.txt"), "{text}");
    assert!(said["messagesRemoved"].as_u64().unwrap() >= 9, "{done}");
    assert_eq!(
        files(ws),
        [
            None,
            Some("original edited.txt\n".to_owned()),
            Some("original deleted.txt\n".to_owned()),
            Some("the person's\n".to_owned())
        ]
    );
    let points = client
        .request(
            "conversation/points",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    assert_eq!(points["result"]["points"], json!([]), "{points}");

    // The model's next request holds nothing from the point on.
    client.send_text(&root, "after", &mut seen).await;
    client.until_events("task_complete", 4, &mut seen).await;
    assert_eq!(last_inputs(&server), [json!("after")]);
    assert_eq!(server.requests().len(), 8);
    client.stop().await;
}

#[tokio::test]
async fn a_rewind_outside_a_repository_goes_back_and_says_files_were_not_recorded() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "w1",
            "write",
            json!({"path": "made.txt", "content": "made\n"}),
        ),
        MockResponse::text("one"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "yolo").await;
    let mut seen = Vec::new();
    client.send_text(&root, "first", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.until_events("state_changed", 2, &mut seen).await;
    let done = client
        .request(
            "conversation/rewind",
            json!({"conversationId": root, "point": 0}),
            &mut seen,
        )
        .await;
    let said = &done["result"];
    assert_eq!(said["filesRecorded"], false, "{done}");
    assert_eq!(said["restored"], json!([]));
    assert!(
        said["text"]
            .as_str()
            .unwrap()
            .contains("files were not recorded"),
        "{done}"
    );
    assert_eq!(
        read(workspace.path(), "made.txt").as_deref(),
        Some("made\n")
    );
    // A point the history does not hold is refused by name.
    let gone = client
        .request(
            "conversation/rewind",
            json!({"conversationId": root, "point": 0}),
            &mut seen,
        )
        .await;
    assert_eq!(gone["error"]["data"]["kind"], "invalid_params", "{gone}");
    client.stop().await;
}

/// The points of `conversation`, as `[point, text]` pairs.
async fn points(client: &mut Client, conversation: &str, seen: &mut Vec<Value>) -> Vec<Value> {
    let answer = client
        .request(
            "conversation/points",
            json!({"conversationId": conversation}),
            seen,
        )
        .await;
    answer["result"]["points"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|point| json!([point["point"], point["text"]]))
        .collect()
}

#[tokio::test]
async fn a_fork_goes_on_from_its_point_and_leaves_the_original_byte_identical() {
    let mut script = three_turns();
    script.push(MockResponse::text("in the fork"));
    script.push(MockResponse::text("fork resumed"));
    let server = MockModelServer::start(script).await.unwrap();
    let workspace = repository();
    let ws = workspace.path();
    let (mut client, original, root) = Client::session(ws, &server, "yolo").await;
    let mut seen = Vec::new();
    run_three_turns(&mut client, &root, &mut seen).await;
    let before = files(ws);

    let forked = client
        .request(
            "session/fork",
            json!({"conversationId": root, "point": 1}),
            &mut seen,
        )
        .await;
    let said = &forked["result"];
    assert_eq!(said["forkedFrom"], original.as_str(), "{forked}");
    let fork = said["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, original);
    assert!(
        said["text"]
            .as_str()
            .unwrap()
            .contains("no file was touched"),
        "{forked}"
    );
    let sessions = ws.join(".coder/sessions");
    let original_file = sessions.join(format!("{original}.json"));
    let saved = std::fs::read(&original_file).unwrap();
    assert!(sessions.join(format!("{fork}.json")).exists());
    assert_eq!(files(ws), before, "a fork touches no file");

    // The connection goes on in the fork, from before the second input.
    assert_eq!(
        points(&mut client, &root, &mut seen).await,
        [json!([0, "first"])]
    );
    client.send_text(&root, "go on here", &mut seen).await;
    client.until_events("task_complete", 4, &mut seen).await;
    assert_eq!(last_inputs(&server), [json!("first"), json!("go on here")]);
    client.stop().await;
    assert_eq!(
        std::fs::read(&original_file).unwrap(),
        saved,
        "the original's file changed"
    );

    // The original resumes with all its points; the fork with its cut history.
    let (mut again, init) = Client::resuming(ws, &server, "yolo", &original, &mut seen).await;
    assert!(init.get("result").is_some(), "{init}");
    assert_eq!(points(&mut again, &root, &mut seen).await.len(), 3);
    again.stop().await;
    let (mut resumed, init) = Client::resuming(ws, &server, "yolo", &fork, &mut seen).await;
    assert!(init.get("result").is_some(), "{init}");
    assert_eq!(
        points(&mut resumed, &root, &mut seen).await,
        [json!([0, "first"]), json!([1, "go on here"])]
    );
    let mut seen = Vec::new();
    resumed.send_text(&root, "and again", &mut seen).await;
    resumed.until_events("task_complete", 1, &mut seen).await;
    assert_eq!(
        last_inputs(&server),
        [json!("first"), json!("go on here"), json!("and again")]
    );
    resumed.stop().await;
}

/// The todo list goes back with the conversation: after a rewind it is the list the kept
/// history left (each `todo_write` replaces it whole), announced with `todo_updated`.
#[tokio::test]
async fn a_rewind_takes_the_todo_list_back_to_what_the_kept_history_left() {
    let todos = |content: &str| json!({"todos": [{"content": content, "status": "pending"}]});
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("t1", "todo_write", todos("first plan")),
        MockResponse::text("one"),
        MockResponse::tool_call("t2", "todo_write", todos("second plan")),
        MockResponse::text("two"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "yolo").await;
    let mut seen = Vec::new();
    client.send_text(&root, "plan", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.send_text(&root, "plan again", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;
    // Idle after the second task (the second input may have waited behind the first).
    loop {
        let ended = seen
            .iter()
            .rposition(|m| m["params"]["event"]["type"] == "task_complete")
            .unwrap();
        if seen[ended..]
            .iter()
            .any(|m| m["params"]["event"]["state"] == "idle")
        {
            break;
        }
        seen.push(client.read().await);
    }
    seen.clear();
    let done = client
        .request(
            "conversation/rewind",
            json!({"conversationId": root, "point": 1}),
            &mut seen,
        )
        .await;
    assert!(done.get("result").is_some(), "{done}");
    client.until_events("todo_updated", 1, &mut seen).await;
    let updated = seen
        .iter()
        .map(|message| &message["params"]["event"])
        .find(|event| event["type"] == "todo_updated")
        .unwrap();
    assert_eq!(updated["todos"][0]["content"], "first plan", "{updated}");
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/todos"}),
            &mut seen,
        )
        .await;
    let listed = answer["result"]["text"].as_str().unwrap();
    assert!(
        listed.contains("first plan") && !listed.contains("second plan"),
        "{listed}"
    );
    client.stop().await;
}

/// A dry run names the folders a rewind would remove, as the rewind then does: those the
/// turns made and that nothing else is left in.
#[tokio::test]
async fn a_dry_run_names_the_folders_the_rewind_removes() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "w1",
            "write",
            json!({"path": "new/deep/made.txt", "content": "made\n"}),
        ),
        MockResponse::text("one"),
    ])
    .await
    .unwrap();
    let workspace = repository();
    let ws = workspace.path();
    let (mut client, root) = Client::ready(ws, &server, "yolo").await;
    let mut seen = Vec::new();
    client.send_text(&root, "first", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.until_events("state_changed", 2, &mut seen).await;
    let rewind = |dry_run: bool| json!({"conversationId": root, "point": 0, "dryRun": dry_run});
    let mut answers = Vec::new();
    for dry_run in [true, false] {
        // `idle` is said just before the session's loop winds up: ask again while busy.
        let answer = loop {
            let answer = client
                .request("conversation/rewind", rewind(dry_run), &mut seen)
                .await;
            if answer["error"]["data"]["kind"] != "busy" {
                break answer;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        answers.push(answer["result"]["removed"].clone());
    }
    assert_eq!(
        answers[0],
        json!(["new/deep/made.txt", "new/deep/", "new/"]),
        "{answers:?}"
    );
    assert_eq!(answers[1], answers[0]);
    assert!(!ws.join("new").exists());
    client.stop().await;
}

#[tokio::test]
async fn a_rewind_of_the_history_alone_leaves_every_file_and_forgets_the_turns_cut_away() {
    let server = MockModelServer::start(three_turns()).await.unwrap();
    let workspace = repository();
    let ws = workspace.path();
    let (mut client, root) = Client::ready(ws, &server, "yolo").await;
    let mut seen = Vec::new();
    run_three_turns(&mut client, &root, &mut seen).await;
    let after_turns = files(ws);
    let done = client
        .request(
            "conversation/rewind",
            json!({"conversationId": root, "point": 1, "files": false}),
            &mut seen,
        )
        .await;
    let said = &done["result"];
    assert_eq!(said["restored"], json!([]), "{done}");
    assert_eq!(said["removed"], json!([]));
    assert!(said["messagesRemoved"].as_u64().unwrap() >= 6, "{done}");
    assert_eq!(files(ws), after_turns, "no file changed");
    // Going back to the start now undoes only the first turn: the turns cut away are
    // forgotten, and what they did stays.
    let preview = client
        .request(
            "conversation/rewind",
            json!({"conversationId": root, "point": 0, "dryRun": true}),
            &mut seen,
        )
        .await;
    assert_eq!(
        preview["result"]["removed"],
        json!(["created.txt"]),
        "{preview}"
    );
    assert_eq!(preview["result"]["restored"], json!([]));
    client.stop().await;
}
