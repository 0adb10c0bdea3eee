//! The events a stream is made of, written straight as JSON: the same bytes serde writes
//! for them.
//!
//! Deltas are most of a stream's events, and a reply's events share their conversation and
//! task: [`EventJson`] formats those two ids once per task instead of once per event, and
//! skips serde's flattened map. The events that end a reply carry its whole text, three
//! times over (`agent_message`, `reply_complete`, `task_complete`): their strings are
//! escaped eight bytes at a time ([`write_str`]), where serde_json looks at every byte.
//! Front doors that write events as JSON (`coder exec --json`, `coder lsp`) use it and serde
//! for every other event; the protocol crate holds wire types only.

use std::io::Write;

use coder_protocol::{ConversationId, Event, EventMsg, TaskId};

/// Writes events that [`EventJson::write`] knows; keeps the ids of the last one as JSON
/// (`,"conversationId":…,"taskId":…`).
#[derive(Default)]
pub struct EventJson {
    ids: Option<(ConversationId, Option<TaskId>)>,
    text: Vec<u8>,
}

impl EventJson {
    /// Writes `event` as serde would when it is a text or thinking delta, a whole message
    /// or thinking, a reply's end without tool calls, or a task's end without a step limit
    /// or an error; returns `Ok(false)` without writing anything for any other event.
    pub fn write(&mut self, out: &mut impl Write, event: &Event) -> std::io::Result<bool> {
        let kind = match &event.msg {
            EventMsg::AgentMessageDelta { .. } => "agent_message_delta",
            EventMsg::AgentReasoningDelta { .. } => "agent_reasoning_delta",
            EventMsg::AgentMessage { .. } => "agent_message",
            EventMsg::AgentReasoning { .. } => "agent_reasoning",
            EventMsg::ReplyComplete { tool_calls, .. } if tool_calls.is_empty() => "reply_complete",
            EventMsg::TaskComplete {
                step_limit: None,
                error: None,
                ..
            } => "task_complete",
            _ => return Ok(false),
        };
        self.write_head(out, event, kind)?;
        match &event.msg {
            EventMsg::AgentMessageDelta { delta } | EventMsg::AgentReasoningDelta { delta } => {
                out.write_all(b",\"delta\":")?;
                write_str(out, delta)?;
            }
            EventMsg::AgentMessage { message } => {
                out.write_all(b",\"message\":")?;
                write_str(out, message)?;
            }
            EventMsg::AgentReasoning { text } => {
                out.write_all(b",\"text\":")?;
                write_str(out, text)?;
            }
            EventMsg::ReplyComplete {
                text,
                reasoning,
                interrupted,
                ..
            } => {
                out.write_all(b",\"text\":")?;
                write_str(out, text)?;
                out.write_all(b",\"reasoning\":")?;
                write_str(out, reasoning)?;
                out.write_all(b",\"toolCalls\":[],\"interrupted\":")?;
                out.write_all(if *interrupted { b"true" } else { b"false" })?;
            }
            EventMsg::TaskComplete {
                last_agent_message, ..
            } => {
                out.write_all(b",\"lastAgentMessage\":")?;
                match last_agent_message {
                    Some(message) => write_str(out, message)?,
                    None => out.write_all(b"null")?,
                }
            }
            _ => {}
        }
        out.write_all(b"}")?;
        Ok(true)
    }

    /// `{"seq":…,"conversationId":…,"taskId":…,"type":"<kind>"`.
    fn write_head(
        &mut self,
        out: &mut impl Write,
        event: &Event,
        kind: &str,
    ) -> std::io::Result<()> {
        let ids = (event.conversation_id, event.task_id);
        if self.ids != Some(ids) {
            self.text.clear();
            self.text.extend_from_slice(b",\"conversationId\":");
            serde_json::to_writer(&mut self.text, &ids.0)?;
            self.text.extend_from_slice(b",\"taskId\":");
            serde_json::to_writer(&mut self.text, &ids.1)?;
            self.ids = Some(ids);
        }
        out.write_all(b"{\"seq\":")?;
        out.write_all(itoa::Buffer::new().format(event.seq).as_bytes())?;
        out.write_all(&self.text)?;
        out.write_all(b",\"type\":\"")?;
        out.write_all(kind.as_bytes())?;
        out.write_all(b"\"")
    }
}

const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGH_BITS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Whether any of the eight bytes of `word` is escaped in a JSON string: a control byte
/// (below 0x20), `"` or `\`. Exact: a byte at or above 0x80 never counts.
fn needs_escape(word: u64) -> bool {
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH_BITS;
    let control = below(word, 0x20);
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    control | quote | backslash != 0
}

/// What serde_json writes for `byte` in a string, when it is escaped: its two-character
/// escape, or nothing for a control byte that has none (it is written as `\u00XX`).
fn escape(byte: u8) -> Option<&'static [u8]> {
    Some(match byte {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        0x08 => b"\\b",
        0x0c => b"\\f",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x00..=0x1f => b"",
        _ => return None,
    })
}

