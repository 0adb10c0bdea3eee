//! Seed 003's apply_patch instructions, on the request the model receives: they follow the
//! built-in prompt (never custom instructions or a per-task override) when the
//! conversation's tools lack `apply_patch` (a patch then goes through `bash`, which coder
//! applies as an `apply_patch` call) or the model reads its tools in the prompt.

use coder_core::{ConversationSpec, ProviderKind, ToolCalling};
use coder_protocol::{EventMsg, InputItem, PermissionDecision, ToolsPrefs};
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::support::{Harness, answer_with, system_of, until_idle};

/// The instructions' opening and what each way of applying a patch says.
const FORMAT: &str = "# Changing files with apply_patch\n";
const THROUGH_SHELL: &str = "This conversation has no `apply_patch` tool. Apply a patch by \
                             running it with `bash` as the `apply_patch` command";
const THROUGH_TOOL: &str = "Apply a patch by calling the `apply_patch` tool";
const NOT_AVAILABLE: &str = "The apply_patch tool is not available in this conversation";

const ADD_NOTES: &str =
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+patched\n*** End Patch\nEOF";

fn no_apply_patch() -> Option<ToolsPrefs> {
    Some(ToolsPrefs {
        include_apply_patch_tool: Some(false),
        ..ToolsPrefs::default()
    })
}

/// A conversation without the `apply_patch` tool and with the built-in prompt is told the
/// patch format and to run patches through `bash`, right after the built-in prompt; the
/// model does, and the patch applies as an `apply_patch` call would (its diff in the
/// result, the call reported as `apply_patch`).
#[tokio::test]
async fn without_the_tool_the_instructions_follow_the_built_in_prompt_and_bash_applies_the_patch() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("p1", "bash", json!({"command": ADD_NOTES})),
        MockResponse::text("patched"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let conversation = h
        .engine
        .create_conversation(ConversationSpec {
            tools_prefs: no_apply_patch(),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(conversation, "add the notes").unwrap();
    let events = until_idle(&mut h).await;

    let system = system_of(&server, 0);
    let built_in = coder_core::built_in_prompt().trim_end();
    assert!(
        system.starts_with(&format!("{built_in}\n\n{FORMAT}")),
        "{system}"
    );
    assert!(system.contains(THROUGH_SHELL), "{system}");
    assert!(system.contains("*** Begin Patch") && !system.contains(NOT_AVAILABLE));
    let instructions_end = system.find(THROUGH_SHELL).unwrap();
    assert!(instructions_end < system.find("# Environment").unwrap());
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(!tools.contains("\"apply_patch\"") && tools.contains("\"bash\""));

    assert_eq!(
        std::fs::read_to_string(h.workspace.path().join("notes.txt")).unwrap(),
        "patched\n"
    );
    let completed = events.iter().find_map(|e| match &e.msg {
        EventMsg::ToolCallCompleted {
            call_id,
            tool_name,
            diff,
            ..
        } if call_id == "p1" => Some((tool_name.clone(), diff.clone())),
        _ => None,
    });
    let (tool_name, diff) = completed.unwrap();
    assert_eq!(tool_name, "apply_patch");
    assert!(diff.is_some_and(|diff| diff.contains("+patched")));
}

/// A patch through `bash` is an `apply_patch` call for the permission policy too: a
/// protected file asks a person even in yolo mode, and a refusal writes nothing.
#[tokio::test]
async fn a_patch_through_bash_to_a_protected_file_still_needs_a_person() {
    let hook = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n*** End Patch\nEOF";
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("p1", "bash", json!({"command": hook})),
        MockResponse::text("refused"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.mode = coder_protocol::Mode::Yolo,
        Vec::new(),
    );
    std::fs::create_dir_all(h.workspace.path().join(".git/hooks")).unwrap();
    let asked = answer_with(&h.engine, PermissionDecision::Deny { message: None });
    let conversation = h
        .engine
        .create_conversation(ConversationSpec {
            tools_prefs: no_apply_patch(),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(conversation, "add a hook").unwrap();
    until_idle(&mut h).await;
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        matches!(&asked[0].msg, EventMsg::PermissionRequested { tool_name, human_required: true, .. } if tool_name == "apply_patch"),
        "{asked:?}"
    );
    assert!(!h.workspace.path().join(".git/hooks/pre-commit").exists());
}

/// Instructions given by the conversation or for one task stay exactly as given, even when
/// they include the built-in prompt; and a conversation offered `apply_patch` by a model
/// that takes tools natively is told nothing more.
#[tokio::test]
async fn no_instructions_after_custom_instructions_an_override_or_with_the_tool() {
    let server = MockModelServer::start(vec![
        MockResponse::text("a"),
        MockResponse::text("b"),
        MockResponse::text("c"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let around_built_in = h
        .engine
        .create_conversation(ConversationSpec {
            base_instructions: Some(format!("Mine.\n\n{}", coder_core::built_in_prompt())),
            tools_prefs: no_apply_patch(),
            ..ConversationSpec::default()
        })
        .unwrap();
    let overridden = h
        .engine
        .create_conversation(ConversationSpec {
            tools_prefs: no_apply_patch(),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(around_built_in, "one").unwrap();
    until_idle(&mut h).await;
    h.engine
        .send_with_instructions(
            overridden,
            vec![InputItem::Text { text: "two".into() }],
            "Only this task's.".into(),
        )
        .unwrap();
    until_idle(&mut h).await;
    h.engine.send(h.root, "three").unwrap();
    until_idle(&mut h).await;
    for index in 0..3 {
        let system = system_of(&server, index);
        assert!(!system.contains(FORMAT), "request {index}: {system}");
        assert!(!system.contains(NOT_AVAILABLE), "request {index}: {system}");
    }
    assert!(system_of(&server, 1).starts_with("Only this task's."));
}

/// Where a patch cannot be applied at all (the session disabled `apply_patch`), the
/// built-in prompt is followed by a note saying so instead, and `bash` does not stand in.
#[tokio::test]
async fn a_tool_the_session_disabled_gets_the_note_and_bash_does_not_apply_patches() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("p1", "bash", json!({"command": ADD_NOTES})),
        MockResponse::text("could not"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.disabled_tools = vec!["apply_patch".into()],
        Vec::new(),
    );
    let events = h.run("add the notes").await;
    let system = system_of(&server, 0);
    assert!(system.contains(NOT_AVAILABLE), "{system}");
    assert!(!system.contains(FORMAT), "{system}");
    assert!(!h.workspace.path().join("notes.txt").exists());
    // The command went to the shell, which has no `apply_patch`.
    assert!(events.iter().any(|e| matches!(
        &e.msg,
        EventMsg::ToolCallCompleted { call_id, tool_name, .. } if call_id == "p1" && tool_name == "bash"
    )));
}

/// A model that reads its tools in the prompt sees one line per tool, which leaves the patch
/// format out: the instructions follow the built-in prompt, telling it to call the tool.
#[tokio::test]
async fn a_model_reading_its_tools_in_the_prompt_is_told_the_format() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.tool_calling = Some(ToolCalling::Prompt),
        Vec::new(),
    );
    h.run("hello").await;
    let system = system_of(&server, 0);
    assert!(
        system.contains(FORMAT) && system.contains(THROUGH_TOOL),
        "{system}"
    );
    assert!(!system.contains(THROUGH_SHELL));
}
