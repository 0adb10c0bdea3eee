//! The conversation methods, events and permission requests, seen from the wire.

use std::time::Duration;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Client, event_types, events};

#[tokio::test]
async fn a_conversation_over_stdio_with_a_permission_request() {
    let server = MockModelServer::start(vec![
        MockResponse::text("Hello from coder."),
        MockResponse::tool_call("w", "write", json!({"path": "made.txt", "content": "x\n"})),
        MockResponse::text("Written."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let mut seen = Vec::new();

    let init = client
        .request("initialize", json!({"capabilities": {}}), &mut seen)
        .await;
    let coder = &init["result"]["capabilities"]["experimental"]["coder"];
    assert_eq!(coder["protocolVersion"], "0.1");
    assert!(
        coder["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("conversation/send"))
    );
    client
        .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;

    let created = client
        .request("conversation/create", json!({}), &mut seen)
        .await;
    let conversation = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let task = client.send_text(&conversation, "hi", &mut seen).await;
    while !event_types(&seen).contains(&"task_complete".to_owned()) {
        seen.push(client.read().await);
    }
    let events: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "conversation/event")
        .map(|m| &m["params"]["event"])
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["conversationId"] == conversation.as_str())
    );
    assert!(events.iter().any(|e| e["taskId"] == task.as_str()));
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "agent_message_delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello from coder.");
    for pair in events.windows(2) {
        assert_eq!(
            pair[1]["seq"].as_u64().unwrap(),
            pair[0]["seq"].as_u64().unwrap() + 1
        );
    }

    // A write asks the editor, which allows it.
    seen.clear();
    client
        .send_text(&conversation, "write a file", &mut seen)
        .await;
    let ask = client.server_request("permission/request", &mut seen).await;
    assert_eq!(ask["params"]["toolName"], "write");
    assert_eq!(ask["params"]["conversationId"], conversation.as_str());
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_once"}}))
        .await;
    let mut completed = 0;
    while completed == 0 {
        let message = client.read().await;
        if message["params"]["event"]["type"] == "task_complete" {
            completed += 1;
        }
    }
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("made.txt")).unwrap(),
        "x\n"
    );

    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    let listed = list["result"]["conversations"].as_array().unwrap();
    assert_eq!(
        listed.len(),
        1,
        "the first conversation created is the root"
    );
    assert_eq!(listed[0]["id"], conversation.as_str());
    assert_eq!(listed[0]["isRoot"], true);
    let unknown = client
        .request(
            "conversation/send",
            json!({"conversationId": "00000000-0000-0000-0000-000000000000", "text": "x"}),
            &mut seen,
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["data"]["kind"], "not_found", "{unknown}");

    client.request("shutdown", Value::Null, &mut seen).await;
    client
        .write(json!({"jsonrpc": "2.0", "method": "exit"}))
        .await;
    let status = tokio::time::timeout(Duration::from_secs(10), client.child.wait())
        .await
        .expect("coder lsp did not exit")
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn history_list_and_destroy_over_the_wire() {
    let server = MockModelServer::start(vec![MockResponse::text("Noted.")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let created = client
        .request(
            "conversation/create",
            json!({"userInstructions": "You review Rust.", "mode": "plan"}),
            &mut seen,
        )
        .await;
    let id = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(id, root, "the first conversation of a session is its root");
    client.send_text(&id, "Look at main.rs", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;

    let history = client
        .request(
            "conversation/history",
            json!({"conversationId": id}),
            &mut seen,
        )
        .await;
    let entries = history["result"]["entries"].as_array().unwrap();
    let texts: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e["role"].as_str().unwrap(), e["text"].as_str().unwrap()))
        .collect();
    // Messages only: the todo reminder the engine added after the input is not one.
    assert_eq!(
        texts,
        [
            ("user", "You review Rust."),
            ("user", "Look at main.rs"),
            ("assistant", "Noted.")
        ]
    );
    let last = client
        .request(
            "conversation/history",
            json!({"conversationId": id, "limit": 1}),
            &mut seen,
        )
        .await;
    assert_eq!(last["result"]["entries"][0]["text"], "Noted.");

    let list = client
        .request("conversation/list", Value::Null, &mut seen)
        .await;
    let conversations = list["result"]["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 1);
    let ours = &conversations[0];
    assert_eq!(ours["id"], id.as_str());
    assert_eq!(ours["messageCount"], 4, "with the first input's reminders");
    assert_eq!(ours["isRoot"], true);
    assert!(ours["lastActiveAt"].as_str().unwrap().contains('T'));

    let refused = client
        .request(
            "conversation/destroy",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    assert_eq!(refused["result"]["ok"], false);
    assert!(
        refused["result"]["reason"]
            .as_str()
            .unwrap()
            .contains("root")
    );
    let second = client
        .request("conversation/create", json!({}), &mut seen)
        .await;
    let second = second["result"]["conversationId"].as_str().unwrap();
    assert_ne!(second, root, "only the first conversation is the root");
    let destroyed = client
        .request(
            "conversation/destroy",
            json!({"conversationId": second}),
            &mut seen,
        )
        .await;
    assert_eq!(destroyed["result"], json!({"ok": true}));
    let gone = client
        .request(
            "conversation/history",
            json!({"conversationId": second}),
            &mut seen,
        )
        .await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    client.stop().await;
}

#[tokio::test]
async fn input_sent_while_a_task_runs_is_queued_and_runs_next() {
    let server = MockModelServer::start(vec![
        MockResponse::text_deltas(40, "first ").with_delay(10),
        MockResponse::text("second"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let first = client.send_text(&root, "one", &mut seen).await;
    let second = client.send_text(&root, "two", &mut seen).await;
    assert_ne!(first, second);
    client.until_events("task_complete", 2, &mut seen).await;
    let order: Vec<(String, String)> = events(&seen)
        .filter(|e| ["task_started", "task_complete"].contains(&e["type"].as_str().unwrap()))
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["taskId"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("task_started".to_owned(), first.clone()),
            ("task_complete".to_owned(), first),
            ("task_started".to_owned(), second.clone()),
            ("task_complete".to_owned(), second),
        ]
    );
    let history = client
        .request(
            "conversation/history",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    let texts: Vec<&str> = history["result"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    // Messages only, in the order they were sent and answered.
    assert_eq!(texts[0], "one");
    assert!(texts[1].starts_with("first first"), "{texts:?}");
    assert_eq!(texts[2..], ["two", "second"]);
    client.stop().await;
}

#[tokio::test]
async fn interrupt_ends_the_task_and_kills_its_command() {
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "b",
        "bash",
        json!({"command": "echo $$ > pid.txt; sleep 30"}),
    )])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "yolo").await;
    let mut seen = Vec::new();
    let task = client.send_text(&root, "wait", &mut seen).await;
    client.until_events("tool_call_started", 1, &mut seen).await;
    let pid_file = workspace.path().join("pid.txt");
    let pid = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(pid) = std::fs::read_to_string(&pid_file)
                && let Ok(pid) = pid.trim().parse::<u32>()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command did not start");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());

    let answer = client
        .request(
            "conversation/interrupt",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    assert_eq!(answer["result"], json!({}));
    client.until_events("turn_aborted", 1, &mut seen).await;
    let aborted = events(&seen).find(|e| e["type"] == "turn_aborted").unwrap();
    assert_eq!(aborted["reason"], "interrupted");
    assert_eq!(aborted["taskId"], task.as_str());
    assert!(!event_types(&seen).contains(&"task_complete".to_owned()));
    let reaped = tokio::time::timeout(Duration::from_secs(5), async {
        // The shell is gone, or a zombie nobody waits for would still be a leak.
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(reaped.is_ok(), "the command survived the interrupt");

    // The session is idle again and takes new input.
    server.push([MockResponse::text("ready")]);
    client.send_text(&root, "again", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
}

/// A person's `!command` stops on `conversation/interrupt` as a model's call does: the
/// command is killed, and its result says it was interrupted.
#[tokio::test]
async fn interrupt_ends_a_bang_command_and_kills_it() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    let answer = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "!echo $$ > pid.txt; sleep 30; echo finished"}),
            &mut seen,
        )
        .await;
    let task = answer["result"]["taskId"].as_str().unwrap().to_owned();
    let pid_file = workspace.path().join("pid.txt");
    let pid = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(pid) = std::fs::read_to_string(&pid_file)
                && let Ok(pid) = pid.trim().parse::<u32>()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command did not start");

    let answer = client
        .request(
            "conversation/interrupt",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    assert_eq!(answer["result"], json!({}));
    client.until_events("turn_aborted", 1, &mut seen).await;
    let aborted = events(&seen).find(|e| e["type"] == "turn_aborted").unwrap();
    assert_eq!(aborted["reason"], "interrupted");
    assert_eq!(aborted["taskId"], task.as_str());
    let failed = events(&seen)
        .find(|e| e["type"] == "tool_call_failed")
        .unwrap();
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .starts_with("Interrupted; the command and all it started were killed."),
        "{failed}"
    );
    let reaped = tokio::time::timeout(Duration::from_secs(10), async {
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(reaped.is_ok(), "the command survived the interrupt");
    client.stop().await;
}

#[tokio::test]
async fn a_conversation_tool_handoff_keeps_seed_000_event_order_on_the_wire() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "Summarise the plan."}),
        ),
        MockResponse::text("The plan, summarised."),
        MockResponse::text("Done with the handoff."),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&root, "delegate", &mut seen).await;
    client.until_events("task_complete", 2, &mut seen).await;
    client.until_events("state_changed", 2, &mut seen).await;
    let order: Vec<String> = events(&seen)
        .map(|e| {
            let kind = e["type"].as_str().unwrap();
            let side = if e["conversationId"] == root.as_str() {
                "A"
            } else {
                "B"
            };
            match kind {
                "turn_aborted" => format!("{side} turn_aborted({})", e["reason"].as_str().unwrap()),
                "state_changed" => {
                    format!("{side} state_changed({})", e["state"].as_str().unwrap())
                }
                _ => format!("{side} {kind}"),
            }
        })
        .filter(|line| !line.ends_with("agent_message_delta"))
        .collect();
    assert_eq!(
        order,
        [
            "A state_changed(running)",
            // The person's input started: its receipt. The tasks the handoff queued (B's
            // and A's continuation) are no person's input and have none.
            "A input_receipt",
            "A task_started",
            "A tool_calls_requested",
            "A reply_complete",
            "A token_count",
            "A tool_call_started",
            "A turn_aborted(replaced)",
            "B task_started",
            "B agent_message",
            "B reply_complete",
            // B is a worker (seed 001's subagent): it reports no usage.
            "B task_complete",
            "A task_started",
            "A tool_call_completed",
            "A agent_message",
            "A reply_complete",
            "A token_count",
            "A task_complete",
            "A state_changed(idle)",
        ]
    );
    // The handed-over task names the task that carries the work on, and the other
    // conversation's task says what it was asked.
    let of_type =
        |kind: &str| -> Vec<&Value> { events(&seen).filter(|e| e["type"] == kind).collect() };
    let started = of_type("task_started");
    assert_eq!(
        of_type("turn_aborted")[0]["continuation"],
        started[2]["taskId"]
    );
    assert_eq!(started[1]["input"], "Summarise the plan.");
    assert_eq!(started[2].get("input"), None);
    let seqs: Vec<u64> = events(&seen).map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    client.stop().await;
}

