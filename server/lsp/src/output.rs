//! The one writer of stdout: engine events as `conversation/event` notifications, the LSP
//! service's frames (responses, server-to-client requests) and the framing guard's error
//! answers, each a whole frame.
//!
//! Events do not go through tower-lsp's client: they are serialized here, straight from the
//! engine's receiver, and everything that is ready is written as one batch with one flush.
//! A stream of 20,000 deltas then costs a few large writes instead of 20,000 awaits, channel
//! hops and flushes (see docs/benchmarks.md). Events keep their `seq` order because this one
//! task takes them from one receiver.
//!
//! The writer never stops taking events: while a batch is being written it keeps receiving,
//! and what arrives waits in a queue where consecutive deltas of one message merge. A client
//! that stops reading then costs memory for the distinct events and the text, not for every
//! delta (see docs/events.md).

use coder_core::{Engine, EventReceiver};
#[cfg(test)]
use coder_protocol::methods::CONVERSATION_EVENT;
use coder_protocol::methods::PermissionParams;
use coder_protocol::{Event, EventMsg};
#[cfg(test)]
use serde::Serialize;
use std::collections::VecDeque;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp_server::Client;

use crate::permissions;
use coder_core::event_json::EventJson;

/// A batch is written once it holds this much, even if more is ready.
const BATCH_BYTES: usize = 1 << 20;
/// The capacity the batch keeps between writes; one big frame (a 20 MB `agent_message`, a
/// large response) would otherwise keep its size for the life of the connection.
const BATCH_KEEP: usize = 2 * BATCH_BYTES;
/// The capacity the serialization scratch keeps between events.
const SCRATCH_KEEP: usize = 64 * 1024;

/// Gives back a buffer's memory when one large message grew it past `keep`.
fn release_peak(buffer: &mut Vec<u8>, keep: usize) {
    if buffer.capacity() > keep {
        *buffer = Vec::with_capacity(keep.min(64 * 1024));
    }
}

/// Appends `body` to `out` as one LSP frame.
pub(crate) fn push_frame(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(b"Content-Length: ");
    out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
}

/// A `conversation/event` notification, as serde writes it; [`EventFrames`] writes the
/// same bytes.
#[cfg(test)]
#[derive(Serialize)]
struct Notification<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: EventParams<'a>,
}

#[cfg(test)]
#[derive(Serialize)]
struct EventParams<'a> {
    event: &'a Event,
}

/// What a `conversation/event` notification holds before its event.
const EVENT_HEAD: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"method\":\"conversation/event\",\"params\":{\"event\":";

/// Turns events into `conversation/event` notification frames. Deltas, most of a stream,
/// and the events that carry a reply's whole text are written straight ([`EventJson`]);
/// the bytes are the ones serde writes for [`Notification`].
#[derive(Default)]
struct EventFrames {
    /// One notification's body, before it is framed.
    scratch: Vec<u8>,
    json: EventJson,
}

impl EventFrames {
    /// Appends `event` as a `conversation/event` notification frame.
    fn push(&mut self, out: &mut Vec<u8>, event: &Event) {
        let scratch = &mut self.scratch;
        scratch.clear();
        scratch.extend_from_slice(EVENT_HEAD);
        if write_event(&mut self.json, scratch, event) {
            scratch.extend_from_slice(b"}}");
            push_frame(out, scratch);
        }
    }
}

/// Appends `event` as JSON, the bytes serde writes for it; an event that cannot be
/// serialized (none can) is logged and left out.
pub(crate) fn push_event(json: &mut EventJson, out: &mut Vec<u8>, event: &Event) {
    let start = out.len();
    if !write_event(json, out, event) {
        out.truncate(start);
    }
}

/// Writes `event` after what `out` holds; whether it was written.
fn write_event(json: &mut EventJson, out: &mut Vec<u8>, event: &Event) -> bool {
    let written = match json.write(&mut *out, event) {
        Ok(true) => Ok(()),
        Ok(false) => serde_json::to_writer(&mut *out, event).map_err(Into::into),
        Err(err) => Err(err),
    };
    match written {
        Ok(()) => true,
        Err(err) => {
            tracing::error!("event {} not serialized: {err}", event.seq);
            false
        }
    }
}

/// Where permission asks go: they also leave as `permission/request` requests, sent by
/// tower-lsp's client from tasks of their own so the writer never waits for a person.
pub(crate) struct Asker {
    pub client: Client,
    pub engine: Engine,
    pub open: permissions::Open,
}

