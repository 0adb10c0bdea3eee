//! Anthropic Messages streaming.

use std::borrow::Cow;

use coder_protocol::{Attachment, ChatMessage, Role, TokenUsage, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::shown::{ReplyText, Shown};
use super::sse::SseEvent;
use super::template::{DeltaTemplate, Piece, borrowed_str};
use super::wire_history::MessageWriter;
use super::{Feed, ModelRequest, ModelResponse, StreamParser, WireApi};
use crate::config::ApiKey;

const API_VERSION: &str = "2023-06-01";

pub(crate) struct AnthropicApi {
    pub base_url: String,
    pub api_key: Option<ApiKey>,
}

impl WireApi for AnthropicApi {
    fn url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    fn models_url(&self) -> String {
        format!("{}/v1/models", self.base_url)
    }

    fn headers(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = builder.header("anthropic-version", API_VERSION);
        match &self.api_key {
            Some(key) => builder.header("x-api-key", key.expose()),
            None => builder,
        }
    }

    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn body(
        &self,
        request: &ModelRequest<'_>,
        history: &mut dyn FnMut(bool, &mut Vec<u8>) -> serde_json::Result<()>,
    ) -> serde_json::Result<Vec<u8>> {
        // The fields in the order a `Value` writes them (sorted): `max_tokens`, the
        // messages, then the rest, written apart and joined.
        let mut body = b"{\"max_tokens\":".to_vec();
        serde_json::to_writer(&mut body, &request.max_output_tokens)?;
        body.extend_from_slice(b",\"messages\":[");
        history(false, &mut body)?;
        body.extend_from_slice(b"],");
        let rest = serde_json::to_vec(&AfterMessages {
            model: request.model,
            stream: true,
            system: Some(request.system).filter(|system| !system.is_empty()),
            tools: request
                .tools
                .iter()
                .map(|tool| Tool {
                    description: &tool.description,
                    input_schema: tool.parameters.json(),
                    name: &tool.name,
                })
                .collect(),
        })?;
        // `rest` is an object that holds `model`: its fields follow the messages.
        body.extend_from_slice(rest.get(1..).unwrap_or_default());
        Ok(body)
    }

    fn message_writer(&self) -> Box<dyn MessageWriter> {
        Box::new(AnthropicWriter { open: None })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::<AnthropicParser>::default()
    }
}

/// A request's body after its messages, serialized from borrowed parts (the tools'
/// schemas are not copied), fields sorted as a `Value` would write them.
#[derive(Serialize)]
struct AfterMessages<'a> {
    model: &'a str,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
}

#[derive(Serialize)]
struct Tool<'a> {
    description: &'a str,
    input_schema: &'a serde_json::value::RawValue,
    name: &'a str,
}

/// Writes OpenAI-shaped history as Anthropic messages: a person's images become `image`
/// blocks after the text of their message, tool calls become `tool_use` blocks, tool
/// results become `tool_result` blocks of a user message (their images inside), and
/// consecutive messages of one role are merged, since Anthropic wants roles to alternate.
struct AnthropicWriter {
    /// The last run of one role's messages: a message of that role would join it.
    open: Option<(&'static str, Vec<Value>)>,
}

impl MessageWriter for AnthropicWriter {
    fn push(&mut self, message: &ChatMessage, done: &mut dyn FnMut(Value)) {
        let (role, blocks) = blocks_of(message);
        if blocks.is_empty() {
            return;
        }
        match &mut self.open {
            Some((open_role, open_blocks)) if *open_role == role => open_blocks.extend(blocks),
            open => {
                if let Some((role, blocks)) = open.replace((role, blocks)) {
                    done(json!({"role": role, "content": blocks}));
                }
            }
        }
    }

