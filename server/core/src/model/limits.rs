//! Bounds on one model reply, so a provider that never ends its stream costs a bounded
//! amount of memory and time.
//!
//! Three limits, each checked as the stream is read:
//! - **Content**: the bytes of text, thinking and tool arguments the reply has carried may
//!   not pass `maxReplyBytes` (default [`crate::DEFAULT_MAX_REPLY_BYTES`]).
//! - **Tokens**: providers report usage only at the end of a stream, so the count is local:
//!   coder counts the SSE events that carry data. A provider streams what it generates as
//!   it generates it, at most one event per token plus a few that open and close the reply
//!   (several tokens may share an event, one token never needs two), so a provider that
//!   stops at `max_tokens` sends about `maxOutputTokens` of them or fewer. coder drops the
//!   stream only past `2 × maxOutputTokens + 64` events: the margin leaves room for servers
//!   that are not told the limit (the OpenAI format does not send it, since reasoning models
//!   count hidden reasoning against it) or that split a token at a tag. Hidden reasoning is
//!   never streamed, so it never counts.
//! - **Transport**: the bytes of the SSE event not yet complete may not pass
//!   `2 × maxReplyBytes + 64 KiB`, so a stream with no newline (or endless `data:` lines
//!   without a blank line) cannot grow the SSE parser's buffer without limit. One event
//!   may carry a whole tool call's arguments, JSON-escaped, hence the factor of two.
//!
//! Past a limit the stream is dropped and the call fails without a retry (a provider that
//! did it once will likely do it again) with a message naming the limit and the setting that
//! raises it.

/// Room in the transport limit beyond twice the content limit.
const TRANSPORT_SLACK: usize = 64 * 1024;
/// Events allowed beyond twice `maxOutputTokens`: the ones that open and close a reply.
const EVENT_SLACK: u64 = 64;

/// The limits of one reply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyLimits {
    pub max_output_tokens: u32,
    pub max_reply_bytes: usize,
}

impl ReplyLimits {
    fn max_events(self) -> u64 {
        2 * u64::from(self.max_output_tokens) + EVENT_SLACK
    }

    /// The most bytes the SSE reader may hold without completing an event.
    pub fn max_pending(self) -> usize {
        self.max_reply_bytes
            .saturating_mul(2)
            .saturating_add(TRANSPORT_SLACK)
    }

    /// How many more events, and bytes of content, a reply of `events` events carrying
    /// `bytes` may take before [`check`](Self::check) fails: the next event past either
    /// passes the limit.
    pub fn room(self, events: u64, bytes: usize) -> (u64, usize) {
        (
            (self.max_events() + 1).saturating_sub(events),
            self.max_reply_bytes.saturating_sub(bytes),
        )
    }

    /// Why the reply must be dropped after `events` events carrying `bytes` of content, if
    /// it must.
    pub fn check(self, events: u64, bytes: usize) -> Option<String> {
        if bytes > self.max_reply_bytes {
            return Some(format!(
                "the model's reply passed maxReplyBytes ({} bytes of text, thinking and tool \
                 arguments), so coder dropped the stream; if replies this long are expected, \
                 raise \"maxReplyBytes\" in your user configuration (or .coder/config.json of a trusted \
                 folder)",
                self.max_reply_bytes
            ));
        }
        if events > self.max_events() {
            return Some(format!(
                "the model's reply passed maxOutputTokens ({} tokens): it streamed more than \
                 {} events, so coder dropped the stream; if replies this long are expected, \
                 raise \"maxOutputTokens\" in your user configuration (or .coder/config.json of a \
                 trusted folder)",
                self.max_output_tokens,
                self.max_events()
            ));
        }
        None
    }

    /// Why the transport was cut, once the SSE reader held more than
    /// [`max_pending`](Self::max_pending) bytes without an event.
    pub fn transport_message(self) -> String {
        format!(
            "the model stream sent more than {} bytes without completing an event, so coder \
             dropped it; the limit is twice maxReplyBytes ({} bytes): raise \"maxReplyBytes\" \
             in your user configuration (or .coder/config.json of a trusted folder) if the \
             provider sends events this large",
            self.max_pending(),
            self.max_reply_bytes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: ReplyLimits = ReplyLimits {
        max_output_tokens: 100,
        max_reply_bytes: 1000,
    };

    #[test]
    fn a_reply_within_its_limits_passes_and_either_limit_stops_it() {
        assert_eq!(LIMITS.check(264, 1000), None);
        let bytes = LIMITS.check(10, 1001).unwrap();
        assert!(bytes.contains("maxReplyBytes (1000 bytes"), "{bytes}");
        let tokens = LIMITS.check(265, 10).unwrap();
        assert!(
            tokens.contains("maxOutputTokens (100 tokens)") && tokens.contains("264 events"),
            "{tokens}"
        );
    }

    #[test]
    fn the_transport_bound_is_twice_the_content_limit_and_some() {
        assert_eq!(LIMITS.max_pending(), 2 * 1000 + 64 * 1024);
    }
}