impl Asker {
    fn ask(&self, event: &Event) {
        if let EventMsg::PermissionWithdrawn { request_id, .. } = &event.msg {
            permissions::cancel(self.client.clone(), &self.open, request_id);
        }
        if let EventMsg::PermissionRequested {
            request_id,
            tool_name,
            arguments,
            kind,
            locations,
            title,
            reason,
            summary,
            options,
            command,
            diff,
            plan,
            changes,
            ..
        } = &event.msg
        {
            permissions::ask(
                self.client.clone(),
                self.engine.clone(),
                self.open.clone(),
                PermissionParams {
                    request_id: request_id.clone(),
                    conversation_id: event.conversation_id,
                    task_id: event.task_id,
                    tool_name: tool_name.clone(),
                    arguments: arguments.clone(),
                    kind: *kind,
                    locations: locations.clone(),
                    title: title.clone(),
                    reason: reason.clone(),
                    summary: summary.clone(),
                    options: options.clone(),
                    command: command.clone(),
                    diff: diff.clone(),
                    plan: plan.clone(),
                    changes: changes.clone(),
                },
            );
        }
    }
}

/// What reaches the writer besides engine events.
pub(crate) enum Out {
    /// A whole frame: a response, a server-to-client request, a guard's error answer.
    Frame(Vec<u8>),
    /// The session's events, once `initialize` created it.
    Events(EventReceiver, Asker),
    /// A `session/subscribe` answer ([`crate::replay`]): written after every event before
    /// `next_seq` and before every later one.
    Replay { frame: Vec<u8>, next_seq: u64 },
}

/// What waits while a batch is being written. Nearly everything that waits is an event, so
/// events are held inline: boxing them would cost an allocation per event on the hot path.
#[allow(clippy::large_enum_variant)]
enum Waiting {
    Frame(Vec<u8>),
    Event(Event),
}

/// Queues `event` behind what waits, or joins its text to the delta waiting last when both
/// are text (or both thinking) deltas of the same conversation and task. Consecutive deltas
/// of one kind in one task belong to one message: a message ends with `agent_message` (or
/// `agent_reasoning`), which is never merged. The joined delta keeps the last `seq`.
fn queue(waiting: &mut VecDeque<Waiting>, event: Event) {
    if let Some(Waiting::Event(last)) = waiting.back_mut()
        && last.absorb(&event)
    {
        return;
    }
    waiting.push_back(Waiting::Event(event));
}

/// Queues a `session/subscribe` answer in its place: behind the events before `next_seq`
/// (all already in the receiver, since the engine sent them before it replayed), ahead of
/// the later ones.
fn queue_replay(
    waiting: &mut VecDeque<Waiting>,
    events: &mut Option<(EventReceiver, Asker)>,
    frame: Vec<u8>,
    next_seq: u64,
) {
    let mut later = None;
    if let Some((receiver, asker)) = events {
        while let Ok(event) = receiver.try_recv() {
            asker.ask(&event);
            if event.seq >= next_seq {
                later = Some(event);
                break;
            }
            queue(waiting, event);
        }
    }
    waiting.push_back(Waiting::Frame(frame));
    if let Some(event) = later {
        waiting.push_back(Waiting::Event(event));
    }
}

/// The next event, once the session exists.
async fn next_event(events: &mut Option<(EventReceiver, Asker)>) -> Option<Event> {
    events.as_mut()?.0.recv().await
}

