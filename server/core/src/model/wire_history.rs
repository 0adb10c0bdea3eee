//! A conversation's history as a wire format writes it into a request, kept from one
//! request to the next: each message is serialized once, by the first request that holds
//! it, so a request's body is the bytes kept plus what was recorded since, whatever the
//! length of the conversation (docs/architecture.md, "A request's body").
//!
//! A wire format writes a history through its [`MessageWriter`], one message at a time.
//! What the writer hands out as done, no later message changes (an OpenAI message; an
//! Anthropic message once a message of the other role follows it): those are kept as
//! bytes. What is still open (the images of the last run of tool results, the last run of
//! one role's messages) is written again by each request, and it is as short as that run.
//!
//! The bytes kept hold for one way of writing (the wire format, the messages written
//! before the history, the history as text or not) and for a history that only grew since.
//! The conversation drops them when its history is rewritten (a new batch, a text added
//! to its last message); before each use they are checked against the history too: its
//! length, and its last message taken, which must be the one they were written from.

use std::hash::Hasher;

use coder_protocol::ChatMessage;
use serde_json::Value;

use super::{ModelRequest, WireApi};
use crate::sync::lock;

/// `request`'s body as `api` writes it: its history from `request.cache` (which it
/// extends) when given, else written whole.
pub(crate) fn request_body(
    api: &dyn WireApi,
    request: &ModelRequest<'_>,
) -> serde_json::Result<Vec<u8>> {
    let mut fresh = WireHistory::default();
    let mut held = request.cache.map(lock);
    let history = held.as_deref_mut().unwrap_or(&mut fresh);
    api.body(request, &mut |after_another, out| {
        history.write(api, request, after_another, out)
    })
}

/// How a wire format turns a history into a request's messages, one message at a time.
pub(crate) trait MessageWriter: Send {
    /// Takes the next message of the history, handing each wire message it completes to
    /// `done`, in order.
    fn push(&mut self, message: &ChatMessage, done: &mut dyn FnMut(Value));
    /// The wire messages still open (a later message could change them), as they end a
    /// request that stops here.
    fn open(&self, open: &mut dyn FnMut(Value));
}

/// A conversation's history as the last request wrote it; empty until a request is built.
#[derive(Default)]
pub struct WireHistory {
    kept: Option<Kept>,
}

impl std::fmt::Debug for WireHistory {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("WireHistory")
            .field("taken", &self.kept.as_ref().map(|kept| kept.taken))
            .finish()
    }
}

/// The history written one way, as far as it was taken.
struct Kept {
    /// The wire format that wrote it ([`WireApi::name`]).
    format: &'static str,
    /// The messages written before the history.
    lead: Vec<ChatMessage>,
    /// The history was written as text.
    as_text: bool,
    writer: Box<dyn MessageWriter>,
    /// How many messages of the history were taken.
    taken: usize,
    /// The last message taken, fingerprinted ([`fingerprint`]).
    last: u64,
    /// The wire messages done, each serialized, joined by commas.
    done: Vec<u8>,
}

impl WireHistory {
    /// Forgets what was written: the history was rewritten.
    pub fn clear(&mut self) {
        self.kept = None;
    }

    /// Appends to `out` the request's messages after the system prompt, as `api` writes
    /// them (JSON objects joined by commas, the first after a comma when `after_another`):
    /// the kept bytes, then what was recorded since the last request, then what is still
    /// open. Starts again from the first message when the request is written another way
    /// or its history is not the one kept.
    pub(crate) fn write(
        &mut self,
        api: &dyn WireApi,
        request: &ModelRequest<'_>,
        after_another: bool,
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        let history = request.messages;
        let mut kept = match self.kept.take() {
            Some(kept) if kept.holds(api, request) => kept,
            _ => Kept::start(api, request)?,
        };
        if let Some(new) = history.get(kept.taken..).filter(|new| !new.is_empty()) {
            kept.take(new, request.as_text)?;
            kept.taken = history.len();
            kept.last = fingerprint(&history[history.len() - 1]);
        }
        out.reserve(kept.done.len() + 2);
        if after_another && !kept.done.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(&kept.done);
        let mut result = Ok(());
        let mut first = kept.done.is_empty() && !after_another;
        kept.writer.open(&mut |message| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            if result.is_ok() {
                result = serde_json::to_writer(&mut *out, &message);
            }
        });
        self.kept = Some(kept);
        result
    }
}

impl Kept {
    /// A writer of `api`'s that has taken the request's lead messages.
    fn start(api: &dyn WireApi, request: &ModelRequest<'_>) -> serde_json::Result<Self> {
        let mut kept = Self {
            format: api.name(),
            lead: request.lead.to_vec(),
            as_text: request.as_text.is_some(),
            writer: api.message_writer(),
            taken: 0,
            last: 0,
            done: Vec::new(),
        };
        kept.take(request.lead, None)?;
        Ok(kept)
    }

    /// Whether these bytes are `request`'s history written the way `api` writes it.
    fn holds(&self, api: &dyn WireApi, request: &ModelRequest<'_>) -> bool {
        self.format == api.name()
            && self.as_text == request.as_text.is_some()
            && self.lead == request.lead
            && match self.taken.checked_sub(1) {
                None => true,
                Some(last) => request
                    .messages
                    .get(last)
                    .is_some_and(|message| fingerprint(message) == self.last),
            }
    }

    /// Writes `messages` (in text form when `as_text` says how).
    fn take(
        &mut self,
        messages: &[ChatMessage],
        as_text: Option<fn(&ChatMessage) -> ChatMessage>,
    ) -> serde_json::Result<()> {
        let Self { writer, done, .. } = self;
        let mut result = Ok(());
        let mut keep = |message: Value| {
            if !done.is_empty() {
                done.push(b',');
            }
            if result.is_ok() {
                result = serde_json::to_writer(&mut *done, &message);
            }
        };
        for message in messages {
            match as_text {
                Some(as_text) => writer.push(&as_text(message), &mut keep),
                None => writer.push(message, &mut keep),
            }
        }
        result
    }
}

/// A hash of everything `message` holds, to tell whether a history's message is still
/// the one that was written.
fn fingerprint(message: &ChatMessage) -> u64 {
    /// Hashes what is written into it.
    struct Hashing(std::hash::DefaultHasher);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(std::hash::DefaultHasher::new());
    // Serializing a message into a hasher cannot fail; a failure would only make the
    // next request start again.
    let _ = serde_json::to_writer(&mut hashing, message);
    hashing.0.finish()
}

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
