//! Tab at the prompt: a built-in command's argument (`/mode`, `/permissions`, `/model`,
//! `/resume`) from the choices the engine offers, and `@` paths matched fuzzily.

use coder_testkit::{MockModelServer, MockResponse};

use super::Screen;
use super::session::Place;

/// What Tab listed below the first line that shows `› {typed}` (what Tab completed may
/// follow it on that line), up to the end of the screen.
fn listed(screen: &Screen, typed: &str, choices: &[&str]) -> String {
    let marker = format!("› {}", typed.trim_end());
    let below = |text: &str| {
        text.lines()
            .skip_while(|line| !line.contains(marker.as_str()))
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let text = screen.wait_until(&format!("the choices for `{typed}`"), |text| {
        let below = below(text);
        choices.iter().all(|choice| below.contains(choice))
    });
    below(&text)
}

/// Types `typed`, Tab twice (the second lists), and clears the line again.
fn list_choices(screen: &mut Screen, typed: &str, choices: &[&str]) -> String {
    screen.send(&format!("{typed}\t\t"));
    let listing = listed(screen, typed, choices);
    screen.send("\x15");
    screen.wait_until("the line cleared", |text| {
        text.lines().last().is_some_and(|line| line.ends_with('›'))
    });
    listing
}

/// The ids of the sessions saved in the workspace, oldest first (ids are UUIDv7: they sort
/// by the time they were made).
fn saved_sessions(place: &Place) -> Vec<String> {
    let mut saved: Vec<String> = std::fs::read_dir(place.workspace.path().join(".coder/sessions"))
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    saved.sort();
    saved
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_completes_the_arguments_of_mode_permissions_model_and_resume() {
    let server = MockModelServer::start(vec![
        MockResponse::text("noted"),
        MockResponse::text("noted again"),
    ])
    .await
    .unwrap();
    let place = Place::new();
    // Two saved sessions, one after the other.
    for line in ["the older session", "the newer session"] {
        let mut screen = place.start(&server, &[]);
        screen.prompt(1);
        screen.line(line);
        screen.prompt(2);
        screen.send("\x04");
        assert!(screen.exit().success());
    }
    let saved = saved_sessions(&place);
    assert_eq!(saved.len(), 2, "{saved:?}");
    let (older, newer) = (&saved[0], &saved[1]);

    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    let modes = list_choices(
        &mut screen,
        "/mode ",
        &["plan", "default", "auto-edit", "yolo"],
    );
    assert!(modes.starts_with("plan"), "{modes}");
    screen.send("/mode y\t");
    screen.wait_for("› /mode yolo");
    screen.send("\x15");

    let presets = list_choices(
        &mut screen,
        "/permissions ",
        &["strict", "balanced", "auto-edit", "yolo"],
    );
    assert!(presets.starts_with("strict"), "{presets}");
    screen.send("/permissions ba\t");
    screen.wait_for("› /permissions balanced");
    screen.send("\x15");

    // The model in use first, then the models the engine knows.
    let models = list_choices(&mut screen, "/model ", &["mock-model — in use", "gpt-4o"]);
    assert!(models.starts_with("mock-model — in use"), "{models}");
    screen.send("/model gpt-4.1-m\t");
    screen.wait_for("› /model gpt-4.1-mini");
    screen.send("\x15");

    // The saved sessions, newest first, with what each began with.
    let sessions = list_choices(&mut screen, "/resume ", &[older, newer]);
    assert!(sessions.starts_with(newer.as_str()), "{sessions}");
    assert!(sessions.contains("the newer session"), "{sessions}");
    screen.send(&format!("/resume {}\t", &older[..20]));
    screen.wait_for(&format!("› /resume {older}"));
    screen.send("\r");
    screen.wait_for("resumed session");
    screen.prompt(2);
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_paths_complete_fuzzily() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let place = Place::new();
    place.write("src/main.rs", "fn main() {}\n");
    place.write("src/lib.rs", "\n");
    place.write("docs/guide.md", "\n");
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.send("look at @mainrs\t");
    screen.wait_for("› look at @src/main.rs");
    screen.send("\x15");
    screen.send("and @gdmd\t");
    screen.wait_for("› and @docs/guide.md");
    screen.send("\x15\x04");
    assert!(screen.exit().success());
}
