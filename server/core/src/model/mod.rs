//! Model providers: one streaming client over reqwest and SSE, two wire formats.
//!
//! [`ModelClient::stream`] sends a request, retries what is worth retrying, reports text and
//! thinking as they arrive through a callback, and returns the whole reply. Each wire format
//! only knows how to build its request body and how to parse its own SSE events
//! ([`WireApi`]); transport, retries and timeouts are shared.

mod anthropic;
mod check;
mod client;
mod hints;
mod known;
mod limits;
mod list;
mod openai;
mod reading;
mod redact;
mod shown;
mod sse;
#[cfg(test)]
mod stream_fuzz;
mod template;
mod wire_history;

use coder_protocol::{ChatMessage, TokenUsage, ToolCall};

/// Tools are described to models by [`crate::tools::ToolSpec`].
pub use crate::tools::ToolSpec;
pub use check::check_connection;
pub use client::ModelClient;
pub use known::{
    ModelLimits, UNKNOWN as UNKNOWN_MODEL_LIMITS, known_limits, offered_models, prompt_tool_calling,
};
pub use list::{ListedModel, list_models};
pub(crate) use openai::{TOOL_IMAGES, chat_messages};
pub use wire_history::WireHistory;

use coder_protocol::options::ModelOptions;

use crate::config::{Config, ConfigError, DoorNames, EnvLookup, Overrides, ProviderConfig};

/// Which model a session talks to, and through which provider. Switchable while the
/// session runs ([`crate::Engine::set_model`]); a task keeps the model it started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSettings {
    pub model: String,
    pub provider: ProviderConfig,
    /// The model's context window in tokens, when configured (else the table's, see
    /// [`ModelSettings::limits_of`]).
    pub context_window: Option<u64>,
    /// The most tokens one reply may have, when configured.
    pub max_output_tokens: Option<u32>,
    /// How tools reach the model, when configured (else [`ModelSettings::tool_calling_of`]).
    pub tool_calling: Option<crate::config::ToolCalling>,
}

impl ModelSettings {
    /// The limits a task on `model` runs with: the configured ones, else the model's own
    /// from the table of known models, else [`UNKNOWN_MODEL_LIMITS`]; and whether that
    /// last guess was needed for the context window (the session then warns once).
    pub fn limits_of(&self, model: &str) -> (ModelLimits, bool) {
        let known = known_limits(model);
        let guessed = self.context_window.is_none() && known.is_none();
        let table = known.unwrap_or(UNKNOWN_MODEL_LIMITS);
        let limits = ModelLimits {
            context_window: self.context_window.unwrap_or(table.context_window),
            max_output_tokens: self.max_output_tokens.unwrap_or(table.max_output_tokens),
        };
        (limits, guessed)
    }

    /// How tools reach `model`: configured (`toolCalling`), else through the prompt for the
    /// models that take tools only as text ([`prompt_tool_calling`]), else natively.
    pub fn tool_calling_of(&self, model: &str) -> crate::config::ToolCalling {
        self.tool_calling.unwrap_or(if prompt_tool_calling(model) {
            crate::config::ToolCalling::Prompt
        } else {
            crate::config::ToolCalling::Native
        })
    }

    /// The model the configuration names; `None` when it names no provider.
    pub fn from_config(config: &Config) -> Option<Self> {
        Some(Self {
            model: config.model.clone(),
            provider: config.provider.clone()?,
            context_window: config.context_window,
            max_output_tokens: config.max_output_tokens,
            tool_calling: config.tool_calling,
        })
    }

