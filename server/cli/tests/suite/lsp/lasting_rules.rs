//! Rules that last: "always" through `coder lsp` is recorded for the project in the
//! person's own state, survives a restart, applies in another door (`coder exec`), is
//! listed by `permissions/list` and `/permissions`, and is taken away by
//! `permissions/remove`.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::Client;

fn touch(id: &str, file: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({"command": format!("touch {file}")}))
}

/// Sends `text`, answers each permission request with the next of `answers` (by option
/// id), and reads to the task's end; returns the requests asked.
async fn turn(client: &mut Client, conversation: &str, text: &str, answers: &[&str]) -> Vec<Value> {
    let mut seen = Vec::new();
    client.send_text(conversation, text, &mut seen).await;
    let mut asked = Vec::new();
    let mut answers = answers.iter();
    // A request may have come before the answer to `conversation/send`.
    let mut pending: Vec<Value> = seen
        .drain(..)
        .filter(|message| message["method"] == "permission/request")
        .collect();
    loop {
        let message = match pending.pop() {
            Some(message) => message,
            None => client.read().await,
        };
        if message["method"] == "permission/request" {
            let answer = answers.next().expect("asked more often than expected");
            client
                .write(
                    json!({"jsonrpc": "2.0", "id": message["id"], "result": {"optionId": answer}}),
                )
                .await;
            asked.push(message);
            continue;
        }
        if message["params"]["event"]["type"] == "task_complete" {
            return asked;
        }
    }
}

/// `coder exec args` in `ws`, whose `HOME` is `ws` (the person's state the editor's session
/// recorded into), against `server`; it must succeed.
async fn exec_in(ws: &std::path::Path, server: &MockModelServer, args: &[&str]) {
    let url = server.openai_base_url();
    let out = super::super::exec::coder(
        ws,
        args,
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("OPENAI_API_KEY", "k"),
            ("CODER_MODEL", "mock-model"),
            ("HOME", ws.to_str().unwrap()),
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn rules(client: &mut Client) -> Vec<Value> {
    let mut seen = Vec::new();
    let answer = client
        .request("permissions/list", json!({}), &mut seen)
        .await;
    answer["result"]["rules"].as_array().unwrap().clone()
}

#[tokio::test]
async fn always_lasts_for_the_project_across_restarts_and_doors_until_removed() {
    let server = MockModelServer::start(vec![
        touch("a1", "one.txt"),
        touch("a2", "two.txt"),
        MockResponse::text("first"),
        // After a restart: `touch one.txt` is allowed, `touch two.txt` denied, unasked.
        touch("b1", "one.txt"),
        touch("b2", "two.txt"),
        MockResponse::text("second"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let root = client.root().await;
    let asked = turn(
        &mut client,
        &root,
        "touch them",
        &["allow_always", "reject_always"],
    )
    .await;
    assert_eq!(asked.len(), 2);
    let options = &asked[0]["params"]["options"];
    assert_eq!(
        super::super::option_ids(options),
        [
            "allow_once",
            "allow_always",
            "deny",
            "reject_always",
            "refuse"
        ]
    );
    assert_eq!(options[1]["covers"], "`touch one.txt` in this project");
    assert_eq!(
        asked[1]["params"]["options"][3]["label"],
        "No, and always deny `touch two.txt` in this project"
    );
    assert!(ws.join("one.txt").exists());
    assert!(!ws.join("two.txt").exists());
    let recorded = rules(&mut client).await;
    let shapes: Vec<(&str, &str)> = recorded
        .iter()
        .map(|rule| {
            (
                rule["command"].as_str().unwrap(),
                rule["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shapes,
        [("touch one.txt", "allow"), ("touch two.txt", "deny")]
    );
    // In the person's state, never in the workspace's `.coder`.
    assert!(ws.join(".config/coder/permissions.json").is_file());
    assert!(!ws.join(".coder/permissions.json").exists());
    client.stop().await;

    std::fs::remove_file(ws.join("one.txt")).unwrap();
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let root = client.root().await;
    let asked = turn(&mut client, &root, "touch them again", &[]).await;
    assert!(asked.is_empty(), "asked again after a restart: {asked:?}");
    assert!(ws.join("one.txt").exists());
    assert!(!ws.join("two.txt").exists());
    let mut seen = Vec::new();
    let listed = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/permissions"}),
            &mut seen,
        )
        .await;
    let text = listed["result"]["text"].as_str().unwrap().to_owned();
    assert!(
        text.contains("allow `touch one.txt` in this project"),
        "{text}"
    );
    assert!(
        text.contains("deny `touch two.txt` in this project"),
        "{text}"
    );

    // Another door: `coder exec` with no terminal would deny an ask; the rule allows it.
    std::fs::remove_file(ws.join("one.txt")).unwrap();
    server.push([touch("c1", "one.txt"), MockResponse::text("third")]);
    exec_in(ws, &server, &["touch it"]).await;
    assert!(
        ws.join("one.txt").exists(),
        "coder exec did not apply the rule"
    );
    // A deny rule holds over approval without a person.
    server.push([touch("d1", "two.txt"), MockResponse::text("fourth")]);
    exec_in(ws, &server, &["--auto-approve", "touch the other"]).await;
    assert!(
        !ws.join("two.txt").exists(),
        "--auto-approve ran a call the person always denies"
    );
    // And over a mode and preset that allow everything.
    server.push([touch("e1", "two.txt"), MockResponse::text("fifth")]);
    exec_in(
        ws,
        &server,
        &["--permissions", "yolo", "--mode", "yolo", "touch the other"],
    )
    .await;
    assert!(
        !ws.join("two.txt").exists(),
        "yolo ran a call the person always denies"
    );

    // Removed one by one.
    let id = rules(&mut client).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = client
        .request("permissions/remove", json!({"id": id}), &mut seen)
        .await;
    assert_eq!(answer["result"]["removed"], true);
    let answer = client
        .request("permissions/remove", json!({"id": id}), &mut seen)
        .await;
    assert_eq!(answer["result"]["removed"], false);
    let left = rules(&mut client).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["command"], "touch two.txt");
    client.stop().await;
}
