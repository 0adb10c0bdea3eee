//! The small things a person notices at the terminal: the context window follows `/model`
//! at once, a change coder made itself is not reported as a reload, `/compact` on an empty
//! session says so without calling the model, declining trust is not followed by advice
//! to accept it, the first turn's reminders agree, and auto-verify does not send the model
//! to fix what the environment broke.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::session::Place;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_window_follows_slash_model_at_once_and_no_reload_is_reported() {
    let server = MockModelServer::start(vec![
        MockResponse::text("hello"),
        MockResponse::text("still here"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    // No configured window: each model's own applies.
    std::fs::write(
        place.home.path().join(".config/coder/config.json"),
        r#"{"model": "gpt-4"}"#,
    )
    .unwrap();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("hi");
    let text = screen.prompt(2);
    assert!(text.contains(" / 8.2k tokens · gpt-4 · default"), "{text}");
    screen.line("/model gpt-4o");
    let text = screen.prompt(3);
    let last_status = text.lines().rev().nth(1).unwrap_or_default();
    assert!(
        last_status.ends_with(" / 128.0k tokens · gpt-4o · default · balanced permissions"),
        "{text}"
    );
    // The file watcher sees `.coder/config.json` change; coder wrote it itself, so nothing
    // is reported when the next output comes.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    screen.line("and now?");
    let text = screen.prompt(4);
    assert!(text.contains("still here"), "{text}");
    assert!(!text.contains("reloaded"), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_on_an_empty_session_says_there_is_nothing_to_compact() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("/compact");
    let text = screen.prompt(2);
    assert!(
        text.contains("\nnothing to compact: the conversation is empty"),
        "{text}"
    );
    assert!(!text.contains("compacting the conversation"), "{text}");
    assert!(!text.contains("── done"), "{text}");
    assert!(server.requests().is_empty());
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_trust_is_not_followed_by_advice_to_answer_yes() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let place = Place::new();
    place.write(".coder/config.json", r#"{"mode": "yolo"}"#);
    let mut screen = place.start(&server, &[]);
    screen.wait_for("Trust this folder?");
    screen.line("n");
    let text = screen.prompt(1);
    assert!(text.contains("Not trusted"), "{text}");
    // The notice the question showed is not repeated with advice to answer what the
    // person just declined; what is said next is how to trust it later.
    let after = text.split("Not trusted").nth(1).unwrap_or_default();
    assert!(!after.contains("is not a trusted folder"), "{text}");
    assert!(!after.contains("when coder asks"), "{text}");
    assert!(after.contains("To trust it later"), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// The first turn's reminders agree: a request that started a todo list is not also told
/// that its list is empty and that a simple step may skip it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complex_first_request_gets_reminders_that_agree() {
    let server = MockModelServer::start(vec![MockResponse::text("on it")])
        .await
        .unwrap();
    let place = Place::new();
    place.write(".coder/config.json", r#"{"requireTodoForComplex": true}"#);
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("rename the parser, move its tests and update the documentation too");
    screen.prompt(2);
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("a todo list was started"), "{sent}");
    assert!(!sent.contains("Your todo list is empty"), "{sent}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A test command that fails because of the machine (here: it needs a folder in a home
/// directory that is not there) is not a failure of the code: auto-verify stops with a
/// best-effort warning and does not send the model back to fix it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_verify_does_not_retry_a_failure_of_the_environment() {
    use std::os::unix::fs::PermissionsExt;
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "write",
            json!({"path": "src/A.java", "content": "class A {}\n"}),
        ),
        MockResponse::text("done"),
        MockResponse::text("should not be asked"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    place.write("build.gradle", "");
    place.write(
        "gradlew",
        "#!/bin/sh\nmkdir \"$HOME/missing/.gradle\" || exit 1\necho 'BUILD SUCCESSFUL'\n",
    );
    std::fs::set_permissions(
        place.workspace.path().join("gradlew"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("change A");
    let text = screen.prompt(2);
    assert!(
        text.contains("auto-verification is best-effort and stopped"),
        "{text}"
    );
    assert!(text.contains("is missing or cannot be written"), "{text}");
    assert!(!text.contains("auto-verification failed"), "{text}");
    assert_eq!(server.requests().len(), 2);
    screen.send("\x04");
    assert!(screen.exit().success());
}
