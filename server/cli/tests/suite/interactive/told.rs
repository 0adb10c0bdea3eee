//! A built-in command's result goes back into the session (seed 004 section 4): the
//! model's next request says what `/undo`, `/mode`, `/model` and `/permissions` did, and
//! so does the next request of the session taken up again.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::session::Place;

/// Runs git in `dir`, with a committer and without the machine's configuration.
pub(super) fn git(dir: &std::path::Path, args: &[&str]) {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
}

/// A workspace that is a git repository with one commit.
pub(super) fn repository() -> Place {
    let place = Place::new();
    let dir = place.workspace.path();
    place.write("edited.txt", "original\n");
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "start"]);
    place
}

/// The user messages of request `n`, one per line.
fn user_messages(server: &MockModelServer, n: usize) -> Vec<String> {
    server.requests()[n].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["content"].as_str().map(str::to_owned))
        .collect()
}

/// The one user message of request `n` that records `/command`.
fn note_of(server: &MockModelServer, n: usize, command: &str) -> String {
    let notes: Vec<String> = user_messages(server, n)
        .into_iter()
        .filter(|text| text.contains(&format!("The person ran {command}")))
        .collect();
    assert_eq!(notes.len(), 1, "{command} in request {n}: {notes:?}");
    notes[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_undo_the_next_request_says_what_was_reverted() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "write",
            json!({"path": "edited.txt", "content": "changed\n"}),
        ),
        MockResponse::tool_call(
            "c2",
            "write",
            json!({"path": "hello.py", "content": "print('hello')\n"}),
        ),
        MockResponse::text("Created hello.py"),
        MockResponse::text("understood"),
    ])
    .await
    .unwrap();
    let place = repository();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("make hello");
    screen.prompt(2);
    screen.line("/undo");
    screen.prompt(3);
    assert_eq!(place.read("hello.py"), None);
    screen.line("what is there now?");
    screen.prompt(4);
    let note = note_of(&server, 3, "/undo");
    assert!(note.contains("restored edited.txt"), "{note}");
    assert!(note.contains("deleted hello.py"), "{note}");
    // The note comes after the turn it undid and before the new input.
    let users = user_messages(&server, 3);
    let at = |needle: &str| users.iter().position(|text| text.contains(needle)).unwrap();
    assert!(at("make hello") < at("The person ran /undo"), "{users:?}");
    assert!(
        at("The person ran /undo") < at("what is there now?"),
        "{users:?}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// The sessions saved in `place`'s workspace.
fn saved_sessions(place: &Place) -> Vec<String> {
    std::fs::read_dir(place.workspace.path().join(".coder/sessions"))
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_model_and_permissions_changes_reach_the_next_request_and_the_snapshot() {
    let server = MockModelServer::start(vec![
        MockResponse::text("hello"),
        MockResponse::text("planning now"),
        MockResponse::text("still here"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--permissions", "balanced"]);
    screen.prompt(1);
    screen.line("hi");
    screen.prompt(2);
    screen.line("/mode plan");
    screen.prompt(3);
    screen.line("/model other-model");
    screen.prompt(4);
    screen.line("/permissions strict");
    screen.prompt(5);
    screen.line("what now?");
    screen.prompt(6);
    assert!(note_of(&server, 1, "/mode plan").contains("mode: plan"));
    assert!(note_of(&server, 1, "/model other-model").contains("model: other-model"));
    assert!(note_of(&server, 1, "/permissions strict").contains("preset: strict"));
    screen.send("\x04");
    assert!(screen.exit().success());

    // Taken up again, the session's next request still carries them.
    let saved = saved_sessions(&place);
    assert_eq!(saved.len(), 1, "{saved:?}");
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line(&format!("/resume {}", saved[0]));
    screen.wait_for("resumed session");
    screen.prompt(2);
    screen.line("and now?");
    screen.prompt(3);
    note_of(&server, 2, "/mode plan");
    note_of(&server, 2, "/permissions strict");
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A command that changes nothing (`/help`, `/mode` alone) is not recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_only_show_something_are_not_recorded() {
    let server = MockModelServer::start(vec![
        MockResponse::text("hello"),
        MockResponse::text("hello again"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("hi");
    screen.prompt(2);
    screen.line("/mode");
    screen.prompt(3);
    screen.line("/help");
    screen.prompt(4);
    screen.line("hi again");
    screen.prompt(5);
    let users = user_messages(&server, 1);
    assert!(
        !users.iter().any(|text| text.contains("The person ran")),
        "{users:?}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}
