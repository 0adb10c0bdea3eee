//! Files the session keeps, changed on disk while `coder lsp` runs: rules, skills, custom
//! commands, configuration and `.mcp.json` are read again, each reload announced by a
//! `workspace_reloaded` event; a broken file keeps its last good version with a `warning`;
//! the engine's own writes and build trees trigger nothing.
//!
//! Every wait is for a message (each read is bounded by the client's timeout), never a
//! sleep.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Client, events};

pub(super) fn write(path: &std::path::Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// The `workspace_reloaded` events among `seen`.
pub(super) fn reloads(seen: &[Value]) -> Vec<Value> {
    events(seen)
        .filter(|event| event["type"] == "workspace_reloaded")
        .cloned()
        .collect()
}

/// Reads until `seen` holds `count` reloads of `what`; returns the last.
pub(super) async fn until_reloaded(
    client: &mut Client,
    what: &str,
    count: usize,
    seen: &mut Vec<Value>,
) -> Value {
    loop {
        let of_what: Vec<Value> = reloads(seen)
            .into_iter()
            .filter(|event| event["what"] == what)
            .collect();
        if of_what.len() >= count {
            return of_what[count - 1].clone();
        }
        seen.push(client.read().await);
    }
}

/// The system prompt of the model request `index`.
fn system_of(server: &MockModelServer, index: usize) -> String {
    server.requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_changed_rules_file_is_in_the_next_tasks_prompt_after_a_reload_event() {
    let server = MockModelServer::start(vec![MockResponse::text("one"), MockResponse::text("two")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    write(&ws.join("AGENTS.md"), "OLD rule text.");
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "first", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(system_of(&server, 0).contains("OLD rule text."));

    write(&ws.join("AGENTS.md"), "NEW rule text.");
    let reload = until_reloaded(&mut client, "rules", 1, &mut seen).await;
    let agents = ws.canonicalize().unwrap().join("AGENTS.md");
    assert_eq!(reload["paths"], json!([agents.display().to_string()]));
    assert_eq!(reload["conversationId"], json!(root), "{reload}");
    assert_eq!(
        reload.get("taskId").cloned().unwrap_or(Value::Null),
        Value::Null,
        "{reload}"
    );
    client.send_text(&root, "second", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;
    let system = system_of(&server, 1);
    assert!(system.contains("NEW rule text."), "{system}");
    assert!(!system.contains("OLD rule text."), "{system}");
    client.stop().await;
}

#[tokio::test]
async fn a_broken_skill_keeps_its_last_good_version_until_fixed_and_new_skills_reach_the_prompt() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let skill = ws.join(".coder/skills/notes/SKILL.md");
    write(
        &skill,
        "---\nname: notes\ndescription: Old notes.\n---\nBody\n",
    );
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    let listed = |skills: &Value| -> Vec<String> {
        skills["result"]["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|skill| {
                format!(
                    "{}: {}",
                    skill["name"].as_str().unwrap(),
                    skill["description"].as_str().unwrap()
                )
            })
            .collect()
    };

    write(&skill, "---\nname: [not closed\n---\nBody\n");
    until_reloaded(&mut client, "skills", 1, &mut seen).await;
    let warning = events(&seen)
        .find(|event| event["type"] == "warning")
        .unwrap_or_else(|| panic!("no warning in {seen:?}"));
    let message = warning["message"].as_str().unwrap();
    assert!(message.contains("notes/SKILL.md"), "{message}");
    assert!(
        message.contains("its last good version is kept"),
        "{message}"
    );
    let skills = client.request("skill/list", json!({}), &mut seen).await;
    assert_eq!(listed(&skills), ["notes: Old notes."]);

    write(
        &skill,
        "---\nname: notes\ndescription: Fixed notes.\n---\nBody\n",
    );
    write(
        &ws.join(".coder/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Fill PDF forms.\n---\nBody\n",
    );
    // Both files may come in one batch or two: wait until the list says both.
    let mut count = 2;
    loop {
        until_reloaded(&mut client, "skills", count, &mut seen).await;
        let skills = client.request("skill/list", json!({}), &mut seen).await;
        if listed(&skills) == ["notes: Fixed notes.", "pdf: Fill PDF forms."] {
            break;
        }
        count += 1;
    }
    let root = client.root().await;
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let system = system_of(&server, 0);
    assert!(
        system.contains("- notes: Fixed notes.\n- pdf: Fill PDF forms.\n"),
        "{system}"
    );
    client.stop().await;
}

#[tokio::test]
async fn a_command_added_while_running_is_listed_and_the_engines_own_writes_reload_nothing() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    let commands = client.request("command/list", json!({}), &mut seen).await;
    assert_eq!(super::custom_commands(&commands), json!([]));
    assert_eq!(commands["result"]["commands"][0]["name"], "help");

    // `.coder/commands/` does not exist yet: it is watched once it appears.
    write(&ws.join(".coder/commands/deploy.md"), "Deploy $1.\n");
    let mut count = 1;
    loop {
        until_reloaded(&mut client, "commands", count, &mut seen).await;
        let commands = client.request("command/list", json!({}), &mut seen).await;
        if super::custom_commands(&commands)[0]["name"] == "deploy" {
            break;
        }
        count += 1;
    }

    // What the engine writes itself and build trees: then a rule, whose reload shows that
    // the watcher has seen everything written before it.
    let before = reloads(&seen).len();
    write(&ws.join(".coder/sessions/other.json"), "{}");
    write(&ws.join("target/debug/AGENTS.md"), "built");
    write(&ws.join("node_modules/x/AGENTS.md"), "vendored");
    write(&ws.join(".git/AGENTS.md"), "git");
    write(&ws.join("AGENTS.md"), "A rule.");
    until_reloaded(&mut client, "rules", 1, &mut seen).await;
    let after: Vec<Value> = reloads(&seen)[before..].to_vec();
    let agents = ws.canonicalize().unwrap().join("AGENTS.md");
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0]["what"], "rules");
    assert_eq!(after[0]["paths"], json!([agents.display().to_string()]));
    client.stop().await;
}

#[tokio::test]
async fn a_configuration_key_that_cannot_change_live_says_it_needs_a_restart() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    write(&ws.join(".coder/config.json"), r#"{"mode": "plan"}"#);
    while !events(&seen).any(|event| event["type"] == "warning") {
        seen.push(client.read().await);
    }
    let warning = events(&seen)
        .find(|event| event["type"] == "warning")
        .unwrap();
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains(".coder/config.json changed mode"),
        "{message}"
    );
    assert!(message.contains("only apply after a restart"), "{message}");
    assert_eq!(reloads(&seen), Vec::<Value>::new());
    client.stop().await;
}

#[tokio::test]
async fn the_skill_tool_loads_the_last_good_body_of_a_broken_skill() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "skill", json!({"name": "notes"})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let skill = ws.join(".coder/skills/notes/SKILL.md");
    write(
        &skill,
        "---\nname: notes\ndescription: Notes.\n---\nGOOD instructions.\n",
    );
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    write(
        &skill,
        "---\nname: [not closed\n---\nBROKEN instructions.\n",
    );
    until_reloaded(&mut client, "skills", 1, &mut seen).await;

    let root = client.root().await;
    client.send_text(&root, "use notes", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let completed = events(&seen)
        .find(|event| event["type"] == "tool_call_completed" && event["callId"] == "c1")
        .unwrap_or_else(|| panic!("the skill call did not complete: {seen:?}"));
    let output = completed["output"].as_str().unwrap();
    assert!(output.contains("GOOD instructions."), "{output}");
    assert!(!output.contains("BROKEN"), "{output}");
    client.stop().await;
}