/// Writes `text` as a JSON string, byte for byte as serde_json writes it.
pub fn write_str(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.write_all(b"\"")?;
    // `written`: where the run not yet written starts; `at`: the next byte to look at.
    let mut written = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(word) = bytes.get(at..at + 8) {
            let word = u64::from_ne_bytes([
                word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
            ]);
            if !needs_escape(word) {
                at += 8;
                continue;
            }
        }
        // A word with an escape in it (or the last few bytes): byte by byte.
        let end = (at + 8).min(bytes.len());
        for (i, &byte) in bytes.iter().enumerate().take(end).skip(at) {
            let Some(escaped) = escape(byte) else {
                continue;
            };
            out.write_all(&bytes[written..i])?;
            if escaped.is_empty() {
                out.write_all(b"\\u00")?;
                out.write_all(&[HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]])?;
            } else {
                out.write_all(escaped)?;
            }
            written = i + 1;
        }
        at = end;
    }
    out.write_all(&bytes[written..])?;
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use coder_protocol::{ErrorKind, RequestedToolCall};

    use super::*;

    /// Strings with every byte that is escaped, at every offset within an eight-byte word,
    /// next to multi-byte characters; and a seeded mix of them.
    fn awkward_strings() -> Vec<String> {
        let mut strings: Vec<String> = vec![
            String::new(),
            "tok ".into(),
            "a \"quoted\"\n\u{1} é".into(),
            "\u{7f}\u{80}\u{ffff}😀\\/".into(),
        ];
        for byte in (0u8..0x20).chain([b'"', b'\\']) {
            for offset in 0..17 {
                let mut text = "é".repeat(offset / 2) + &"x".repeat(offset % 2);
                text.push(char::from(byte));
                text.push_str("tail after it, long enough for a word or two");
                strings.push(text);
            }
        }
        let alphabet: Vec<char> = "ab \"\\\n\t\r\u{0}\u{1f}é😀\u{7f}/".chars().collect();
        let mut state: u64 = 0x5eed;
        for _ in 0..500 {
            let mut text = String::new();
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for _ in 0..(state >> 58) {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push(alphabet[(state >> 33) as usize % alphabet.len()]);
            }
            strings.push(text);
        }
        strings
    }

    #[test]
    fn strings_are_written_as_serde_writes_them() {
        for text in awkward_strings() {
            let mut fast = Vec::new();
            write_str(&mut fast, &text).unwrap();
            assert_eq!(
                String::from_utf8(fast).unwrap(),
                serde_json::to_string(&text).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_events_it_knows_are_written_as_serde_writes_them() {
        let conversation = ConversationId::new();
        let mut json = EventJson::default();
        let texts = awkward_strings();
        for (n, text) in texts.iter().enumerate() {
            let task_id = [Some(TaskId::new()), None][n % 2];
            let messages = [
                EventMsg::AgentMessageDelta {
                    delta: text.clone(),
                },
                EventMsg::AgentReasoningDelta {
                    delta: text.clone(),
                },
                EventMsg::AgentMessage {
                    message: text.clone(),
                },
                EventMsg::AgentReasoning { text: text.clone() },
                EventMsg::ReplyComplete {
                    text: text.clone(),
                    reasoning: texts[(n + 1) % texts.len()].clone(),
                    tool_calls: Vec::new(),
                    interrupted: n % 3 == 0,
                },
                EventMsg::TaskComplete {
                    last_agent_message: (n % 4 != 0).then(|| text.clone()),
                    step_limit: None,
                    error: None,
                },
            ];
            for msg in messages {
                let event = Event {
                    seq: n as u64 * 1000,
                    conversation_id: conversation,
                    task_id,
                    msg,
                };
                let mut fast = Vec::new();
                assert!(json.write(&mut fast, &event).unwrap(), "{event:?}");
                assert_eq!(
                    String::from_utf8(fast).unwrap(),
                    serde_json::to_string(&event).unwrap()
                );
            }
        }
    }

    #[test]
    fn other_events_are_left_to_serde() {
        let call = RequestedToolCall {
            call_id: "c1".into(),
            tool_name: "read".into(),
            arguments: serde_json::json!({"path": "a"}),
        };
        for msg in [
            EventMsg::ReplyComplete {
                text: "whole".into(),
                reasoning: String::new(),
                tool_calls: vec![call],
                interrupted: false,
            },
            EventMsg::TaskComplete {
                last_agent_message: None,
                step_limit: Some(3),
                error: None,
            },
            EventMsg::TaskComplete {
                last_agent_message: None,
                step_limit: None,
                error: Some(ErrorKind::Provider),
            },
            EventMsg::Warning {
                message: "w".into(),
            },
        ] {
            let event = Event {
                seq: 1,
                conversation_id: ConversationId::new(),
                task_id: None,
                msg,
            };
            let mut out = Vec::new();
            assert!(!EventJson::default().write(&mut out, &event).unwrap());
            assert!(out.is_empty());
        }
    }
}