    fn open(&self, open: &mut dyn FnMut(Value)) {
        if let Some((role, blocks)) = &self.open {
            open(json!({"role": role, "content": blocks}));
        }
    }
}

/// The role of the Anthropic message `message` goes in, and its blocks.
fn blocks_of(message: &ChatMessage) -> (&'static str, Vec<Value>) {
    match message.role {
        Role::System | Role::User => {
            let mut blocks = text_block(message);
            blocks.extend(message.attachments.iter().map(image_block));
            ("user", blocks)
        }
        Role::Assistant => {
            let mut blocks = text_block(message);
            blocks.extend(message.tool_calls.iter().map(|call| {
                let input: Value =
                    serde_json::from_str(&call.function.arguments).unwrap_or(json!({}));
                json!({"type": "tool_use", "id": call.id, "name": call.function.name, "input": input})
            }));
            ("assistant", blocks)
        }
        Role::Tool => {
            let mut content = vec![json!({
                "type": "text",
                "text": message.content.clone().unwrap_or_default(),
            })];
            content.extend(message.attachments.iter().map(image_block));
            let content = if message.attachments.is_empty() {
                json!(message.content.clone().unwrap_or_default())
            } else {
                json!(content)
            };
            (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": content,
                })],
            )
        }
    }
}

/// One image as an Anthropic content block: its bytes (`base64`), or its `http(s)` URL
/// (`url`), which Anthropic fetches.
fn image_block(image: &Attachment) -> Value {
    match image {
        Attachment::Inline { media_type, data } => json!({"type": "image", "source": {
            "type": "base64", "media_type": media_type, "data": data,
        }}),
        Attachment::Url { url } => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

fn text_block(message: &ChatMessage) -> Vec<Value> {
    match &message.content {
        Some(text) if !text.is_empty() => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

enum Block {
    Text,
    Thinking,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

#[derive(Default)]
struct AnthropicParser {
    reply: ReplyText,
    blocks: Vec<(u64, Block)>,
    usage: TokenUsage,
    saw_usage: bool,
    /// Bytes of tool arguments so far (text and thinking are counted in `reply`).
    bytes: usize,
    /// The shape of the last text or thinking delta event.
    template: Option<DeltaTemplate>,
}

/// One event, after [`RawEvent::into_event`]; delta text is borrowed from the event's
/// data when it holds no escapes.
enum StreamEvent<'a> {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta<'a>,
    },
    MessageDelta {
        usage: Option<Usage>,
    },
    MessageStop,
    Error {
        error: ApiError,
    },
    Other,
}

#[derive(Deserialize)]
struct MessageStart {
    usage: Option<Usage>,
}

enum ContentBlock {
    Text,
    Thinking,
    ToolUse { id: String, name: String },
    Other,
}

enum BlockDelta<'a> {
    TextDelta { text: Cow<'a, str> },
    ThinkingDelta { thinking: Cow<'a, str> },
    InputJsonDelta { partial_json: Cow<'a, str> },
    Other,
}

/// Every field an event may carry, read in one pass. (A `#[serde(tag = "type")]` enum
/// first buffers the whole event into an intermediate tree to find its tag: most of the
/// cost of a text delta.)
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<RawDelta<'a>>,
    #[serde(borrow)]
    content_block: Option<RawBlock<'a>>,
    message: Option<MessageStart>,
    usage: Option<Usage>,
    error: Option<ApiError>,
}

#[derive(Deserialize)]
struct RawDelta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "borrowed_str")]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed_str")]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed_str")]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    id: Option<String>,
    name: Option<String>,
}

fn missing(kind: &str, field: &str) -> String {
    format!("malformed event ({kind} without {field})")
}

