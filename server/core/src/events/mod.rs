//! The event hub: numbers events per session, keeps the recent ones, and fans them out
//! without loss.
//!
//! Each subscriber gets an unbounded channel, so a slow reader never makes the engine drop
//! or reorder events; `seq` is assigned under the same lock that sends, so every subscriber
//! sees the same order. Under that lock the hub also keeps the last events ([`buffer`]) and
//! what a snapshot needs of them ([`live`]), so a subscriber that joins late takes what it
//! missed and the live stream in one step: no gap, no event twice.

mod buffer;
mod live;

use std::sync::{Arc, Mutex, MutexGuard};

use coder_protocol::{ConversationId, EngineState, Event, EventMsg, TaskId};
use tokio::sync::mpsc;

use buffer::EventBuffer;
pub use buffer::ReplayedEvents;
use live::Live;

/// A stream of events, in `seq` order.
pub type EventReceiver = mpsc::UnboundedReceiver<Event>;

type Observer = Arc<dyn Fn(&Event) + Send + Sync>;

#[derive(Default)]
struct HubState {
    next_seq: u64,
    subscribers: Vec<mpsc::UnboundedSender<Event>>,
    observers: Vec<Observer>,
    buffer: EventBuffer,
    live: Live,
}

/// What a subscriber from a `seq` missed, as the hub knows it.
pub(crate) enum Missed {
    /// Every event from the `seq` asked for, in order; the live stream goes on at
    /// `next_seq`.
    Events {
        events: ReplayedEvents,
        next_seq: u64,
    },
    /// The events from that `seq` are no longer kept: where the session is instead.
    Past(LiveState),
}

/// What the events said of the session up to `next_seq` (see [`live`]).
pub(crate) struct LiveState {
    pub next_seq: u64,
    pub state: EngineState,
    pub permission_requests: Vec<Arc<Event>>,
    pub running_tools: Vec<Arc<Event>>,
}

/// A `seq` asked for that no event has yet: `next_seq` is the next event's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FutureSeq {
    pub asked: u64,
    pub next_seq: u64,
}

/// Shared by the engine and every task.
#[derive(Clone, Default)]
pub(crate) struct EventHub {
    state: Arc<Mutex<HubState>>,
}

impl EventHub {
    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn subscribe(&self) -> EventReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().subscribers.push(tx);
        rx
    }

    /// What happened from `from_seq` on and, when `subscribe`, a receiver of every later
    /// event, taken under one lock: the receiver's first event is the one after the last
    /// missed.
    pub fn since(
        &self,
        from_seq: u64,
        subscribe: bool,
    ) -> Result<(Missed, Option<EventReceiver>), FutureSeq> {
        let mut state = self.lock();
        let next_seq = state.next_seq;
        if from_seq > next_seq {
            return Err(FutureSeq {
                asked: from_seq,
                next_seq,
            });
        }
        let kept_from = state.buffer.oldest().unwrap_or(next_seq);
        let missed = if from_seq >= kept_from {
            Missed::Events {
                events: state.buffer.since(from_seq),
                next_seq,
            }
        } else {
            Missed::Past(LiveState {
                next_seq,
                state: state.live.state,
                permission_requests: state.live.permission_requests.clone(),
                running_tools: state.live.running_tools.clone(),
            })
        };
        let receiver = subscribe.then(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            state.subscribers.push(tx);
            rx
        });
        Ok((missed, receiver))
    }

    /// Forgets the kept events: the session was switched (a resume), and what they say
    /// belongs to the one before. A subscriber from before now gets a snapshot; `seq` goes
    /// on from where it was.
    pub fn forget_kept(&self) {
        self.lock().buffer.clear();
    }

    pub fn observe(&self, observer: Observer) {
        self.lock().observers.push(observer);
    }

    pub fn emit(&self, conversation_id: ConversationId, task_id: Option<TaskId>, msg: EventMsg) {
        let mut state = self.lock();
        let event = Event {
            seq: state.next_seq,
            conversation_id,
            task_id,
            msg,
        };
        state.next_seq += 1;
        // The buffer keeps a delta as its text and any other event whole; the live state
        // keeps what a snapshot needs.
        state.buffer.push(&event);
        state.live.apply(&event);
        let observers = state.observers.clone();
        let observed = (!observers.is_empty()).then(|| event.clone());
        // The last subscriber takes the event itself: one copy fewer per event for the
        // usual single subscriber.
        let last = state.subscribers.len();
        let mut event = Some(event);
        let mut index = 0;
        state.subscribers.retain(|tx| {
            index += 1;
            let copy = if index == last {
                event.take()
            } else {
                event.clone()
            };
            copy.is_none_or(|copy| tx.send(copy).is_ok())
        });
        // Observers run after the lock is released so they may call back into the engine;
        // emits come from one task at a time, so their order still follows `seq`.
        drop(state);
        if let Some(event) = observed {
            for observer in observers {
                observer(&event);
            }
        }
    }
}

/// Emits events for one task of one conversation.
#[derive(Clone)]
pub(crate) struct TaskEvents {
    pub hub: EventHub,
    pub conversation_id: ConversationId,
    pub task_id: TaskId,
}

impl TaskEvents {
    pub fn emit(&self, msg: EventMsg) {
        self.hub.emit(self.conversation_id, Some(self.task_id), msg);
    }

    pub fn warning(&self, message: impl Into<String>) {
        self.emit(EventMsg::Warning {
            message: message.into(),
        });
    }
}
