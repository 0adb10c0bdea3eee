//! Renders scripted chunks into SSE frames of the wire format a request asks for: OpenAI
//! Chat Completions, OpenAI Responses or Anthropic Messages.

use serde_json::{Value, json};

use crate::Chunk;

/// The wire format a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    OpenAi,
    /// OpenAI's Responses API (`POST /v1/responses`), the only one Codex speaks.
    Responses,
    Anthropic,
}

impl WireFormat {
    /// Picks the format from the request path.
    pub fn from_path(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Self::OpenAi)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
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
            Self::Responses => render_responses(chunks, true),
            Self::Anthropic => render_anthropic(chunks, true),
        }
    }

    /// The name a pre-rendered reply of this format carries (`MockResponse::Rendered`).
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Responses => "responses",
            Self::Anthropic => "anthropic",
        }
    }

    /// A reply that never ends: the frames of `head` followed by one `repeat` (without the
    /// frames that close a reply), and the frames one more `repeat` adds, as one string to
    /// write again and again.
    pub fn render_endless(self, head: &[Chunk], repeat: &Chunk) -> (Vec<String>, String) {
        let open = |chunks: &[Chunk]| match self {
            Self::OpenAi => render_openai(chunks, false),
            Self::Responses => render_responses(chunks, false),
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

/// The output item a Responses stream is in the middle of.
enum OpenItem {
    None,
    /// A message, with its text so far.
    Message(String),
    /// A reasoning item, with its summary so far.
    Reasoning(String),
}

/// `close`: close the open item and end with `response.completed`, which carries every
/// output item and the usage.
fn render_responses(chunks: &[Chunk], close_reply: bool) -> Vec<String> {
    let mut frames = vec![event_frame(&json!({
        "type": "response.created",
        "response": {"id": "resp_mock", "object": "response", "status": "in_progress", "model": "mock-model"},
    }))];
    let mut usage = (0, 0);
    let mut output: Vec<Value> = Vec::new();
    let mut open = OpenItem::None;
    // Closes the open item: its `output_item.done`, and the item into `output`.
    let close = |frames: &mut Vec<String>, output: &mut Vec<Value>, open: &mut OpenItem| {
        let index = output.len();
        let item = match std::mem::replace(open, OpenItem::None) {
            OpenItem::None => return,
            OpenItem::Message(text) => json!({
                "type": "message", "id": format!("msg_mock_{index}"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }),
            OpenItem::Reasoning(text) => json!({
                "type": "reasoning", "id": format!("rs_mock_{index}"),
                "summary": [{"type": "summary_text", "text": text}],
            }),
        };
        frames.push(event_frame(&json!({
            "type": "response.output_item.done", "output_index": index, "item": item,
        })));
        output.push(item);
    };
    for chunk in chunks {
        match chunk {
            Chunk::Text { text } => {
                if !matches!(open, OpenItem::Message(_)) {
                    close(&mut frames, &mut output, &mut open);
                    frames.push(event_frame(&json!({
                        "type": "response.output_item.added", "output_index": output.len(),
                        "item": {"type": "message", "id": format!("msg_mock_{}", output.len()),
                            "role": "assistant", "status": "in_progress", "content": []},
                    })));
                    open = OpenItem::Message(String::new());
                }
                if let OpenItem::Message(so_far) = &mut open {
                    so_far.push_str(text);
                }
                frames.push(event_frame(&json!({
                    "type": "response.output_text.delta",
                    "item_id": format!("msg_mock_{}", output.len()),
                    "output_index": output.len(), "content_index": 0, "delta": text,
                })));
            }
            Chunk::Thinking { text } => {
                if !matches!(open, OpenItem::Reasoning(_)) {
                    close(&mut frames, &mut output, &mut open);
                    frames.push(event_frame(&json!({
                        "type": "response.output_item.added", "output_index": output.len(),
                        "item": {"type": "reasoning", "id": format!("rs_mock_{}", output.len()),
                            "summary": []},
                    })));
                    open = OpenItem::Reasoning(String::new());
                }
                if let OpenItem::Reasoning(so_far) = &mut open {
                    so_far.push_str(text);
                }
                frames.push(event_frame(&json!({
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": format!("rs_mock_{}", output.len()),
                    "output_index": output.len(), "summary_index": 0, "delta": text,
                })));
            }
            Chunk::ToolCall {
                id,
                name,
                arguments,
            } => {
                close(&mut frames, &mut output, &mut open);
                let index = output.len();
                let item_id = format!("fc_mock_{index}");
                frames.push(event_frame(&json!({
                    "type": "response.output_item.added", "output_index": index,
                    "item": {"type": "function_call", "id": item_id, "call_id": id,
                        "name": name, "arguments": "", "status": "in_progress"},
                })));
                let (first, second) = split_half(arguments);
                for part in [first, second] {
                    frames.push(event_frame(&json!({
                        "type": "response.function_call_arguments.delta",
                        "item_id": item_id, "output_index": index, "delta": part,
                    })));
                }
                let item = json!({
                    "type": "function_call", "id": item_id, "call_id": id, "name": name,
                    "arguments": arguments, "status": "completed",
                });
                frames.push(event_frame(&json!({
                    "type": "response.output_item.done", "output_index": index, "item": item,
                })));
                output.push(item);
            }
            Chunk::Usage {
                input_tokens,
                output_tokens,
            } => usage = (*input_tokens, *output_tokens),
            Chunk::Raw { data } => frames.push(data_frame(data)),
            Chunk::Verbatim { text } => frames.push(text.clone()),
            // A raw Chat Completions tool-call delta has no counterpart here.
            Chunk::ToolCallDelta { .. } => {}
        }
    }
    if !close_reply {
        return frames;
    }
    close(&mut frames, &mut output, &mut open);
    let (input_tokens, output_tokens) = usage;
    frames.push(event_frame(&json!({
        "type": "response.completed",
        "response": {
            "id": "resp_mock", "object": "response", "status": "completed",
            "model": "mock-model", "output": output,
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            },
        },
    })));
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

    /// The `data` of each frame, parsed, checking that its event name is its type.
    fn events(frames: &[String]) -> Vec<Value> {
        frames
            .iter()
            .map(|frame| {
                let (event, data) = frame
                    .trim_end()
                    .split_once('\n')
                    .expect("an event line and a data line");
                let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap())
                    .expect("the data is JSON");
                assert_eq!(event, format!("event: {}", data["type"].as_str().unwrap()));
                data
            })
            .collect()
    }

    #[test]
    fn responses_stream_a_message_and_complete_with_the_item_and_usage() {
        assert_eq!(
            WireFormat::from_path("/v1/responses"),
            Some(WireFormat::Responses)
        );
        let frames = WireFormat::Responses.render(&[
            Chunk::text("Do"),
            Chunk::text("ne."),
            Chunk::usage(1_000, 2),
        ]);
        let events = events(&frames);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "response.created",
                "response.output_item.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_item.done",
                "response.completed",
            ]
        );
        assert_eq!(events[3]["delta"], "ne.");
        let message = json!({
            "type": "message", "id": "msg_mock_0", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        });
        assert_eq!(events[4]["item"], message);
        let response = &events[5]["response"];
        assert_eq!(response["output"], json!([message]));
        assert_eq!(response["usage"]["input_tokens"], 1_000);
        assert_eq!(response["usage"]["output_tokens"], 2);
        assert_eq!(response["usage"]["total_tokens"], 1_002);
    }

    #[test]
    fn responses_stream_a_function_call_after_reasoning_as_items_of_their_own() {
        let arguments = json!({"cmd": "printf 1 > tracked.txt"});
        let frames = WireFormat::Responses.render(&[
            Chunk::thinking("Look."),
            Chunk::tool_call("call_1", "exec_command", arguments.clone()),
        ]);
        let events = events(&frames);
        let done: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "response.output_item.done")
            .map(|e| &e["item"])
            .collect();
        assert_eq!(done.len(), 2);
        assert_eq!(done[0]["type"], "reasoning");
        assert_eq!(done[0]["summary"][0]["text"], "Look.");
        assert_eq!(
            *done[1],
            json!({
                "type": "function_call", "id": "fc_mock_1", "call_id": "call_1",
                "name": "exec_command", "arguments": arguments.to_string(),
                "status": "completed",
            })
        );
        let streamed: String = events
            .iter()
            .filter(|e| e["type"] == "response.function_call_arguments.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(streamed, arguments.to_string());
        assert_eq!(events.last().unwrap()["type"], "response.completed");
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
        let (head, unit) = WireFormat::Responses.render_endless(&[], &Chunk::text("ab"));
        assert_eq!(head.len(), 3);
        assert_eq!(unit, head[2]);
        assert!(!unit.contains("response.completed"));
    }
}
