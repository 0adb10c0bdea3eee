//! Picking up the event stream again: what `session/subscribe` answers a client that
//! reconnects or attaches late. Either the events it missed, from the engine's bounded
//! buffer, or, when those are gone, a [`SessionSnapshot`] of where the session is.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{ChatMessage, ConversationId, EngineState, Event, Mode, SessionId};

/// `session/subscribe` params: the first `seq` the client wants (one more than the highest
/// it holds; 0 for everything the engine still has).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeParams {
    pub from_seq: u64,
}

/// `session/subscribe` result: `{ events }`, every event from `fromSeq` on, in `seq` order,
/// up to the moment of the answer, never merged; or `{ snapshot }` when `fromSeq` is older
/// than the oldest event the engine keeps. Live `conversation/event` notifications go on
/// meanwhile; a client keeps the highest `seq` it has applied and ignores events at or
/// below it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SubscribeResult {
    Events(Vec<Event>),
    Snapshot(Box<SessionSnapshot>),
}

/// Where a session is, for a client whose missed events are no longer kept: live events
/// follow from `nextSeq`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSnapshot {
    /// The `seq` of the first event after the snapshot.
    pub next_seq: u64,
    pub session_id: SessionId,
    /// What the engine is doing, as its last `state_changed` said.
    pub state: EngineState,
    /// The session's mode: no conversation's is looser.
    pub mode: Mode,
    /// The session's conversations, oldest first.
    pub conversations: Vec<ConversationState>,
    /// The `permission_requested` events still waiting for an answer, as they were sent.
    pub permission_requests: Vec<Event>,
    /// The `tool_call_started` events of the calls still running, as they were sent.
    pub running_tools: Vec<Event>,
}

/// One conversation in a [`SessionSnapshot`].
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationState {
    pub id: ConversationId,
    pub is_root: bool,
    pub mode: Mode,
    /// How many messages its history holds.
    pub message_count: usize,
    /// Its last messages (at most 20), oldest first, in the history's form (OpenAI Chat
    /// Completions).
    pub messages: Vec<ChatMessage>,
}
