//! The request bodies as the code wrote them before a conversation kept its history
//! serialized: each built whole from the history, for every request. Kept verbatim, so
//! the tests compare the bytes a cached history writes with what was written before.

#![allow(dead_code)]

pub(super) mod openai {
    use coder_protocol::{Attachment, ChatMessage, Role};
    use serde::Serialize;
    use serde_json::{Value, json};

    use crate::model::ModelRequest;

    pub(in crate::model) fn body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        messages.extend(chat_messages(request.messages, false));
        serde_json::to_vec(&Body {
            messages,
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
        })
    }

    /// A request's body, serialized from borrowed parts: the tools' schemas are written where
    /// they are, not copied into a `Value` first. Fields in the order a `Value` would write
    /// them (sorted), so the bytes are the same as they were.
    #[derive(Serialize)]
    struct Body<'a> {
        messages: Vec<Value>,
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
        // Images of tool results, waiting for the end of the run of tool messages.
        let mut images: Vec<Value> = Vec::new();
        for message in history {
            if message.role != Role::Tool && !images.is_empty() {
                messages.push(images_message(std::mem::take(&mut images)));
            }
            let mut wire = wire_message(message, keep_reasoning);
            if message.role == Role::Tool {
                images.extend(message.attachments.iter().map(image_part));
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
            messages.push(wire);
        }
        if !images.is_empty() {
            messages.push(images_message(images));
        }
        messages
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
}

pub(super) mod anthropic {
    use coder_protocol::{Attachment, ChatMessage, Role};
    use serde::Serialize;
    use serde_json::{Value, json};

    use crate::model::ModelRequest;

    pub(in crate::model) fn body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&Body {
            max_tokens: request.max_output_tokens,
            messages: wire_messages(request.messages),
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
        })
    }

    /// A request's body, serialized from borrowed parts (the tools' schemas are not copied),
    /// fields sorted as a `Value` would write them.
    #[derive(Serialize)]
    struct Body<'a> {
        max_tokens: u32,
        messages: Vec<Value>,
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

    /// Converts OpenAI-shaped history into Anthropic messages: a person's images become
    /// `image` blocks after the text of their message, tool calls become `tool_use` blocks, tool
    /// results become `tool_result` blocks of a user message (their images inside), and
    /// consecutive messages of one role are merged, since Anthropic wants roles to alternate.
    fn wire_messages(messages: &[ChatMessage]) -> Vec<Value> {
        let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for message in messages {
            let (role, blocks) = match message.role {
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
            };
            if blocks.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
                _ => out.push((role, blocks)),
            }
        }
        out.into_iter()
            .map(|(role, blocks)| json!({"role": role, "content": blocks}))
            .collect()
    }

    /// One image as an Anthropic content block: its bytes (`base64`), or its `http(s)` URL
    /// (`url`), which Anthropic fetches.
    fn image_block(image: &Attachment) -> Value {
        match image {
            Attachment::Inline { media_type, data } => json!({"type": "image", "source": {
                "type": "base64", "media_type": media_type, "data": data,
            }}),
            Attachment::Url { url } => {
                json!({"type": "image", "source": {"type": "url", "url": url}})
            }
        }
    }

    fn text_block(message: &ChatMessage) -> Vec<Value> {
        match &message.content {
            Some(text) if !text.is_empty() => vec![json!({"type": "text", "text": text})],
            _ => Vec::new(),
        }
    }
}
