//! The recent events a client can ask for again: a ring of the last events emitted, bounded
//! by their number and by an estimate of their size, the oldest dropped first.
//!
//! Events are kept as emitted, never merged: a client asking from a `seq` in the middle of
//! a run of deltas gets exactly the deltas from there on. Text and thinking deltas, most of
//! a stream, are kept small (their envelope and their text, shared); every other event is
//! kept whole, shared. Handing the tail of the buffer to a reconnecting client then copies
//! pointers only.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use coder_protocol::{ConversationId, Event, EventMsg, TaskId};

/// How many events the buffer keeps at most.
pub(crate) const MAX_EVENTS: usize = 100_000;
/// How many bytes of events (estimated: a delta's text, any other event's JSON, and what
/// keeping each costs) the buffer keeps at most.
pub(crate) const MAX_BYTES: usize = 16 * 1024 * 1024;

/// What keeping a delta costs besides its text: its place in the ring.
const DELTA_OVERHEAD: usize = std::mem::size_of::<Kept>();
/// What keeping any other event costs besides its JSON: its place in the ring, the event
/// and its shared box.
const EVENT_OVERHEAD: usize = std::mem::size_of::<Kept>() + std::mem::size_of::<Event>() + 16;

/// One event in the buffer; its `seq` is its place after the oldest one's.
#[derive(Debug, Clone)]
enum Kept {
    /// A text or thinking delta, without the room a whole [`Event`] takes: its text is the
    /// next `len` bytes of the buffer's text ring.
    Delta {
        conversation_id: ConversationId,
        task_id: Option<TaskId>,
        thinking: bool,
        len: u32,
    },
    /// Any other event, and its estimated size.
    Whole(Arc<Event>, usize),
}

impl Kept {
    /// What keeping it costs, roughly: a delta counts its text, any other event the bytes
    /// of its JSON.
    fn size(&self) -> usize {
        match self {
            Self::Delta { len, .. } => DELTA_OVERHEAD + *len as usize,
            Self::Whole(_, size) => *size,
        }
    }

    /// The bytes of the text ring it holds.
    fn text_len(&self) -> usize {
        match self {
            Self::Delta { len, .. } => *len as usize,
            Self::Whole(..) => 0,
        }
    }
}

/// What keeping `event` whole costs: the bytes of its JSON and its overhead.
fn whole_size(event: &Event) -> usize {
    let mut counted = Counted(0);
    // Serializing an event only fails in a writer that fails; this one never does.
    let _ = serde_json::to_writer(&mut counted, &event.msg);
    EVENT_OVERHEAD + counted.0
}

/// Text or thinking: the deltas kept small (a delta of 4 GiB or more is kept whole).
fn delta_text(event: &Event) -> Option<(bool, &str, u32)> {
    let (thinking, text) = match &event.msg {
        EventMsg::AgentMessageDelta { delta } => (false, delta),
        EventMsg::AgentReasoningDelta { delta } => (true, delta),
        _ => return None,
    };
    let len = u32::try_from(text.len()).ok()?;
    Some((thinking, text, len))
}

/// Events taken from the buffer for a client that missed them, in `seq` order: the deltas'
/// envelopes and text copied in two blocks, every other event shared. Each event is made
/// whole again as it is read.
#[derive(Debug, Clone, Default)]
pub struct ReplayedEvents {
    kept: Vec<Kept>,
    /// The `seq` of the first.
    first_seq: u64,
    /// The deltas' text, one after the other.
    text: Vec<u8>,
}

impl ReplayedEvents {
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Each event as it was emitted, in order.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, Event>> {
        let mut seq = self.first_seq;
        let mut at = 0;
        self.kept.iter().map(move |kept| {
            let event = match kept {
                Kept::Delta {
                    conversation_id,
                    task_id,
                    thinking,
                    len,
                } => {
                    let end = at + *len as usize;
                    let bytes = self.text.get(at..end).unwrap_or_default();
                    at = end;
                    // Each delta's bytes are the whole of a string: always UTF-8.
                    let delta = String::from_utf8_lossy(bytes).into_owned();
                    Cow::Owned(Event {
                        seq,
                        conversation_id: *conversation_id,
                        task_id: *task_id,
                        msg: if *thinking {
                            EventMsg::AgentReasoningDelta { delta }
                        } else {
                            EventMsg::AgentMessageDelta { delta }
                        },
                    })
                }
                Kept::Whole(event, _) => Cow::Borrowed(&**event),
            };
            seq += 1;
            event
        })
    }

    /// The events, each an [`Event`] of its own.
    pub fn into_events(self) -> Vec<Event> {
        self.iter().map(Cow::into_owned).collect()
    }
}

