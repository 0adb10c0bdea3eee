//! `command/list`, `skill/list` and a slash command sent through `conversation/send`.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::Client;

fn write(path: &std::path::Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

#[tokio::test]
async fn commands_and_skills_are_listed_and_a_command_expands() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    write(
        &ws.join(".coder/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1.\n",
    );
    // `HOME` is the workspace: the user-level folder is `.config/coder`.
    write(&ws.join(".config/coder/commands/greet.md"), "Say hello.\n");
    write(
        &ws.join(".config/coder/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Write release notes.\n---\nBody\n",
    );
    let mut client = Client::start(ws, &server, "balanced");
    let init = client.initialize(json!({})).await;
    let methods = &init["result"]["capabilities"]["experimental"]["coder"]["methods"];
    assert!(methods.as_array().unwrap().contains(&json!("command/list")));
    let mut seen = Vec::new();

    let commands = client.request("command/list", json!({}), &mut seen).await;
    // The built-in commands first, then the custom ones.
    assert_eq!(commands["result"]["commands"][0]["name"], "help");
    assert_eq!(commands["result"]["commands"][0]["source"], "builtin");
    assert_eq!(
        super::custom_commands(&commands),
        json!([
            {"name": "greet", "description": "Say hello.", "source": "user",
             "path": ws.join(".config/coder/commands/greet.md").display().to_string(),
             "body": "Say hello.\n"},
            {"name": "review", "description": "Review a file", "argumentHint": "<file>",
             "source": "workspace",
             "path": ws.join(".coder/commands/review.md").display().to_string(),
             "body": "Review $1.\n"},
        ])
    );
    let skills = client.request("skill/list", json!({}), &mut seen).await;
    assert_eq!(
        skills["result"],
        json!({"skills": [
            {"name": "notes", "description": "Write release notes.", "source": "user",
             "path": ws.join(".config/coder/skills/notes/SKILL.md").display().to_string()},
        ]})
    );

    let root = client.root().await;
    let refused = client
        .request(
            "conversation/send",
            json!({"conversationId": root, "text": "/nosuch"}),
            &mut seen,
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("unknown command /nosuch; known commands: /help,")
            && message.ends_with("/diff, /undo, /rewind, /fork, /edit, /greet, /review"),
        "{message}"
    );
    assert!(server.requests().is_empty());

    client.send_text(&root, "/review lib.rs", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "Review lib.rs.\n"
    );
    client.stop().await;
}

#[tokio::test]
async fn conversation_command_runs_built_in_commands_and_refuses_unknown_ones() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let command = |text: &'static str| json!({"conversationId": root, "command": text});
    let help = client
        .request("conversation/command", command("/help"), &mut seen)
        .await;
    assert!(
        help["result"]["text"]
            .as_str()
            .unwrap()
            .contains("/compact"),
        "{help}"
    );
    let plan = client
        .request("conversation/command", command("/plan"), &mut seen)
        .await;
    assert_eq!(plan["result"], json!({"text": "mode: plan"}));
    // The mode changed on the wire too.
    client.until_events("mode_changed", 1, &mut seen).await;
    let made = client
        .request("conversation/command", command("/new"), &mut seen)
        .await;
    assert!(made["result"]["conversationId"].is_string(), "{made}");
    let unknown = client
        .request("conversation/command", command("/nosuch"), &mut seen)
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(unknown["error"]["data"]["kind"], "invalid_params");
    assert!(server.requests().is_empty());
    client.stop().await;
}

/// Seed 001's pre-processing: what a person types into a conversation is checked for a
/// built-in command first, which runs and never reaches the model; a built-in sent with an
/// image is refused, and a `!` line is input for the model here (only `conversation/command`
/// runs one).
#[tokio::test]
async fn a_built_in_command_sent_as_input_runs_and_reaches_no_model() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let send = |input: serde_json::Value| {
        let mut params = json!({"conversationId": root});
        params
            .as_object_mut()
            .unwrap()
            .extend(input.as_object().unwrap().clone());
        params
    };
    let help = client
        .request(
            "conversation/send",
            send(json!({"text": "/help"})),
            &mut seen,
        )
        .await;
    let text = help["result"]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("/compact") && text.contains("/undo"),
        "{help}"
    );
    assert!(help["result"].get("taskId").is_none(), "{help}");

    let plan = client
        .request(
            "conversation/send",
            send(json!({"text": "  /mode plan"})),
            &mut seen,
        )
        .await;
    assert_eq!(plan["result"], json!({"text": "mode: plan"}));
    client.until_events("mode_changed", 1, &mut seen).await;

    let with_image = client
        .request(
            "conversation/send",
            send(json!({"items": [
                {"type": "text", "text": "/tools"},
                {"type": "image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ]})),
            &mut seen,
        )
        .await;
    assert_eq!(with_image["error"]["code"], -32602, "{with_image}");
    assert!(
        with_image["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/tools is a built-in command"),
        "{with_image}"
    );
    assert!(server.requests().is_empty(), "a command reached the model");

    // A `!` line is not a command here: the model reads it.
    let task = client
        .request("conversation/send", send(json!({"text": "!ls"})), &mut seen)
        .await;
    assert!(task["result"]["taskId"].is_string(), "{task}");
    client.until_events("task_complete", 1, &mut seen).await;
    let requests = server.requests();
    let messages = requests[0].body["messages"].as_array().unwrap();
    assert!(
        messages.iter().any(|message| message["content"] == "!ls"),
        "{messages:?}"
    );
    client.stop().await;
}

/// `/mode` and `/yolo` through `conversation/command` are clamped to the configured mode as
/// `conversation/setMode` is (seed 003: policies only narrow), each with a `warning`.
#[tokio::test]
async fn mode_commands_cannot_loosen_the_configured_mode() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    for command in ["/yolo", "/mode auto-edit"] {
        let answer = client
            .request(
                "conversation/command",
                json!({"conversationId": root, "command": command}),
                &mut seen,
            )
            .await;
        assert_eq!(
            answer["result"],
            json!({"text": "mode: default"}),
            "{command}"
        );
    }
    let set = client
        .request(
            "conversation/setMode",
            json!({"conversationId": root, "mode": "yolo"}),
            &mut seen,
        )
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    let looser = |seen: &[Value]| -> Vec<String> {
        seen.iter()
            .filter(|m| m["params"]["event"]["type"] == "warning")
            .filter_map(|m| m["params"]["event"]["message"].as_str())
            .filter(|message| message.contains("looser"))
            .map(str::to_owned)
            .collect()
    };
    while looser(&seen).len() < 3 {
        seen.push(client.read().await);
    }
    let warnings = looser(&seen);
    assert_eq!(
        warnings,
        [
            "mode yolo is looser than the session's default; the conversation uses default",
            "mode auto-edit is looser than the session's default; the conversation uses default",
            "mode yolo is looser than the session's default; the conversation uses default",
        ]
    );
    assert!(
        !seen
            .iter()
            .any(|m| m["params"]["event"]["type"] == "mode_changed"),
        "the mode changed"
    );
    client.stop().await;
}
