//! OpenAI Chat Completions streaming, also spoken by llama.cpp, vLLM, Ollama and LM Studio.

use std::borrow::Cow;
use std::collections::BTreeMap;

use coder_protocol::{Attachment, ChatMessage, Role, TokenUsage, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::shown::{ReplyText, Shown};
use super::sse::SseEvent;
use super::template::{DeltaTemplate, Piece, borrowed_str};
use super::wire_history::MessageWriter;
use super::{Feed, ModelRequest, ModelResponse, StreamParser, WireApi};
use crate::config::ApiKey;

pub(crate) struct OpenAiApi {
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// The reply's token budget, sent only when configured (`maxOutputTokens`, an SDK
    /// model's `maxTokens`): unset, the server's own default stands.
    pub max_tokens: Option<u32>,
}

impl WireApi for OpenAiApi {
    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn models_url(&self) -> String {
        format!("{}/models", self.base_url)
    }

    fn headers(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(key) => builder.bearer_auth(key.expose()),
            None => builder,
        }
    }

    fn name(&self) -> &'static str {
        "openai"
    }

    fn body(
        &self,
        request: &ModelRequest<'_>,
        history: &mut dyn FnMut(bool, &mut Vec<u8>) -> serde_json::Result<()>,
    ) -> serde_json::Result<Vec<u8>> {
        // The fields in the order a `Value` writes them (sorted): the messages first, then
        // the rest, written apart and joined.
        let mut body = b"{\"messages\":[".to_vec();
        let system = !request.system.is_empty();
        if system {
            serde_json::to_writer(
                &mut body,
                &json!({"role": "system", "content": request.system}),
            )?;
        }
        history(system, &mut body)?;
        body.extend_from_slice(b"],");
        // OpenAI's own API takes the budget as `max_completion_tokens` (its reasoning
        // models refuse `max_tokens`); the servers that speak its format take `max_tokens`.
        let official = self.base_url.contains("://api.openai.com");
        let rest = serde_json::to_vec(&AfterMessages {
            max_completion_tokens: self.max_tokens.filter(|_| official),
            max_tokens: self.max_tokens.filter(|_| !official),
            model: request.model,
            prompt_cache_key: request.prompt_cache_key,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tools: request
                .tools
                .iter()
                .map(|tool| Tool {
                    function: Function {
                        description: &tool.description,
                        name: &tool.name,
                        parameters: tool.parameters.json(),
                    },
                    kind: "function",
                })
                .collect(),
        })?;
        // `rest` is an object that holds `model`: its fields follow the messages.
        body.extend_from_slice(rest.get(1..).unwrap_or_default());
        Ok(body)
    }

    fn message_writer(&self) -> Box<dyn MessageWriter> {
        Box::new(OpenAiWriter {
            keep_reasoning: false,
            images: Vec::new(),
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::<OpenAiParser>::default()
    }
}

/// A request's body after its messages, serialized from borrowed parts: the tools' schemas
/// are written where they are, not copied into a `Value` first. Fields in the order a
/// `Value` would write them (sorted), so the bytes are the same as they were.
#[derive(Serialize)]
struct AfterMessages<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Tool<'a> {
    function: Function<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct Function<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a serde_json::value::RawValue,
}

/// The history as OpenAI Chat Completions messages: images as content parts (a person's
/// after the text of their message; a tool's in a user message after the run of tool
/// results, since OpenAI takes no images in tool results), missing content as `""`. The
/// thinking is kept only when `keep_reasoning` (a session snapshot); providers are never
/// sent it back.
pub(crate) fn chat_messages(history: &[ChatMessage], keep_reasoning: bool) -> Vec<Value> {
    let mut messages = Vec::with_capacity(history.len());
    let mut writer = OpenAiWriter {
        keep_reasoning,
        images: Vec::new(),
    };
    for message in history {
        writer.push(message, &mut |wire| messages.push(wire));
    }
    writer.open(&mut |wire| messages.push(wire));
    messages
}

/// Writes a history as OpenAI messages ([`chat_messages`]), one message at a time.
struct OpenAiWriter {
    keep_reasoning: bool,
    /// Images of tool results, waiting for the end of the run of tool messages.
    images: Vec<Value>,
}

