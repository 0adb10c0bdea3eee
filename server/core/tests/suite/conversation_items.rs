//! Seed 000's multimodal input through the conversation tools: images given to
//! `conv_create`/`conv_send` as `items` reach the model as images in each provider's form,
//! and `conv_history` carries them, with the images tool calls returned, as attachments.

use coder_core::ProviderKind;
use coder_protocol::{ConversationId, EventMsg};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{BOTH, Harness, until_idle};

const WEB_IMAGE: &str = "https://images.example.com/cat.png";
const PASTED_GIF: &str = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";
/// `dot.png` of the workspace (four bytes), as `read` attaches it.
const READ_PNG: &str = "data:image/png;base64,iVBORw==";

/// The text of the result the model received for tool call `call_id` in request `index`.
fn result_of(server: &MockModelServer, kind: ProviderKind, index: usize, call_id: &str) -> String {
    let messages = server.requests()[index].body["messages"].clone();
    let messages = messages.as_array().unwrap();
    let found = match kind {
        ProviderKind::OpenAi => messages
            .iter()
            .find(|m| m["tool_call_id"] == call_id)
            .map(|m| m["content"].clone()),
        ProviderKind::Anthropic => messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == call_id)
            .map(|b| b["content"].clone()),
    };
    found
        .and_then(|content| content.as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("{kind:?}: no result for {call_id} in request {index}"))
}

/// The first user message of request `index` as content parts (OpenAI) or blocks
/// (Anthropic).
fn first_user_content(server: &MockModelServer, index: usize) -> Vec<Value> {
    let body = &server.requests()[index].body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_array().cloned())
        .unwrap_or_default()
}

/// The images of tool results in request `index`: OpenAI's user message after the results,
/// Anthropic's blocks inside the `tool_result`.
fn tool_result_images(server: &MockModelServer, kind: ProviderKind, index: usize) -> Vec<Value> {
    let body = &server.requests()[index].body;
    let messages = body["messages"].as_array().unwrap();
    match kind {
        ProviderKind::OpenAi => messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .find(|parts| parts[0]["text"] == "Images returned by the tool calls above:")
            .map(|parts| parts[1..].to_vec())
            .unwrap_or_default(),
        ProviderKind::Anthropic => messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_result")
            .flat_map(|b| b["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "image")
            .cloned()
            .collect(),
    }
}

/// The model opens a conversation with a question and two images, one by URL and one
/// pasted; the new conversation reads a picture of the workspace. Each provider receives
/// the images as images (the URL as a URL, for the provider to fetch), and `conv_history`
/// lists them as attachments: the input's on its user entry, the one `read` returned on the
/// assistant entry that called `read`.
#[tokio::test]
async fn items_given_to_conv_create_reach_the_model_as_images_and_show_in_its_history() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![
            MockResponse::tool_call(
                "c1",
                "conv_create",
                json!({"user_instruction": "describe", "items": [
                    {"type": "image", "image_url": WEB_IMAGE},
                    {"type": "image", "image_url": PASTED_GIF},
                ]}),
            ),
            MockResponse::tool_call("r1", "read", json!({"path": "dot.png"})),
            MockResponse::text("a cat"),
            MockResponse::text("done"),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        std::fs::write(h.workspace.path().join("dot.png"), [0x89, b'P', b'N', b'G']).unwrap();
        h.engine.send(h.root, "delegate").unwrap();
        let events = until_idle(&mut h).await;
        let worker: ConversationId = events
            .iter()
            .find(|e| e.conversation_id != h.root && matches!(e.msg, EventMsg::TaskStarted { .. }))
            .map(|e| e.conversation_id)
            .unwrap();

        // The worker's first request: the question, then both images.
        let expected = match kind {
            ProviderKind::OpenAi => vec![
                json!({"type": "text", "text": "describe"}),
                json!({"type": "image_url", "image_url": {"url": WEB_IMAGE}}),
                json!({"type": "image_url", "image_url": {"url": PASTED_GIF}}),
            ],
            ProviderKind::Anthropic => vec![
                json!({"type": "text", "text": "describe"}),
                json!({"type": "image", "source": {"type": "url", "url": WEB_IMAGE}}),
                json!({"type": "image", "source": {
                    "type": "base64", "media_type": "image/gif", "data": "R0lGODlhAQABAAAAACw=",
                }}),
            ],
        };
        let content = first_user_content(&server, 1);
        assert_eq!(content[..3.min(content.len())], expected[..], "{kind:?}");
        // Its second: the picture `read` returned.
        let read_image = match kind {
            ProviderKind::OpenAi => json!({"type": "image_url", "image_url": {"url": READ_PNG}}),
            ProviderKind::Anthropic => json!({"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": "iVBORw==",
            }}),
        };
        assert_eq!(
            tool_result_images(&server, kind, 2),
            [read_image],
            "{kind:?}"
        );

        server.push([
            MockResponse::tool_call(
                "h1",
                "conv_history",
                json!({"conversation_id": worker.to_string()}),
            ),
            MockResponse::text("seen"),
        ]);
        h.engine.send(h.root, "what did it see?").unwrap();
        until_idle(&mut h).await;
        let history: Value = serde_json::from_str(&result_of(&server, kind, 5, "h1")).unwrap();
        assert_eq!(
            history,
            json!({"entries": [
                {"role": "user", "text": "describe", "attachments": [
                    {"type": "image", "image_url": WEB_IMAGE},
                    {"type": "image", "image_url": PASTED_GIF},
                ]},
                {"role": "assistant", "attachments": [{"type": "image", "image_url": READ_PNG}]},
                {"role": "assistant", "text": "a cat", "attachments": []},
            ]}),
            "{kind:?}"
        );
    }
}

