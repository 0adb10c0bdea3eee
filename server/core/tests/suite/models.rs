//! The limits a task runs with: a known model's own context window and output limit, the
//! configured ones over them, and a guess, said once, for a model nobody described.

use coder_core::ProviderKind;
use coder_protocol::EventMsg;
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{Harness, warnings};

fn reply() -> MockResponse {
    MockResponse::stream(vec![Chunk::text("ok"), Chunk::usage(10, 2)])
}

fn window(events: &[coder_protocol::Event]) -> Option<u64> {
    events.iter().find_map(|event| match &event.msg {
        EventMsg::TokenCount { context_window, .. } => *context_window,
        _ => None,
    })
}

#[tokio::test]
async fn an_unknown_models_window_is_guessed_and_said_once() {
    let server = MockModelServer::start(vec![reply(), reply()])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| {
            config.context_window = None;
            config.model = "my-local-model".into();
        },
        Vec::new(),
    );
    let first = h.run("one").await;
    let said = warnings(&first);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("`my-local-model`")
            && said[0].contains("32768 tokens")
            && said[0].contains("contextWindow"),
        "{}",
        said[0]
    );
    assert_eq!(window(&first), Some(32_768));
    let second = h.run("two").await;
    assert_eq!(warnings(&second), Vec::<String>::new());
    assert_eq!(window(&second), Some(32_768));
}

#[tokio::test]
async fn a_known_model_runs_with_its_own_limits_and_configured_ones_win() {
    // Anthropic requests carry the output limit (`max_tokens`), so both show there.
    let server = MockModelServer::start(vec![reply(), reply()])
        .await
        .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::Anthropic,
        |config| {
            config.context_window = None;
            config.model = "claude-3-haiku-20240307".into();
        },
        Vec::new(),
    );
    let events = h.run("one").await;
    assert_eq!(warnings(&events), Vec::<String>::new());
    assert_eq!(window(&events), Some(200_000));
    assert_eq!(server.requests()[0].body["max_tokens"], 4_096);

    let mut h = Harness::with(
        &server,
        ProviderKind::Anthropic,
        |config| {
            config.context_window = Some(50_000);
            config.max_output_tokens = Some(1_000);
            config.model = "claude-3-haiku-20240307".into();
        },
        Vec::new(),
    );
    let events = h.run("two").await;
    assert_eq!(window(&events), Some(50_000));
    assert_eq!(server.requests()[1].body["max_tokens"], 1_000);
}
