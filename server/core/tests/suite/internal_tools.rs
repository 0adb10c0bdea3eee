//! Seed 000's `internal_tools` and seed 003's `ToolsPrefs` through `conv_create` called by
//! the model and through `set_context`: keys left out are the caller's (or the
//! conversation's own), `shell_mode` only narrows, and what coder does not have (web
//! search, a streamable shell, a sandbox the session lacks) is refused.

use coder_core::{ContextChange, ConversationSpec, ProviderKind};
use coder_protocol::{ConversationId, EventMsg, ShellMode, ToolsPrefs};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, tool_payload, until_idle, warnings};

/// The names of the tools offered in request `index`.
fn offered(server: &MockModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A caller without the plan tool and without a shell opens a conversation giving only
/// `include_apply_patch_tool`: the new conversation has none of the three. The keys left out
/// are the caller's, not the defaults.
#[tokio::test]
async fn keys_internal_tools_leaves_out_are_the_callers() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "review", "internal_tools": {"include_apply_patch_tool": false}}),
        ),
        MockResponse::text("reviewed"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let caller = h
        .engine
        .create_conversation(ConversationSpec {
            tools_prefs: Some(ToolsPrefs {
                include_plan_tool: Some(false),
                shell_mode: Some(ShellMode::Off),
                ..ToolsPrefs::default()
            }),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(caller, "delegate").unwrap();
    until_idle(&mut h).await;
    let has = |index: usize, tool: &str| offered(&server, index).contains(&tool.to_owned());
    // The caller: no plan tool, no shell, `apply_patch`.
    assert_eq!(
        (has(0, "todo_write"), has(0, "bash"), has(0, "apply_patch")),
        (false, false, true)
    );
    // The worker: the caller's two, and no `apply_patch` as asked.
    assert_eq!(
        (has(1, "todo_write"), has(1, "bash"), has(1, "apply_patch")),
        (false, false, false)
    );
    for tool in ["read", "edit", "write", "conv_create"] {
        assert!(has(1, tool), "{tool}");
    }
}

/// coder has no web search tool and no streamable shell: asking for either fails the call
/// with the reason and opens nothing; so does a sandboxed shell in a session without a
/// sandbox. `false` for both is accepted.
#[tokio::test]
async fn what_coder_does_not_have_is_refused_as_the_calls_result() {
    let server = MockModelServer::start(vec![
        coder_testkit::MockResponse::stream(vec![
            coder_testkit::Chunk::tool_call(
                "web",
                "conv_create",
                json!({"user_instruction": "x", "internal_tools": {"web_search_request": true}}),
            ),
            coder_testkit::Chunk::tool_call(
                "pty",
                "conv_create",
                json!({"user_instruction": "x", "internal_tools": {"use_streamable_shell_tool": true}}),
            ),
        ]),
        MockResponse::tool_call(
            "box",
            "conv_create",
            json!({"user_instruction": "x", "internal_tools": {"shell_mode": "sandboxed"}}),
        ),
        MockResponse::tool_call(
            "ok",
            "conv_create",
            json!({"user_instruction": "x", "internal_tools": {
                "web_search_request": false, "use_streamable_shell_tool": false,
            }}),
        ),
        MockResponse::text("worked"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.sandbox = false,
        Vec::new(),
    );
    h.engine.send(h.root, "try").unwrap();
    until_idle(&mut h).await;
    assert_eq!(
        tool_payload(&server, 1, "web"),
        json!({"success": false, "reason": "web_search_request: coder has no web search tool, \
            so a conversation cannot have one; leave it out or set it to false"})
    );
    assert_eq!(
        tool_payload(&server, 1, "pty"),
        json!({"success": false, "reason": "use_streamable_shell_tool: coder has no streamable \
            shell (its one shell, `bash`, runs each command to its end without input); leave it \
            out or set it to false"})
    );
    let sandboxed = tool_payload(&server, 2, "box");
    assert_eq!(sandboxed["success"], false);
    assert!(
        sandboxed["reason"]
            .as_str()
            .unwrap()
            .starts_with("shell_mode `sandboxed` needs the session's sandbox"),
        "{sandboxed}"
    );
    assert_eq!(
        tool_payload(&server, 4, "ok")["last_assistant_message"],
        "worked"
    );
    assert_eq!(
        h.engine.list_conversations().len(),
        2,
        "only the accepted call opened a conversation"
    );
}

/// `shell_mode` only narrows: a conversation opened with `off` has no `bash`, and one it
/// opens asking for `unconfined` gets `off` too, with a `warning` saying so.
#[tokio::test]
async fn shell_mode_only_narrows_down_the_chain_of_callers() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"user_instruction": "look only", "internal_tools": {"shell_mode": "off"}}),
        ),
        MockResponse::tool_call(
            "c2",
            "conv_create",
            json!({"user_instruction": "run it", "internal_tools": {"shell_mode": "unconfined"}}),
        ),
        MockResponse::text("cannot run anything"),
        MockResponse::text("nothing ran"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "delegate").unwrap();
    let events = until_idle(&mut h).await;
    assert!(offered(&server, 0).contains(&"bash".to_owned()));
    assert!(!offered(&server, 1).contains(&"bash".to_owned()));
    assert!(!offered(&server, 2).contains(&"bash".to_owned()));
    let third: ConversationId = events
        .iter()
        .filter(|e| matches!(e.msg, EventMsg::TaskStarted { .. }))
        .map(|e| e.conversation_id)
        .nth(2)
        .unwrap();
    let of_third: Vec<_> = events
        .iter()
        .filter(|e| e.conversation_id == third)
        .cloned()
        .collect();
    let told = warnings(&of_third);
    assert_eq!(
        told,
        ["shell_mode `unconfined` is looser than this conversation may have; it uses `off`"]
    );
}

