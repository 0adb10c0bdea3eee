//! A model reply is bounded: past `maxReplyBytes`, `maxOutputTokens` or the transport's
//! buffer limit the stream is dropped, the task ends with an error, and the history stays a
//! request any OpenAI-compatible server accepts.

use coder_core::ProviderKind;
use coder_protocol::{ChatMessage, EventMsg, Role};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{BOTH, Harness, assert_history_valid};

fn errors(events: &[coder_protocol::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Runs `hi` against `reply` and returns the error the task ended with; checks that the
/// task completed, the stream was dropped, nothing was retried, and only the user's message
/// is kept.
async fn cut_with(
    kind: ProviderKind,
    reply: MockResponse,
    adjust: impl FnOnce(&mut coder_core::Config),
) -> (String, Harness, MockModelServer) {
    let server = MockModelServer::start(vec![reply]).await.unwrap();
    let mut h = Harness::with(&server, kind, adjust, Vec::new());
    let events = h.run("hi").await;
    let errors = errors(&events);
    assert_eq!(errors.len(), 1, "{kind:?}: {errors:?}");
    assert!(matches!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete { .. }
    ));
    let dropped = server
        .wait_for(std::time::Duration::from_secs(5), |requests| {
            requests.len() == 1 && requests[0].client_disconnected
        })
        .await;
    assert!(
        dropped,
        "{kind:?}: the stream was not dropped (or was retried)"
    );
    assert_eq!(
        super::support::without_reminders(h.engine.history(h.root).unwrap()),
        [ChatMessage::user("hi")]
    );
    (errors[0].clone(), h, server)
}

#[tokio::test]
async fn a_reply_past_max_reply_bytes_is_dropped_with_an_error_naming_the_setting() {
    for kind in BOTH {
        let piece = "x".repeat(1000);
        let reply = MockResponse::endless(vec![Chunk::thinking("hm")], Chunk::text(&piece));
        let (error, ..) = cut_with(kind, reply, |config| config.max_reply_bytes = 50_000).await;
        assert!(
            error.contains("maxReplyBytes (50000 bytes")
                && error.contains("raise \"maxReplyBytes\""),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_reply_past_max_output_tokens_is_dropped_with_an_error_naming_the_setting() {
    for kind in BOTH {
        let reply = MockResponse::endless(Vec::new(), Chunk::text("a"));
        let (error, ..) =
            cut_with(kind, reply, |config| config.max_output_tokens = Some(100)).await;
        assert!(
            error.contains("maxOutputTokens (100 tokens)")
                && error.contains("raise \"maxOutputTokens\""),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_provider_that_honours_max_output_tokens_is_never_cut() {
    for kind in BOTH {
        // One token per delta, exactly the limit, with thinking, a tool call and usage.
        let mut chunks = vec![Chunk::thinking("t")];
        chunks.extend((0..97).map(|_| Chunk::text("a")));
        chunks.push(Chunk::tool_call(
            "c1",
            "glob",
            serde_json::json!({"pattern": "*"}),
        ));
        chunks.push(Chunk::usage(10, 100));
        let server = MockModelServer::start(vec![
            MockResponse::stream(chunks),
            MockResponse::text("done"),
        ])
        .await
        .unwrap();
        let mut h = Harness::with(
            &server,
            kind,
            |c| c.max_output_tokens = Some(100),
            Vec::new(),
        );
        let events = h.run("hi").await;
        assert_eq!(errors(&events), Vec::<String>::new(), "{kind:?}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn a_stream_without_newlines_is_cut_at_twice_max_reply_bytes() {
    let reply = MockResponse::endless(
        vec![Chunk::text("before ")],
        Chunk::Verbatim {
            text: "data: never ends ".repeat(100),
        },
    );
    let (error, ..) = cut_with(ProviderKind::OpenAi, reply, |config| {
        config.max_reply_bytes = 10_000;
    })
    .await;
    assert!(
        error.contains("more than 85536 bytes without completing an event")
            && error.contains("raise \"maxReplyBytes\""),
        "{error}"
    );
}

#[tokio::test]
async fn a_half_streamed_tool_call_cut_by_a_limit_leaves_a_history_that_replays() {
    let head = vec![
        Chunk::text("Writing the file."),
        Chunk::ToolCallDelta {
            index: 0,
            id: Some("c1".into()),
            name: Some("write".into()),
            arguments: r#"{"path":"big.txt","content":""#.into(),
        },
    ];
    let more = Chunk::ToolCallDelta {
        index: 0,
        id: None,
        name: None,
        arguments: "y".repeat(500),
    };
    let (error, mut h, server) = cut_with(
        ProviderKind::OpenAi,
        MockResponse::endless(head, more),
        |config| config.max_reply_bytes = 20_000,
    )
    .await;
    assert!(error.contains("maxReplyBytes"), "{error}");
    assert!(!h.workspace.path().join("big.txt").exists());

    // The conversation goes on, and what it sends holds no call without its result.
    server.push([MockResponse::text("sorry, shorter now")]);
    let events = h.run("try again, shorter").await;
    assert_eq!(errors(&events), Vec::<String>::new());
    let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
    assert_history_valid(&history);
    let sent = server.requests()[1].body["messages"].clone();
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "user", "user"],
        "the input, its reminders, the next"
    );
    assert_eq!(history.last().unwrap().role, Role::Assistant);
}
