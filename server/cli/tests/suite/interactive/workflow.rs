//! Seed 004's workflow at the terminal: `/undo`, the auto-verify loop, `/model` persisted.

use std::process::Command;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::session::Place;

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

fn write_call(id: &str, path: &str, content: &str) -> MockResponse {
    MockResponse::tool_call(id, "write", json!({"path": path, "content": content}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_an_edited_a_created_and_a_command_changed_file() {
    let server = MockModelServer::start(vec![
        write_call("c1", "edited.txt", "changed by the model\n"),
        write_call("c2", "created.txt", "new\n"),
        MockResponse::tool_call(
            "c3",
            "bash",
            json!({"command": "echo changed by a command > by_command.txt"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let dir = place.workspace.path();
    place.write("edited.txt", "original\n");
    place.write("by_command.txt", "original\n");
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "start"]);
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("change things");
    screen.prompt(2);
    assert_eq!(place.read("created.txt").as_deref(), Some("new\n"));
    assert_eq!(
        place.read("by_command.txt").as_deref(),
        Some("changed by a command\n")
    );
    screen.line("/undo");
    let text = screen.prompt(3);
    assert_eq!(place.read("edited.txt").as_deref(), Some("original\n"));
    assert_eq!(place.read("by_command.txt").as_deref(), Some("original\n"));
    assert_eq!(place.read("created.txt"), None);
    insta::assert_snapshot!("undo", place.normalized(&text));
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A Gradle project whose wrapper passes once a file named `fixed` exists.
fn gradle_project(place: &Place) {
    use std::os::unix::fs::PermissionsExt;
    place.write("build.gradle", "");
    place.write(
        "gradlew",
        "#!/bin/sh\nif [ -f fixed ]; then echo 'BUILD SUCCESSFUL'; exit 0; fi\necho 'FAILED: ParserTest'\nexit 1\n",
    );
    std::fs::set_permissions(
        place.workspace.path().join("gradlew"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_verify_passes_after_a_retry_at_the_terminal() {
    let server = MockModelServer::start(vec![
        write_call("c1", "src/Parser.java", "class Parser {}\n"),
        MockResponse::text("done"),
        write_call("c2", "fixed", "yes\n"),
        MockResponse::text("fixed it"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    gradle_project(&place);
    let mut screen = place.start(&server, &["--mode", "auto-edit", "--permissions", "yolo"]);
    screen.prompt(1);
    screen.line("fix the parser");
    let text = screen.prompt(2);
    insta::assert_snapshot!("verify_retry_then_pass", place.normalized(&text));
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_verify_gives_up_after_two_retries_and_says_when_it_did_not_run() {
    let server = MockModelServer::start(vec![
        write_call("c1", "src/A.java", "1\n"),
        MockResponse::text("done"),
        write_call("c2", "src/A.java", "2\n"),
        MockResponse::text("tried"),
        write_call("c3", "src/A.java", "3\n"),
        MockResponse::text("tried again"),
        write_call("c4", "main.c", "int main;\n"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    gradle_project(&place);
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("change A");
    let text = screen.prompt(2);
    assert_eq!(
        text.matches("auto-verification failed").count(),
        3,
        "{text}"
    );
    assert!(text.contains("after 2 automatic retries"), "{text}");
    // Without a project command, it says so.
    std::fs::remove_file(place.workspace.path().join("build.gradle")).unwrap();
    screen.line("change main");
    let text = screen.prompt(3);
    assert!(
        text.contains("auto-verification did not run: no allowlisted test command"),
        "{text}"
    );
    insta::assert_snapshot!("verify_gives_up", place.normalized(&text));
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coder_exec_on_a_terminal_shows_a_spinner_and_a_closing_line() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "sleep 1"})),
        MockResponse::text("slept"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let screen = place.start(&server, &["exec", "--mode", "yolo", "sleep a second"]);
    let text = screen.wait_for("── done");
    let raw = screen.raw();
    assert!(
        ['⠙', '⠹', '⠸'].iter().any(|frame| raw.contains(*frame)),
        "no spinner frame in {raw:?}"
    );
    assert!(text.contains("bash sleep 1"), "{text}");
    assert!(text.contains("slept"), "{text}");
    assert!(screen.exit().success());
}
