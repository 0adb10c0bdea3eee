//! A seeded fuzz test of the stream parsers' shortcut for events shaped like the last one
//! (`template.rs`): random streams of OpenAI chunks and Anthropic events, rendered by
//! serde_json (so every escape is right), mixing same-shape deltas with escapes, quotes,
//! control characters, other fields, finish reasons, tool calls and thinking. Whatever the
//! shortcut takes, the reply and what is shown must be exactly what a full parse of every
//! event gives. The seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.

use serde_json::{Value, json};

use super::shown::Shown;
use super::{StreamParser, StreamUpdate};
use crate::input_fuzz::Rng;

const TEXTS: [&str; 12] = [
    "tok ",
    "",
    "\"",
    "\\",
    "a\"b",
    "\n",
    "\u{1}",
    "é漢",
    "}",
    "\",\"x\":\"",
    "null",
    "ok",
];

fn text(rng: &mut Rng) -> String {
    (0..rng.below(4))
        .map(|_| TEXTS[rng.below(TEXTS.len())])
        .collect()
}

fn openai_chunk(rng: &mut Rng) -> Value {
    let mut delta = json!({});
    match rng.below(10) {
        0 => delta["reasoning_content"] = json!(text(rng)),
        1 => {
            delta["tool_calls"] = json!([{"index": 0, "id": "c", "function": {"name": "read", "arguments": text(rng)}}])
        }
        2 => {
            delta["content"] = json!(text(rng));
            delta["role"] = json!("assistant");
        }
        _ => delta["content"] = json!(text(rng)),
    }
    let finish = if rng.below(20) == 0 {
        json!("stop")
    } else {
        Value::Null
    };
    let mut chunk = json!({"id": "c1", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    if rng.below(15) == 0 {
        chunk["id"] = json!(format!("c{}", rng.below(3)));
    }
    chunk
}

fn anthropic_event(rng: &mut Rng) -> Value {
    match rng.below(10) {
        0 => {
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "thinking_delta", "thinking": text(rng)}})
        }
        1 => {
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        }
        2 => {
            json!({"type": "content_block_delta", "index": rng.below(2), "delta": {"type": "text_delta", "text": text(rng)}})
        }
        _ => {
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text(rng)}})
        }
    }
}

/// Feeds `events` to `parser`; returns what was shown and the reply's text and thinking.
fn read(parser: &mut dyn StreamParser, events: &[String]) -> (Vec<StreamUpdate>, String, String) {
    let mut shown = Shown::default();
    for event in events {
        let _ = parser.feed(event.as_bytes(), &mut shown);
    }
    let reply = parser.response();
    (shown.take(), reply.text, reply.reasoning)
}

#[test]
fn the_same_shape_shortcut_reads_every_stream_as_a_full_parse_does() {
    let mut rng = Rng::seeded(0x5eed_f00d_u64);
    for round in 0..2_000 {
        let openai = round % 2 == 0;
        let events: Vec<String> = (0..rng.below(30))
            .map(|_| {
                if openai {
                    openai_chunk(&mut rng).to_string()
                } else {
                    anthropic_event(&mut rng).to_string()
                }
            })
            .collect();
        let fresh = || {
            if openai {
                super::openai::parser()
            } else {
                super::anthropic::parser()
            }
        };
        // The reference: a new parser per event, so no shape is ever reused.
        let mut expected = (Vec::new(), String::new(), String::new());
        for event in &events {
            let (updates, text, reasoning) = read(fresh().as_mut(), std::slice::from_ref(event));
            expected.0.extend(updates);
            expected.1.push_str(&text);
            expected.2.push_str(&reasoning);
        }
        let mut joined = Shown::default();
        for update in expected.0 {
            match update {
                StreamUpdate::Text(text) => joined.text(&text),
                StreamUpdate::Reasoning(text) => joined.reasoning(&text),
                StreamUpdate::Warning(message) => joined.warning(message),
            }
        }
        let expected = (joined.take(), expected.1, expected.2);
        assert_eq!(read(fresh().as_mut(), &events), expected, "{events:#?}");
    }
}