#[tokio::test]
async fn conv_send_to_a_conversation_waiting_for_its_handoff_is_refused() {
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "c1",
        "conv_create",
        json!({"user_instruction": "Ask the root something."}),
    )])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    server.push([
        MockResponse::tool_call(
            "s1",
            "conv_send",
            json!({"conversation_id": root, "text": "Are you there?"}),
        ),
        MockResponse::text("Here is the answer."),
        MockResponse::text("Thanks, done."),
    ]);
    let mut seen = Vec::new();
    client.send_text(&root, "delegate", &mut seen).await;
    client.until_events("state_changed", 2, &mut seen).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "no task ran on the waiting root");
    let refused = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "s1")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        refused.contains("is waiting for the result of its own conv_create/conv_send call"),
        "{refused}"
    );
    // The root's history stays valid: its call answered by the child's reply, nothing before.
    let root_request: Vec<(String, String)> = requests[3].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(root_request.len(), 4, "{root_request:?}");
    assert_eq!(root_request[0], ("user".to_owned(), "delegate".to_owned()));
    assert!(root_request[1].1.starts_with("<system-reminder>"));
    assert_eq!(root_request[3].0, "tool");
    assert!(
        root_request[3].1.contains("Here is the answer."),
        "{root_request:?}"
    );
    client.stop().await;
}