/// `conv_send` takes images as `conv_create` does; an image that is neither a `data:` URL
/// nor an `http(s)` URL fails the call with the reason, before anything opens or runs.
#[tokio::test]
async fn conv_send_sends_images_and_an_image_of_another_scheme_is_refused() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let other = h
        .engine
        .create_conversation(coder_core::ConversationSpec::default())
        .unwrap();
    server.push([
        MockResponse::tool_call(
            "bad",
            "conv_create",
            json!({"items": [{"type": "image", "image_url": "file:///etc/passwd"}]}),
        ),
        MockResponse::tool_call(
            "s1",
            "conv_send",
            json!({"conversation_id": other.to_string(), "text": "and this?", "items": [
                {"type": "image", "image_url": WEB_IMAGE},
            ]}),
        ),
        MockResponse::text("a dog"),
        MockResponse::text("done"),
    ]);
    h.engine.send(h.root, "look").unwrap();
    until_idle(&mut h).await;
    let refused: Value =
        serde_json::from_str(&result_of(&server, ProviderKind::OpenAi, 1, "bad")).unwrap();
    assert_eq!(refused["success"], false);
    assert_eq!(
        refused["reason"],
        "image 1 of the input is neither a `data:` URL nor an `http(s)` URL: \
         `file:///etc/passwd`; nothing was sent"
    );
    assert_eq!(h.engine.list_conversations().len(), 2, "nothing opened");
    assert_eq!(
        first_user_content(&server, 2),
        [
            json!({"type": "text", "text": "and this?"}),
            json!({"type": "image_url", "image_url": {"url": WEB_IMAGE}}),
        ]
    );
}

/// Seed 000's `conv_create` result: `first_items_count` is how many `items` the new
/// conversation's first input carried (the `user_instruction` is `first_user_message`, not
/// an item), present only when items were given.
#[tokio::test]
async fn conv_create_reports_how_many_items_its_first_input_carried() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "conv_create",
            json!({"items": [
                {"type": "text", "text": "what is in these?"},
                {"type": "image", "image_url": WEB_IMAGE},
                {"type": "image", "image_url": PASTED_GIF},
            ]}),
        ),
        MockResponse::text("two cats"),
        MockResponse::tool_call(
            "c2",
            "conv_create",
            json!({"user_instruction": "and this?", "items": [
                {"type": "image", "image_url": WEB_IMAGE},
            ]}),
        ),
        MockResponse::text("one cat"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.engine.send(h.root, "delegate").unwrap();
    until_idle(&mut h).await;
    let payload = |index: usize, call: &str| -> Value {
        let mut payload: Value =
            serde_json::from_str(&result_of(&server, ProviderKind::OpenAi, index, call)).unwrap();
        payload["conversation_id"] = json!("<id>");
        payload
    };
    assert_eq!(
        payload(2, "c1"),
        json!({
            "conversation_id": "<id>",
            "first_items_count": 3,
            "last_assistant_message": "two cats",
        })
    );
    assert_eq!(
        payload(4, "c2"),
        json!({
            "conversation_id": "<id>",
            "first_user_message": "and this?",
            "first_items_count": 1,
            "last_assistant_message": "one cat",
        })
    );
    // The worker was given all of them, the text first.
    assert_eq!(
        first_user_content(&server, 1),
        [
            json!({"type": "text", "text": "what is in these?"}),
            json!({"type": "image_url", "image_url": {"url": WEB_IMAGE}}),
            json!({"type": "image_url", "image_url": {"url": PASTED_GIF}}),
        ]
    );
}