impl MessageWriter for OpenAiWriter {
    fn push(&mut self, message: &ChatMessage, done: &mut dyn FnMut(Value)) {
        if message.role != Role::Tool && !self.images.is_empty() {
            done(images_message(std::mem::take(&mut self.images)));
        }
        let mut wire = wire_message(message, self.keep_reasoning);
        if message.role == Role::Tool {
            self.images
                .extend(message.attachments.iter().map(image_part));
        } else if !message.attachments.is_empty() {
            // The person's images (pasted, or attached by an `@` reference) go in their
            // own message, after its text.
            let mut parts = Vec::with_capacity(message.attachments.len() + 1);
            if let Some(text) = message.content.as_deref().filter(|text| !text.is_empty()) {
                parts.push(json!({"type": "text", "text": text}));
            }
            parts.extend(message.attachments.iter().map(image_part));
            wire["content"] = Value::Array(parts);
        }
        done(wire);
    }

    fn open(&self, open: &mut dyn FnMut(Value)) {
        // The images of the last run of tool results, until a message ends the run.
        if !self.images.is_empty() {
            open(images_message(self.images.clone()));
        }
    }
}

/// Opens the user message that carries the images of tool results.
pub(crate) const TOOL_IMAGES: &str = "Images returned by the tool calls above:";

/// One image as an OpenAI content part: a `data:` URL of its bytes, or its `http(s)` URL,
/// which OpenAI fetches.
fn image_part(image: &Attachment) -> Value {
    json!({"type": "image_url", "image_url": {"url": image.url()}})
}

/// OpenAI takes no images in tool results, so they follow the results in a user message.
fn images_message(images: Vec<Value>) -> Value {
    let mut content = vec![json!({"type": "text", "text": TOOL_IMAGES})];
    content.extend(images);
    json!({"role": "user", "content": content})
}

/// A history message as OpenAI expects it: thinking is not sent back, and missing content
/// is sent as `""` (OpenAI accepts `null` next to tool calls, llama.cpp's server answers
/// 500 to it).
fn wire_message(message: &ChatMessage, keep_reasoning: bool) -> Value {
    let mut value = serde_json::to_value(message).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        if !keep_reasoning {
            object.remove("reasoning");
        }
        object.remove("attachments");
        if object.get("content").is_none_or(Value::is_null) {
            object.insert("content".to_owned(), Value::String(String::new()));
        }
    }
    value
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
struct OpenAiParser {
    reply: ReplyText,
    calls: BTreeMap<u32, PartialCall>,
    usage: Option<TokenUsage>,
    finished: bool,
    /// Bytes of tool arguments so far (text and thinking are counted in `reply`).
    bytes: usize,
    /// The shape of the last chunk that carried only a piece of text or thinking.
    template: Option<DeltaTemplate>,
}

/// One chunk. Text and thinking are borrowed from the event's data when they hold no
/// escapes (the usual case), so a delta costs no allocation of its own.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    usage: Option<Usage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow, deserialize_with = "borrowed_str")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed_str")]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed_str")]
    reasoning: Option<Cow<'a, str>>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl From<Usage> for TokenUsage {
    fn from(usage: Usage) -> Self {
        TokenUsage {
            input_tokens: usage.prompt_tokens,
            cached_input_tokens: usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            output_tokens: usage.completion_tokens,
            reasoning_output_tokens: usage
                .completion_tokens_details
                .map_or(0, |d| d.reasoning_tokens),
            total_tokens: if usage.total_tokens > 0 {
                usage.total_tokens
            } else {
                usage.prompt_tokens + usage.completion_tokens
            },
            estimated: false,
        }
    }
}

/// The one piece a chunk carries when it carries nothing else: one choice whose delta holds
/// only text or only thinking, no finish reason, usage or error. Such chunks are the ones a
/// [`DeltaTemplate`] may stand for.
fn only_a_piece<'c, 'a>(chunk: &'c Chunk<'a>) -> Option<(Piece, &'c Cow<'a, str>)> {
    let [choice] = chunk.choices.as_slice() else {
        return None;
    };
    if chunk.usage.is_some() || chunk.error.is_some() || choice.finish_reason.is_some() {
        return None;
    }
    let delta = choice.delta.as_ref()?;
    if delta.tool_calls.is_some() {
        return None;
    }
    match (&delta.content, &delta.reasoning_content, &delta.reasoning) {
        (Some(text), None, None) => Some((Piece::Text, text)),
        (None, Some(text), None) | (None, None, Some(text)) => Some((Piece::Reasoning, text)),
        _ => None,
    }
}

impl OpenAiParser {
    fn apply_tool_delta(&mut self, delta: ToolCallDelta) {
        // Some servers omit `index`; a new id then opens a new call, anything else extends the last.
        let index = match (delta.index, &delta.id) {
            (Some(index), _) => index,
            (None, Some(id)) if !self.calls.values().any(|c| &c.id == id) => {
                self.calls.keys().next_back().map_or(0, |last| last + 1)
            }
            (None, _) => self.calls.keys().next_back().copied().unwrap_or(0),
        };
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                self.bytes += arguments.len();
                call.arguments.push_str(&arguments);
            }
        }
    }
}

