//! Seed 004's workflow at the terminal: `/undo`, the auto-verify loop, `/model` persisted.

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::json;

use super::session::Place;

use super::told::git;

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

/// `/rewind` lists the points, `/rewind N` shows what it would change and asks; no leaves
/// everything as it is, yes goes back. `/fork N` starts a new session from a point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_lists_the_points_previews_asks_then_goes_back_and_fork_starts_a_session() {
    let server = MockModelServer::start(vec![
        write_call("c1", "edited.txt", "changed by the model\n"),
        MockResponse::text("done"),
        write_call("c2", "created.txt", "new\n"),
        MockResponse::text("made it"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let dir = place.workspace.path();
    place.write("edited.txt", "original\n");
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "start"]);
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("change the file");
    screen.prompt(2);
    screen.line("make another\nwith a second line");
    screen.prompt(3);
    screen.line("/rewind");
    let text = screen.prompt(4);
    assert!(text.contains("    0  change the file"), "{text}");
    assert!(text.contains("    1  make another\n"), "{text}");
    assert!(!text.contains("1  make another\nwith"), "{text}");

    screen.line("/rewind 0");
    screen.wait_for("Rewind? [y/N]");
    let text = screen.text();
    assert!(text.contains("would restore edited.txt"), "{text}");
    assert!(text.contains("would remove created.txt"), "{text}");
    screen.send("n");
    let text = screen.prompt(5);
    assert!(text.contains("not rewound"), "{text}");
    assert_eq!(place.read("created.txt").as_deref(), Some("new\n"));

    screen.line("/rewind 1");
    // The second question: the first is still on the screen.
    screen.wait_for_count("Rewind? [y/N]", 2);
    screen.send("y");
    let text = screen.prompt(6);
    assert!(
        text.contains("rewound the conversation to before point 1"),
        "{text}"
    );
    assert_eq!(place.read("created.txt"), None);
    assert_eq!(
        place.read("edited.txt").as_deref(),
        Some("changed by the model\n")
    );

    screen.line("/fork 0");
    let text = screen.prompt(7);
    assert!(text.contains("no file was touched"), "{text}");
    screen.line("/rewind");
    let text = screen.prompt(8);
    assert!(text.contains("no points to go back to"), "{text}");
    screen.line("/fork x");
    let text = screen.prompt(9);
    assert!(
        text.contains("error: /fork N: N is a point's number"),
        "{text}"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_shows_thinking_todos_an_edits_diff_before_it_is_approved_and_what_tools_found() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::thinking("The parser needs a guard first."),
            Chunk::tool_call(
                "t1",
                "todo_write",
                json!({"todos": [{"content": "guard the parser", "status": "in_progress"}]}),
            ),
        ]),
        MockResponse::tool_call("g1", "grep", json!({"pattern": "fn parse"})),
        write_call("w1", "src/parser.rs", "fn parse() { guard(); }\n"),
        MockResponse::tool_call("s1", "bash", json!({"command": "sleep 1"})),
        MockResponse::text("guarded"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    place.write("Cargo.toml", "[package]\nname = \"p\"\n");
    place.write("src/parser.rs", "fn parse() {}\n");
    // `cargo test` here is a stand-in that passes, first on PATH.
    let bin = place.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("cargo"), "#!/bin/sh\necho 'test result: ok'\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut screen = place.start_with(&server, &["--permissions", "balanced"], &[("PATH", path)]);
    screen.prompt(1);
    screen.line("guard the parser and verify it");
    // The edit is asked about with its diff on screen, before the file changes.
    let asked = screen.wait_for("? [y] Yes, allow it this once");
    assert!(asked.contains("+fn parse() { guard(); }"), "{asked}");
    assert!(
        asked.contains("`write` on files under `src/` in this project"),
        "{asked}"
    );
    assert_eq!(place.read("src/parser.rs").unwrap(), "fn parse() {}\n");
    screen.send("y");
    screen.wait_for_count("? [y] Yes, allow it this once", 2);
    screen.send("y");
    // Then the verification command, asked about as any command.
    screen.wait_for_count("? [y] Yes, allow it this once", 3);
    screen.send("y");
    let text = screen.prompt(2);
    // Thinking is labelled and set apart by a bar, so it never reads as the answer.
    assert!(
        text.contains("✻ thinking\n┊ The parser needs a guard first.\n\n"),
        "{text}"
    );
    assert!(text.contains("guard the parser"), "{text}");
    // What grep found is shown under its line.
    assert!(text.contains("  │ src/parser.rs"), "{text}");
    // The diff the approval showed is not shown again once the write is done.
    assert_eq!(
        text.matches("+fn parse() { guard(); }").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("auto-verification passed: `cargo test`"),
        "{text}"
    );
    let raw = screen.raw();
    assert!(
        ['⠙', '⠹', '⠸'].iter().any(|frame| raw.contains(*frame)),
        "no spinner frame while `sleep 1` ran"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}