/// `set_context`'s tool preferences resolve as a conversation's do when it opens: a key left
/// out keeps the conversation's current choice (not the defaults), and a refused key (web
/// search) refuses the whole change, the base instructions given with it too.
#[tokio::test]
async fn set_context_keeps_the_tool_choices_it_leaves_out() {
    let server = MockModelServer::start(vec![MockResponse::text("one"), MockResponse::text("two")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.sandbox = false,
        Vec::new(),
    );
    let id = h
        .engine
        .create_conversation(ConversationSpec {
            tools_prefs: Some(ToolsPrefs {
                include_plan_tool: Some(false),
                shell_mode: Some(ShellMode::Off),
                ..ToolsPrefs::default()
            }),
            ..ConversationSpec::default()
        })
        .unwrap();
    h.engine.send(id, "first").unwrap();
    until_idle(&mut h).await;
    h.engine
        .set_context(
            id,
            ContextChange {
                tools_prefs: Some(ToolsPrefs {
                    include_apply_patch_tool: Some(false),
                    ..ToolsPrefs::default()
                }),
                ..ContextChange::default()
            },
        )
        .unwrap();
    let refused = h.engine.set_context(
        id,
        ContextChange {
            base_instructions: Some(Some("IGNORED".to_owned())),
            tools_prefs: Some(ToolsPrefs {
                include_plan_tool: Some(true),
                web_search_request: Some(true),
                ..ToolsPrefs::default()
            }),
            ..ContextChange::default()
        },
    );
    let refused = refused.unwrap_err().to_string();
    assert!(refused.contains("web_search_request"), "{refused}");
    h.engine.send(id, "second").unwrap();
    until_idle(&mut h).await;
    let has = |index: usize, tool: &str| offered(&server, index).contains(&tool.to_owned());
    assert_eq!(
        (has(0, "todo_write"), has(0, "bash"), has(0, "apply_patch")),
        (false, false, true)
    );
    // The plan tool and the shell stay off; only `apply_patch` went, as asked.
    assert_eq!(
        (has(1, "todo_write"), has(1, "bash"), has(1, "apply_patch")),
        (false, false, false)
    );
    let system = server.requests()[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!system.contains("IGNORED"));
}

/// `set_context` only narrows the session's tools: a looser `shell_mode` is narrowed to the
/// session's shell and a tool the session disabled stays hidden, each with a `warning` of
/// the conversation.
#[tokio::test]
async fn set_context_narrows_to_the_sessions_tools_and_says_so() {
    let server = MockModelServer::start(vec![MockResponse::text("done")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.disabled_tools = vec!["bash".to_owned(), "todo_write".to_owned()],
        Vec::new(),
    );
    let root = h.root;
    h.engine
        .set_context(
            root,
            ContextChange {
                tools_prefs: Some(ToolsPrefs {
                    include_plan_tool: Some(true),
                    shell_mode: Some(ShellMode::Unconfined),
                    ..ToolsPrefs::default()
                }),
                ..ContextChange::default()
            },
        )
        .unwrap();
    h.engine.send(root, "go").unwrap();
    let events = until_idle(&mut h).await;
    assert_eq!(
        warnings(&events),
        [
            "shell_mode `unconfined` is looser than this conversation may have; it uses `off`",
            "the conversation asks for `todo_write`, which this session's configuration disables \
             (tools.disabled); a conversation may only narrow the session's tools, so \
             `todo_write` stays hidden",
        ]
    );
    let tools = offered(&server, 0);
    assert!(!tools.contains(&"bash".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"todo_write".to_owned()), "{tools:?}");
}
