//! Streamed deltas written straight as JSON, the same bytes serde writes for them.
//!
//! Deltas are most of a stream's events, and a reply's deltas share their conversation and
//! task: [`DeltaEnvelope`] formats those two ids once per task instead of once per delta,
//! and skips serde's flattened map for the rest. Front doors that write events as JSON use
//! it for `agent_message_delta` and `agent_reasoning_delta` and serde for everything else.
//! `coder exec --json` and `coder lsp` both use it; the protocol crate holds wire types
//! only.

use std::io::Write;

use coder_protocol::{ConversationId, Event, EventMsg, TaskId};

/// The ids of the last delta written, as their JSON (`,"conversationId":…,"taskId":…`).
#[derive(Default)]
pub struct DeltaEnvelope {
    ids: Option<(ConversationId, Option<TaskId>)>,
    text: Vec<u8>,
}

impl DeltaEnvelope {
    /// Writes `event` as serde would when it is a text or thinking delta, and returns
    /// `Ok(false)` without writing anything for any other event.
    pub fn write_delta(&mut self, out: &mut impl Write, event: &Event) -> std::io::Result<bool> {
        let (kind, delta) = match &event.msg {
            EventMsg::AgentMessageDelta { delta } => ("agent_message_delta", delta),
            EventMsg::AgentReasoningDelta { delta } => ("agent_reasoning_delta", delta),
            _ => return Ok(false),
        };
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
        serde_json::to_writer(&mut *out, &event.seq)?;
        out.write_all(&self.text)?;
        out.write_all(b",\"type\":\"")?;
        out.write_all(kind.as_bytes())?;
        out.write_all(b"\",\"delta\":")?;
        serde_json::to_writer(&mut *out, delta)?;
        out.write_all(b"}")?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_are_written_as_serde_writes_them() {
        let conversation = ConversationId::new();
        let mut envelope = DeltaEnvelope::default();
        for task_id in [Some(TaskId::new()), None, Some(TaskId::new())] {
            for (seq, msg) in [
                (
                    7,
                    EventMsg::AgentMessageDelta {
                        delta: "a \"quoted\"\n\u{1} é".into(),
                    },
                ),
                (8, EventMsg::AgentReasoningDelta { delta: "hm".into() }),
            ] {
                let event = Event {
                    seq,
                    conversation_id: conversation,
                    task_id,
                    msg,
                };
                let mut fast = Vec::new();
                assert!(envelope.write_delta(&mut fast, &event).unwrap());
                assert_eq!(
                    String::from_utf8(fast).unwrap(),
                    serde_json::to_string(&event).unwrap()
                );
            }
        }
    }

    #[test]
    fn other_events_are_left_to_serde() {
        let event = Event {
            seq: 1,
            conversation_id: ConversationId::new(),
            task_id: None,
            msg: EventMsg::AgentMessage {
                message: "whole".into(),
            },
        };
        let mut out = Vec::new();
        assert!(
            !DeltaEnvelope::default()
                .write_delta(&mut out, &event)
                .unwrap()
        );
        assert!(out.is_empty());
    }
}