#[tokio::test]
async fn session_interrupt_stops_the_conversation_a_handoff_moved_to() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "Wait a while."}),
        ),
        MockResponse::tool_call("b1", "bash", json!({"command": "sleep 30"})),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "yolo").await;
    let mut seen = Vec::new();
    client.send_text(&root, "delegate", &mut seen).await;
    // The root's turn was replaced; the other conversation's command runs.
    client.until_events("tool_call_started", 2, &mut seen).await;
    let answer = client
        .request("session/interrupt", json!({}), &mut seen)
        .await;
    assert_eq!(answer["result"], json!({}));
    client.until_events("state_changed", 2, &mut seen).await;
    let aborted: Vec<(bool, String)> = events(&seen)
        .filter(|e| e["type"] == "turn_aborted")
        .map(|e| {
            (
                e["conversationId"] == root.as_str(),
                e["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        aborted,
        [
            (true, "replaced".to_owned()),
            (false, "interrupted".to_owned())
        ]
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the root's continuation was dropped"
    );

    // The root takes new input, its history valid: the handoff's call has a result.
    server.push([MockResponse::text("ready")]);
    client.send_text(&root, "again", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let messages = server.requests().pop().unwrap().body["messages"].clone();
    let closing = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .expect("the conv_create call has a result")
        .clone();
    assert!(
        closing["content"]
            .as_str()
            .unwrap()
            .contains("interrupted by the user"),
        "{closing}"
    );
    client.stop().await;
}

#[tokio::test]
async fn input_queued_for_a_conversation_destroyed_before_it_ran_ends_with_task_dropped() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![Chunk::text("slow "), Chunk::text("reply")]).with_delay(100),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    client.send_text(&root, "talk", &mut seen).await;
    let created = client
        .request("conversation/create", json!({}), &mut seen)
        .await;
    let other = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let queued = client.send_text(&other, "never runs", &mut seen).await;
    let destroyed = client
        .request(
            "conversation/destroy",
            json!({"conversationId": other}),
            &mut seen,
        )
        .await;
    assert_eq!(destroyed["result"]["ok"], true);
    client.until_events("task_complete", 1, &mut seen).await;
    let ends: Vec<(&str, &str)> = events(&seen)
        .filter(|e| e["taskId"] == queued.as_str())
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("input_receipt", ""),
            ("task_dropped", "conversation_destroyed"),
            ("input_receipt", "its conversation was destroyed")
        ]
    );
    client.stop().await;
}

