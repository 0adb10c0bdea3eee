//! The built-in slash commands (seed 004 section 4) through the engine: each answers with
//! text, some start a task or a conversation, `/model` is saved for the next session, and a
//! command that does not exist never reaches the model.

use coder_core::{ErrorKind, ProviderKind};
use coder_protocol::Mode;
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{Harness, git};

#[tokio::test]
async fn every_built_in_command_answers_and_none_reaches_the_model() {
    let server = MockModelServer::start(vec![
        MockResponse::text("first answer"),
        MockResponse::text("second answer"),
        MockResponse::text("Summary."),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let root = h.root;
    let run = |command: &str| h.engine.command(root, command).unwrap();

    let help = run("/help").text;
    for name in [
        "/help",
        "/model",
        "/permissions",
        "/mode",
        "/plan",
        "/tools",
        "/mcp",
        "/skills",
        "/todos",
        "/new",
        "/clear",
        "/resume",
        "/compact",
        "/diff",
        "/undo",
    ] {
        assert!(help.contains(name), "{name} missing from {help}");
    }
    assert!(help.contains("Ctrl+C"), "{help}");
    assert_eq!(run("/model").text, "model: mock-model");
    assert!(run("/tools").text.contains("read"));
    assert!(run("/skills").text.contains("No skills"));
    assert_eq!(run("/todos").text, "No todos.");
    assert_eq!(run("/mode").text, "mode: default");
    assert_eq!(run("/plan").text, "mode: plan");
    assert_eq!(h.engine.mode(root).unwrap(), Mode::Plan);
    assert_eq!(run("/mode default").text, "mode: default");
    // Policies only narrow (seed 003): `/mode` is clamped to the configured mode (default
    // here) as `setMode` is; `mode_switches_are_clamped_to_the_configured_mode` shows the
    // warning.
    assert_eq!(run("/yolo").text, "mode: default");
    assert_eq!(run("/mode auto-edit").text, "mode: default");
    h.engine.set_mode(root, Mode::Yolo).unwrap();
    assert_eq!(h.engine.mode(root).unwrap(), Mode::Default);
    let matrix = run("/permissions strict").text;
    assert!(
        matrix.starts_with("preset: strict, mode: default"),
        "{matrix}"
    );
    assert!(matrix.contains("bash"), "{matrix}");
    // Not a git repository: said, not failed silently.
    let diff = h.engine.command(root, "/diff").unwrap_err();
    assert!(diff.to_string().contains("git repository"), "{diff}");

    let made = run("/new");
    let other = made.conversation_id.expect("/new names its conversation");
    assert_ne!(other, root);
    assert!(h.engine.history(other).unwrap().is_empty());

    // Nothing was sent to the model so far.
    assert!(server.requests().is_empty());
    for (bad, kind) in [
        ("/nope", ErrorKind::InvalidParams),
        ("/mode sideways", ErrorKind::InvalidParams),
        ("/permissions open", ErrorKind::InvalidParams),
        ("/resume 0000", ErrorKind::NotFound),
        ("/clear everything", ErrorKind::InvalidParams),
        ("no slash", ErrorKind::InvalidParams),
    ] {
        let err = h.engine.command(root, bad).unwrap_err();
        assert_eq!(err.kind(), kind, "{bad}: {err}");
    }
    // A built-in sent as input is refused, not sent.
    let refused = h.engine.send(root, "/help").unwrap_err();
    assert!(
        refused.to_string().contains("built-in command"),
        "{refused}"
    );
    assert!(server.requests().is_empty());

    // `/compact` starts a task.
    h.run("one").await;
    h.run("two").await;
    let compact = h.engine.command(root, "/compact").unwrap();
    let task = compact.task_id.expect("/compact starts a task");
    let events = h.until_end(task).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.msg, coder_protocol::EventMsg::Compacted { .. }))
    );
}

