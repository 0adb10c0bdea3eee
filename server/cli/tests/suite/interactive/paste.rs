//! A large paste shows as one line (`[pasted 3,000 lines]`), at the prompt and in the line
//! typed during a task, and the model gets it whole.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::session::Place;
use super::typing::user_text;

/// 3,000 numbered lines, as a terminal sends a paste of them.
fn log() -> String {
    (1..=3_000).map(|n| format!("log line {n}\n")).collect()
}

fn bracketed(text: &str) -> String {
    format!("\x1b[200~{text}\x1b[201~")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_paste_at_the_prompt_is_one_line_and_is_sent_whole() {
    let server = MockModelServer::start(vec![MockResponse::text("line 1,234 failed")])
        .await
        .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.send(&format!("what failed? {}", bracketed(&log())));
    screen.wait_for("› what failed? [pasted 3,000 lines]");
    // A small paste stays as it is, line breaks and all.
    screen.send(&format!(" {}", bracketed("and\nthis")));
    screen.wait_for("[pasted 3,000 lines] and\nthis");
    screen.send("\r");
    let text = screen.prompt(2);
    assert!(text.contains("line 1,234 failed"), "{text}");
    assert!(!text.contains("log line 17"), "{text}");
    let sent = user_text(&server, 0);
    assert!(
        sent.contains("what failed? log line 1\\nlog line 2\\n"),
        "{sent:.200}"
    );
    assert!(sent.contains("log line 3000\\n and\\nthis"), "{sent:.200}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_paste_during_a_task_is_one_line_and_steers_it_whole() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "sleep 3"})),
        MockResponse::text("read your log"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("run it");
    screen.wait_for("sleep 3");
    screen.send(&format!("see {}", bracketed(&log())));
    screen.wait_for("› see [pasted 3,000 lines]▏");
    screen.send("\r");
    let text = screen.prompt(2);
    assert!(text.contains("\n› see [pasted 3,000 lines]\n"), "{text}");
    assert!(!text.contains("log line 17"), "{text}");
    let sent = user_text(&server, 1);
    assert!(
        sent.contains("see log line 1\\n") && sent.contains("log line 3000"),
        "{sent:.200}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}