/// Events kept as the buffer keeps them (for a front door's tests of what it writes).
impl From<Vec<Event>> for ReplayedEvents {
    fn from(events: Vec<Event>) -> Self {
        let mut buffer = EventBuffer::with_limits(usize::MAX, usize::MAX);
        let from = events.first().map_or(0, |event| event.seq);
        for event in &events {
            buffer.push(event);
        }
        buffer.since(from)
    }
}

/// The last events emitted, oldest first, with consecutive `seq`s.
pub(crate) struct EventBuffer {
    events: VecDeque<Kept>,
    /// The `seq` of the oldest event kept (or of the next one, when none is).
    first_seq: u64,
    /// The kept deltas' text, one after the other: one allocation for all of them, so a
    /// stream of small deltas leaves no small allocations behind.
    text: VecDeque<u8>,
    /// The estimated size of what `events` holds.
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
}

impl Default for EventBuffer {
    fn default() -> Self {
        Self::with_limits(MAX_EVENTS, MAX_BYTES)
    }
}

impl EventBuffer {
    pub fn with_limits(max_events: usize, max_bytes: usize) -> Self {
        Self {
            events: VecDeque::new(),
            first_seq: 0,
            text: VecDeque::new(),
            bytes: 0,
            max_events,
            max_bytes,
        }
    }

    /// Keeps `event` (whose `seq` follows the last one kept), then drops the oldest events
    /// until both bounds hold again. An event larger than the whole byte bound is not kept
    /// (nor copied): it pushes every event out.
    pub fn push(&mut self, event: &Event) {
        if self.events.is_empty() {
            self.first_seq = event.seq;
        }
        let kept = match delta_text(event) {
            Some((thinking, text, len)) => {
                self.text.extend(text.as_bytes());
                Kept::Delta {
                    conversation_id: event.conversation_id,
                    task_id: event.task_id,
                    thinking,
                    len,
                }
            }
            None => {
                let size = whole_size(event);
                if size > self.max_bytes {
                    self.clear();
                    self.first_seq = event.seq + 1;
                    return;
                }
                Kept::Whole(Arc::new(event.clone()), size)
            }
        };
        self.bytes += kept.size();
        self.events.push_back(kept);
        while self.events.len() > self.max_events || self.bytes > self.max_bytes {
            let Some(dropped) = self.events.pop_front() else {
                break;
            };
            self.first_seq += 1;
            self.bytes -= dropped.size();
            self.text.drain(..dropped.text_len().min(self.text.len()));
        }
        if self.events.is_empty() {
            self.first_seq = event.seq + 1;
        }
    }

    /// Forgets every event kept: none of them can be asked for again.
    pub fn clear(&mut self) {
        self.first_seq += self.events.len() as u64;
        self.events.clear();
        self.text.clear();
        self.bytes = 0;
    }

    /// The `seq` of the oldest event kept.
    pub fn oldest(&self) -> Option<u64> {
        (!self.events.is_empty()).then_some(self.first_seq)
    }

    /// The events kept from `from_seq` on, in order; `from_seq` must not be older than
    /// [`EventBuffer::oldest`] (or the buffer is empty and nothing is returned).
    pub fn since(&self, from_seq: u64) -> ReplayedEvents {
        let skip = usize::try_from(from_seq.saturating_sub(self.first_seq)).unwrap_or(usize::MAX);
        let skipped_text: usize = self.events.iter().take(skip).map(Kept::text_len).sum();
        ReplayedEvents {
            kept: self.events.iter().skip(skip).cloned().collect(),
            first_seq: from_seq.max(self.first_seq),
            text: self
                .text
                .range(skipped_text.min(self.text.len())..)
                .copied()
                .collect(),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.events.len()
    }
}

/// A writer that only counts what it is given.
struct Counted(usize);

impl Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn delta(seq: u64, text: &str) -> Event {
        Event {
            seq,
            conversation_id: ConversationId(uuid::Uuid::nil()),
            task_id: None,
            msg: EventMsg::AgentMessageDelta {
                delta: text.to_owned(),
            },
        }
    }

    fn seqs(events: &ReplayedEvents) -> Vec<u64> {
        events.iter().map(|event| event.seq).collect()
    }

    #[test]
    fn the_default_bounds_keep_a_hundred_thousand_events_and_16_mib() {
        let buffer = EventBuffer::default();
        assert!(buffer.max_events >= 100_000);
        assert_eq!(buffer.max_bytes, 16 * 1024 * 1024);
        // A hundred thousand deltas of a stream fit in the bytes.
        assert!(100_000 * (DELTA_OVERHEAD + 64) < buffer.max_bytes);
    }

