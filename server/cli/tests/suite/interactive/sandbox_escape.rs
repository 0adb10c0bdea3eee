//! yolo's way out of the sandbox: the dangerous-command analysis runs before a person is
//! asked to run a blocked command again without the sandbox. The question says what a
//! dangerous command does, and a catastrophic one is refused, never offered.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::session::Place;

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({ "command": command }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_to_leave_the_sandbox_says_what_a_dangerous_command_does() {
    use std::os::unix::fs::PermissionsExt;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), "mine").unwrap();
    let before = std::fs::metadata(outside.path().join("notes.txt"))
        .unwrap()
        .permissions()
        .mode();
    let command = format!("chmod -R 777 {}", outside.path().display());
    let server = MockModelServer::start(vec![bash("c1", &command), MockResponse::text("ok")])
        .await
        .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("open it up");
    let asked = screen.wait_for("? [y] Yes, allow it this once");
    assert!(
        asked.contains("dangerous: recursive chmod 777 makes files writable by everyone"),
        "{asked}"
    );
    assert!(
        asked.contains("run it again without the sandbox?"),
        "{asked}"
    );
    screen.send("n");
    screen.wait_for("why? (Enter to give no reason)");
    screen.line("");
    screen.prompt(2);
    let after = std::fs::metadata(outside.path().join("notes.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(before, after);
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catastrophic_command_is_refused_in_yolo_and_never_offered_outside_the_sandbox() {
    let server = MockModelServer::start(vec![bash("c1", "rm -rf ~"), MockResponse::text("ok")])
        .await
        .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("clean up");
    let text = screen.prompt(2);
    assert!(!text.contains("without the sandbox"), "{text}");
    assert!(text.contains("catastrophic"), "{text}");
    assert!(place.home.path().join(".config/coder/config.json").exists());
    let requests = server.requests();
    let result = requests[1].body["messages"].to_string();
    assert!(
        result.contains("refused: catastrophic: recursive delete of ~: the home directory"),
        "{result}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}
