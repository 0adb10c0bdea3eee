//! Input limits: the size of one prompt and the number of conversations in a session.

use coder_core::{ConversationSpec, EngineError, ErrorKind, ProviderKind};
use coder_protocol::InputItem;
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, last_tool_result};

#[tokio::test]
async fn a_prompt_over_max_prompt_bytes_is_refused_before_anything_is_queued() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.max_prompt_bytes = 10,
        vec![],
    );
    // All text items of one input count together, and an image by URL is sent as text;
    // a `data:` image does not count (it has limits of its own).
    let items = vec![
        InputItem::Text {
            text: "123456".to_owned(),
        },
        InputItem::Image {
            image_url: "data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAA".to_owned(),
        },
        InputItem::Text {
            text: "12345".to_owned(),
        },
    ];
    let err = h.engine.send_items(h.root, items).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded);
    assert_eq!(
        err.to_string(),
        "the prompt is 11 bytes, over the limit of 10 bytes (maxPromptBytes)"
    );
    let url = InputItem::Image {
        image_url: "https://example.com/image.png".to_owned(),
    };
    let err = h.engine.send_items(h.root, vec![url]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the prompt is 29 bytes, over the limit of 10 bytes (maxPromptBytes)"
    );
    assert_eq!(h.engine.queued_tasks(), 0);
    assert!(h.engine.running_task().is_none());
    assert!(h.engine.history(h.root).unwrap().is_empty());
    // Exactly the limit is fine.
    h.engine.send(h.root, "1234567890").unwrap();
    assert!(server.requests().len() <= 1);
}

/// A `data:` image of `bytes` bytes (base64 of zeros).
fn image(bytes: usize) -> InputItem {
    InputItem::Image {
        image_url: format!("data:image/png;base64,{}", "A".repeat(bytes / 3 * 4)),
    }
}

#[tokio::test]
async fn images_past_their_limits_are_refused_and_nothing_is_lost() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let text = InputItem::Text {
        text: "look".to_owned(),
    };
    // One image of 40 MB: refused, nothing queued or recorded.
    let err = h
        .engine
        .send_items(h.root, vec![text.clone(), image(40_000_002)])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded);
    assert_eq!(
        err.to_string(),
        "image 1 of the input is 40000002 bytes, over the limit of 10 MiB an image; nothing \
         was sent: send it again with a smaller image"
    );
    assert_eq!(h.engine.queued_tasks(), 0);
    assert!(h.engine.history(h.root).unwrap().is_empty());
    // Two of 9 MiB fit the conversation's 20 MiB; a third does not.
    let nine = 9 << 20;
    let task = h
        .engine
        .send_items(h.root, vec![text.clone(), image(nine), image(nine)])
        .unwrap();
    h.until_end(task).await;
    let before = h.engine.history(h.root).unwrap();
    let err = h
        .engine
        .send_items(h.root, vec![text, image(nine)])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded);
    assert_eq!(
        err.to_string(),
        format!(
            "the input's images ({nine} bytes) and those the conversation holds ({} bytes) \
             exceed the limit of 20 MiB of images a conversation; nothing was sent: send it \
             without images, with smaller ones, or in a new conversation",
            2 * nine
        )
    );
    assert_eq!(h.engine.history(h.root).unwrap(), before);
    // Text still goes.
    assert!(h.engine.send(h.root, "and now?").is_ok());
}

#[tokio::test]
async fn an_input_without_an_image_or_text_but_whitespace_is_refused() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let h = Harness::new(&server, ProviderKind::OpenAi);
    let text = |text: &str| InputItem::Text {
        text: text.to_owned(),
    };
    for items in [vec![], vec![text("")], vec![text(" \n\t"), text("  ")]] {
        let err = h.engine.send_items(h.root, items.clone()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidParams, "{items:?}");
        assert_eq!(
            err.to_string(),
            "the input is empty: give some text (not only whitespace), an image, or both"
        );
    }
    assert_eq!(h.engine.queued_tasks(), 0);
    assert!(h.engine.history(h.root).unwrap().is_empty());
    // An image alone is input.
    let image = InputItem::Image {
        image_url: "data:image/png;base64,AAAA".to_owned(),
    };
    h.engine.send_items(h.root, vec![text(" "), image]).unwrap();
}

#[tokio::test]
async fn conversations_past_max_conversations_are_refused_to_the_api_and_the_model() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "conv_create", json!({"user_instruction": "hi"})),
        MockResponse::text("could not"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.max_conversations = 2,
        vec![],
    );
    let second = h
        .engine
        .create_conversation(ConversationSpec::default())
        .unwrap();
    let err = h
        .engine
        .create_conversation(ConversationSpec::default())
        .unwrap_err();
    assert_eq!(err, EngineError::too_many_conversations(2));
    assert_eq!(err.kind().code(), "limit_exceeded");
    assert_eq!(h.engine.list_conversations().len(), 2);

    // The model's conv_create gets the reason back.
    h.run("delegate").await;
    let result: serde_json::Value = serde_json::from_str(&last_tool_result(&server)).unwrap();
    assert_eq!(result["success"], false);
    assert!(
        result["reason"]
            .as_str()
            .unwrap()
            .contains("maxConversations"),
        "{result}"
    );

    // Destroying one makes room again.
    h.engine.destroy_conversation(second).unwrap();
    h.engine
        .create_conversation(ConversationSpec::default())
        .unwrap();
}
