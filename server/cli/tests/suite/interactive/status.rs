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

/// `/status` at the prompt: the model and where it is reached, the mode and preset in force,
/// the context the last turn used against the window, the session's id and file, the
/// workspace's trust, the sandbox and the MCP servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_where_the_session_stands() {
    let server =
        coder_testkit::MockModelServer::start(vec![coder_testkit::MockResponse::text("hello")])
            .await
            .unwrap();
    let place = Place::new();
    let workspace = place.workspace.path().canonicalize().unwrap();
    // Wide enough that no line of the answer wraps, whatever the temporary folder's path.
    let env = super::screen::env(place.home.path(), &server);
    let mut screen = super::Screen::start_sized(
        place.workspace.path(),
        &["--permissions", "strict"],
        &env,
        400,
    );
    screen.prompt(1);
    screen.line("hi");
    screen.prompt(2);
    screen.line("/plan");
    screen.prompt(3);
    screen.line("/status");
    let text = screen.prompt(4);
    let said = text.rsplit("› /status").next().unwrap_or_default();
    let line = |start: &str| {
        said.lines()
            .find(|line| line.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?}: {said}"))
            .to_owned()
    };
    assert!(
        line("model: ").starts_with("model: mock-model (OpenAI API at 127.0.0.1:"),
        "{said}"
    );
    assert_eq!(line("mode: "), "mode: plan");
    assert_eq!(line("permissions: "), "permissions: strict");
    let context = line("context: ");
    assert!(
        context.contains(" of 32,000 tokens (") && !context.starts_with("context: 0 "),
        "{context}"
    );
    let session = line("session: ");
    let id = session.trim_start_matches("session: ");
    assert_eq!(id.len(), 36, "{session}");
    assert_eq!(
        line("workspace: "),
        format!(
            "workspace: {} (not trusted: its own files may only narrow your settings)",
            workspace.display()
        )
    );
    line("sandbox: ");
    assert_eq!(line("MCP servers: "), "MCP servers: none");
    assert_eq!(
        line("saved in: "),
        format!(
            "saved in: {}",
            workspace
                .join(format!(".coder/sessions/{id}.json"))
                .display()
        )
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}

/// A command's text is word-wrapped to the terminal's width, a column's continuation under
/// its column: `/tools` at 60 and 200 columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_text_wraps_at_the_width_under_its_column() {
    let mut continued = Vec::new();
    for cols in [60u16, 200] {
        let server = MockModelServer::start(Vec::new()).await.unwrap();
        let place = Place::new();
        let env = super::screen::env(place.home.path(), &server);
        let mut screen = super::Screen::start_sized(place.workspace.path(), &[], &env, cols);
        screen.prompt(1);
        screen.line("/tools");
        let text = screen.prompt(2);
        let listing: Vec<&str> = text
            .lines()
            .skip_while(|line| *line != "Tools:")
            .skip(1)
            .take_while(|line| line.starts_with("  "))
            .collect();
        assert!(listing.len() > 10, "{text}");
        for line in &listing {
            assert!(line.chars().count() < usize::from(cols), "{cols}: {line:?}");
            // A name, or a continuation under the descriptions' column.
            assert!(
                line.starts_with("  ")
                    && (!line.starts_with("   ") || line.starts_with(&" ".repeat(19))),
                "{cols}: {line:?}"
            );
        }
        continued.push(
            listing
                .iter()
                .filter(|line| line.starts_with("   "))
                .count(),
        );
        screen.send("\x04");
        assert!(screen.exit().success());
    }
    // Long descriptions go on under their column, more often when the terminal is narrow.
    assert!(
        continued[0] > continued[1] && continued[1] > 0,
        "{continued:?}"
    );
}
