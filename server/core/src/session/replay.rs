//! Picking up the event stream again from a `seq`: the events missed, from the hub's
//! buffer, or, when they are no longer kept, a [`SessionSnapshot`] of the session.
//!
//! The hub fixes what was missed (and registers a new subscriber) under its lock; the
//! conversations are read afterwards (the hub's lock is the last of the lock order, so it is
//! never held while they are read). Their messages are thus at least as recent as the
//! snapshot's `nextSeq`: the first events after it may repeat the end of a message the
//! snapshot already holds, but nothing between is lost.

use std::sync::Arc;

use coder_protocol::{ConversationState, Event, SessionSnapshot, SubscribeResult};

use super::Session;
use crate::error::EngineError;
use crate::events::{EventReceiver, FutureSeq, LiveState, Missed, ReplayedEvents};
use crate::sync::lock;

/// How many of a conversation's last messages a snapshot carries: enough to show where the
/// conversation is; `conversation/history` has the rest.
const SNAPSHOT_MESSAGES: usize = 20;

/// What a client asking from a `seq` missed.
#[derive(Debug, Clone)]
pub enum Replay {
    /// Every event from the `seq` asked for, in order, never merged; the live stream goes on
    /// at `next_seq`. Shared with the engine's buffer, so taking them copies no event.
    Events {
        events: ReplayedEvents,
        next_seq: u64,
    },
    /// The events from that `seq` are no longer kept: where the session is; the live stream
    /// goes on at its `next_seq`.
    Snapshot(Box<SessionSnapshot>),
}

impl Replay {
    /// The `seq` of the first event after what this replay holds.
    pub fn next_seq(&self) -> u64 {
        match self {
            Self::Events { next_seq, .. } => *next_seq,
            Self::Snapshot(snapshot) => snapshot.next_seq,
        }
    }

    /// As `session/subscribe` answers it.
    pub fn into_result(self) -> SubscribeResult {
        match self {
            Self::Events { events, .. } => SubscribeResult::Events(events.into_events()),
            Self::Snapshot(snapshot) => SubscribeResult::Snapshot(snapshot),
        }
    }
}

impl Session {
    /// What happened from `from_seq` on, and with `subscribe` a receiver of every event
    /// after it (see [`crate::Engine::subscribe_from`]).
    pub fn replay(
        &self,
        from_seq: u64,
        subscribe: bool,
    ) -> Result<(Replay, Option<EventReceiver>), EngineError> {
        let (missed, receiver) =
            self.hub()
                .since(from_seq, subscribe)
                .map_err(|FutureSeq { asked, next_seq }| {
                    EngineError::invalid_params(format!(
                        "fromSeq {asked} is past the next event's seq {next_seq}"
                    ))
                })?;
        let replay = match missed {
            Missed::Events { events, next_seq } => Replay::Events { events, next_seq },
            Missed::Past(live) => Replay::Snapshot(Box::new(self.live_snapshot(live))),
        };
        Ok((replay, receiver))
    }

    /// The session as a client that missed the events before `live.next_seq` needs it.
    fn live_snapshot(&self, live: LiveState) -> SessionSnapshot {
        let conversations = self
            .list_conversations()
            .into_iter()
            .filter_map(|summary| {
                // A conversation destroyed since it was listed is left out.
                let conversation = self.conversation(summary.id).ok()?;
                let conversation = lock(&conversation);
                let history = &conversation.history;
                let first = history.len().saturating_sub(SNAPSHOT_MESSAGES);
                Some(ConversationState {
                    id: summary.id,
                    is_root: summary.is_root,
                    mode: conversation.mode,
                    message_count: history.len(),
                    messages: history[first..].to_vec(),
                })
            })
            .collect();
        SessionSnapshot {
            next_seq: live.next_seq,
            session_id: self.session_id(),
            state: live.state,
            mode: self.config().mode,
            conversations,
            permission_requests: live.permission_requests.iter().map(unshared).collect(),
            running_tools: live.running_tools.iter().map(unshared).collect(),
        }
    }
}

fn unshared(event: &Arc<Event>) -> Event {
    Event::clone(event)
}
