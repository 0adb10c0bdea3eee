//! Transport shared by both wire formats: the HTTP request, SSE framing, the idle timeout,
//! retries with backoff, and cancellation.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use super::anthropic::AnthropicApi;
use super::hints::{Hints, refused_on_loopback};
use super::limits::ReplyLimits;
use super::openai::OpenAiApi;
use super::reading::{ReplyReader, Step};
use super::redact::redact;
use super::shown::Shown;
use super::{ModelRequest, ModelResponse, StreamError, StreamUpdate, WireApi};
use crate::config::{ProviderConfig, ProviderKind, RetryConfig};
use crate::error::{EngineError, ErrorKind};

/// How much of an error body goes into an error message.
const ERROR_BODY_LIMIT: usize = 500;

/// Streams model replies from one provider.
pub struct ModelClient {
    http: reqwest::Client,
    api: Box<dyn WireApi>,
    /// The endpoint, parsed once: a URL given as text is parsed again (its host checked as
    /// an international name) for every request.
    endpoint: reqwest::Url,
    retry: RetryConfig,
    idle_timeout: Duration,
    /// The API key, removed from every message built from what the provider sent.
    key: Option<String>,
    /// The most bytes of text, thinking and tool arguments in one reply.
    max_reply_bytes: usize,
    hints: Hints,
}

/// How many SSE events a stream takes in a row before it checks for cancellation, reports
/// what they show and lets other tasks run: about 70 microseconds of a burst of deltas.
/// (A reply that trickles in is reported at every read of the body, long before this.)
const YIELD_EVERY: u64 = 2048;

/// What the wait for the next chunk of the body ended with.
enum Next<T> {
    Item(Option<T>),
    Cancelled,
    Idle,
}

/// What every attempt of one call shares.
struct Call<'a> {
    /// The request's body, serialized once.
    body: bytes::Bytes,
    model: &'a str,
    limits: ReplyLimits,
}

enum AttemptError {
    Retryable {
        message: String,
        retry_after: Option<Duration>,
    },
    Fatal(ErrorKind, String),
    Cancelled(ModelResponse),
}

/// What kind of failure a provider's refusal is, from its answer's text: the conversation
/// no longer fitting the model's context is told apart (by the codes and phrases OpenAI,
/// Anthropic, llama.cpp, vLLM, Ollama and OpenRouter use), the rest is `provider`.
fn failure_kind(answer: &str) -> ErrorKind {
    const CONTEXT_SIGNS: [&str; 7] = [
        "context_length_exceeded",
        "maximum context length",
        "exceed_context_size",
        "exceeds the available context",
        "exceed context window",
        "prompt is too long",
        "input is too long",
    ];
    let answer = answer.to_lowercase();
    if CONTEXT_SIGNS.iter().any(|sign| answer.contains(sign)) {
        ErrorKind::ContextLengthExceeded
    } else {
        ErrorKind::Provider
    }
}

fn retryable(message: String) -> AttemptError {
    AttemptError::Retryable {
        message,
        retry_after: None,
    }
}

impl ModelClient {
    /// `max_tokens`: the reply's token budget to send, when one is configured.
    pub fn new(
        provider: &ProviderConfig,
        retry: RetryConfig,
        idle_timeout: Duration,
        max_reply_bytes: usize,
        max_tokens: Option<u32>,
    ) -> Result<Self, String> {
        let mut http = reqwest::Client::builder().connect_timeout(Duration::from_secs(30));
        if provider.base_url.starts_with("http://") {
            // A plain-HTTP server (llama.cpp, a local proxy) needs no certificate store, and
            // loading the system's roots is a noticeable part of a short run's start-up.
            http = http.tls_certs_only([]);
        }
        let http = http
            .build()
            .map_err(|err| format!("cannot build the HTTP client: {err}"))?;
        let base_url = provider.base_url.clone();
        let api_key = provider.api_key.clone();
        let key = api_key.as_ref().map(|key| key.expose().to_owned());
        let api: Box<dyn WireApi> = match provider.kind {
            ProviderKind::OpenAi => Box::new(OpenAiApi {
                base_url,
                api_key,
                max_tokens,
            }),
            ProviderKind::Anthropic => Box::new(AnthropicApi { base_url, api_key }),
        };
        let endpoint = reqwest::Url::parse(&api.url())
            .map_err(|err| format!("the model's URL `{}` is not valid: {err}", api.url()))?;
        Ok(Self {
            http,
            api,
            endpoint,
            retry,
            idle_timeout,
            key,
            max_reply_bytes,
            hints: Hints::new(provider),
        })
    }