#[tokio::test]
async fn a_model_switched_by_command_is_saved_and_the_next_session_starts_with_it() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    let said = h.engine.command(h.root, "/model gpt-4o-mini").unwrap().text;
    assert!(said.starts_with("model: gpt-4o-mini (saved in"), "{said}");
    assert_eq!(h.engine.model(), "gpt-4o-mini");
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(h.workspace.path().join(".coder/config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["model"], "gpt-4o-mini");
    // The next session in this workspace reads it.
    let env = |name: &str| match name {
        "OPENAI_API_KEY" => Some("k".to_owned()),
        _ => None,
    };
    let loaded = coder_core::Config::load_with(h.workspace.path(), None, &env);
    assert_eq!(
        loaded.map(|config| config.model).ok(),
        Some("gpt-4o-mini".to_owned())
    );

    // A file that cannot hold it keeps the switch and says so.
    std::fs::write(h.workspace.path().join(".coder/config.json"), "[1, 2]").unwrap();
    let said = h.engine.command(h.root, "/model gpt-4.1").unwrap().text;
    assert!(said.contains("could not be saved"), "{said}");
    assert_eq!(h.engine.model(), "gpt-4.1");
}

/// What a person's command prints is recorded like a model's `bash` output: the key in use
/// is taken out of the events, the history and the next request.
#[tokio::test]
async fn a_persons_shell_command_never_records_the_key_in_use() {
    let server = MockModelServer::start(vec![MockResponse::text("noted")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let root = h.root;
    // The command does not hold the key; what it prints does.
    let started = h
        .engine
        .command(
            root,
            "!printf 'key: test-key-%s\\n' 123 && printf 'test-%s' key-123 >&2 && exit 1",
        )
        .unwrap();
    let events = h.until_end(started.task_id.unwrap()).await;
    let shown = serde_json::to_string(&events).unwrap();
    assert!(shown.contains("key: [redacted]"), "{shown}");
    assert!(
        !shown.contains("test-key-123"),
        "the key reached the events: {shown}"
    );
    let recorded = h.engine.history(root).unwrap()[0].content.clone().unwrap();
    assert!(recorded.contains("key: [redacted]"), "{recorded}");
    assert!(!recorded.contains("test-key-123"), "{recorded}");
    h.run("what happened?").await;
    let sent = server.requests()[0].body.to_string();
    assert!(!sent.contains("test-key-123"), "the key reached the model");
}

#[tokio::test]
async fn a_persons_shell_command_runs_unasked_and_the_model_sees_its_result() {
    let server = MockModelServer::start(vec![MockResponse::text("noted")])
        .await
        .unwrap();
    // Strict: a model's `rm -rf` would be asked about; a person's is theirs to run.
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.preset = coder_protocol::Preset::Strict,
        Vec::new(),
    );
    let root = h.root;
    let started = h
        .engine
        .command(
            root,
            "!mkdir scratch && rm -rf scratch && echo hi; echo oops >&2; exit 3",
        )
        .unwrap();
    let task = started.task_id.expect("a shell command is a task");
    let events = h.until_end(task).await;
    // What the command printed streams while it runs, stdout and stderr apart.
    let kinds: Vec<String> = super::support::kinds(&events)
        .into_iter()
        .filter(|kind| kind != "state_changed")
        .collect();
    assert_eq!(
        kinds,
        [
            "task_started",
            "tool_call_started",
            "tool_call_output_delta",
            "tool_call_output_delta",
            "tool_call_completed",
            "task_complete"
        ]
    );
    let mut streamed: Vec<(coder_protocol::OutputStream, String)> = events
        .iter()
        .filter_map(|event| match &event.msg {
            coder_protocol::EventMsg::ToolCallOutputDelta { stream, delta, .. } => {
                Some((*stream, delta.clone()))
            }
            _ => None,
        })
        .collect();
    streamed.sort_by_key(|(stream, _)| *stream == coder_protocol::OutputStream::Stderr);
    assert_eq!(
        streamed,
        [
            (coder_protocol::OutputStream::Stdout, "hi\n".to_owned()),
            (coder_protocol::OutputStream::Stderr, "oops\n".to_owned())
        ]
    );
    let output = events
        .iter()
        .find_map(|event| match &event.msg {
            coder_protocol::EventMsg::ToolCallCompleted { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        output.contains("Exit code: 3") && output.contains("hi") && output.contains("oops"),
        "{output}"
    );
    assert!(server.requests().is_empty(), "no model call");
    let history = h.engine.history(root).unwrap();
    let recorded = history[0].content.clone().unwrap();
    assert!(recorded.starts_with("<shell-command>"), "{recorded}");
    assert!(
        recorded.contains("$ mkdir scratch && rm -rf scratch"),
        "{recorded}"
    );
    assert!(recorded.contains("Exit code: 3"), "{recorded}");
    // The model reads it with the next input.
    h.run("what happened?").await;
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("<shell-command>"), "{sent}");

    let empty = h.engine.command(root, "!  ").unwrap_err();
    assert_eq!(empty.kind(), ErrorKind::InvalidParams);
}

/// `/todos` shows the conversation's list as the model last wrote it, each item with its
/// state.
#[tokio::test]
async fn todos_shows_the_list_with_each_items_state() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "t1",
            "todo_write",
            serde_json::json!({"todos": [
                {"content": "read the code", "status": "completed"},
                {"content": "write the fix", "status": "in_progress"},
                {"content": "run the tests", "status": "pending"},
            ]}),
        ),
        MockResponse::text("working"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.run("fix it").await;
    let shown = h.engine.command(h.root, "/todos").unwrap().text;
    let shown = shown.trim_end();
    assert_eq!(
        shown, "Todos:\n  [x] read the code\n  [>] write the fix\n  [ ] run the tests",
        "{shown}"
    );
}

/// A repository in `dir` with one commit of `tracked.txt` ("original").
#[tokio::test]
async fn diff_full_shows_new_files_whole_and_names_a_large_one() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    let dir = h.workspace.path().to_path_buf();
    git(&dir, &["init", "-q"]);
    std::fs::write(dir.join("kept.txt"), "kept\n").unwrap();
    git(&dir, &["add", "kept.txt"]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    std::fs::create_dir(dir.join("sub dir")).unwrap();
    std::fs::write(dir.join("sub dir/new one.txt"), "first line\nsecond line\n").unwrap();
    std::fs::write(dir.join("big.log"), "x".repeat(300 * 1024)).unwrap();
    std::fs::write(dir.join(".gitignore"), "ignored.txt\n").unwrap();
    std::fs::write(dir.join("ignored.txt"), "secret\n").unwrap();
    // A link to a file outside the workspace is shown as the link, never followed.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("key"), "private key\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("key"), dir.join("link")).unwrap();

    let full = h.engine.command(h.root, "/diff full").unwrap().text;
    assert!(full.contains("new file mode 120000"), "{full}");
    assert!(!full.contains("private key"), "{full}");
    assert!(
        full.contains("+++ b/sub dir/new one.txt") && full.contains("+second line"),
        "{full}"
    );
    assert!(
        full.contains("new file big.log: 307200 bytes, not shown"),
        "{full}"
    );
    assert!(!full.contains("xxxx"), "{full}");
    assert!(
        full.contains("+ignored.txt"),
        "the .gitignore itself is new: {full}"
    );
    assert!(
        !full.contains("+secret"),
        "an ignored file is not shown: {full}"
    );
    let summary = h.engine.command(h.root, "/diff").unwrap().text;
    assert!(!summary.contains("+second line"), "{summary}");
}

#[tokio::test]
async fn seeded_garbage_commands_get_answers_or_errors_and_the_engine_goes_on() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    // A fixed seed: the same inputs on every run.
    let mut state: u64 = 0x5eed_c0de;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let names = [
        "help",
        "model",
        "permissions",
        "mode",
        "plan",
        "yolo",
        "tools",
        "skills",
        "todos",
        "new",
        "resume",
        "diff",
        "undo",
        "nosuch",
        "",
        "/",
        "!",
    ];
    let pieces = [
        "", " ", "x", "strict", "plan", "full", "é", "\u{0}", "--", "0192", "a b c", "\n",
    ];
    for _ in 0..2_000 {
        let name = names[(next() % names.len() as u64) as usize];
        let mut command = format!("/{name}");
        for _ in 0..next() % 4 {
            command.push_str(pieces[(next() % pieces.len() as u64) as usize]);
        }
        // Any answer is fine; a panic or a hang is not.
        let _ = h.engine.command(h.root, &command);
    }
    let help = h.engine.command(h.root, "/help").unwrap().text;
    assert!(help.contains("/undo"), "{help}");
    assert!(server.requests().is_empty(), "no garbage reached the model");
}

/// Events of `h` up to the first that passes `wanted` (within 20 s).
async fn until_event(
    h: &mut Harness,
    wanted: impl Fn(&coder_protocol::Event) -> bool,
) -> Vec<coder_protocol::Event> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), h.events.recv())
            .await
            .expect("the event did not come within 20 s")
            .unwrap();
        let found = wanted(&event);
        seen.push(event);
        if found {
            return seen;
        }
    }
}

