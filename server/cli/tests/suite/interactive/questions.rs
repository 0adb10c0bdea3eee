//! The model's questions (`ask_user`): shown with what each choice means, answered by one
//! key, or in the person's own words, and the answers reach the model.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::session::{Place, last_tool_result};

fn ask(id: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "ask_user",
        json!({"questions": [
            {"question": "Which runtime should the server use?", "header": "Runtime",
             "options": [
                {"label": "Tokio", "description": "async, the usual choice"},
                {"label": "Threads", "description": "one thread per connection"}]},
            {"question": "What should the binary be called?", "header": "Name",
             "options": [
                {"label": "serve", "description": "short"},
                {"label": "coder-serve", "description": "namespaced"}]}
        ]}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_s_questions_are_answered_by_a_key_or_in_one_s_own_words() {
    let server = MockModelServer::start(vec![ask("q1"), MockResponse::text("Going with it.")])
        .await
        .unwrap();
    let place = Place::new();
    // Even where calls run unasked, a question waits for the person.
    let mut screen = place.start(&server, &["--permissions", "yolo"]);
    screen.prompt(1);
    screen.line("start a server");
    let text = screen.wait_for("? [1] Tokio / [2] Threads");
    assert!(text.contains("question from the model · Runtime"), "{text}");
    assert!(
        text.contains("  Which runtime should the server use?"),
        "{text}"
    );
    assert!(
        text.contains("  2. Threads — one thread per connection"),
        "{text}"
    );
    screen.send("2");
    screen.wait_for("→ Threads");
    screen.wait_for("? [1] serve / [2] coder-serve");
    screen.send("o");
    screen.wait_for("your answer (Enter to give none)");
    screen.line("call it srv");
    let text = screen.prompt(2);
    assert!(text.contains("Going with it."), "{text}");
    let result = last_tool_result(&server);
    assert!(
        result.contains("\"Which runtime should the server use?\" → \"Threads\""),
        "{result}"
    );
    assert!(
        result.contains(
            "\"What should the binary be called?\" → in their own words: \"call it srv\""
        ),
        "{result}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_left_unanswered_lets_the_model_decide_and_esc_ends_it() {
    let server = MockModelServer::start(vec![
        ask("q1"),
        MockResponse::text("I chose Tokio."),
        ask("q2"),
        MockResponse::text("never read"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("start a server");
    screen.wait_for("? [1] Tokio / [2] Threads");
    screen.send("n");
    screen.wait_for_count("→ No answer: let the model decide", 1);
    screen.wait_for("? [1] serve / [2] coder-serve");
    screen.send("n");
    screen.prompt(2);
    let result = last_tool_result(&server);
    assert!(
        result
            .contains("\"Which runtime should the server use?\" → no answer (they leave it to you"),
        "{result}"
    );
    // Ctrl+C at a question interrupts the task; the model is not asked again.
    screen.line("again");
    screen.wait_for_count("? [1] Tokio / [2] Threads", 2);
    screen.send("\x03");
    let text = screen.prompt(3);
    assert!(text.contains("interrupted"), "{text}");
    assert_eq!(server.requests().len(), 3);
    screen.send("\x04");
    assert!(screen.exit().success());
}