#[tokio::test]
async fn rule_list_names_the_rules_files_in_prompt_order() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("AGENTS.md"), "Be brief.").unwrap();
    std::fs::create_dir_all(workspace.path().join(".coder/rules")).unwrap();
    std::fs::write(workspace.path().join(".coder/rules/style.md"), "Tabs.").unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    let answer = client.request("rule/list", json!({}), &mut seen).await;
    let root = workspace.path().canonicalize().unwrap();
    assert_eq!(
        answer["result"],
        json!({"rules": [
            {"path": root.join(".coder/rules/style.md"), "size": 5, "truncated": false},
            {"path": root.join("AGENTS.md"), "size": 9, "truncated": false},
        ]})
    );
}

/// Plan mode is not escaped through a conversation opened earlier in a looser mode: the
/// plan-mode root's `conv_send` narrows the `yolo` conversation to plan before it runs, so
/// its write is refused, and `mode_changed` says why.
#[tokio::test]
async fn conv_send_from_plan_mode_narrows_a_looser_conversation_first() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".coder")).unwrap();
    std::fs::write(ws.join(".coder/config.json"), r#"{"mode": "yolo"}"#).unwrap();
    let mut client = Client::trusted(ws, &server, "yolo").await;
    let root = client.root().await;
    let mut seen = Vec::new();
    let plan = client
        .request(
            "conversation/command",
            json!({"conversationId": root, "command": "/plan"}),
            &mut seen,
        )
        .await;
    assert_eq!(plan["result"]["text"], "mode: plan", "{plan}");
    let created = client
        .request("conversation/create", json!({"mode": "yolo"}), &mut seen)
        .await;
    let worker = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(worker, root);
    server.push([
        MockResponse::tool_call(
            "s1",
            "conv_send",
            json!({"conversation_id": worker, "text": "Write made.txt"}),
        ),
        MockResponse::tool_call("w1", "write", json!({"path": "made.txt", "content": "x\n"})),
        MockResponse::text("could not write"),
        MockResponse::text("the plan"),
    ]);
    client.send_text(&root, "plan it", &mut seen).await;
    // The worker's task and the root's continuation (the root's first task was handed over).
    client.until_events("task_complete", 2, &mut seen).await;
    assert!(!ws.join("made.txt").exists(), "plan mode was escaped");
    let narrowed: Vec<&Value> = events(&seen)
        .filter(|event| event["type"] == "mode_changed" && event["reason"] == "caller_mode")
        .collect();
    assert_eq!(narrowed.len(), 1, "{narrowed:?}");
    assert_eq!(narrowed[0]["conversationId"], worker.as_str());
    assert_eq!(narrowed[0]["mode"], "plan");
    assert_eq!(narrowed[0]["previous"], "yolo");
    client.stop().await;
}

