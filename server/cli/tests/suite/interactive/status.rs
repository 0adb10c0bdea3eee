//! What the terminal says about the session's state: the line before each prompt (context,
//! model, mode and permission preset), a mode switch said once, and `/tools` listing what
//! the next request really carries.

use coder_testkit::MockModelServer;
use serde_json::json;

use super::session::Place;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_line_names_the_preset_and_a_mode_switch_is_said_once() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &["--permissions", "strict"]);
    let text = screen.prompt(1);
    assert!(
        text.contains("tokens · mock-model · default · strict permissions"),
        "{text}"
    );
    screen.line("/plan");
    let text = screen.prompt(2);
    let said = text.split("› /plan").nth(1).unwrap_or_default();
    assert_eq!(
        said.matches("plan").count(),
        2,
        "once, then on the prompt line: {said}"
    );
    assert!(said.contains("· plan · strict permissions"), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_lists_what_the_next_request_carries_with_mcp_tools_and_plan_mode_s_own() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let place = Place::new();
    place.with_everything_server(json!({}));
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    // The server starts in the background: asked again until its tools are there.
    let mut prompts = 1;
    let listing = loop {
        screen.line("/tools");
        prompts += 1;
        let text = screen.prompt(prompts);
        let listing = text
            .rsplit("› /tools")
            .next()
            .unwrap_or_default()
            .to_owned();
        if listing.contains("MCP tools:") || prompts > 40 {
            break listing;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    assert!(listing.contains("\n  ev__echo "), "{listing}");
    assert!(listing.contains("\n  write "), "{listing}");
    assert!(
        !listing.contains("exit_plan_mode"),
        "not outside plan mode: {listing}"
    );
    // One sentence per tool.
    assert!(
        listing.contains("  edit             Replace an exact string in a file.\n"),
        "{listing}"
    );
    screen.line("/plan");
    screen.prompt(prompts + 1);
    screen.line("/tools");
    let text = screen.prompt(prompts + 2);
    let listing = text.rsplit("› /tools").next().unwrap_or_default();
    assert!(listing.contains("\n  exit_plan_mode "), "{listing}");
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// `/diff full` is coloured as a diff: added lines green, removed ones red.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_full_is_coloured_as_a_diff() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let place = super::told::repository();
    place.write("edited.txt", "changed\n");
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("/diff full");
    let text = screen.prompt(2);
    assert!(text.contains("-original\n+changed"), "{text}");
    let added = screen.style_of("+changed").unwrap();
    let removed = screen.style_of("-original").unwrap();
    assert!(added.colored && removed.colored, "{added:?} {removed:?}");
    assert_ne!(screen.color_of("+changed"), screen.color_of("-original"));
    screen.send("\x04");
    assert!(screen.exit().success());
}
