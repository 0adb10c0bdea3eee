//! Provider faults: retries that succeed, retries that give up, broken and stalled streams.

use std::time::Duration;

use coder_core::{ErrorKind, ProviderKind};
use coder_protocol::EventMsg;
use coder_testkit::{Chunk, MockModelServer, MockResponse, StreamFault};
use pretty_assertions::assert_eq;

use super::support::{BOTH, Harness, text_deltas, warnings};

fn completed_with(events: &[coder_protocol::Event]) -> Option<String> {
    match &events.last()?.msg {
        EventMsg::TaskComplete {
            last_agent_message, ..
        } => last_agent_message.clone(),
        _ => None,
    }
}

#[tokio::test]
async fn server_errors_and_overload_are_retried_with_a_warning_each() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![
            MockResponse::status(500),
            MockResponse::status(529),
            MockResponse::text("recovered"),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        let events = h.run("hi").await;
        let warnings = warnings(&events);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("500") && warnings[0].contains("retry 1 of 2"));
        assert!(warnings[1].contains("529") && warnings[1].contains("retry 2 of 2"));
        assert_eq!(completed_with(&events).as_deref(), Some("recovered"));
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn rate_limits_honour_retry_after_up_to_max_delay() {
    // Within `retry.maxDelayMs` (here 2 s), the provider's wait is taken as it is.
    let server = MockModelServer::start(vec![
        MockResponse::rate_limited(1),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| config.retry.max_delay = Duration::from_secs(2),
        Vec::new(),
    );
    let events = h.run("hi").await;
    // The configured backoff is 10 ms to 2 s with jitter; the warning says the wait chosen.
    assert!(warnings(&events)[0].contains("retrying in 1.0s"));
    assert_eq!(completed_with(&events).as_deref(), Some("ok"));

    // A longer wait is cut to `retry.maxDelayMs` (50 ms in the harness): a provider cannot
    // stall coder.
    let server = MockModelServer::start(vec![
        MockResponse::rate_limited(100),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let events = h.run("hi").await;
    assert!(
        warnings(&events)[0].contains("retrying in 0.1s"),
        "{:?}",
        warnings(&events)
    );
    assert_eq!(completed_with(&events).as_deref(), Some("ok"));
}

#[tokio::test]
async fn giving_up_reports_an_error_and_ends_the_task() {
    let server = MockModelServer::start(vec![
        MockResponse::status(503),
        MockResponse::status(503),
        MockResponse::status(503),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::Anthropic);
    let events = h.run("hi").await;
    let error = events
        .iter()
        .find_map(|e| match &e.msg {
            EventMsg::Error { message, kind } => {
                assert_eq!(*kind, ErrorKind::Provider);
                Some(message.clone())
            }
            _ => None,
        })
        .expect("an error event");
    assert!(
        error.contains("503") && error.contains("gave up after 2 retries"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TaskComplete {
            last_agent_message: None,
            step_limit: None,
            error: Some(ErrorKind::Provider),
        }
    );
    // The user's message is kept, so sending again continues the conversation.
    assert_eq!(
        super::support::without_reminders(h.engine.history(h.root).unwrap()).len(),
        1
    );
}

/// The refusals of real providers when a conversation outgrows the model's context: OpenAI,
/// Anthropic, llama.cpp's server and llama-cpp-python's.
const CONTEXT_REFUSALS: [(ProviderKind, &str); 4] = [
    (
        ProviderKind::OpenAi,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    ),
    (
        ProviderKind::Anthropic,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
    ),
    (
        ProviderKind::OpenAi,
        r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
    ),
    (
        ProviderKind::OpenAi,
        r#"{"error":{"message":"Requested tokens (4200) exceed context window of 2048","type":"invalid_request_error"}}"#,
    ),
];

#[tokio::test]
async fn a_conversation_too_long_for_the_model_fails_with_its_own_kind() {
    for (kind, body) in CONTEXT_REFUSALS {
        let server = MockModelServer::start(vec![MockResponse::Status {
            status: 400,
            body: body.to_owned(),
            retry_after_secs: None,
        }])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        let events = h.run("hi").await;
        let kinds: Vec<ErrorKind> = events
            .iter()
            .filter_map(|e| match &e.msg {
                EventMsg::Error { kind, .. } => Some(*kind),
                EventMsg::TaskComplete { error, .. } => *error,
                _ => None,
            })
            .collect();
        assert_eq!(kinds, [ErrorKind::ContextLengthExceeded; 2], "{body}");
        // Not retried: the same request would be refused again.
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockModelServer::start(vec![MockResponse::status(401)])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let events = h.run("hi").await;
    assert!(warnings(&events).is_empty());
    assert!(events.iter().any(|e| matches!(&e.msg,
        EventMsg::Error { message, kind: ErrorKind::Provider } if message.contains("401"))));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_dropped_midway_is_retried_and_the_partial_reply_discarded() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![
            MockResponse::stream(vec![
                Chunk::text("par"),
                Chunk::text("tial"),
                Chunk::text("!"),
            ])
            .with_delay(10)
            .with_fault(StreamFault::Drop { after: 4 }),
            MockResponse::text("whole"),
        ])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        let events = h.run("hi").await;
        let warnings = warnings(&events);
        assert_eq!(warnings.len(), 1, "{kind:?}: {warnings:?}");
        assert!(
            warnings[0].contains("partial reply is discarded"),
            "{warnings:?}"
        );
        assert_eq!(completed_with(&events).as_deref(), Some("whole"));
        let history = super::support::without_reminders(h.engine.history(h.root).unwrap());
        assert_eq!(history[1].content.as_deref(), Some("whole"));
    }
}

#[tokio::test]
async fn a_stalled_stream_times_out_and_is_retried() {
    let server = MockModelServer::start(vec![
        MockResponse::text("never").with_fault(StreamFault::Stall { after: 0 }),
        MockResponse::text("fresh"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let events = h.run("hi").await;
    assert!(warnings(&events)[0].contains("sent nothing for 0.5s"));
    assert_eq!(completed_with(&events).as_deref(), Some("fresh"));
    assert!(server.requests()[0].client_disconnected);
}

#[tokio::test]
async fn a_malformed_chunk_is_skipped_with_a_warning() {
    for kind in BOTH {
        let server = MockModelServer::start(vec![MockResponse::stream(vec![
            Chunk::text("a"),
            Chunk::Raw {
                data: "{this is not json".into(),
            },
            Chunk::text("b"),
        ])])
        .await
        .unwrap();
        let mut h = Harness::new(&server, kind);
        let events = h.run("hi").await;
        assert_eq!(text_deltas(&events), "ab");
        assert!(warnings(&events)[0].contains("malformed"), "{kind:?}");
        assert_eq!(completed_with(&events).as_deref(), Some("ab"));
    }
}

#[tokio::test]
async fn a_closed_loopback_port_is_a_clear_error_without_retries() {
    // Bind and drop a listener, so the port is closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = MockModelServer::start(vec![]).await.unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |c| {
            if let Some(provider) = &mut c.provider {
                provider.base_url = format!("http://127.0.0.1:{port}/v1");
            }
        },
        vec![],
    );
    let events = h.run("hi").await;
    // A local model server that stopped does not come back within the retries.
    assert_eq!(warnings(&events), Vec::<String>::new());
    assert!(events.iter().any(|e| matches!(&e.msg,
        EventMsg::Error { message, .. } if message.contains("nothing is listening at"))));
}