/// `conversation/create`'s `toolsPrefs` (seed 003) over the wire: keys left out keep the
/// session's defaults, `shell_mode: "off"` takes `bash` away, and web search or a streamable
/// shell, which coder has not, are refused with `-32602` and open nothing.
#[tokio::test]
async fn tools_prefs_narrow_and_what_coder_has_not_is_refused() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    let mut seen = Vec::new();
    for (prefs, says) in [
        (json!({"web_search_request": true}), "no web search tool"),
        (
            json!({"use_streamable_shell_tool": true}),
            "no streamable shell",
        ),
    ] {
        let refused = client
            .request(
                "conversation/create",
                json!({"toolsPrefs": prefs}),
                &mut seen,
            )
            .await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert_eq!(list["result"]["conversations"].as_array().unwrap().len(), 1);

    let created = client
        .request(
            "conversation/create",
            json!({"toolsPrefs": {"shell_mode": "off", "include_apply_patch_tool": false}}),
            &mut seen,
        )
        .await;
    let conversation = created["result"]["conversationId"].as_str().unwrap();
    assert_eq!(
        conversation, root,
        "the refused creates did not take the root"
    );
    client.send_text(conversation, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let offered: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    let has = |tool: &str| offered.contains(&tool.to_owned());
    assert!(!has("bash") && !has("apply_patch"), "{offered:?}");
    // `include_plan_tool` was left out: the session's default, on.
    assert!(has("todo_write") && has("read"), "{offered:?}");
    client.stop().await;
}
