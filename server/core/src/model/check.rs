//! A connection test: one short request to a model before it is used, so a wrong URL, key
//! or model name shows when the model is added rather than at the first task.

use std::time::Duration;

use coder_protocol::ChatMessage;
use tokio_util::sync::CancellationToken;

use super::{ModelClient, ModelRequest, ModelSettings, StreamError};
use crate::error::{EngineError, ErrorKind};

/// What the test asks; any reply passes (small models rarely say exactly "YES").
const PROMPT: &str = "Connectivity check. Reply with only the word: YES";

/// A test gives up when nothing has streamed for this long.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Sends one short request to `settings`' model, without retrying, and stops at the first
/// streamed text or thinking (a model that reasons first passes as soon as it starts);
/// returns what streamed by then, or why the model cannot be used (the provider's status and
/// message, a refused connection, a timeout).
pub async fn check_connection(settings: &ModelSettings) -> Result<String, EngineError> {
    let client = ModelClient::one_shot(settings, TIMEOUT)?;
    let messages = [ChatMessage::user(PROMPT)];
    let request = ModelRequest {
        model: &settings.model,
        system: "",
        lead: &[],
        messages: &messages,
        as_text: None,
        cache: None,
        tools: &[],
        prompt_cache_key: None,
        max_output_tokens: 16,
    };
    let answered = CancellationToken::new();
    let mut first_update = |_| answered.cancel();
    let reply = client.stream(&request, &answered, &mut first_update);
    let failed = |reason: String| {
        EngineError::new(
            ErrorKind::Provider,
            format!(
                "{} at {} did not answer: {reason}",
                settings.model, settings.provider.base_url
            ),
        )
    };
    match tokio::time::timeout(TIMEOUT, reply).await {
        Ok(Ok(response)) => Ok(response.text),
        Ok(Err(StreamError::Cancelled { partial })) => Ok(partial.text),
        Ok(Err(err)) => Err(failed(err.to_string())),
        Err(_) => Err(failed(format!("nothing within {} s", TIMEOUT.as_secs()))),
    }
}
