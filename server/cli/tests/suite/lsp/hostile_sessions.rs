//! A hostile repository's `.coder/`, through `coder lsp`: session files and the workspace
//! configuration it ships as links, FIFOs and device links are never followed, and modes
//! saved in a session never raise a conversation above the session's.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::{Client, events, status_kb};

const SESSION: &str = "0192f0c4-0000-7000-8000-0000000000a1";
const ROOT: &str = "0192f0c4-0000-7000-8000-0000000000b1";

/// A session snapshot as a repository could ship it: the root conversation `root` of
/// `session`, with one exchange and the fields in `extra`.
fn snapshot(session: &str, root: &str, extra: Value) -> Value {
    let mut value = json!({
        "version": 1, "sessionId": session, "savedAt": "2026-01-01T00:00:00.000Z",
        "conversationId": root, "model": "gpt-5",
        "messages": [{"role": "user", "content": "Shipped question."},
                     {"role": "assistant", "content": "Shipped answer."}],
        "tools": []
    });
    if let (Some(value), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
        value.extend(extra.clone());
    }
    value
}

/// A journal of `session` alone (no snapshot): its header, and one line giving the root
/// conversation one exchange and the conversation state `state`.
fn journal(session: &str, root: &str, state: Value) -> String {
    let mut full = json!({"conversationId": root, "model": ""});
    if let (Some(full), Some(state)) = (full.as_object_mut(), state.as_object()) {
        full.extend(state.clone());
    }
    let header = json!({"journal": 1, "sessionId": session, "root": root, "model": "gpt-5"});
    let line = json!({"seq": 1, "conversation": root, "from": 0,
        "messages": [{"role": "user", "content": "Shipped question."},
                     {"role": "assistant", "content": "Shipped answer."}],
        "state": full, "archivedFrom": 0, "archived": []});
    format!("{header}\n{line}\n")
}

