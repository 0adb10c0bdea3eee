//! `session/subscribe`: the events a client missed, or a snapshot of the session, as one
//! response that the stdout writer puts in its place in the stream.
//!
//! The request is answered here, next to the dispatcher, rather than through tower-lsp: the
//! answer for 100,000 events is written straight as bytes ([`EventJson`], as notifications
//! are) instead of being built as a JSON tree first, and it goes to the writer with the
//! `seq` of the first event after it ([`Out::Replay`]). The writer writes every event
//! before that `seq` ahead of the answer and every later one after it, so the answer sits
//! where it belongs among the `conversation/event` notifications.

use std::panic::AssertUnwindSafe;

use coder_core::event_json::EventJson;
use coder_core::{Engine, Replay, ReplayedEvents};
use coder_protocol::SubscribeResult;
use coder_protocol::methods::{SESSION_SUBSCRIBE, SessionSubscribe};
use coder_protocol::table::Request;
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Id, Response};

use crate::dispatch::frame_of;
use crate::methods::engine_error;
use crate::output::{Out, push_event, push_frame};

/// The params `session/subscribe` takes, as the method table declares them.
type Params = <SessionSubscribe as Request>::Params;

/// Answers one `session/subscribe` request: what goes to the writer.
pub(crate) fn answer(engine: &Engine, id: Id, params: Option<Value>) -> Option<Out> {
    let answered = std::panic::catch_unwind(AssertUnwindSafe(|| replay(engine, params)));
    let replay = match answered {
        Ok(Ok(replay)) => replay,
        Ok(Err(error)) => return frame_of(&Response::from_error(id, error)).map(Out::Frame),
        Err(_) => {
            tracing::error!("{SESSION_SUBSCRIBE} panicked");
            let error = Error {
                code: ErrorCode::InternalError,
                message: format!("{SESSION_SUBSCRIBE} failed with an internal error").into(),
                data: None,
            };
            return frame_of(&Response::from_error(id, error)).map(Out::Frame);
        }
    };
    let next_seq = replay.next_seq();
    let frame = response_frame(&id, replay)?;
    Some(Out::Replay { frame, next_seq })
}

/// What the engine replays for `params`.
fn replay(engine: &Engine, params: Option<Value>) -> Result<Replay, Error> {
    let params: Params = serde_json::from_value(params.unwrap_or(Value::Null))
        .map_err(|err| Error::invalid_params(format!("invalid params: {err}")))?;
    engine.replay_from(params.from_seq).map_err(engine_error)
}

/// The response to request `id` carrying `replay`, framed; the same bytes serde writes for
/// a [`SubscribeResult`].
fn response_frame(id: &Id, replay: Replay) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut body, id).ok()?;
    body.extend_from_slice(b",\"result\":");
    match replay {
        Replay::Events { events, .. } => push_events(&mut body, &events),
        Replay::Snapshot(snapshot) => {
            serde_json::to_writer(&mut body, &SubscribeResult::Snapshot(snapshot)).ok()?;
        }
    }
    body.push(b'}');
    let mut frame = Vec::with_capacity(body.len() + 32);
    push_frame(&mut frame, &body);
    Some(frame)
}

/// Appends `{"events":[…]}`.
fn push_events(body: &mut Vec<u8>, events: &ReplayedEvents) {
    let mut json = EventJson::default();
    body.reserve(events.len() * 160);
    body.extend_from_slice(b"{\"events\":[");
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        push_event(&mut json, body, &event);
    }
    body.extend_from_slice(b"]}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::{ConversationId, Event, EventMsg, TaskId};

    #[test]
    fn the_answer_holds_the_bytes_serde_writes_for_the_result() {
        let conversation = ConversationId::new();
        let task = TaskId::new();
        let events: Vec<Event> = [
            EventMsg::AgentMessageDelta {
                delta: "a \"q\"\n é".into(),
            },
            EventMsg::Warning {
                message: "w".into(),
            },
            EventMsg::AgentMessage {
                message: "whole".into(),
            },
        ]
        .into_iter()
        .enumerate()
        .map(|(seq, msg)| Event {
            seq: seq as u64,
            conversation_id: conversation,
            task_id: Some(task),
            msg,
        })
        .collect();
        let id = Id::Number(7);
        let frame = response_frame(
            &id,
            Replay::Events {
                events: ReplayedEvents::from(events.clone()),
                next_seq: 3,
            },
        )
        .unwrap();
        let first = serde_json::to_string(&events[0]).unwrap();
        let result = SubscribeResult::Events(events);
        let body = serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0",
            "id": 7,
            "result": result,
        }))
        .unwrap();
        let written: Value =
            serde_json::from_slice(&frame[frame.iter().position(|b| *b == b'{').unwrap()..])
                .unwrap();
        assert_eq!(written, serde_json::from_slice::<Value>(&body).unwrap());
        // Each event is the very text its notification carries.
        let text = String::from_utf8(frame).unwrap();
        assert!(text.contains(&format!("{{\"events\":[{first},")), "{text}");
    }
}