/// Writes frames and events to `out` until the frame senders are gone (the service has
/// stopped and the client's input has ended), then writes what is left and returns.
///
/// While a batch is being written, what arrives waits in a queue where consecutive deltas
/// of one message merge ([`queue`]): a client that stops reading costs memory for the
/// distinct events and the text, not for every delta. When the writer keeps up, nothing
/// waits and events go out as the engine emitted them.
pub(crate) async fn run(
    mut frames: mpsc::UnboundedReceiver<Out>,
    mut out: impl AsyncWrite + Unpin,
) {
    let mut batch = Vec::with_capacity(64 * 1024);
    let mut written = 0;
    let mut frames_of = EventFrames::default();
    let mut waiting = VecDeque::new();
    let mut events: Option<(EventReceiver, Asker)> = None;
    let mut open = true;
    loop {
        if batch.is_empty() {
            // The writer is idle: what waits goes first, then whatever else is ready.
            while batch.len() < BATCH_BYTES {
                match waiting.pop_front() {
                    Some(Waiting::Frame(frame)) => batch.extend_from_slice(&frame),
                    Some(Waiting::Event(event)) => frames_of.push(&mut batch, &event),
                    None => break,
                }
            }
            while waiting.is_empty() && batch.len() < BATCH_BYTES {
                let mut took = false;
                match frames.try_recv() {
                    Ok(Out::Frame(frame)) => {
                        batch.extend_from_slice(&frame);
                        took = true;
                    }
                    Ok(Out::Events(receiver, asker)) => {
                        events = Some((receiver, asker));
                        took = true;
                    }
                    Ok(Out::Replay { frame, next_seq }) => {
                        queue_replay(&mut waiting, &mut events, frame, next_seq);
                        took = true;
                    }
                    Err(_) => {}
                }
                if let Some((receiver, asker)) = &mut events
                    && let Ok(event) = receiver.try_recv()
                {
                    asker.ask(&event);
                    frames_of.push(&mut batch, &event);
                    took = true;
                }
                if !took {
                    break;
                }
            }
            written = 0;
            if batch.is_empty() && !open {
                return;
            }
        }
        tokio::select! {
            biased;
            // One write, or the flush once all is written: each gives up nothing when
            // another branch wins, so the batch goes on where it stopped.
            result = async {
                if written < batch.len() {
                    out.write(&batch[written..]).await
                } else {
                    out.flush().await.map(|()| 0)
                }
            }, if !batch.is_empty() => match result {
                Ok(n) if n > 0 => written += n,
                Ok(_) if written == batch.len() => {
                    batch.clear();
                    release_peak(&mut batch, BATCH_KEEP);
                    release_peak(&mut frames_of.scratch, SCRATCH_KEEP);
                }
                // The client is gone; nobody reads what comes next.
                _ => return,
            },
            frame = frames.recv(), if open => match frame {
                Some(Out::Frame(frame)) => waiting.push_back(Waiting::Frame(frame)),
                Some(Out::Events(receiver, asker)) => events = Some((receiver, asker)),
                Some(Out::Replay { frame, next_seq }) => {
                    queue_replay(&mut waiting, &mut events, frame, next_seq);
                }
                None => open = false,
            },
            Some(event) = next_event(&mut events), if events.is_some() => {
                if let Some((_, asker)) = &events {
                    asker.ask(&event);
                }
                queue(&mut waiting, event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::{ConversationId, TaskId};

    fn event(seq: u64, task: TaskId, msg: EventMsg) -> Event {
        static CONVERSATION: std::sync::OnceLock<ConversationId> = std::sync::OnceLock::new();
        Event {
            seq,
            conversation_id: *CONVERSATION.get_or_init(ConversationId::new),
            task_id: Some(task),
            msg,
        }
    }

    fn text(delta: &str) -> EventMsg {
        EventMsg::AgentMessageDelta {
            delta: delta.to_owned(),
        }
    }

    #[test]
    fn consecutive_deltas_of_one_message_merge_and_keep_the_last_seq() {
        let task = TaskId::new();
        let other = TaskId::new();
        let mut waiting = VecDeque::new();
        queue(&mut waiting, event(1, task, text("a")));
        queue(&mut waiting, event(2, task, text("b")));
        let thinking = EventMsg::AgentReasoningDelta {
            delta: "t".to_owned(),
        };
        queue(&mut waiting, event(3, task, thinking));
        queue(&mut waiting, event(4, task, text("c")));
        queue(&mut waiting, event(5, other, text("d")));
        let whole = EventMsg::AgentMessage {
            message: "cd".to_owned(),
        };
        queue(&mut waiting, event(6, other, whole));
        queue(&mut waiting, event(7, other, text("e")));
        waiting.push_back(Waiting::Frame(Vec::new()));
        queue(&mut waiting, event(8, other, text("f")));
        let seen: Vec<(u64, String)> = waiting
            .iter()
            .filter_map(|w| match w {
                Waiting::Event(e) => Some((e.seq, format!("{:?}", e.msg))),
                Waiting::Frame(_) => None,
            })
            .collect();
        assert_eq!(
            seen,
            [
                (2, format!("{:?}", text("ab"))),
                (3, "AgentReasoningDelta { delta: \"t\" }".to_owned()),
                (4, format!("{:?}", text("c"))),
                (5, format!("{:?}", text("d"))),
                (6, "AgentMessage { message: \"cd\" }".to_owned()),
                (7, format!("{:?}", text("e"))),
                (8, format!("{:?}", text("f"))),
            ]
        );
    }

    #[test]
    fn event_frames_are_the_notifications_serde_writes() {
        let task = TaskId::new();
        let mut frames = EventFrames::default();
        for (seq, msg) in [
            (1, text("a \"quoted\"\n é")),
            (2, EventMsg::AgentReasoningDelta { delta: "hm".into() }),
            (
                3,
                EventMsg::AgentMessage {
                    message: "whole".into(),
                },
            ),
            (4, text("b")),
        ] {
            let event = event(seq, task, msg);
            let mut fast = Vec::new();
            frames.push(&mut fast, &event);
            let body = serde_json::to_vec(&Notification {
                jsonrpc: "2.0",
                method: CONVERSATION_EVENT,
                params: EventParams { event: &event },
            })
            .unwrap();
            let mut expected = Vec::new();
            push_frame(&mut expected, &body);
            assert_eq!(
                String::from_utf8(fast).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }

    #[test]
    fn frames_carry_their_byte_length() {
        let mut out = Vec::new();
        push_frame(&mut out, "{\"a\":\"é\"}".as_bytes());
        assert_eq!(out, "Content-Length: 10\r\n\r\n{\"a\":\"é\"}".as_bytes());
    }
}
