//! Renders scripted chunks into SSE frames of either wire format.

use serde_json::{Value, json};

use crate::Chunk;

/// The wire format a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    OpenAi,
    Anthropic,
}

impl WireFormat {
    /// Picks the format from the request path.
    pub fn from_path(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Self::OpenAi)
        } else if path.ends_with("/messages") {
            Some(Self::Anthropic)
        } else {
            None
        }
    }

    /// Every SSE frame (`...\n\n`) of a reply made of `chunks`.
    pub fn render(self, chunks: &[Chunk]) -> Vec<String> {
        match self {
            Self::OpenAi => render_openai(chunks, true),
            Self::Anthropic => render_anthropic(chunks, true),
        }
    }

    /// A reply that never ends: the frames of `head` followed by one `repeat` (without the
    /// frames that close a reply), and the frames one more `repeat` adds, as one string to
    /// write again and again.
    pub fn render_endless(self, head: &[Chunk], repeat: &Chunk) -> (Vec<String>, String) {
        let open = |chunks: &[Chunk]| match self {
            Self::OpenAi => render_openai(chunks, false),
            Self::Anthropic => render_anthropic(chunks, false),
        };
        let mut chunks = head.to_vec();
        chunks.push(repeat.clone());
        let first = open(&chunks);
        chunks.push(repeat.clone());
        let unit = open(&chunks).split_off(first.len()).concat();
        (first, unit)
    }
}

fn data_frame(data: &str) -> String {
    format!("data: {data}\n\n")
}

fn split_half(s: &str) -> (&str, &str) {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    s.split_at(mid)
}

fn openai_delta(delta: Value) -> String {
    data_frame(
        &json!({
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
        })
        .to_string(),
    )
}

/// `close`: end with the finish reason, usage and `[DONE]`.
fn render_openai(chunks: &[Chunk], close: bool) -> Vec<String> {
    let mut frames = Vec::with_capacity(chunks.len() + 3);
    let mut usage = None;
    let mut next_tool_index = 0u32;
    let mut any_tool = false;
    for chunk in chunks {
        match chunk {
            Chunk::Text { text } => frames.push(openai_delta(json!({"content": text}))),
            Chunk::Thinking { text } => {
                frames.push(openai_delta(json!({"reasoning_content": text})));
            }
            Chunk::ToolCall {
                id,
                name,
                arguments,
            } => {
                any_tool = true;
                let index = next_tool_index;
                next_tool_index += 1;
                frames.push(openai_delta(json!({"tool_calls": [{
                    "index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""},
                }]})));
                let (first, second) = split_half(arguments);
                for part in [first, second] {
                    frames.push(openai_delta(json!({"tool_calls": [{
                        "index": index, "function": {"arguments": part},
                    }]})));
                }
            }
            Chunk::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                any_tool = true;
                let mut call = json!({"index": index, "function": {"arguments": arguments}});
                if let Some(id) = id {
                    call["id"] = json!(id);
                    call["type"] = json!("function");
                }
                if let Some(name) = name {
                    call["function"]["name"] = json!(name);
                }
                frames.push(openai_delta(json!({"tool_calls": [call]})));
            }
            Chunk::Usage {
                input_tokens,
                output_tokens,
            } => usage = Some((*input_tokens, *output_tokens)),
            Chunk::Raw { data } => frames.push(data_frame(data)),
            Chunk::Verbatim { text } => frames.push(text.clone()),
        }
    }
    if !close {
        return frames;
    }
    let finish_reason = if any_tool { "tool_calls" } else { "stop" };
    frames.push(data_frame(
        &json!({
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "model": "mock-model",
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}],
        })
        .to_string(),
    ));
    if let Some((input, output)) = usage {
        frames.push(data_frame(
            &json!({
                "id": "chatcmpl-mock",
                "object": "chat.completion.chunk",
                "model": "mock-model",
                "choices": [],
                "usage": {
                    "prompt_tokens": input,
                    "completion_tokens": output,
                    "total_tokens": input + output,
                },
            })
            .to_string(),
        ));
    }
    frames.push(data_frame("[DONE]"));
    frames
}

fn event_frame(data: &Value) -> String {
    let name = data["type"].as_str().unwrap_or("unknown");
    format!("event: {name}\ndata: {data}\n\n")
}

#[derive(PartialEq)]
enum OpenBlock {
    None,
    Text,
    Thinking,
}