#[tokio::test]
async fn clear_refuses_a_conversation_whose_history_is_in_use() {
    let slow = || MockResponse::text_deltas(400, "more ").with_delay(20);
    let server = MockModelServer::start(vec![
        slow(),
        MockResponse::tool_call(
            "c1",
            "conv_create",
            serde_json::json!({"user_instruction": "count slowly"}),
        ),
        slow(),
        MockResponse::text("the worker is done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let root = h.root;
    let busy = |h: &Harness, conversation| {
        let err = h.engine.command(conversation, "/clear").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
        assert!(err.to_string().contains("interrupt it first"), "{err}");
    };

    // Its task runs: the turn records into the history.
    let task = h.engine.send(root, "go on at length").unwrap();
    until_event(&mut h, |event| {
        matches!(
            event.msg,
            coder_protocol::EventMsg::AgentMessageDelta { .. }
        )
    })
    .await;
    busy(&h, root);
    h.engine.interrupt(root).unwrap();
    h.until_end(task).await;

    // It handed its turn over: its call waits for the other conversation's answer.
    h.engine.send(root, "ask a worker").unwrap();
    let events = until_event(&mut h, |event| {
        event.conversation_id != root
            && matches!(
                event.msg,
                coder_protocol::EventMsg::AgentMessageDelta { .. }
            )
    })
    .await;
    let worker = events.last().unwrap().conversation_id;
    busy(&h, root);
    busy(&h, worker);
    // Another conversation is not in use.
    let other = h
        .engine
        .command(root, "/new")
        .unwrap()
        .conversation_id
        .unwrap();
    assert!(h.engine.command(other, "/clear").is_ok());
    h.engine.interrupt(worker).unwrap();
    let continuation = events
        .iter()
        .find_map(|event| match &event.msg {
            coder_protocol::EventMsg::TurnAborted { continuation, .. } => *continuation,
            _ => None,
        })
        .expect("the handoff names its continuation");
    h.until_end(continuation).await;

    // Done: the history goes, and what is left is a valid request.
    let before = h.engine.history(root).unwrap();
    super::support::assert_history_valid(&before);
    let answer = h.engine.command(root, "/clear").unwrap();
    assert_eq!(
        answer.text,
        format!(
            "context cleared: {} messages left it; the system prompt and the tools stay",
            before.len()
        )
    );
    assert!(h.engine.history(root).unwrap().is_empty());
}

/// Every way to switch a mode follows one rule (seed 003: policies only narrow): a mode
/// looser than the configured one is narrowed to it, with a `warning` saying so; a
/// stricter one is taken, and going back up to the configured mode is too.
#[tokio::test]
async fn mode_switches_are_clamped_to_the_configured_mode() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::AutoEdit,
        Vec::new(),
    );
    let root = h.root;
    let mut warned = Vec::new();
    for (switch, wanted, expected) in [
        ("/yolo", Mode::Yolo, Mode::AutoEdit),
        ("/mode yolo", Mode::Yolo, Mode::AutoEdit),
        ("setMode", Mode::Yolo, Mode::AutoEdit),
        ("/plan", Mode::Plan, Mode::Plan),
        ("/auto-edit", Mode::AutoEdit, Mode::AutoEdit),
    ] {
        if switch == "setMode" {
            h.engine.set_mode(root, wanted).unwrap();
        } else {
            let said = h.engine.command(root, switch).unwrap().text;
            assert_eq!(said, format!("mode: {}", expected.as_str()), "{switch}");
        }
        assert_eq!(h.engine.mode(root).unwrap(), expected, "{switch}");
        while let Ok(event) = h.events.try_recv() {
            if let coder_protocol::EventMsg::Warning { message } = event.msg {
                warned.push((switch, message));
            }
        }
    }
    let narrowed =
        "mode yolo is looser than the session's auto-edit; the conversation uses auto-edit";
    assert_eq!(
        warned,
        [
            ("/yolo", narrowed.to_owned()),
            ("/mode yolo", narrowed.to_owned()),
            ("setMode", narrowed.to_owned()),
        ]
    );
}

/// `/permissions <preset>` follows the same rule as the modes: the configured preset is the
/// ceiling; a looser one is narrowed to it with a `warning`, a stricter one is taken, and
/// going back up to the configured preset is too.
#[tokio::test]
async fn preset_switches_are_clamped_to_the_configured_preset() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.preset = coder_protocol::Preset::Balanced,
        Vec::new(),
    );
    let root = h.root;
    let mut warned = Vec::new();
    for (wanted, expected) in [
        ("yolo", "balanced"),
        ("auto-edit", "balanced"),
        ("strict", "strict"),
        ("balanced", "balanced"),
    ] {
        let said = h
            .engine
            .command(root, &format!("/permissions {wanted}"))
            .unwrap()
            .text;
        assert!(
            said.starts_with(&format!("preset: {expected}, ")),
            "{wanted}: {said}"
        );
        while let Ok(event) = h.events.try_recv() {
            if let coder_protocol::EventMsg::Warning { message } = event.msg {
                warned.push(message);
            }
        }
    }
    assert_eq!(
        warned,
        [
            "preset yolo is looser than the session's balanced; the session uses balanced",
            "preset auto-edit is looser than the session's balanced; the session uses balanced",
        ]
    );
}

