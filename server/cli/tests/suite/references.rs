//! `@` references in user input through the real binary: what the model receives (checked
//! in the requests the mock model recorded) and the `file_reference` event.

use std::path::Path;

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A workspace with a 50-line file, a file with a space in its name, a directory with an
/// ignored file, an image and git's configuration.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    let lines: String = (1..=50).map(|n| format!("line {n}\n")).collect();
    std::fs::write(root.join("src/lib.rs"), lines).unwrap();
    std::fs::write(root.join("my file.txt"), "spaced\n").unwrap();
    std::fs::create_dir_all(root.join("docs/guide")).unwrap();
    std::fs::write(root.join("docs/a.md"), "a\n").unwrap();
    std::fs::write(root.join("docs/guide/b.md"), "b\n").unwrap();
    std::fs::write(root.join("docs/skip.log"), "ignored\n").unwrap();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(root.join("dot.png"), [0x89, b'P', b'N', b'G']).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    dir
}

/// The text of every user message of the first request after the system prompt.
fn user_texts(server: &MockModelServer) -> Vec<String> {
    let requests = server.requests();
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            parts => parts
                .as_array()
                .unwrap()
                .iter()
                .map(|part| {
                    part["text"]
                        .as_str()
                        .or(part["image_url"]["url"].as_str())
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect::<Vec<_>>()
                .join("|"),
        })
        .collect()
}

async fn run(workspace: &Path, input: &str) -> (MockModelServer, Vec<Value>) {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let out = super::exec::coder_on(workspace, &server, "k", &["--json", input]).await;
    assert!(out.status.success(), "{}", super::exec::text(&out.stderr));
    let events = super::exec::text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (server, events)
}

/// The references of the input's `file_reference` event, without the text each gave the
/// model (`content`, checked apart).
fn file_references(events: &[Value]) -> Value {
    let mut references = events
        .iter()
        .find(|e| e["type"] == "file_reference")
        .map(|e| e["references"].clone())
        .unwrap_or_default();
    for reference in references.as_array_mut().into_iter().flatten() {
        if let Some(fields) = reference.as_object_mut() {
            fields.remove("content");
        }
    }
    references
}

#[tokio::test]
async fn every_reference_form_is_attached_as_a_reminder_after_the_input() {
    let dir = workspace();
    let input = "see @src/lib.rs#L10-12, @src/lib.rs#L49 and @\"my file.txt\", list @docs/ \
                 and look at @dot.png; mail me@example.com";
    let (server, events) = run(dir.path(), input).await;
    let texts = user_texts(&server);
    assert_eq!(
        texts[0], input,
        "the user's own words come first, unchanged"
    );
    let reminders = &texts[1];
    let lib_range = "<system-reminder>\nThe user's message refers to @src/lib.rs; here are its \
                     lines 10-12 of 50, numbered as the read tool numbers them:\n    10\tline \
                     10\n    11\tline 11\n    12\tline 12\n</system-reminder>";
    assert!(reminders.starts_with(lib_range), "{reminders}");
    assert!(reminders.contains("lines 49-49 of 50"), "{reminders}");
    assert!(
        reminders.contains(
            "here are its lines 1-1 of 1, numbered as the read tool numbers them:\n     1\tspaced"
        ),
        "{reminders}"
    );
    assert!(
        reminders.contains(
            "refers to the directory @docs/; its files (without those .gitignore excludes):\n\
             docs/a.md\ndocs/guide/\ndocs/guide/b.md\n</system-reminder>"
        ),
        "{reminders}"
    );
    assert!(!reminders.contains("example.com"), "{reminders}");
    assert!(reminders.contains("the image @dot.png"), "{reminders}");
    // The image goes as image input in the reminders' own message, after their text.
    assert!(
        reminders.ends_with("|data:image/png;base64,iVBORw=="),
        "{reminders}"
    );
    assert_eq!(texts.len(), 2, "no other user message: {texts:?}");
    assert_eq!(
        file_references(&events),
        json!([
            {"path": "src/lib.rs", "kind": "file", "lines": {"start": 10, "end": 12}, "truncated": false},
            {"path": "src/lib.rs", "kind": "file", "lines": {"start": 49, "end": 49}, "truncated": false},
            {"path": "my file.txt", "kind": "file", "lines": {"start": 1, "end": 1}, "truncated": false},
            {"path": "docs/", "kind": "directory", "truncated": false},
            {"path": "dot.png", "kind": "image", "truncated": false},
        ])
    );
    // Each file and directory reference carries what the model was given for it.
    let event = events
        .iter()
        .find(|e| e["type"] == "file_reference")
        .unwrap();
    let contents: Vec<&Value> = event["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["content"])
        .collect();
    let lib_text = lib_range
        .trim_start_matches("<system-reminder>\n")
        .trim_end_matches("\n</system-reminder>");
    assert_eq!(contents[0], &json!(lib_text));
    assert!(
        contents[3].as_str().unwrap().contains("docs/guide/b.md"),
        "{contents:?}"
    );
    assert_eq!(contents[4], &Value::Null, "an image has no text");
}

#[tokio::test]
async fn unknown_outside_and_protected_paths_become_reminders_not_errors() {
    let dir = workspace();
    let (server, events) = run(dir.path(), "check @../outside, @.git/config and @nope.rs").await;
    let texts = user_texts(&server);
    let reminders = &texts[1];
    assert!(
        reminders.contains("mentions @../outside, but nothing was attached for it: ../outside is outside the workspace"),
        "{reminders}"
    );
    assert!(
        reminders
            .contains("mentions @.git/config, but nothing was attached for it: it is protected"),
        "{reminders}"
    );
    assert!(!reminders.contains("[core]"), "{reminders}");
    assert!(
        reminders
            .contains("mentions @nope.rs, but nothing was attached for it: nope.rs does not exist"),
        "{reminders}"
    );
    let refs = file_references(&events);
    let kinds: Vec<(&str, &str)> = refs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("../outside", "refused"),
            (".git/config", "refused"),
            ("nope.rs", "refused")
        ]
    );
    assert!(refs[1]["error"].as_str().unwrap().contains("protected"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "task_complete" && e.get("error").is_none())
    );
}

#[tokio::test]
async fn a_long_file_is_cut_and_says_so() {
    let dir = workspace();
    let lines: String = (1..=1500).map(|n| format!("row {n}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), lines).unwrap();
    let (server, events) = run(dir.path(), "@big.txt").await;
    let reminders = &user_texts(&server)[1];
    assert!(reminders.contains("lines 1-1000 of 1500"), "{reminders}");
    assert!(reminders.contains("(cut after line 1000"), "{reminders}");
    assert!(!reminders.contains("row 1001"), "{reminders}");
    assert_eq!(
        file_references(&events),
        json!([{"path": "big.txt", "kind": "file", "lines": {"start": 1, "end": 1000}, "truncated": true}])
    );
}

#[tokio::test]
async fn the_first_input_reminds_of_todo_write_and_plain_input_gets_nothing_else() {
    let dir = workspace();
    let (server, events) = run(dir.path(), "hello").await;
    let texts = user_texts(&server);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts[1].starts_with("<system-reminder>\n") && texts[1].contains("todo_write"),
        "{texts:?}"
    );
    assert!(!events.iter().any(|e| e["type"] == "file_reference"));
}