/// `close`: close the open block and end with `message_delta` and `message_stop`.
fn render_anthropic(chunks: &[Chunk], close_reply: bool) -> Vec<String> {
    let (input_tokens, output_tokens) = chunks
        .iter()
        .find_map(|chunk| match chunk {
            Chunk::Usage {
                input_tokens,
                output_tokens,
            } => Some((*input_tokens, *output_tokens)),
            _ => None,
        })
        .unwrap_or((0, 0));
    let mut frames = vec![
        event_frame(&json!({
            "type": "message_start",
            "message": {
                "id": "msg_mock", "type": "message", "role": "assistant", "model": "mock-model",
                "content": [], "stop_reason": null,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        })),
        event_frame(&json!({"type": "ping"})),
    ];
    let mut index = 0usize;
    let mut open = OpenBlock::None;
    let mut any_tool = false;
    let close = |frames: &mut Vec<String>, open: &mut OpenBlock, index: &mut usize| {
        if *open == OpenBlock::Thinking {
            frames.push(event_frame(&json!({
                "type": "content_block_delta", "index": *index,
                "delta": {"type": "signature_delta", "signature": "mock-signature"},
            })));
        }
        if *open != OpenBlock::None {
            frames.push(event_frame(
                &json!({"type": "content_block_stop", "index": *index}),
            ));
            *index += 1;
            *open = OpenBlock::None;
        }
    };
    for chunk in chunks {
        match chunk {
            Chunk::Text { text } => {
                if open != OpenBlock::Text {
                    close(&mut frames, &mut open, &mut index);
                    frames.push(event_frame(&json!({
                        "type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""},
                    })));
                    open = OpenBlock::Text;
                }
                frames.push(event_frame(&json!({
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": text},
                })));
            }
            Chunk::Thinking { text } => {
                if open != OpenBlock::Thinking {
                    close(&mut frames, &mut open, &mut index);
                    frames.push(event_frame(&json!({
                        "type": "content_block_start", "index": index,
                        "content_block": {"type": "thinking", "thinking": ""},
                    })));
                    open = OpenBlock::Thinking;
                }
                frames.push(event_frame(&json!({
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "thinking_delta", "thinking": text},
                })));
            }
            Chunk::ToolCall {
                id,
                name,
                arguments,
            } => {
                close(&mut frames, &mut open, &mut index);
                any_tool = true;
                frames.push(event_frame(&json!({
                    "type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}},
                })));
                let (first, second) = split_half(arguments);
                for part in [first, second] {
                    frames.push(event_frame(&json!({
                        "type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    })));
                }
                frames.push(event_frame(
                    &json!({"type": "content_block_stop", "index": index}),
                ));
                index += 1;
            }
            Chunk::Raw { data } => {
                frames.push(format!("event: content_block_delta\ndata: {data}\n\n"));
            }
            Chunk::Verbatim { text } => frames.push(text.clone()),
            Chunk::ToolCallDelta { .. } | Chunk::Usage { .. } => {}
        }
    }
    if !close_reply {
        return frames;
    }
    close(&mut frames, &mut open, &mut index);
    let stop_reason = if any_tool { "tool_use" } else { "end_turn" };
    frames.push(event_frame(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output_tokens},
    })));
    frames.push(event_frame(&json!({"type": "message_stop"})));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_stream_ends_with_finish_usage_and_done() {
        let frames = WireFormat::OpenAi.render(&[Chunk::text("hi"), Chunk::usage(3, 1)]);
        assert_eq!(frames.len(), 4);
        assert!(frames[1].contains("\"finish_reason\":\"stop\""));
        assert!(frames[2].contains("\"prompt_tokens\":3"));
        assert_eq!(frames[3], "data: [DONE]\n\n");
    }

    #[test]
    fn anthropic_merges_consecutive_text_into_one_block() {
        let frames = WireFormat::Anthropic.render(&[Chunk::text("a"), Chunk::text("b")]);
        let starts = frames
            .iter()
            .filter(|f| f.starts_with("event: content_block_start"))
            .count();
        assert_eq!(starts, 1);
        assert!(frames.last().is_some_and(|f| f.contains("message_stop")));
    }

    #[test]
    fn an_endless_reply_repeats_one_delta_and_never_closes() {
        let (head, unit) = WireFormat::Anthropic.render_endless(&[], &Chunk::text("ab"));
        assert_eq!(head.len(), 4, "{head:?}");
        assert!(head[3].contains("\"text\":\"ab\""));
        assert_eq!(unit, head[3]);
        let (head, unit) =
            WireFormat::OpenAi.render_endless(&[Chunk::text("x")], &Chunk::text("ab"));
        assert_eq!(head.len(), 2);
        assert_eq!(unit, head[1]);
        assert!(!unit.contains("finish_reason\":\"stop") && !unit.contains("[DONE]"));
    }
}