impl<'a> RawEvent<'a> {
    fn into_event(self) -> Result<StreamEvent<'a>, String> {
        let kind = &*self.kind;
        Ok(match kind {
            "message_start" => StreamEvent::MessageStart {
                message: self.message.ok_or_else(|| missing(kind, "message"))?,
            },
            "content_block_start" => {
                let block = self
                    .content_block
                    .ok_or_else(|| missing(kind, "content_block"))?;
                StreamEvent::ContentBlockStart {
                    index: self.index.ok_or_else(|| missing(kind, "index"))?,
                    content_block: match (&*block.kind, block.id, block.name) {
                        ("text", ..) => ContentBlock::Text,
                        ("thinking", ..) => ContentBlock::Thinking,
                        ("tool_use", Some(id), Some(name)) => ContentBlock::ToolUse { id, name },
                        ("tool_use", ..) => return Err(missing(kind, "a tool's id and name")),
                        _ => ContentBlock::Other,
                    },
                }
            }
            "content_block_delta" => {
                let delta = self.delta.ok_or_else(|| missing(kind, "delta"))?;
                let field =
                    |value: Option<Cow<'a, str>>, name| value.ok_or_else(|| missing(kind, name));
                StreamEvent::ContentBlockDelta {
                    index: self.index.ok_or_else(|| missing(kind, "index"))?,
                    delta: match &*delta.kind {
                        "text_delta" => BlockDelta::TextDelta {
                            text: field(delta.text, "text")?,
                        },
                        "thinking_delta" => BlockDelta::ThinkingDelta {
                            thinking: field(delta.thinking, "thinking")?,
                        },
                        "input_json_delta" => BlockDelta::InputJsonDelta {
                            partial_json: field(delta.partial_json, "partial_json")?,
                        },
                        _ => BlockDelta::Other,
                    },
                }
            }
            "message_delta" => StreamEvent::MessageDelta { usage: self.usage },
            "message_stop" => StreamEvent::MessageStop,
            "error" => StreamEvent::Error {
                error: self.error.ok_or_else(|| missing(kind, "error"))?,
            },
            _ => StreamEvent::Other,
        })
    }
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

impl AnthropicParser {
    fn add_usage(&mut self, usage: Usage) {
        self.saw_usage = true;
        // Anthropic counts cache reads and writes apart from `input_tokens`; coder's input
        // is the whole prompt, with the cached part inside it, as OpenAI reports it.
        if usage.input_tokens.is_some()
            || usage.cache_read_input_tokens.is_some()
            || usage.cache_creation_input_tokens.is_some()
        {
            let cached = usage.cache_read_input_tokens.unwrap_or_default();
            self.usage.input_tokens = usage.input_tokens.unwrap_or_default()
                + cached
                + usage.cache_creation_input_tokens.unwrap_or_default();
            self.usage.cached_input_tokens = cached;
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
    }
}

impl StreamParser for AnthropicParser {
    fn shape_and_reply(&mut self) -> (Option<&mut DeltaTemplate>, &mut ReplyText) {
        (self.template.as_mut(), &mut self.reply)
    }

