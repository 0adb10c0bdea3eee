//! Tool calling through the prompt (seed 002) against a real HTTP mock: the tools go as a
//! description, never as `tools`; calls written in the reply run and never show as text;
//! the history goes back as text.

use coder_core::{ProviderKind, ToolCalling};
use coder_protocol::EventMsg;
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{Harness, assert_history_valid, text_deltas};

fn call_reply() -> MockResponse {
    // The block arrives cut in pieces, as a model streams it.
    MockResponse::stream(vec![
        Chunk::text("Let me read it.\n<tool"),
        Chunk::text("_call>\n{\"name\": \"read\", \"argu"),
        Chunk::text("ments\": {\"path\": \"notes.txt\"}}\n</tool_call>"),
    ])
}

#[tokio::test]
async fn a_call_written_in_the_reply_runs_and_the_history_goes_back_as_text() {
    let server = MockModelServer::start(vec![call_reply(), MockResponse::text("It says hi.")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.tool_calling = Some(ToolCalling::Prompt),
        Vec::new(),
    );
    h.write("notes.txt", "hi\n");
    let events = h.run("What do the notes say?").await;

    // Shown: the text, never the block.
    let shown = text_deltas(&events);
    assert_eq!(shown, "Let me read it.\nIt says hi.");
    let completed: Vec<&str> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ToolCallCompleted { tool_name, .. } => Some(tool_name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(completed, ["read"]);

    let requests = server.requests();
    for request in &requests {
        assert!(request.body.get("tools").is_none(), "{}", request.body);
    }
    let first = requests[0].body["messages"].as_array().unwrap().clone();
    assert_eq!(first[1]["role"], "system");
    let described = first[1]["content"].as_str().unwrap();
    assert!(described.starts_with("Available tools:\n"), "{described}");
    assert!(described.contains("- read(path: string"), "{described}");
    let second = requests[1].body["messages"].as_array().unwrap().clone();
    // The description once, then the history as text.
    let descriptions = second
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|text| text.starts_with("Available tools:"))
        })
        .count();
    assert_eq!(descriptions, 1);
    let call = second.iter().find(|m| m["role"] == "assistant").unwrap();
    assert!(call.get("tool_calls").is_none(), "{call}");
    assert!(
        call["content"].as_str().unwrap().contains(
            "<tool_call>\n{\"arguments\":{\"path\":\"notes.txt\"},\"name\":\"read\"}\n</tool_call>"
        ),
        "{call}"
    );
    let result = second.last().unwrap();
    assert_eq!(result["role"], "user");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("<tool_response name=\"read\">\n"),
        "{result}"
    );
    // The conversation itself keeps real tool calls and results.
    let history = h.engine.history(h.root).unwrap();
    assert!(history.iter().any(|m| !m.tool_calls.is_empty()));
    assert_history_valid(&history);
}

#[tokio::test]
async fn the_bundled_small_model_is_called_through_the_prompt_unless_configured() {
    let server = MockModelServer::start(vec![MockResponse::text("ok"), MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.model = "smollm2".into(),
        Vec::new(),
    );
    h.run("hi").await;
    assert!(server.requests()[0].body.get("tools").is_none());
    let mut native = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| {
            config.model = "smollm2".into();
            config.tool_calling = Some(ToolCalling::Native);
        },
        Vec::new(),
    );
    native.run("hi").await;
    assert!(server.requests()[1].body["tools"].is_array());
}