impl StreamParser for OpenAiParser {
    fn shape_and_reply(&mut self) -> (Option<&mut DeltaTemplate>, &mut ReplyText) {
        (self.template.as_mut(), &mut self.reply)
    }

    fn feed(&mut self, event: SseEvent<'_>, shown: &mut Shown) -> Result<Feed, String> {
        let SseEvent { data, raw } = event;
        // The end marker is short: a delta event is not trimmed to be compared with it.
        if data.len() <= 32 && data.trim_ascii() == b"[DONE]" {
            return Ok(Feed::Done);
        }
        if let Some((piece, text)) = self.template.as_mut().and_then(|t| t.matches(data, raw)) {
            self.reply.add(piece, text, shown);
            return Ok(Feed::Continue);
        }
        let data = std::str::from_utf8(data).map_err(|_| "chunk that is not UTF-8".to_owned())?;
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|err| format!("malformed chunk ({err})"))?;
        self.template = only_a_piece(&chunk).and_then(|(piece, text)| match text {
            Cow::Borrowed(text) => DeltaTemplate::learn(data, raw, text, piece),
            Cow::Owned(_) => None,
        });
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Ok(Feed::ProviderError {
                message,
                retryable: true,
            });
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
                    self.reply.add(Piece::Reasoning, &text, shown);
                }
                if let Some(text) = delta.content {
                    self.reply.add(Piece::Text, &text, shown);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.apply_tool_delta(call);
                }
            }
            if choice.finish_reason.is_some() {
                self.finished = true;
            }
        }
        Ok(Feed::Continue)
    }

    fn may_end(&self) -> bool {
        self.finished
    }

    fn reply_bytes(&self) -> usize {
        self.bytes + self.reply.bytes
    }

    fn response(&self) -> ModelResponse {
        ModelResponse {
            text: self.reply.text.clone(),
            reasoning: self.reply.reasoning.clone(),
            tool_calls: self
                .calls
                .iter()
                // A delta that named nothing and carried nothing is noise; a call with
                // arguments and no name goes on, for the client to refuse and say.
                .filter(|(_, call)| !call.name.is_empty() || !call.arguments.trim().is_empty())
                .map(|(index, call)| {
                    let id = if call.id.is_empty() {
                        format!("call_{index}")
                    } else {
                        call.id.clone()
                    };
                    let arguments = if call.arguments.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        call.arguments.clone()
                    };
                    ToolCall::function(id, call.name.clone(), arguments)
                })
                .collect(),
            usage: self.usage,
        }
    }
}