    /// Streams one reply. Text and thinking reach `on_update` as they arrive; a retry is
    /// reported there as a warning. When the provider reports no usage, `usage` is `None`
    /// (a turn then counts the tokens itself).
    /// Cancelling `cancel` drops the HTTP stream at once. A reply that passes its limits
    /// (`maxOutputTokens`, `maxReplyBytes`, see `limits.rs`) is dropped and fails.
    /// A provider's `Retry-After` is honoured up to `retry.maxDelayMs`, never longer, and
    /// every message is cleared of the API key ([`redact`]) before it leaves.
    pub async fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: &CancellationToken,
        on_update: &mut (dyn FnMut(StreamUpdate) + Send),
    ) -> Result<ModelResponse, StreamError> {
        let body = super::wire_history::request_body(&*self.api, request).map_err(|err| {
            StreamError::Failed(EngineError::new(
                ErrorKind::Internal,
                format!("cannot serialize the request: {err}"),
            ))
        })?;
        let call = Call {
            body: body.into(),
            model: request.model,
            limits: ReplyLimits {
                max_output_tokens: request.max_output_tokens,
                max_reply_bytes: self.max_reply_bytes,
            },
        };
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(self.retry.initial_delay)
            .with_max_delay(self.retry.max_delay)
            .with_jitter()
            .with_max_times(self.retry.max_retries)
            .build();
        let mut attempt = 0;
        loop {
            let mut emitted = false;
            let (message, retry_after) =
                match self.attempt(&call, cancel, on_update, &mut emitted).await {
                    Ok(response) => return Ok(provider_safe_calls(response, on_update)),
                    Err(AttemptError::Cancelled(partial)) => {
                        return Err(StreamError::Cancelled { partial });
                    }
                    Err(AttemptError::Fatal(kind, message)) => {
                        return Err(StreamError::Failed(EngineError::new(
                            kind,
                            self.redact(message),
                        )));
                    }
                    Err(AttemptError::Retryable {
                        message,
                        retry_after,
                    }) => (self.redact(message), retry_after),
                };
            attempt += 1;
            let Some(backoff) = delays.next() else {
                return Err(StreamError::Failed(EngineError::new(
                    ErrorKind::Provider,
                    format!(
                        "{message}; gave up after {} retries",
                        self.retry.max_retries
                    ),
                )));
            };
            // A provider may ask for any wait; the person's limit wins.
            let delay = retry_after.map_or(backoff, |d| d.min(self.retry.max_delay));
            let discarded = if emitted {
                "; the partial reply is discarded"
            } else {
                ""
            };
            on_update(StreamUpdate::Retrying {
                message: format!(
                    "{message}; retrying in {:.1}s (retry {attempt} of {}){discarded}",
                    delay.as_secs_f64(),
                    self.retry.max_retries
                ),
                reason: message,
                attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                max_retries: u32::try_from(self.retry.max_retries).unwrap_or(u32::MAX),
                delay,
            });
            tokio::select! {
                () = cancel.cancelled() => {
                    return Err(StreamError::Cancelled { partial: ModelResponse::default() });
                }
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    fn redact(&self, message: String) -> String {
        redact(message, self.key.as_deref())
    }

    /// A client for one request to `settings`' provider, without retries (a connection
    /// test, a list of models): what fails is said at once.
    pub(crate) fn one_shot(
        settings: &super::ModelSettings,
        timeout: Duration,
    ) -> Result<Self, EngineError> {
        let retry = RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        };
        Self::new(
            &settings.provider,
            retry,
            timeout,
            crate::config::DEFAULT_MAX_REPLY_BYTES,
            None,
        )
        .map_err(EngineError::internal)
    }

    /// GETs the provider's list of models and returns the body of a successful answer,
    /// at most `limit` bytes; a failure says what the provider answered, without the key.
    pub(crate) async fn get_models(&self, limit: usize) -> Result<Vec<u8>, String> {
        let url = self.api.models_url();
        let response = self
            .api
            .headers(self.http.get(&url))
            .send()
            .await
            .map_err(|err| format!("cannot reach {url}: {}", error_chain(&err)))?;
        let status = response.status();
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| format!("reading {url}: {}", error_chain(&err)))?
        {
            if body.len() + chunk.len() > limit {
                return Err(format!("{url} answered with more than {limit} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let message = format!("{url} answered {status}: {}", excerpt(&text));
            return Err(redact(message, self.key.as_deref()));
        }
        Ok(body)
    }

    async fn attempt(
        &self,
        call: &Call<'_>,
        cancel: &CancellationToken,
        on_update: &mut (dyn FnMut(StreamUpdate) + Send),
        emitted: &mut bool,
    ) -> Result<ModelResponse, AttemptError> {
        let send = self
            .api
            .headers(self.http.post(self.endpoint.clone()))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(call.body.clone())
            .send();
        let response = tokio::select! {
            () = cancel.cancelled() => return Err(AttemptError::Cancelled(ModelResponse::default())),
            response = send => response,
        };
        let response = response.map_err(|err| {
            // A local model server that stopped will not come back within the retries.
            if let Some(message) = refused_on_loopback(&err, &self.api.url()) {
                return AttemptError::Fatal(ErrorKind::Provider, message);
            }
            retryable(format!(
                "cannot reach the model at {}: {}",
                self.api.url(),
                error_chain(&err)
            ))
        })?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let text = tokio::select! {
                () = cancel.cancelled() => return Err(AttemptError::Cancelled(ModelResponse::default())),
                text = response.text() => text.unwrap_or_default(),
            };
            let mut message = format!("the model provider answered {status}: {}", excerpt(&text));
            if let Some(hint) = self.hints.for_status(status, call.model) {
                message.push_str("; ");
                message.push_str(&hint);
            }
            return Err(if is_retryable_status(status) {
                AttemptError::Retryable {
                    message,
                    retry_after,
                }
            } else {
                let kind = failure_kind(&text);
                if kind == ErrorKind::ContextLengthExceeded {
                    message.push_str(
                        "; the conversation no longer fits the model's context window: start a \
                         new conversation or session",
                    );
                }
                AttemptError::Fatal(kind, message)
            });
        }

        // What the parser shows is joined per read of the body and reported before each
        // wait; whatever is left when reading ends, however it ends, is reported here.
        let mut shown = Shown::default();
        let read = self
            .read_body(response, call, cancel, &mut shown, on_update, emitted)
            .await;
        *emitted |= shown.report(on_update);
        read
    }

    /// Reads the body of a successful answer: the SSE events, parsed into the reply, what
    /// they show reported to `on_update` through `shown` before every wait for the body.
    async fn read_body(
        &self,
        response: reqwest::Response,
        call: &Call<'_>,
        cancel: &CancellationToken,
        shown: &mut Shown,
        on_update: &mut (dyn FnMut(StreamUpdate) + Send),
        emitted: &mut bool,
    ) -> Result<ModelResponse, AttemptError> {
        // The SSE reader walks each chunk once, so a reply that arrives in large chunks (a
        // local server, a burst after a stall) costs the same per event as one that trickles
        // in; runs of same-shape deltas are taken straight from its buffer (`reading.rs`).
        let mut body = response.bytes_stream();
        let mut reader = ReplyReader::new(self.api.parser(), call.limits);
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        // One idle timer, re-armed only when the body has nothing ready: chunks and events
        // that are already there are taken without reading the clock or polling the
        // cancellation.
        let mut idle = std::pin::pin!(tokio::time::sleep(self.idle_timeout));
        let mut rearm = true;
        loop {
            // The events the chunks so far completed.
            loop {
                match reader.read(YIELD_EVERY, shown) {
                    Step::NeedMore => break,
                    Step::Budget => {
                        // A stream that is always ready still notices cancellation, and
                        // lets the consumers of its events run in batches.
                        if cancel.is_cancelled() {
                            return Err(AttemptError::Cancelled(reader.response()));
                        }
                        *emitted |= shown.report(on_update);
                        tokio::task::yield_now().await;
                    }
                    Step::Done => return Ok(reader.response()),
                    Step::LimitPassed(message) => {
                        return Err(AttemptError::Fatal(ErrorKind::LimitExceeded, message));
                    }
                    Step::ProviderError { message, retryable } => {
                        let message = format!("the model provider reported an error: {message}");
                        return Err(if retryable {
                            self::retryable(message)
                        } else {
                            AttemptError::Fatal(failure_kind(&message), message)
                        });
                    }
                }
            }
            // Everything the body delivered so far is shown before waiting for more.
            *emitted |= shown.report(on_update);
            let next = std::future::poll_fn(|cx| {
                if let Poll::Ready(item) = body.poll_next_unpin(cx) {
                    rearm = true;
                    return Poll::Ready(Next::Item(item));
                }
                if cancelled.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Next::Cancelled);
                }
                if rearm {
                    rearm = false;
                    idle.as_mut()
                        .reset(tokio::time::Instant::now() + self.idle_timeout);
                }
                match idle.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Next::Idle),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            match next {
                Next::Item(Some(Ok(chunk))) => reader.push(chunk),
                Next::Cancelled => return Err(AttemptError::Cancelled(reader.response())),
                Next::Idle => {
                    return Err(retryable(format!(
                        "the model stream sent nothing for {}s",
                        self.idle_timeout.as_secs_f64()
                    )));
                }
                Next::Item(None) if reader.may_end() => return Ok(reader.response()),
                Next::Item(None) => {
                    return Err(retryable(
                        "the model stream ended before the reply was complete".to_owned(),
                    ));
                }
                Next::Item(Some(Err(err))) => {
                    return Err(retryable(format!(
                        "the model stream broke: {}",
                        error_chain(&err)
                    )));
                }
            }
        }
    }
}

fn is_retryable_status(status: StatusCode) -> bool {
    status.is_server_error()
        || status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.as_u16() == 529
}

/// `retry-after-ms` (OpenAI), or `retry-after` in seconds or as an HTTP date (RFC 9110).
/// Not capped here: the caller caps it with `retry.maxDelayMs`.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .and_then(|v| Duration::try_from_secs_f64(v).ok())
    };
    if let Some(ms) = text("retry-after-ms").and_then(seconds) {
        return Some(ms / 1000);
    }
    let value = text("retry-after")?;
    seconds(value).or_else(|| {
        let at = httpdate::parse_http_date(value).ok()?;
        // A date in the past asks for no wait.
        Some(
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or_default(),
        )
    })
}

fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.len() <= ERROR_BODY_LIMIT {
        return text.to_owned();
    }
    let mut end = ERROR_BODY_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// `response` with its tool calls as every provider takes them back in a history: names
/// and ids of `^[a-zA-Z0-9_-]+$`, at most 64 characters, ids distinct. A call that names no
/// tool cannot run, and one outside that alphabet (`functions.read`) would make every later
/// request of the conversation fail; the first is left out of the reply, with a warning,
/// the second renamed (it fails as a call of no tool does, and the model reads why).
fn provider_safe_calls(
    mut response: ModelResponse,
    on_update: &mut (dyn FnMut(StreamUpdate) + Send),
) -> ModelResponse {
    let before = response.tool_calls.len();
    response
        .tool_calls
        .retain(|call| !call.function.name.trim().is_empty());
    let dropped = before - response.tool_calls.len();
    if dropped > 0 {
        on_update(StreamUpdate::Warning(format!(
            "the model asked for {dropped} tool call{} without a tool's name; left out of its reply",
            if dropped == 1 { "" } else { "s" }
        )));
    }
    let mut ids = std::collections::HashSet::new();
    for (index, call) in response.tool_calls.iter_mut().enumerate() {
        call.function.name = within_alphabet(&call.function.name);
        let mut id = within_alphabet(&call.id);
        if id.is_empty() || !ids.insert(id.clone()) {
            id = format!("call_{index}_{}", ids.len());
            ids.insert(id.clone());
        }
        call.id = id;
    }
    response
}

/// The longest tool name or call id every provider takes.
const MAX_WIRE_NAME: usize = 64;

/// `text` with each character outside `[a-zA-Z0-9_-]` made `_`, cut to [`MAX_WIRE_NAME`].
fn within_alphabet(text: &str) -> String {
    text.chars()
        .take(MAX_WIRE_NAME)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(name: &'static str, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn retry_after_is_read_in_seconds_milliseconds_or_as_a_date() {
        assert_eq!(
            retry_after(&headers("retry-after", "100")),
            Some(Duration::from_secs(100))
        );
        assert_eq!(
            retry_after(&headers("retry-after-ms", "1500")),
            Some(Duration::from_millis(1500))
        );
        let later = std::time::SystemTime::now() + Duration::from_secs(3600);
        let wait = retry_after(&headers("retry-after", &httpdate::fmt_http_date(later))).unwrap();
        assert!(wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600));
        assert_eq!(
            retry_after(&headers("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers("retry-after", "soon")), None);
        assert_eq!(retry_after(&headers("retry-after", "-1")), None);
    }
}