/// The `<command-result>` notes of `messages`, by their text.
fn command_notes(messages: &serde_json::Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["content"].as_str())
        .filter(|text| text.starts_with("<command-result>"))
        .map(str::to_owned)
        .collect()
}

/// A command typed while a task runs is told to the model before the next task's input,
/// never inside the running turn (between a tool call and its result); one typed at rest
/// is in the history at once.
#[tokio::test]
async fn a_mode_switched_while_a_task_runs_is_told_before_the_next_input() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            serde_json::json!({"command": "sleep 1; echo slept"}),
        ),
        MockResponse::text("done"),
        MockResponse::text("planning"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| c.mode = Mode::Yolo,
        vec![],
    );
    let root = h.root;
    let task = h.engine.send(root, "sleep").unwrap();
    until_event(&mut h, |event| {
        matches!(event.msg, coder_protocol::EventMsg::ToolCallStarted { .. })
    })
    .await;
    assert_eq!(
        h.engine.command(root, "/mode plan").unwrap().text,
        "mode: plan"
    );
    h.until_end(task).await;
    let history = h.engine.history(root).unwrap();
    super::support::assert_history_valid(&history);
    h.run("what now?").await;
    let requests = server.requests();
    // Not in the turn that ran.
    assert!(command_notes(&requests[1].body["messages"]).is_empty());
    let notes = command_notes(&requests[2].body["messages"]);
    assert_eq!(
        notes,
        [
            "<command-result>\nThe person ran /mode plan themselves; coder answered:\nmode: plan\n</command-result>"
        ]
    );
    let sent = requests[2].body["messages"].to_string();
    assert!(
        sent.find("/mode plan").unwrap() < sent.find("what now?").unwrap(),
        "{sent}"
    );

    // At rest, in the history at once.
    h.engine.command(root, "/default").unwrap();
    let history = h.engine.history(root).unwrap();
    let last = history.last().unwrap().content.clone().unwrap_or_default();
    // A shortcut is told as the `/mode` it stands for.
    assert!(
        last.contains("The person ran /mode default themselves"),
        "{last}"
    );
}

