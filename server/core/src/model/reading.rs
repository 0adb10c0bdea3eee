//! Reading a reply's body: the SSE reader cuts it into events, the wire format's parser
//! reads them into the reply, and the reply's limits are checked after each event.
//!
//! A run of events shaped like the last text or thinking delta (most of a stream) is taken
//! in one pass straight from the SSE reader's buffer (`template.rs`); anything else is cut
//! into an event and parsed. Both give the same reply, shown text and limit errors, event
//! for event: `stream_fuzz.rs` checks it over random streams split at random places.

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
}

impl ReplyReader {
    pub fn new(parser: Box<dyn StreamParser>, limits: ReplyLimits) -> Self {
        Self {
            sse: SseReader::new(limits.max_pending()),
            parser,
            limits,
            received: 0,
        }
    }

    /// Adds the next chunk of the body; call it once [`read`](Self::read) said
    /// [`Step::NeedMore`].
    pub fn push(&mut self, chunk: &[u8]) {
        self.sse.push(chunk);
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
                let (events, bytes) = self.limits.room(self.received, self.parser.reply_bytes());
                let run = self.parser.feed_run(rest, left.min(events), bytes, shown);
                if run.events > 0 {
                    self.sse.skip(run.bytes);
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
                None => return Step::NeedMore,
                Some(Ok(event)) => event,
                Some(Err(SseError::TooLarge)) => {
                    return Step::LimitPassed(self.limits.transport_message());
                }
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
