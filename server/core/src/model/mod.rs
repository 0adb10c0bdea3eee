//! Model providers: one streaming client over reqwest and SSE, two wire formats.
//!
//! [`ModelClient::stream`] sends a request, retries what is worth retrying, reports text and
//! thinking as they arrive through a callback, and returns the whole reply. Each wire format
//! only knows how to build its request body and how to parse its own SSE events
//! ([`WireApi`]); transport, retries and timeouts are shared.

mod anthropic;
mod check;
mod client;
mod estimate;
mod hints;
mod limits;
mod openai;
mod redact;
mod sse;

use coder_protocol::{ChatMessage, TokenUsage, ToolCall};
use serde_json::Value;

/// Tools are described to models by [`crate::tools::ToolSpec`].
pub use crate::tools::ToolSpec;
pub use check::check_connection;
pub use client::ModelClient;

use crate::config::{Config, ProviderConfig};

/// Which model a session talks to, and through which provider. Switchable while the
/// session runs ([`crate::Engine::set_model`]); a task keeps the model it started with.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    pub model: String,
    pub provider: ProviderConfig,
    /// The model's context window in tokens, reported in `token_count`.
    pub context_window: Option<u64>,
    pub max_output_tokens: u32,
}

impl ModelSettings {
    /// The model the configuration names; `None` when it names no provider.
    pub fn from_config(config: &Config) -> Option<Self> {
        Some(Self {
            model: config.model.clone(),
            provider: config.provider.clone()?,
            context_window: config.context_window,
            max_output_tokens: config.max_output_tokens,
        })
    }
}

/// A model with its client, shared by the tasks that use it.
pub(crate) struct ActiveModel {
    pub settings: ModelSettings,
    pub client: ModelClient,
}

impl ActiveModel {
    pub fn new(settings: ModelSettings, config: &Config) -> Result<Self, crate::EngineError> {
        let client = ModelClient::new(
            &settings.provider,
            config.retry,
            config.stream_idle_timeout,
            config.max_reply_bytes,
        )
        .map_err(crate::EngineError::internal)?;
        Ok(Self { settings, client })
    }
}

/// Streams one model call: what a turn needs of a model, so tests can script one.
#[async_trait::async_trait]
pub(crate) trait ModelStream: Send + Sync {
    /// Sends `request`, reports text and thinking through `on_update` as they arrive, and
    /// returns the whole reply; stops with [`StreamError::Cancelled`] when `cancel` fires.
    async fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: &tokio_util::sync::CancellationToken,
        on_update: &mut (dyn FnMut(StreamUpdate) + Send),
    ) -> Result<ModelResponse, StreamError>;
}

#[async_trait::async_trait]
impl ModelStream for ActiveModel {
    async fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: &tokio_util::sync::CancellationToken,
        on_update: &mut (dyn FnMut(StreamUpdate) + Send),
    ) -> Result<ModelResponse, StreamError> {
        self.client.stream(request, cancel, on_update).await
    }
}

/// One model call.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [ChatMessage],
    pub tools: &'a [ToolSpec],
    pub max_output_tokens: u32,
    /// Sent as `prompt_cache_key` to providers that accept it.
    pub prompt_cache_key: Option<&'a str>,
}

/// Something to show while the reply streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamUpdate {
    Text(String),
    Reasoning(String),
    /// A retry or a skipped chunk: the call goes on.
    Warning(String),
}

/// A whole model reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<TokenUsage>,
}

/// Why a model call produced no reply.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StreamError {
    /// The task was cancelled; `partial` holds what had streamed so far.
    #[error("cancelled")]
    Cancelled { partial: ModelResponse },
    /// The provider failed and retrying did not help, or the failure cannot be retried; the
    /// error's kind says which (`provider`, `context_length_exceeded`, `limit_exceeded`).
    #[error("{0}")]
    Failed(crate::error::EngineError),
}

/// What one SSE event meant.
#[derive(Debug, PartialEq)]
pub(crate) enum Feed {
    Continue,
    /// The reply is complete.
    Done,
    /// The provider reported an error inside the stream.
    ProviderError {
        message: String,
        retryable: bool,
    },
}

/// A wire format: how to ask, and how to read the answer.
pub(crate) trait WireApi: Send + Sync {
    /// The full URL of the streaming endpoint.
    fn url(&self) -> String;
    fn headers(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder;
    fn body(&self, request: &ModelRequest<'_>) -> Value;
    fn parser(&self) -> Box<dyn StreamParser>;
}

/// Reads one reply's SSE events, accumulating the reply.
pub(crate) trait StreamParser: Send {
    /// Handles one SSE event, pushing what should be shown now into `updates`.
    /// An `Err` is a malformed event: it is reported and skipped.
    fn feed(&mut self, data: &str, updates: &mut Vec<StreamUpdate>) -> Result<Feed, String>;
    /// Whether the stream may end here without being called broken (some servers omit the
    /// final marker after a finish reason).
    fn may_end(&self) -> bool;
    /// The reply so far; tool calls are complete only after `Done`.
    fn response(&self) -> ModelResponse;
    /// Bytes of text, thinking and tool arguments received so far.
    fn reply_bytes(&self) -> usize;
}