/// A new parser of this wire format (tests).
#[cfg(test)]
pub(crate) fn parser() -> Box<dyn StreamParser> {
    Box::<OpenAiParser>::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StreamUpdate;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_chunk_that_is_not_utf8_is_refused_and_the_next_one_read() {
        let mut parser = OpenAiParser::default();
        let mut shown = Shown::default();
        let chunk = |text: &[u8]| {
            let mut chunk = br#"{"choices":[{"index":0,"delta":{"content":""#.to_vec();
            chunk.extend_from_slice(text);
            chunk.extend_from_slice(br#""},"finish_reason":null}]}"#);
            chunk
        };
        parser
            .feed(SseEvent::of(&chunk(b"one ")), &mut shown)
            .unwrap();
        let err = parser
            .feed(SseEvent::of(&chunk(b"\xFF")), &mut shown)
            .unwrap_err();
        assert_eq!(err, "chunk that is not UTF-8");
        parser
            .feed(SseEvent::of(&chunk(b"two")), &mut shown)
            .unwrap();
        assert_eq!(parser.response().text, "one two");
    }

    fn feed_all(frames: &[&str]) -> (ModelResponse, Vec<StreamUpdate>) {
        let mut parser = OpenAiParser::default();
        let mut updates = Vec::new();
        for frame in frames {
            let mut shown = Shown::default();
            parser
                .feed(SseEvent::of(frame.as_bytes()), &mut shown)
                .unwrap();
            updates.extend(shown.take());
        }
        (parser.response(), updates)
    }

    fn png() -> Attachment {
        Attachment::Inline {
            media_type: "image/png".into(),
            data: "iVBORw==".into(),
        }
    }

    /// The request body `api` writes for a one-message history.
    fn body_of(api: &OpenAiApi) -> Value {
        let history = [ChatMessage::user("hi")];
        let request = ModelRequest {
            model: "m",
            system: "",
            lead: &[],
            messages: &history,
            as_text: None,
            cache: None,
            tools: &[],
            max_output_tokens: 100,
            prompt_cache_key: None,
        };
        let body = super::super::wire_history::request_body(api, &request).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[test]
    fn a_configured_reply_budget_is_sent_under_the_name_the_server_takes() {
        let api = |base_url: &str, max_tokens| OpenAiApi {
            base_url: base_url.into(),
            api_key: None,
            max_tokens,
        };
        let unset = body_of(&api("http://127.0.0.1:8080/v1", None));
        assert!(unset.get("max_tokens").is_none() && unset.get("max_completion_tokens").is_none());
        let local = body_of(&api("http://127.0.0.1:8080/v1", Some(777)));
        assert_eq!(local["max_tokens"], 777);
        assert!(local.get("max_completion_tokens").is_none());
        let official = body_of(&api("https://api.openai.com/v1", Some(777)));
        assert_eq!(official["max_completion_tokens"], 777);
        assert!(official.get("max_tokens").is_none());
    }

    fn wire_messages(history: &[ChatMessage]) -> Vec<Value> {
        let api = OpenAiApi {
            base_url: String::new(),
            api_key: None,
            max_tokens: None,
        };
        let request = ModelRequest {
            model: "m",
            system: "",
            lead: &[],
            messages: history,
            as_text: None,
            cache: None,
            tools: &[],
            max_output_tokens: 100,
            prompt_cache_key: None,
        };
        let body = super::super::wire_history::request_body(&api, &request).unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        body["messages"].as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn a_persons_images_go_in_their_own_message_and_tool_images_follow_the_results() {
        let mut input = ChatMessage::user("look");
        input.attachments = vec![png()];
        let call = ToolCall::function("c".into(), "read".into(), "{}".into());
        let mut result = ChatMessage::tool_result("c", "read", "an image");
        result.attachments = vec![png()];
        let messages = wire_messages(&[
            input,
            ChatMessage::assistant(String::new(), String::new(), vec![call]),
            result,
        ]);
        let url = "data:image/png;base64,iVBORw==";
        assert_eq!(
            messages[0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": url}},
            ]})
        );
        assert_eq!(messages[2]["role"], "tool");
        assert_eq!(
            messages[3],
            json!({"role": "user", "content": [
                {"type": "text", "text": "Images returned by the tool calls above:"},
                {"type": "image_url", "image_url": {"url": url}},
            ]})
        );
        assert_eq!(messages.len(), 4);
    }

    #[test]
    fn interleaved_tool_call_deltas_are_assembled_by_index() {
        let (response, _) = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"read","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"y\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall::function("a".into(), "read".into(), r#"{"path":"x"}"#.into()),
                ToolCall::function("b".into(), "read".into(), r#"{"path":"y"}"#.into()),
            ]
        );
    }

    #[test]
    fn reasoning_comes_from_either_field_and_unknown_fields_are_ignored() {
        let (response, updates) = feed_all(&[
            r#"{"choices":[{"delta":{"reasoning_content":"hm"},"logprobs":null,"extra":1}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"m"}}]}"#,
            r#"{"choices":[{"delta":{"role":"assistant","content":"ok"}}],"system_fingerprint":"x"}"#,
        ]);
        assert_eq!(response.reasoning, "hmm");
        assert_eq!(response.text, "ok");
        assert_eq!(updates.len(), 3);
    }

    #[test]
    fn usage_counts_cached_and_reasoning_tokens() {
        let (response, _) = feed_all(&[
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}"#,
        ]);
        assert_eq!(
            response.usage,
            Some(TokenUsage {
                input_tokens: 10,
                cached_input_tokens: 4,
                output_tokens: 5,
                reasoning_output_tokens: 2,
                total_tokens: 15,
                estimated: false,
            })
        );
    }

    #[test]
    fn tool_only_replies_are_sent_with_empty_content() {
        let message = ChatMessage::assistant(
            String::new(),
            String::new(),
            vec![ToolCall::function("a".into(), "read".into(), "{}".into())],
        );
        assert_eq!(wire_message(&message, false)["content"], "");
    }

    #[test]
    fn reasoning_is_not_sent_back() {
        let mut message = ChatMessage::assistant("a".into(), "secret thoughts".into(), vec![]);
        message.reasoning = Some("secret thoughts".into());
        assert!(wire_message(&message, false).get("reasoning").is_none());
    }
}