#[tokio::test]
async fn compact_on_an_empty_conversation_says_so_and_starts_nothing() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    // A switch in a conversation with nothing said leaves no note: it stays empty.
    h.engine.command(h.root, "/plan").unwrap();
    assert!(h.engine.history(h.root).unwrap().is_empty());
    let answer = h.engine.command(h.root, "/compact").unwrap();
    assert_eq!(answer.task_id, None);
    assert!(
        answer.text.starts_with("nothing to compact"),
        "{}",
        answer.text
    );
    assert!(server.requests().is_empty());
}

/// The choices a door offers for a built-in command's argument come from the engine: the
/// modes and presets in their order, the model in use first then the known models of the
/// provider's wire format, only what starts with what was typed.
#[tokio::test]
async fn argument_choices_come_from_the_engine_in_their_order() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let h = Harness::new(&server, ProviderKind::Anthropic);
    let values = |command: &str, typed: &str| -> Vec<String> {
        h.engine
            .complete_argument(command, typed)
            .into_iter()
            .map(|choice| choice.value)
            .collect()
    };
    assert_eq!(values("mode", ""), ["plan", "default", "auto-edit", "yolo"]);
    assert_eq!(
        values("permissions", ""),
        ["strict", "balanced", "auto-edit", "yolo"]
    );
    assert_eq!(values("permissions", "AU"), ["auto-edit"]);
    let models = h.engine.complete_argument("model", "");
    assert_eq!(models[0].value, h.engine.model());
    assert_eq!(models[0].note.as_deref(), Some("in use"));
    assert!(
        models[1..]
            .iter()
            .all(|choice| choice.value.starts_with("claude-")),
        "{models:?}"
    );
    assert_eq!(values("model", "claude-son"), ["claude-sonnet-4-5"]);
    // A workspace with no saved session has nothing to resume; `/help` takes no argument.
    assert!(values("resume", "").is_empty());
    assert!(values("help", "").is_empty());
}
