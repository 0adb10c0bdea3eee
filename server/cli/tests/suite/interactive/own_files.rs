//! coder's own files never dirty the repository: the model `/model` saves and the saved
//! sessions stay out of `git status` and `/diff`, and `/undo` takes away the folders a
//! turn made.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::told::repository;

/// `git status --porcelain` of `dir`, untracked files listed one by one.
fn git_status(dir: &std::path::Path) -> String {
    let output = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_saved_by_slash_model_and_the_sessions_stay_out_of_git() {
    let server = MockModelServer::start(vec![MockResponse::text("hello")])
        .await
        .unwrap();
    let place = repository();
    let dir = place.workspace.path();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("hi");
    screen.prompt(2);
    screen.line("/model other-model");
    let text = place.normalized(&screen.prompt(3));
    assert!(
        text.contains(
            "model: other-model (saved in <workspace>/.coder/config.json, which git ignores)"
        ),
        "{text}"
    );
    assert!(place.read(".coder/config.json").is_some());
    screen.line("/diff");
    let text = screen.prompt(4);
    assert!(text.contains("\nNo changes.\n"), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
    assert!(dir.join(".coder/sessions").is_dir());
    assert_eq!(git_status(dir), "");
}

/// A configuration the project made itself is the project's: coder writes the model in
/// it and adds no ignore rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_the_project_made_gets_no_ignore_rule() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let place = repository();
    place.write(".coder/config.json", "{\"maxSteps\": 30}\n");
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("/model other-model");
    let text = place.normalized(&screen.prompt(2));
    assert!(
        text.contains("model: other-model (saved in <workspace>/.coder/config.json)\n"),
        "{text}"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
    assert_eq!(place.read(".coder/.gitignore"), None);
    assert_eq!(
        git_status(place.workspace.path()),
        "?? .coder/config.json\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_says_per_file_what_it_did_and_removes_the_folders_the_turn_made() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "write",
            json!({"path": "edited.txt", "content": "changed\n"}),
        ),
        MockResponse::tool_call(
            "c2",
            "write",
            json!({"path": "pkg/sub/hello.py", "content": "print('hello')\n"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let place = repository();
    let dir = place.workspace.path();
    let mut screen = place.start(&server, &["--mode", "yolo"]);
    screen.prompt(1);
    screen.line("make hello");
    screen.prompt(2);
    screen.line("/undo");
    let text = screen.prompt(3);
    assert!(!dir.join("pkg").exists(), "{text}");
    assert_eq!(place.read("edited.txt").as_deref(), Some("original\n"));
    let said = text
        .split("› /undo\n")
        .nth(1)
        .and_then(|after| after.split("\n0 tokens").next().or(Some(after)))
        .unwrap_or_default();
    assert!(said.contains("undid the last turn:"), "{text}");
    assert!(said.contains("  restored edited.txt\n"), "{text}");
    assert!(
        said.contains("  deleted pkg/sub/hello.py (the turn created it)\n"),
        "{text}"
    );
    assert!(said.contains("  removed the folder pkg/sub/\n"), "{text}");
    assert!(said.contains("  removed the folder pkg/\n"), "{text}");
    // The file watcher's own bookkeeping about the folders gone is not on the screen.
    assert!(!text.contains("WARN"), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
    assert_eq!(git_status(dir), "");
}