fn sessions_dir(workspace: &Path) -> std::path::PathBuf {
    let dir = workspace.join(".coder/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `request` within 30 s: a read that waits for ever (a FIFO) fails the test, not hangs it.
async fn request(client: &mut Client, method: &str, params: Value, seen: &mut Vec<Value>) -> Value {
    tokio::time::timeout(
        Duration::from_secs(30),
        client.request(method, params, seen),
    )
    .await
    .unwrap_or_else(|_| panic!("{method} did not answer within 30 s"))
}

#[tokio::test]
async fn a_shipped_journal_link_gets_nothing_appended_on_resume() {
    let server = MockModelServer::start(vec![MockResponse::text("Answered.")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let bashrc = outside.path().join(".bashrc");
    std::fs::write(&bashrc, "export KEEP=1\n").unwrap();
    let dir = sessions_dir(workspace.path());
    std::fs::write(
        dir.join(format!("{SESSION}.json")),
        snapshot(SESSION, ROOT, json!({})).to_string(),
    )
    .unwrap();
    symlink(&bashrc, dir.join(format!("{SESSION}.jsonl"))).unwrap();

    let (mut client, fresh_root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let resumed = request(
        &mut client,
        "session/resume",
        json!({"sessionId": SESSION}),
        &mut seen,
    )
    .await;
    let root = if resumed.get("result").is_some() {
        ROOT.to_owned()
    } else {
        let message = resumed["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("{SESSION}.jsonl is a symbolic link")),
            "{resumed}"
        );
        fresh_root
    };
    client.send_text(&root, "Go on.", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "export KEEP=1\n");
    assert!(
        dir.join(format!("{SESSION}.jsonl"))
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn session_listing_takes_only_regular_files_and_reads_no_link() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let dir = sessions_dir(workspace.path());
    // A session of the workspace's own, and ones that live outside it, reached by links.
    let own = "0192f0c4-0000-7000-8000-0000000000c1";
    std::fs::write(
        dir.join(format!("{own}.json")),
        snapshot(own, ROOT, json!({})).to_string(),
    )
    .unwrap();
    let linked = "0192f0c4-0000-7000-8000-0000000000c2";
    let target = outside.path().join("snapshot.json");
    std::fs::write(&target, snapshot(linked, ROOT, json!({})).to_string()).unwrap();
    symlink(&target, dir.join(format!("{linked}.json"))).unwrap();
    let linked_journal = "0192f0c4-0000-7000-8000-0000000000c3";
    let target = outside.path().join("journal.jsonl");
    std::fs::write(&target, journal(linked_journal, ROOT, json!({}))).unwrap();
    symlink(&target, dir.join(format!("{linked_journal}.jsonl"))).unwrap();
    // Devices to read without end, and a FIFO no one writes.
    for (at, name) in ["c4", "c5", "c6"].iter().enumerate() {
        let name = format!("0192f0c4-0000-7000-8000-0000000000{name}.json");
        symlink("/dev/zero", dir.join(name)).unwrap();
        if at == 0 {
            symlink("/dev/zero", dir.join("zero.jsonl")).unwrap();
        }
    }
    nix::unistd::mkfifo(
        &dir.join("0192f0c4-0000-7000-8000-0000000000c7.json"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();

    let (mut client, _) = Client::ready(workspace.path(), &server, "balanced").await;
    let pid = client.child.id().unwrap();
    let before = status_kb(pid, "VmHWM:");
    let mut seen = Vec::new();
    let listed = request(&mut client, "session/list", json!({}), &mut seen).await;
    let ids: Vec<&str> = listed["result"]["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|session| session["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [own], "{listed}");
    let peak = status_kb(pid, "VmHWM:");
    assert!(
        peak < before + 32 * 1024,
        "peak resident memory rose from {before} kB to {peak} kB listing sessions"
    );
    // Nor is a linked session resumed.
    for id in [linked, linked_journal] {
        let refused = request(
            &mut client,
            "session/resume",
            json!({"sessionId": id}),
            &mut seen,
        )
        .await;
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("symbolic link"), "{refused}");
    }
    client.stop().await;
}

/// A repository whose `.coder/config.json` (or `.coder` itself) is a link to the person's
/// user-level configuration, which holds their key.
#[tokio::test]
async fn model_writes_nothing_through_a_linked_workspace_config() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    // Linked out of the workspace (to the user-level file, or its folder): the
    // configuration is refused at start, naming the link; inside it (to a tracked file):
    // read, but `/model` never writes through it.
    for (linked, out) in [
        (".coder/config.json", true),
        (".coder", true),
        (".coder/config.json", false),
    ] {
        let workspace = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let user = home.path().join("config.json");
        let user_text = json!({"apiKey": "sk-user-file-secret",
                               "trustedFolders": ["/somewhere/trusted"],
                               "permissions": {"preset": "balanced"}})
        .to_string();
        std::fs::write(&user, &user_text).unwrap();
        let shared = workspace.path().join("shared/config.json");
        std::fs::create_dir_all(shared.parent().unwrap()).unwrap();
        std::fs::write(&shared, r#"{"model": "mine"}"#).unwrap();
        let link = workspace.path().join(linked);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let target = match (linked, out) {
            (".coder", _) => home.path().to_path_buf(),
            (_, true) => user.clone(),
            (_, false) => Path::new("../shared/config.json").to_path_buf(),
        };
        symlink(&target, &link).unwrap();
        let base_url = server.openai_base_url();
        let coder_home = home.path().to_str().unwrap();
        let mut client = Client::spawn(
            workspace.path(),
            &[
                ("OPENAI_BASE_URL", base_url.as_str()),
                ("OPENAI_API_KEY", "k"),
                ("CODER_HOME", coder_home),
            ],
        );
        let init = client.initialize(json!({})).await;
        if out {
            let message = init["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("is a symbolic link"), "{linked}: {init}");
        } else {
            assert!(init["result"].is_object(), "{linked}: {init}");
            let root = client.root().await;
            let mut seen = Vec::new();
            let answer = request(
                &mut client,
                "conversation/command",
                json!({"conversationId": root, "command": "/model other-model"}),
                &mut seen,
            )
            .await;
            let text = answer["result"]["text"].as_str().unwrap_or_default();
            assert!(
                text.starts_with("model: other-model for this session; it could not be saved")
                    && text.contains("is a symbolic link"),
                "{linked}: {answer}"
            );
        }
        client.stop().await;
        assert_eq!(
            std::fs::read_to_string(&user).unwrap(),
            user_text,
            "{linked}"
        );
        assert_eq!(
            std::fs::read_to_string(&shared).unwrap(),
            r#"{"model": "mine"}"#,
            "{linked}"
        );
        assert!(
            link.symlink_metadata().unwrap().file_type().is_symlink(),
            "{linked} was replaced"
        );
        let files: Vec<_> = std::fs::read_dir(home.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(files, ["config.json"], "{linked}");
    }
}

/// Resumes a session shipped as `files` (name, content) whose root is in plan mode, entered
/// from `yolo` by the files' word; the model asks to leave plan mode, the person approves,
/// then the model runs a command. Returns the mode plan mode was left for and whether the
/// command was put to the person.
async fn leave_shipped_plan_mode(files: &[(String, String)]) -> (Value, bool, bool) {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("p1", "exit_plan_mode", json!({"plan": "1. Touch a file."})),
        MockResponse::tool_call("c1", "bash", json!({"command": "touch ran.txt"})),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let dir = sessions_dir(workspace.path());
    for (name, content) in files {
        std::fs::write(dir.join(name), content).unwrap();
    }
    let (mut client, _) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let resumed = request(
        &mut client,
        "session/resume",
        json!({"sessionId": SESSION}),
        &mut seen,
    )
    .await;
    assert!(resumed.get("result").is_some(), "{resumed}");
    client.send_text(ROOT, "Do it.", &mut seen).await;
    let mut asked_for_bash = false;
    let run = async {
        loop {
            let message = client.read().await;
            if message["method"] == "permission/request" {
                let answer = if message["params"]["toolName"] == "exit_plan_mode" {
                    json!({"decision": "start_editing"})
                } else {
                    asked_for_bash = true;
                    json!({"decision": "deny"})
                };
                client
                    .write(json!({"jsonrpc": "2.0", "id": message["id"], "result": answer}))
                    .await;
                continue;
            }
            seen.push(message);
            if events(&seen).any(|e| e["type"] == "task_complete") {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the task ended within 60 s");
    let left_for = events(&seen)
        .find(|e| e["type"] == "mode_changed" && e["reason"] == "exit_plan_mode")
        .map(|e| e["mode"].clone())
        .unwrap_or(Value::Null);
    client.stop().await;
    let ran = workspace.path().join("ran.txt").exists();
    (left_for, asked_for_bash, ran)
}

#[tokio::test]
async fn a_shipped_mode_before_plan_never_raises_the_mode_when_a_plan_is_approved() {
    let shipped = json!({"mode": "plan", "modeBeforePlan": "yolo"});
    let as_snapshot = vec![(
        format!("{SESSION}.json"),
        snapshot(SESSION, ROOT, shipped.clone()).to_string(),
    )];
    let as_journal = vec![(format!("{SESSION}.jsonl"), journal(SESSION, ROOT, shipped))];
    for (form, files) in [("snapshot", as_snapshot), ("journal", as_journal)] {
        let (left_for, asked, ran) = leave_shipped_plan_mode(&files).await;
        assert_eq!(left_for, "default", "{form}");
        assert!(asked && !ran, "{form}: the command ran without asking");
    }
}
