//! The one writer of stdout: engine events as `conversation/event` notifications, the LSP
//! service's frames (responses, server-to-client requests) and the framing guard's error
//! answers, each a whole frame.
//!
//! Events do not go through tower-lsp's client: they are serialized here, straight from the
//! engine's receiver, and everything that is ready is written as one batch with one flush.
//! A stream of 20,000 deltas then costs a few large writes instead of 20,000 awaits, channel
//! hops and flushes (see docs/benchmarks.md). Events keep their `seq` order because this one
//! task takes them from one receiver.

use coder_core::{Engine, EventReceiver};
use coder_protocol::methods::{CONVERSATION_EVENT, PermissionParams};
use coder_protocol::{Event, EventMsg};
use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp_server::Client;

use crate::permissions;

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
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
}

#[derive(Serialize)]
struct Notification<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: EventParams<'a>,
}

#[derive(Serialize)]
struct EventParams<'a> {
    event: &'a Event,
}

/// Appends `event` as a `conversation/event` notification frame.
fn push_event(out: &mut Vec<u8>, scratch: &mut Vec<u8>, event: &Event) {
    scratch.clear();
    let notification = Notification {
        jsonrpc: "2.0",
        method: CONVERSATION_EVENT,
        params: EventParams { event },
    };
    match serde_json::to_writer(&mut *scratch, &notification) {
        Ok(()) => push_frame(out, scratch),
        Err(err) => tracing::error!("event {} not serialized: {err}", event.seq),
    }
}

/// Where permission asks go: they also leave as `permission/request` requests, sent by
/// tower-lsp's client from tasks of their own so the writer never waits for a person.
pub(crate) struct Asker {
    pub client: Client,
    pub engine: Engine,
}

impl Asker {
    fn ask(&self, event: &Event) {
        if let EventMsg::PermissionRequested {
            request_id,
            tool_name,
            arguments,
            summary,
            options,
            ..
        } = &event.msg
        {
            permissions::ask(
                self.client.clone(),
                self.engine.clone(),
                PermissionParams {
                    request_id: request_id.clone(),
                    conversation_id: event.conversation_id,
                    task_id: event.task_id,
                    tool_name: tool_name.clone(),
                    arguments: arguments.clone(),
                    summary: summary.clone(),
                    options: options.clone(),
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
}

/// Writes frames and events to `out` until the frame senders are gone (the service has
/// stopped and the client's input has ended), then writes what is left and returns.
pub(crate) async fn run(
    mut frames: mpsc::UnboundedReceiver<Out>,
    mut out: impl AsyncWrite + Unpin,
) {
    let mut batch = Vec::with_capacity(64 * 1024);
    let mut scratch = Vec::with_capacity(1024);
    let mut events: Option<(EventReceiver, Asker)> = None;
    let mut open = true;
    while open {
        tokio::select! {
            biased;
            frame = frames.recv() => match frame {
                Some(Out::Frame(frame)) => batch.extend_from_slice(&frame),
                Some(Out::Events(receiver, asker)) => events = Some((receiver, asker)),
                None => open = false,
            },
            Some(event) = async { events.as_mut()?.0.recv().await }, if events.is_some() => {
                if let Some((_, asker)) = &events {
                    asker.ask(&event);
                }
                push_event(&mut batch, &mut scratch, &event);
            }
        }
        // Take everything else that is ready, so a burst costs one write and one flush.
        while batch.len() < BATCH_BYTES {
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
                Err(_) => {}
            }
            if let Some((receiver, asker)) = &mut events
                && let Ok(event) = receiver.try_recv()
            {
                asker.ask(&event);
                push_event(&mut batch, &mut scratch, &event);
                took = true;
            }
            if !took {
                break;
            }
        }
        if out.write_all(&batch).await.is_err() || out.flush().await.is_err() {
            // The client is gone; nobody reads what comes next.
            return;
        }
        batch.clear();
        release_peak(&mut batch, BATCH_KEEP);
        release_peak(&mut scratch, SCRATCH_KEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_their_byte_length() {
        let mut out = Vec::new();
        push_frame(&mut out, "{\"a\":\"é\"}".as_bytes());
        assert_eq!(out, "Content-Length: 10\r\n\r\n{\"a\":\"é\"}".as_bytes());
    }
}
