//! Keys at the prompt that act before the line is sent: Shift+Tab switches to the next
//! mode (as `/mode` does, within the configured mode), Ctrl+G and `/edit` open the person's
//! editor on the line; what was typed stays.

use coder_testkit::{MockModelServer, MockResponse};

use super::session::Place;

/// The line before the last prompt: context, model, mode, preset.
fn status(text: &str) -> String {
    text.lines().rev().nth(1).unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_tab_cycles_the_modes_within_the_configured_one_and_keeps_the_line() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "auto-edit"]);
    screen.prompt(1);
    screen.send("half typed");
    // yolo is looser than the configured auto-edit: skipped.
    screen.send("\x1b[Z");
    let text = screen.prompt_holding(2, "› half typed");
    assert!(status(&text).contains("· plan ·"), "{text}");
    assert_eq!(text.matches("mode: plan").count(), 1, "said once: {text}");
    screen.send("\x1b[Z");
    let text = screen.prompt_holding(3, "› half typed");
    assert!(status(&text).contains("· default ·"), "{text}");
    screen.send("\x1b[Z");
    let text = screen.prompt_holding(4, "› half typed");
    assert!(status(&text).contains("· auto-edit ·"), "{text}");
    screen.send("\r");
    screen.prompt(5);
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("half typed"), "{sent}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_g_and_slash_edit_write_the_line_in_the_editor() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let place = Place::new();
    // An editor that marks what it is given as edited.
    let editor = place.home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'edited: %s\\n' \"$(cat \"$1\")\" > \"$1\"\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut screen = place.start_with(&server, &[], &[("EDITOR", editor.display().to_string())]);
    screen.prompt(1);
    screen.send("first words");
    screen.send("\x07");
    screen.prompt_holding(2, "› edited: first words");
    screen.send("\r");
    screen.prompt(3);
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("edited: first words"), "{sent}");
    // `/edit` starts from an empty line.
    screen.line("/edit");
    screen.prompt_holding(4, "› edited:");
    screen.send("\x03");
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A path to an image dragged onto the terminal (quoted, as terminals write it) attaches the
/// image, even from outside the workspace; a file that only calls itself an image is not
/// read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dragged_image_path_attaches_the_image() {
    let server = MockModelServer::start(vec![MockResponse::text("a red dot")])
        .await
        .unwrap();
    let place = Place::new();
    let shots = place.home.path().join("Screen Shots");
    std::fs::create_dir_all(&shots).unwrap();
    std::fs::write(shots.join("dot.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    std::fs::write(
        shots.join("key.png"),
        b"-----BEGIN OPENSSH PRIVATE KEY-----",
    )
    .unwrap();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line(&format!(
        "what is in '{}' and '{}' ",
        shots.join("dot.png").display(),
        shots.join("key.png").display()
    ));
    let text = screen.prompt(2);
    assert!(
        text.contains("not attached: ")
            && text.contains("does not hold an image of type image/png"),
        "{text}"
    );
    let messages = server.requests()[0].body["messages"].to_string();
    assert!(
        messages.contains("data:image/png;base64,iVBORw0KGg"),
        "{messages}"
    );
    assert!(
        messages.contains("what is in [image: dot.png] and '"),
        "{messages}"
    );
    assert!(
        !messages.contains("LS0tLS1CRUdJTi"),
        "the key is never sent: {messages}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// With `notifications` set, a task that ran a while, or an approval, rings the bell or
/// sends a desktop notification, only when the terminal reported losing the focus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_call_only_when_the_window_is_not_focused() {
    let server = MockModelServer::start(vec![
        MockResponse::text("slow one").with_delay(1_500),
        MockResponse::text("slow two").with_delay(1_500),
        MockResponse::tool_call("c1", "bash", serde_json::json!({"command": "touch x"}))
            .with_delay(1_500),
        MockResponse::text("made it"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    std::fs::write(
        place.home.path().join(".config/coder/config.json"),
        r#"{"model": "mock-model", "contextWindow": 32000, "notifications": "desktop", "notifyAfterSeconds": 1}"#,
    )
    .unwrap();
    let mut screen = place.start(&server, &[]);
    let notification = "\x1b]9;coder finished the task\x1b\\\x07";
    screen.prompt(1);
    // Focused all along: nothing.
    screen.line("one");
    screen.prompt(2);
    assert!(
        !screen.raw().contains("\x1b]9;"),
        "no notification while focused"
    );
    // The window loses the focus while the task runs: called when it ends.
    screen.line("two");
    screen.wait_for("esc to interrupt");
    screen.send("\x1b[O");
    screen.prompt(3);
    assert_eq!(screen.raw().matches(notification).count(), 1);
    // An approval waits while the window is not focused.
    screen.line("three");
    screen.wait_for("esc to interrupt");
    screen.send("\x1b[O");
    screen.wait_for("? [y] Yes, allow it this once");
    let raw = screen.raw();
    assert!(
        raw.contains("\x1b]9;coder is waiting for an approval\x1b\\\x07"),
        "{raw:?}"
    );
    screen.send("y");
    screen.prompt(4);
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A tool's duration leaves out the time the person took to answer its approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_s_duration_leaves_out_the_time_spent_answering() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", serde_json::json!({"command": "touch x"})),
        MockResponse::text("made it"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("make x");
    screen.wait_for("? [y] Yes, allow it this once");
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    screen.send("y");
    let text = screen.prompt(2);
    let line = text
        .lines()
        .find(|line| line.starts_with("• bash touch x"))
        .unwrap_or_else(|| panic!("{text}"));
    let ms: u64 = regex::Regex::new(r"\((\d+) ms\)$")
        .unwrap()
        .captures(line)
        .and_then(|found| found[1].parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(ms < 2_000, "{line}");
    screen.send("\x04");
    assert!(screen.exit().success());
}
