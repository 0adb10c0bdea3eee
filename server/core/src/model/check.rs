//! A connection test: one short request to a model before it is used, so a wrong URL, key
//! or model name shows when the model is added rather than at the first task.

use std::time::Duration;

use coder_protocol::ChatMessage;
use tokio_util::sync::CancellationToken;

use super::{ModelClient, ModelRequest, ModelSettings};
use crate::config::RetryConfig;

/// What the test asks; any reply passes (small models rarely say exactly "YES").
const PROMPT: &str = "Connectivity check. Reply with only the word: YES";

/// A test gives up after this long.
const TIMEOUT: Duration = Duration::from_secs(15);

/// Sends one short request to `settings`' model, without retrying; returns the reply, or
/// why the model cannot be used (the provider's status and message, a refused connection,
/// a timeout).
pub async fn check_connection(settings: &ModelSettings) -> Result<String, String> {
    let retry = RetryConfig {
        max_retries: 0,
        ..RetryConfig::default()
    };
    let client = ModelClient::new(&settings.provider, retry, TIMEOUT)?;
    let messages = [ChatMessage::user(PROMPT)];
    let request = ModelRequest {
        model: &settings.model,
        system: "",
        messages: &messages,
        tools: &[],
        prompt_cache_key: None,
        max_output_tokens: 16,
    };
    let cancel = CancellationToken::new();
    let mut ignore_updates = |_| {};
    let reply = client.stream(&request, &cancel, &mut ignore_updates);
    match tokio::time::timeout(TIMEOUT, reply).await {
        Ok(Ok(response)) => Ok(response.text),
        Ok(Err(err)) => Err(format!(
            "{} at {} did not answer: {err}",
            settings.model, settings.provider.base_url
        )),
        Err(_) => Err(format!(
            "{} at {} did not answer within {} s",
            settings.model,
            settings.provider.base_url,
            TIMEOUT.as_secs()
        )),
    }
}