    #[test]
    fn past_its_count_the_oldest_events_are_dropped() {
        let mut buffer = EventBuffer::with_limits(3, usize::MAX);
        for seq in 0..5 {
            buffer.push(&delta(seq, "a"));
        }
        assert_eq!(buffer.len(), 3);
        assert_eq!(buffer.oldest(), Some(2));
        assert_eq!(seqs(&buffer.since(2)), [2, 3, 4]);
        assert_eq!(seqs(&buffer.since(4)), [4]);
        assert_eq!(seqs(&buffer.since(5)), Vec::<u64>::new());
    }

    #[test]
    fn past_its_bytes_the_oldest_events_are_dropped_counting_deltas_by_their_text() {
        let text = "x".repeat(1000);
        let one = DELTA_OVERHEAD + text.len();
        let mut buffer = EventBuffer::with_limits(usize::MAX, 3 * one);
        for seq in 0..3 {
            buffer.push(&delta(seq, &text));
        }
        assert_eq!(buffer.len(), 3);
        assert_eq!(buffer.bytes, 3 * one);
        // One byte more than fits: the oldest goes.
        buffer.push(&delta(3, "x"));
        assert_eq!(seqs(&buffer.since(0)), [1, 2, 3]);
        assert_eq!(buffer.bytes, 2 * one + DELTA_OVERHEAD + 1);
        // An event larger than the whole bound pushes everything out, itself included.
        buffer.push(&delta(4, &"y".repeat(4 * one)));
        assert_eq!(buffer.len(), 0);
        assert_eq!(buffer.bytes, 0);
        assert_eq!(buffer.oldest(), None);
    }

    #[test]
    fn other_events_count_the_bytes_of_their_json() {
        let event = Event {
            seq: 0,
            conversation_id: ConversationId(uuid::Uuid::nil()),
            task_id: None,
            msg: EventMsg::Warning {
                message: "w".repeat(500),
            },
        };
        let json = serde_json::to_vec(&event.msg).unwrap().len();
        assert!(delta_text(&event).is_none());
        assert_eq!(whole_size(&event), EVENT_OVERHEAD + json);
        let mut buffer = EventBuffer::with_limits(usize::MAX, usize::MAX);
        buffer.push(&event);
        assert_eq!(buffer.bytes, EVENT_OVERHEAD + json);
    }

    #[test]
    fn events_come_back_as_they_were_emitted() {
        let conversation = ConversationId::new();
        let task = Some(TaskId::new());
        let emitted = [
            EventMsg::AgentReasoningDelta { delta: "t".into() },
            EventMsg::AgentMessageDelta { delta: "a".into() },
            EventMsg::AgentMessage {
                message: "a".into(),
            },
        ]
        .into_iter()
        .enumerate()
        .map(|(seq, msg)| Event {
            seq: seq as u64,
            conversation_id: conversation,
            task_id: task,
            msg,
        })
        .collect::<Vec<_>>();
        let mut buffer = EventBuffer::default();
        for event in &emitted {
            buffer.push(event);
        }
        let replayed = buffer.since(0);
        assert_eq!(replayed.len(), 3);
        let read: Vec<Event> = replayed.iter().map(Cow::into_owned).collect();
        assert_eq!(read, emitted);
        assert_eq!(replayed.into_events(), emitted);
    }

    #[test]
    fn a_cleared_buffer_keeps_nothing_and_goes_on_from_the_next_event() {
        let mut buffer = EventBuffer::with_limits(10, usize::MAX);
        buffer.push(&delta(0, "a"));
        buffer.push(&delta(1, "b"));
        buffer.clear();
        assert_eq!(buffer.oldest(), None);
        buffer.push(&delta(2, "c"));
        assert_eq!(seqs(&buffer.since(2)), [2]);
        assert_eq!(buffer.since(2).into_events(), [delta(2, "c")]);
    }

    #[test]
    fn the_text_of_dropped_deltas_leaves_with_them() {
        let mut buffer = EventBuffer::with_limits(2, usize::MAX);
        let warning = Event {
            msg: EventMsg::Warning {
                message: "w".into(),
            },
            ..delta(1, "")
        };
        for event in [
            delta(0, "ab"),
            warning.clone(),
            delta(2, "cd"),
            delta(3, "é"),
        ] {
            buffer.push(&event);
        }
        assert_eq!(buffer.text.len(), "cdé".len());
        assert_eq!(
            buffer.since(2).into_events(),
            [delta(2, "cd"), delta(3, "é")]
        );
        assert_eq!(buffer.since(3).into_events(), [delta(3, "é")]);
        let later = Event { seq: 4, ..warning };
        buffer.push(&later);
        assert_eq!(buffer.since(3).into_events(), [delta(3, "é"), later]);
    }
}