    /// The model of `options` on its own (the SDK's `setModel` and `checkModel`), resolved
    /// as loading the configuration resolves the same options given to a door, without the
    /// config files: the same defaults (`maxOutputTokens`, the provider's base URL) and the
    /// same rules for the environment's key. `door` names the settings in messages (a base
    /// URL that is not HTTP).
    pub fn from_options(options: &ModelOptions, door: &DoorNames) -> Result<Self, ConfigError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self::from_options_with(options, door, &env)
    }

    /// [`ModelSettings::from_options`] with an explicit environment.
    pub(crate) fn from_options_with(
        options: &ModelOptions,
        door: &DoorNames,
        env: EnvLookup<'_>,
    ) -> Result<Self, ConfigError> {
        let overrides = Overrides {
            door: *door,
            ..Overrides::from(options)
        };
        let config = Config::without_files(&overrides, env)?;
        Self::from_config(&config).ok_or_else(|| ConfigError::NoProvider {
            warnings: Vec::new(),
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
            settings.max_output_tokens,
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
    /// Messages written before the history in every request: the description of the
    /// tools when they go in the prompt (seed 002).
    pub lead: &'a [ChatMessage],
    /// The history.
    pub messages: &'a [ChatMessage],
    /// How each history message is written when the history goes as text (tools in the
    /// prompt, `tool_prompt.rs`); `None` writes it as it is.
    pub as_text: Option<fn(&ChatMessage) -> ChatMessage>,
    /// The conversation's history as earlier requests wrote it, which this one extends;
    /// `None` writes the whole history.
    pub cache: Option<&'a std::sync::Mutex<WireHistory>>,
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
    /// A skipped chunk: the call goes on.
    Warning(String),
    /// The request failed and is sent again after `delay`.
    Retrying {
        message: String,
        reason: String,
        attempt: u32,
        max_retries: u32,
        delay: std::time::Duration,
    },
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
    /// The full URL of the provider's list of models.
    fn models_url(&self) -> String;
    fn headers(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder;
    /// The name of the wire format, which tells a history written by one from another's.
    fn name(&self) -> &'static str;
    /// The request's body, as JSON bytes. `history` appends the messages of the history
    /// (and the lead messages) where they go, after a comma when told a message precedes
    /// them ([`WireHistory`]).
    fn body(
        &self,
        request: &ModelRequest<'_>,
        history: &mut dyn FnMut(bool, &mut Vec<u8>) -> serde_json::Result<()>,
    ) -> serde_json::Result<Vec<u8>>;
    /// Writes a history into request messages, one message at a time.
    fn message_writer(&self) -> Box<dyn wire_history::MessageWriter>;
    fn parser(&self) -> Box<dyn StreamParser>;
}

/// Reads one reply's SSE events, accumulating the reply.
pub(crate) trait StreamParser: Send {
    /// Handles one SSE event, handing what should be shown to `shown`.
    /// An `Err` is a malformed event (not JSON, not UTF-8): it is reported and skipped.
    fn feed(&mut self, event: sse::SseEvent<'_>, shown: &mut shown::Shown) -> Result<Feed, String>;
    /// The shape of the last text or thinking delta, when one was learned, and the reply's
    /// text so far.
    fn shape_and_reply(&mut self) -> (Option<&mut template::DeltaTemplate>, &mut shown::ReplyText);
    /// Takes the events at the start of `rest` (unread SSE bytes, at an event boundary)
    /// that are shaped like the last text or thinking delta, at most `max_events`, until
    /// the pieces passed `max_bytes`; see [`template::DeltaTemplate::take_run`].
    fn feed_run(
        &mut self,
        rest: &[u8],
        max_events: u64,
        max_bytes: usize,
        shown: &mut shown::Shown,
    ) -> template::Run {
        let (template, reply) = self.shape_and_reply();
        template.map_or_else(template::Run::default, |template| {
            template.take_run(rest, max_events, max_bytes, |piece, text| {
                reply.add(piece, text, shown);
            })
        })
    }
    /// Whether the stream may end here without being called broken (some servers omit the
    /// final marker after a finish reason).
    fn may_end(&self) -> bool;
    /// The reply so far; tool calls are complete only after `Done`.
    fn response(&self) -> ModelResponse;
    /// Bytes of text, thinking and tool arguments received so far.
    fn reply_bytes(&self) -> usize;
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use coder_protocol::methods::ProviderName;
    use coder_protocol::options::EngineOptions;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::WorkspaceTrust;

    fn model(provider: ProviderName) -> ModelOptions {
        ModelOptions {
            provider,
            model: "m".into(),
            base_url: None,
            api_key: None,
            context_window: None,
            max_output_tokens: None,
        }
    }

    /// What `Engine.create` with `options` as its model loads, in an empty workspace with
    /// no user file, or why it fails.
    fn loaded(options: &ModelOptions, env: EnvLookup<'_>) -> Result<ModelSettings, String> {
        let workspace = tempfile::tempdir().unwrap();
        let engine_options = EngineOptions {
            working_dir: workspace.path().to_path_buf(),
            model: Some(options.clone()),
            mode: None,
            preset: None,
            auto_approve: None,
            disabled_tools: None,
            mcp_servers: None,
            save_sessions: None,
            sandbox: None,
            max_steps: None,
            trust_workspace: None,
            model_later: None,
        };
        let config = Config::load_full(
            workspace.path(),
            None::<&Path>,
            env,
            &Overrides::from(&engine_options),
            WorkspaceTrust::Recorded,
        )
        .map_err(|err| err.to_string())?;
        Ok(ModelSettings::from_config(&config).unwrap())
    }

    #[test]
    fn set_model_and_loading_give_the_same_settings_for_the_same_options() {
        let no_env = |_: &str| None;
        let key_in_env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-env".to_owned());
        let url_in_env =
            |name: &str| (name == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9".to_owned());
        let full = ModelOptions {
            base_url: Some("http://127.0.0.1:8080/v1/".into()),
            api_key: Some("sk-given".into()),
            context_window: Some(32_000),
            max_output_tokens: Some(1024),
            ..model(ProviderName::new("openai"))
        };
        let cases: [(ModelOptions, EnvLookup<'_>); 5] = [
            (model(ProviderName::new("openai")), &no_env),
            (model(ProviderName::new("anthropic")), &no_env),
            (model(ProviderName::new("openai")), &key_in_env),
            (model(ProviderName::new("anthropic")), &url_in_env),
            (full, &key_in_env),
        ];
        for (options, env) in cases {
            let set = ModelSettings::from_options_with(&options, &DoorNames::default(), env);
            assert_eq!(
                set.map_err(|err| err.to_string()),
                loaded(&options, env),
                "{options:?}"
            );
        }
        // Without a key for the provider's default endpoint, both refuse alike.
        let err = ModelSettings::from_options_with(
            &model(ProviderName::new("openai")),
            &DoorNames::default(),
            &no_env,
        );
        assert!(matches!(err, Err(ConfigError::MissingKey(..))), "{err:?}");
        // The defaults are the configuration's, not the door's own.
        let defaults = ModelSettings::from_options_with(
            &model(ProviderName::new("anthropic")),
            &DoorNames::default(),
            &url_in_env,
        )
        .unwrap();
        assert_eq!(
            (
                defaults.provider.base_url.as_str(),
                defaults.max_output_tokens
            ),
            ("http://127.0.0.1:9", None)
        );
    }

    #[test]
    fn a_base_url_that_is_not_http_is_named_as_the_door_names_it() {
        let options = ModelOptions {
            base_url: Some("localhost:1234".into()),
            ..model(ProviderName::new("openai"))
        };
        let door = DoorNames {
            base_url: "model.baseUrl",
            ..DoorNames::default()
        };
        let err = ModelSettings::from_options_with(&options, &door, &|_: &str| None);
        assert_eq!(
            err.unwrap_err().to_string(),
            "the base URL `localhost:1234` (from model.baseUrl) must start with http:// or https://"
        );
    }
}
