//! Reading a reply's body: the SSE reader cuts it into events, the wire format's parser
//! reads them into the reply, and the reply's limits are checked after each event.
//!
//! A run of events shaped like the last text or thinking delta (most of a stream) is taken
//! in one pass (`template.rs`); anything else is cut into an event and parsed. Both give
//! the same reply, shown text and limit errors, event for event: `stream_fuzz.rs` checks it
//! over random streams split at random places.
//!
//! A chunk of the body is not copied into the SSE reader whole. It is handed over a piece
//! at a time, each piece up to the next event's end, and whenever the reader holds nothing
//! (it stands between two events), a run is taken straight from the chunk. A burst of
//! deltas is then read where it arrived; only the events around it (and an event split
//! between two chunks) are copied. The pieces are one more way to split the body, which
//! the SSE reader reads the same however it is split.

use bytes::Bytes;

use super::limits::ReplyLimits;
use super::shown::Shown;
use super::sse::{SseError, SseReader};
use super::{Feed, ModelResponse, StreamParser};

/// Where reading stopped.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// The body so far holds no further complete event.
    NeedMore,
    /// The events asked for were read; more may be ready.
    Budget,
    /// The reply is complete.
    Done,
    /// The provider reported an error inside the stream.
    ProviderError { message: String, retryable: bool },
    /// A limit was passed (its message names it); the stream must be dropped.
    LimitPassed(String),
}

/// One attempt's reader of a reply's body.
pub(crate) struct ReplyReader {
    sse: SseReader,
    parser: Box<dyn StreamParser>,
    limits: ReplyLimits,
    /// Events that carried data.
    received: u64,
    /// The last chunk of the body, and how much of it was taken or handed to `sse`.
    chunk: Bytes,
    at: usize,
}

impl ReplyReader {
    pub fn new(parser: Box<dyn StreamParser>, limits: ReplyLimits) -> Self {
        Self {
            sse: SseReader::new(limits.max_pending()),
            parser,
            limits,
            received: 0,
            chunk: Bytes::new(),
            at: 0,
        }
    }

    /// Adds the next chunk of the body; call it once [`read`](Self::read) said
    /// [`Step::NeedMore`].
    pub fn push(&mut self, chunk: Bytes) {
        debug_assert_eq!(self.at, self.chunk.len(), "the last chunk was not read");
        self.chunk = chunk;
        self.at = 0;
    }

    /// Hands the SSE reader the next piece of the chunk: through the next blank line, so
    /// that the reader stands between two events after it when it can (a lone LF first: it
    /// may end a blank line begun in the last chunk). A stream framed otherwise (CRLF, CR)
    /// gets the rest of the chunk at once. Returns false when the chunk is all handed out;
    /// it is then let go, so the HTTP client may read the next one into the same memory.
    fn hand_piece(&mut self) -> bool {
        let rest = &self.chunk[self.at..];
        let len = match rest.first() {
            None => {
                self.chunk = Bytes::new();
                self.at = 0;
                return false;
            }
            Some(b'\n') => 1,
            Some(_) => memchr::memmem::find(rest, b"\n\n").map_or(rest.len(), |at| at + 2),
        };
        self.sse.push(&rest[..len]);
        self.at += len;
        true
    }

    /// Reads the events the body so far completed, at most about `budget` of them, what
    /// they show handed to `shown`.
    pub fn read(&mut self, budget: u64, shown: &mut Shown) -> Step {
        let mut left = budget;
        loop {
            if left == 0 {
                return Step::Budget;
            }
            if let Some(rest) = self.sse.rest() {
                // Between two events with nothing held: the run is read from the chunk.
                let direct = rest.is_empty();
                let rest = if direct { &self.chunk[self.at..] } else { rest };
                let (events, bytes) = self.limits.room(self.received, self.parser.reply_bytes());
                let run = self.parser.feed_run(rest, left.min(events), bytes, shown);
                if run.events > 0 {
                    if direct {
                        self.at += run.bytes;
                    } else {
                        self.sse.skip(run.bytes);
                    }
                    self.received += run.events;
                    left -= run.events;
                    if let Some(message) =
                        self.limits.check(self.received, self.parser.reply_bytes())
                    {
                        return Step::LimitPassed(message);
                    }
                    continue;
                }
            }
            let event = match self.sse.next_event() {
                None => None,
                Some(Ok(event)) => Some(event),
                Some(Err(SseError::TooLarge)) => {
                    return Step::LimitPassed(self.limits.transport_message());
                }
            };
            let Some(event) = event else {
                if self.hand_piece() {
                    continue;
                }
                return Step::NeedMore;
            };
            left -= 1;
            if event.data.is_empty() {
                continue;
            }
            self.received += 1;
            let feed = match self.parser.feed(event, shown) {
                Ok(feed) => feed,
                Err(problem) => {
                    shown.warning(format!("skipped a {problem} from the model"));
                    Feed::Continue
                }
            };
            if let Some(message) = self.limits.check(self.received, self.parser.reply_bytes()) {
                return Step::LimitPassed(message);
            }
            match feed {
                Feed::Continue => {}
                Feed::Done => return Step::Done,
                Feed::ProviderError { message, retryable } => {
                    return Step::ProviderError { message, retryable };
                }
            }
        }
    }

    /// Whether the body may end here (see [`StreamParser::may_end`]).
    pub fn may_end(&self) -> bool {
        self.parser.may_end()
    }

    /// The reply so far.
    pub fn response(&self) -> ModelResponse {
        self.parser.response()
    }
}
