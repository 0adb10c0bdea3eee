//! Seeded fuzz tests of the stream parsers' shortcuts for events shaped like the last one
//! (`template.rs`): random streams of OpenAI chunks and Anthropic events, rendered by
//! serde_json (so every escape is right), mixing same-shape deltas with escapes, quotes,
//! control characters, other fields, finish reasons, tool calls and thinking.
//! - Whatever the shortcut takes, the reply and what is shown must be exactly what a full
//!   parse of every event gives.
//! - Framed as SSE in several ways and split at random places, a body read with runs taken
//!   straight from the buffer (`reading.rs`) must end the same way (done, a provider's
//!   error, a limit passed at the same event) with the same reply and shown text as when
//!   every event is cut and parsed one by one.
//!
//! The seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.

use serde_json::{Value, json};

use super::limits::ReplyLimits;
use super::reading::{ReplyReader, Step};
use super::shown::Shown;
use super::sse::SseReader;
use super::{Feed, ModelResponse, StreamParser, StreamUpdate};
use coder_testkit::fuzz::Rng;

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
    (0..rng.index(4))
        .map(|_| TEXTS[rng.index(TEXTS.len())])
        .collect()
}

fn openai_chunk(rng: &mut Rng) -> Value {
    let mut delta = json!({});
    match rng.index(10) {
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
    let finish = if rng.index(20) == 0 {
        json!("stop")
    } else {
        Value::Null
    };
    let mut chunk = json!({"id": "c1", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    if rng.index(15) == 0 {
        chunk["id"] = json!(format!("c{}", rng.index(3)));
    }
    chunk
}

fn anthropic_event(rng: &mut Rng) -> Value {
    match rng.index(10) {
        0 => {
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "thinking_delta", "thinking": text(rng)}})
        }
        1 => {
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        }
        2 => {
            json!({"type": "content_block_delta", "index": rng.index(2), "delta": {"type": "text_delta", "text": text(rng)}})
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
        let _ = parser.feed(super::sse::SseEvent::of(event.as_bytes()), &mut shown);
    }
    let reply = parser.response();
    (shown.take(), reply.text, reply.reasoning)
}

#[test]
fn the_same_shape_shortcut_reads_every_stream_as_a_full_parse_does() {
    let mut rng = Rng::seeded(0x5eed_f00d_u64);
    for round in 0..2_000 {
        let openai = round % 2 == 0;
        let events: Vec<String> = (0..rng.index(30))
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
                StreamUpdate::Retrying { message, .. } => joined.warning(message),
            }
        }
        let expected = (joined.take(), expected.1, expected.2);
        assert_eq!(read(fresh().as_mut(), &events), expected, "{events:#?}");
    }
}

/// Frames `data` as one SSE event the way some server might: LF, CRLF or CR line ends, an
/// `event:` line, a comment, an `id:` after the data, now and then data on two lines.
fn frame(rng: &mut Rng, data: &str, framing: usize) -> String {
    let end = ["\n", "\r\n", "\r"][framing % 3];
    let mut event = String::new();
    if framing / 3 == 1 {
        event.push_str(&format!("event: delta{end}"));
    }
    if rng.index(40) == 0 {
        event.push_str(&format!(": note{end}"));
    }
    if rng.index(60) == 0 && data.len() > 1 {
        // Several data lines join with a newline: split where the JSON allows whitespace.
        if let Some(at) = data.find(',') {
            event.push_str(&format!(
                "data: {}{end}data: {}{end}",
                &data[..=at],
                &data[at + 1..]
            ));
        } else {
            event.push_str(&format!("data: {data}{end}"));
        }
    } else {
        event.push_str(&format!("data: {data}{end}"));
    }
    if rng.index(50) == 0 {
        event.push_str(&format!("id: 7{end}"));
    }
    event.push_str(end);
    event
}

/// Reads `body` in `chunks` the plain way: every event cut by the SSE reader and fed to
/// the parser, limits checked after each; returns how it ended and the reply.
fn read_each(
    parser: Box<dyn StreamParser>,
    limits: ReplyLimits,
    chunks: &[&[u8]],
) -> (Option<Step>, Vec<StreamUpdate>, ModelResponse) {
    let mut parser = parser;
    let mut sse = SseReader::new(limits.max_pending());
    let mut shown = Shown::default();
    let mut received = 0;
    for chunk in chunks {
        sse.push(chunk);
        while let Some(event) = sse.next_event() {
            let Ok(event) = event else {
                let end = Step::LimitPassed(limits.transport_message());
                return (Some(end), shown.take(), parser.response());
            };
            if event.data.is_empty() {
                continue;
            }
            received += 1;
            let feed = parser.feed(event, &mut shown).unwrap_or_else(|problem| {
                shown.warning(format!("skipped a {problem} from the model"));
                Feed::Continue
            });
            let end = match (limits.check(received, parser.reply_bytes()), feed) {
                (Some(message), _) => Some(Step::LimitPassed(message)),
                (None, Feed::Done) => Some(Step::Done),
                (None, Feed::ProviderError { message, retryable }) => {
                    Some(Step::ProviderError { message, retryable })
                }
                (None, Feed::Continue) => None,
            };
            if end.is_some() {
                return (end, shown.take(), parser.response());
            }
        }
    }
    (None, shown.take(), parser.response())
}

