//! The event hub: numbers events per session and fans them out without loss.
//!
//! Each subscriber gets an unbounded channel, so a slow reader never makes the engine drop
//! or reorder events; `seq` is assigned under the same lock that sends, so every subscriber
//! sees the same order.

use std::sync::{Arc, Mutex, MutexGuard};

use coder_protocol::{ConversationId, Event, EventMsg, TaskId};
use tokio::sync::mpsc;

/// A stream of events, in `seq` order.
pub type EventReceiver = mpsc::UnboundedReceiver<Event>;

type Observer = Arc<dyn Fn(&Event) + Send + Sync>;

#[derive(Default)]
struct HubState {
    next_seq: u64,
    subscribers: Vec<mpsc::UnboundedSender<Event>>,
    observers: Vec<Observer>,
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
        // The last subscriber takes the event itself, unless observers still need it: one
        // copy fewer per event for the usual single subscriber.
        let observers = state.observers.clone();
        let kept = (!observers.is_empty()).then(|| event.clone());
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
        if let Some(event) = kept {
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