    fn feed(&mut self, event: SseEvent<'_>, shown: &mut Shown) -> Result<Feed, String> {
        let SseEvent { data, raw } = event;
        if let Some((piece, text)) = self.template.as_mut().and_then(|t| t.matches(data, raw)) {
            self.reply.add(piece, text, shown);
            return Ok(Feed::Continue);
        }
        let data = std::str::from_utf8(data).map_err(|_| "event that is not UTF-8".to_owned())?;
        let event = serde_json::from_str::<RawEvent<'_>>(data)
            .map_err(|err| format!("malformed event ({err})"))?
            .into_event()?;
        self.template = match &event {
            StreamEvent::ContentBlockDelta {
                delta:
                    BlockDelta::TextDelta {
                        text: Cow::Borrowed(text),
                    },
                ..
            } => DeltaTemplate::learn(data, raw, text, Piece::Text),
            StreamEvent::ContentBlockDelta {
                delta:
                    BlockDelta::ThinkingDelta {
                        thinking: Cow::Borrowed(text),
                    },
                ..
            } => DeltaTemplate::learn(data, raw, text, Piece::Reasoning),
            _ => None,
        };
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.add_usage(usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    ContentBlock::Text => Block::Text,
                    ContentBlock::Thinking => Block::Thinking,
                    ContentBlock::ToolUse { id, name } => Block::ToolUse {
                        id,
                        name,
                        json: String::new(),
                    },
                    ContentBlock::Other => Block::Other,
                };
                self.blocks.push((index, block));
            }
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => self.reply.add(Piece::Text, &text, shown),
                BlockDelta::ThinkingDelta { thinking } => {
                    self.reply.add(Piece::Reasoning, &thinking, shown);
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    self.bytes += partial_json.len();
                    if let Some((_, Block::ToolUse { json, .. })) =
                        self.blocks.iter_mut().rev().find(|(i, _)| *i == index)
                    {
                        json.push_str(&partial_json);
                    }
                }
                BlockDelta::Other => {}
            },
            StreamEvent::MessageDelta { usage } => {
                if let Some(usage) = usage {
                    self.add_usage(usage);
                }
            }
            StreamEvent::MessageStop => return Ok(Feed::Done),
            StreamEvent::Error { error } => {
                let retryable = matches!(
                    error.kind.as_str(),
                    "overloaded_error" | "api_error" | "rate_limit_error"
                );
                return Ok(Feed::ProviderError {
                    message: format!("{}: {}", error.kind, error.message),
                    retryable,
                });
            }
            StreamEvent::Other => {}
        }
        Ok(Feed::Continue)
    }

    fn may_end(&self) -> bool {
        false
    }

    fn reply_bytes(&self) -> usize {
        self.bytes + self.reply.bytes
    }

    fn response(&self) -> ModelResponse {
        let tool_calls = self
            .blocks
            .iter()
            .filter_map(|(_, block)| match block {
                Block::ToolUse { id, name, json } => {
                    let arguments = if json.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        json.clone()
                    };
                    Some(ToolCall::function(id.clone(), name.clone(), arguments))
                }
                Block::Text | Block::Thinking | Block::Other => None,
            })
            .collect();
        ModelResponse {
            text: self.reply.text.clone(),
            reasoning: self.reply.reasoning.clone(),
            tool_calls,
            usage: self.saw_usage.then_some(self.usage),
        }
    }
}

/// A new parser of this wire format (tests).
#[cfg(test)]
pub(crate) fn parser() -> Box<dyn StreamParser> {
    Box::<AnthropicParser>::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// `history` as Anthropic messages.
    fn wire_messages(history: &[ChatMessage]) -> Vec<Value> {
        let mut writer = AnthropicWriter { open: None };
        let mut messages = Vec::new();
        for message in history {
            writer.push(message, &mut |wire| messages.push(wire));
        }
        writer.open(&mut |wire| messages.push(wire));
        messages
    }

    #[test]
    fn tool_results_follow_tool_use_in_alternating_roles() {
        let history = vec![
            ChatMessage::user("read two files"),
            ChatMessage::assistant(
                "sure".into(),
                String::new(),
                vec![
                    ToolCall::function("t1".into(), "read".into(), r#"{"path":"a"}"#.into()),
                    ToolCall::function("t2".into(), "read".into(), r#"{"path":"b"}"#.into()),
                ],
            ),
            ChatMessage::tool_result("t1", "read", "A"),
            ChatMessage::tool_result("t2", "read", "B"),
        ];
        assert_eq!(
            wire_messages(&history),
            vec![
                json!({"role": "user", "content": [{"type": "text", "text": "read two files"}]}),
                json!({"role": "assistant", "content": [
                    {"type": "text", "text": "sure"},
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b"}},
                ]}),
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
                ]}),
            ]
        );
    }

    #[test]
    fn overloaded_error_event_is_retryable() {
        let mut parser = AnthropicParser::default();
        let feed = parser
            .feed(
                SseEvent::of(
                    br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ),
                &mut Shown::default(),
            )
            .unwrap();
        assert_eq!(
            feed,
            Feed::ProviderError {
                message: "overloaded_error: Overloaded".into(),
                retryable: true
            }
        );
    }
}