/// Reads `body` in `chunks` as a reply is read ([`ReplyReader`]: runs of same-shape deltas
/// taken straight from the buffer), asking for a random number of events at a time.
fn read_runs(
    rng: &mut Rng,
    parser: Box<dyn StreamParser>,
    limits: ReplyLimits,
    chunks: &[&[u8]],
) -> (Option<Step>, Vec<StreamUpdate>, ModelResponse) {
    let mut reader = ReplyReader::new(parser, limits);
    let mut shown = Shown::default();
    let mut updates = Vec::new();
    for chunk in chunks {
        reader.push(bytes::Bytes::copy_from_slice(chunk));
        loop {
            match reader.read(1 + rng.index(300) as u64, &mut shown) {
                Step::NeedMore => break,
                Step::Budget => {
                    // As the client does between batches: what is pending is reported.
                    shown.report(&mut |update| updates.push(update));
                }
                end => {
                    shown.report(&mut |update| updates.push(update));
                    return (Some(end), join(updates), reader.response());
                }
            }
        }
    }
    shown.report(&mut |update| updates.push(update));
    (None, join(updates), reader.response())
}

/// Consecutive text (or thinking) updates joined, as one report of them would give.
fn join(updates: Vec<StreamUpdate>) -> Vec<StreamUpdate> {
    let mut joined = Shown::default();
    for update in updates {
        match update {
            StreamUpdate::Text(text) => joined.text(&text),
            StreamUpdate::Reasoning(text) => joined.reasoning(&text),
            StreamUpdate::Warning(message) => joined.warning(message),
            StreamUpdate::Retrying { message, .. } => joined.warning(message),
        }
    }
    joined.take()
}

#[test]
fn runs_taken_straight_from_the_buffer_read_every_body_as_events_read_one_by_one() {
    let mut rng = Rng::seeded(0x00b0_d1e5);
    for round in 0..1_500 {
        let openai = round % 2 == 0;
        let framing = rng.index(6);
        let mut body = String::new();
        let mut burst = 0;
        for _ in 0..rng.index(300) {
            // Bursts of plain text deltas, as a provider streams most of a reply.
            if burst == 0 && rng.index(8) == 0 {
                burst = rng.index(60);
            }
            let data = if burst > 0 {
                burst -= 1;
                let text = ["tok ", "", "é漢", " x", "}"][rng.index(5)];
                if openai {
                    json!({"id": "c1", "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
                } else {
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
                }
                .to_string()
            } else if openai {
                openai_chunk(&mut rng).to_string()
            } else {
                anthropic_event(&mut rng).to_string()
            };
            // Mostly one framing through a stream, as a server has; now and then another.
            let framing = if rng.index(30) == 0 {
                rng.index(6)
            } else {
                framing
            };
            body.push_str(&frame(&mut rng, &data, framing));
        }
        if openai && rng.index(2) == 0 {
            body.push_str("data: [DONE]\n\n");
        }
        if rng.index(10) == 0 {
            body.insert(0, '\u{FEFF}');
        }
        // Split anywhere, in pieces of 1 to 400 bytes.
        let bytes = body.as_bytes();
        let mut chunks = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let len = (1 + rng.index(400)).min(bytes.len() - at);
            chunks.push(&bytes[at..at + len]);
            at += len;
        }
        let limits = ReplyLimits {
            max_output_tokens: if rng.index(3) == 0 {
                rng.index(100) as u32
            } else {
                8192
            },
            max_reply_bytes: if rng.index(3) == 0 {
                rng.index(600)
            } else {
                1 << 20
            },
        };
        let fresh = || {
            if openai {
                super::openai::parser()
            } else {
                super::anthropic::parser()
            }
        };
        let (end, updates, reply) = read_each(fresh(), limits, &chunks);
        let expected = (end, join(updates), reply);
        assert_eq!(
            read_runs(&mut rng, fresh(), limits, &chunks),
            expected,
            "round {round}: {body:?}"
        );
    }
}
