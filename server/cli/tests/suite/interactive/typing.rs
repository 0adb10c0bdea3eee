//! Typing while a task runs: the line shows below the output and never in it; Enter steers
//! the running task, Tab queues behind it, Esc interrupts, and what was typed but not sent
//! starts the next prompt. While the model is quiet, a status line says the task works.

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::json;

use super::session::Place;

/// Every user message of request `n`, joined.
pub(super) fn user_text(server: &MockModelServer, n: usize) -> String {
    server.requests()[n].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(|message| message["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_typed_while_a_command_runs_shows_below_it_and_steers_the_task() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "sleep 3"})),
        MockResponse::text("heard you"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("run it");
    screen.wait_for("sleep 3");
    screen.send("also check the readme");
    // Shown as a live line, below the running command.
    let text = screen.wait_for("› also check the readme▏");
    let last = text.lines().last().unwrap_or_default().to_owned();
    assert!(last.starts_with("› also check the readme▏"), "{text}");
    screen.send("\r");
    let text = screen.prompt(2);
    assert!(text.contains("\n› also check the readme\n"), "{text}");
    assert!(
        text.contains("↳ your message went to the model with its request 2"),
        "{text}"
    );
    assert!(text.contains("heard you"), "{text}");
    // The model read it with the command's result, in the same task.
    assert_eq!(server.requests().len(), 2);
    assert!(
        user_text(&server, 1).contains("also check the readme"),
        "{}",
        user_text(&server, 1)
    );
    // Typed keys never landed in the output: the line appears once, as sent.
    assert_eq!(text.matches("also check the readme").count(), 1, "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_interrupts_and_a_line_not_sent_starts_the_next_prompt() {
    let server = MockModelServer::start(vec![
        // Text for ten seconds, unless interrupted.
        MockResponse::stream((0..500).map(|_| Chunk::text("more ")).collect()).with_delay(20),
        MockResponse::text("answered"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("talk");
    screen.wait_for("more more");
    screen.send("next question");
    screen.send("\x1b");
    // The prompt starts with what was typed; Enter sends it as the next input.
    let text = screen.wait_until("a prompt holding the line typed", |text| {
        text.lines()
            .last()
            .is_some_and(|line| line.ends_with("› next question"))
    });
    assert!(text.contains("── interrupted"), "{text}");
    assert!(server.requests().len() == 1, "nothing sent yet");
    screen.send("\r");
    let text = screen.prompt(3);
    assert!(text.contains("answered"), "{text}");
    assert!(user_text(&server, 1).contains("next question"));
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_line_shows_while_the_model_is_quiet_and_tab_queues_a_line() {
    let server = MockModelServer::start(vec![
        MockResponse::text("slow answer").with_delay(2_500),
        MockResponse::text("the queued one ran"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("wait");
    let text = screen.wait_for("esc to interrupt");
    assert!(text.contains("working"), "{text}");
    screen.send("afterwards\t");
    let text = screen.wait_for("queued: it runs after this task");
    assert!(text.contains("› afterwards"), "{text}");
    let text = screen.wait_for("the queued one ran");
    assert!(text.contains("slow answer"), "{text}");
    screen.prompt(2);
    assert_eq!(server.requests().len(), 2);
    assert!(user_text(&server, 1).contains("afterwards"));
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A live line is never wider than the terminal, so redrawing it leaves no copies behind:
/// a running command whose title is longer than 60 columns, at 60 columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_running_command_s_line_never_wraps_at_60_columns() {
    let command = format!("sleep 2 && echo {}", "x".repeat(90));
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({ "command": command })),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let env = super::screen::env(place.home.path(), &server);
    let mut screen =
        super::Screen::start_sized(place.workspace.path(), &["--mode", "yolo"], &env, 60);
    screen.prompt(1);
    screen.line("run it");
    let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    // Redrawn for a second and a half, the line is on the screen once.
    let text = screen.wait_for("1.8s");
    let spinning = text.lines().filter(|line| line.starts_with(frames)).count();
    assert_eq!(spinning, 1, "{text}");
    let text = screen.prompt(2);
    // None was left on the screen.
    assert!(!text.lines().any(|line| line.starts_with(frames)), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A rate-limited request is retried with the reason and a countdown in the status line,
/// not in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_shows_its_reason_and_counts_down_in_the_status_line() {
    let server = MockModelServer::start(vec![
        MockResponse::rate_limited(3),
        MockResponse::text("answered after the wait"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("hello");
    let text = screen.wait_until("the countdown", |text| {
        text.lines().any(|line| {
            line.contains("working") && line.contains("retry 1 of") && line.contains("in 2s")
        })
    });
    let status = text
        .lines()
        .find(|line| line.contains("working") && line.contains("retry 1 of"))
        .unwrap_or_default();
    assert!(
        status.contains("429") && status.ends_with("esc to interrupt"),
        "{text}"
    );
    let text = screen.wait_for("── done");
    assert!(text.contains("answered after the wait"), "{text}");
    assert!(!text.lines().any(|line| line.contains("working")), "{text}");
    screen.prompt(2);
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A command interrupted with Esc keeps what it printed: on the screen, and in what the
/// model is told about the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_command_s_output_stays_for_the_person_and_the_model() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "echo step-one; echo step-two; sleep 20; echo never"}),
        ),
        MockResponse::text("noted"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("run it");
    screen.wait_for("│ step-two");
    screen.send("\x1b");
    screen.wait_for("── interrupted");
    let text = screen.prompt(2);
    assert!(text.contains("  │ step-one\n  │ step-two"), "{text}");
    screen.line("what did it print?");
    screen.prompt(3);
    let messages = server.requests()[1].body["messages"].clone();
    let told = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    assert!(
        told.contains("Output:\nstep-one\nstep-two\n"),
        "the model is told the partial output: {told}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A long output shows its first and its last lines, and says how many are between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_output_shows_its_head_and_its_tail() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "sleep 1; seq 1 500"})),
        MockResponse::tool_call("c2", "bash", json!({"command": "seq 1001 1300"})),
        MockResponse::text("counted"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("count");
    let text = screen.prompt(2);
    // Streamed (the first ran long enough) and shown whole once done (the second).
    for (first, last) in [(1, 500), (1001, 1300)] {
        let head = format!("  │ {first}\n");
        let tail = format!("  │ {last}\n");
        assert!(text.contains(&head) && text.contains(&tail), "{text}");
        assert!(!text.contains(&format!("  │ {}\n", first + 40)), "{text}");
        assert!(text.contains(&format!("  │ {}\n", last - 39)), "{text}");
    }
    assert!(text.contains("  │ … 420 lines not shown …"), "{text}");
    assert!(text.contains("  │ … 220 lines not shown …"), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// Another conversation's reply, streamed with pauses, stays on the screen, under one
/// label, while the live lines are drawn below it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_reply_s_unfinished_line_stays_while_the_status_line_shows() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "Summarise."}),
        ),
        MockResponse::stream(vec![
            coder_testkit::Chunk::text("partial words "),
            coder_testkit::Chunk::text("then the rest.\n"),
        ])
        .with_delay(1_500),
        MockResponse::text("Root answer."),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("delegate");
    screen.wait_for("partial words");
    // The running call's line shows once the output is quiet; the words stay.
    let text = screen.wait_for("Use `conv_create`");
    assert!(text.contains("partial words"), "{text}");
    let text = screen.prompt(2);
    assert!(text.contains("partial words then the rest."), "{text}");
    assert_eq!(text.matches("[conversation ").count(), 1, "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}
