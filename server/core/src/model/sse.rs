//! SSE framing: a reader that cuts the body of a model reply into events and hands out
//! each event's `data` as a slice of its own buffer.
//!
//! The reader walks each byte once (`memchr` finds the line ends), so a reply that arrives
//! in large chunks (a local server, a burst after a stall) costs the same per event as one
//! that trickles in. An event whose data is one line (every provider's usual event) is
//! neither copied nor allocated: its data is borrowed from the buffer. Only the fields the
//! client needs are kept: `data`. `event`, `id`, `retry`, comments and unknown fields are
//! skipped, as the SSE specification asks of fields a client does not use.
//!
//! What the specification asks and the reader does: lines end with LF, CR or CRLF (a CRLF
//! may be split across two chunks); a leading UTF-8 BOM is dropped; `field:value` drops one
//! space after the colon; a line without a colon is a field with an empty value; several
//! `data` lines join with `\n`; a blank line ends an event; an event left unfinished when
//! the body ends is dropped.
//!
//! The bytes of the unfinished event are bounded (see `limits.rs`, the transport limit):
//! past the bound the reader reports [`SseError::TooLarge`] instead of buffering more.

use std::ops::Range;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why the reader cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SseError {
    /// More than the bound arrived without completing an event.
    #[error("too many bytes without an SSE event")]
    TooLarge,
}

/// Cuts a byte stream into SSE events: [`push`](Self::push) each chunk of the body, then
/// take the events it completed with [`next_event`](Self::next_event) until it returns
/// `None`.
pub(crate) struct SseReader {
    /// Bytes received and not yet dropped: from the start of the unfinished event on.
    buf: Vec<u8>,
    /// Where the unfinished event starts; what lies before it is dropped at the next push.
    event_start: usize,
    /// The start of the next line to read.
    line_start: usize,
    /// Where the search for the end of that line resumes (the bytes from `line_start` to
    /// here hold no line end).
    scan: usize,
    /// The last line ended with a CR at the end of the bytes received: an LF at the start
    /// of the next chunk belongs to it.
    skip_lf: bool,
    /// No line has been read yet (it may start with a BOM).
    first_line: bool,
    /// The unfinished event's data: one line, in `buf`.
    data_line: Option<Range<usize>>,
    /// The unfinished event's data once it has more than one line, joined.
    data_joined: Option<Vec<u8>>,
    /// The data of the last multi-line event handed out.
    handed_out: Vec<u8>,
    /// The most bytes the unfinished event may hold.
    max_pending: usize,
}

impl SseReader {
    /// A reader that fails once more than `max_pending` bytes arrive without an event.
    pub fn new(max_pending: usize) -> Self {
        Self {
            buf: Vec::new(),
            event_start: 0,
            line_start: 0,
            scan: 0,
            skip_lf: false,
            first_line: true,
            data_line: None,
            data_joined: None,
            handed_out: Vec::new(),
            max_pending,
        }
    }

    /// Adds the next chunk of the body. Call it once [`next_event`](Self::next_event) has
    /// returned `None`.
    pub fn push(&mut self, chunk: &[u8]) {
        // Drop the events already handed out; keep the unfinished one (its data line is
        // addressed by position, moved with it).
        if self.event_start > 0 {
            let start = self.event_start;
            self.buf.drain(..start);
            self.line_start -= start;
            self.scan -= start;
            if let Some(range) = &mut self.data_line {
                *range = range.start - start..range.end - start;
            }
            self.event_start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The data of the next complete event that has any, or `None` when the reader needs
    /// another chunk. Events without a `data` field are skipped; an empty `data` is an
    /// event with empty data.
    /// The data is bytes: the wire format's parser checks what it reads as UTF-8 (an event
    /// shaped like the one before it only has its text checked, see `template.rs`).
    pub fn next_event(&mut self) -> Option<Result<&[u8], SseError>> {
        loop {
            if self.skip_lf && self.line_start < self.buf.len() {
                self.skip_lf = false;
                if self.buf[self.line_start] == b'\n' {
                    self.line_start += 1;
                    self.scan = self.line_start;
                    if self.data_line.is_none() && self.data_joined.is_none() {
                        self.event_start = self.line_start;
                    }
                }
            }
            let Some(offset) = memchr::memchr2(b'\n', b'\r', &self.buf[self.scan..]) else {
                self.scan = self.buf.len();
                if self.buf.len() - self.event_start > self.max_pending {
                    return Some(Err(SseError::TooLarge));
                }
                return None;
            };
            let end = self.scan + offset;
            let mut next = end + 1;
            if self.buf[end] == b'\r' {
                match self.buf.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let mut start = self.line_start;
            self.line_start = next;
            self.scan = next;
            if self.first_line {
                self.first_line = false;
                if self.buf[start..end].starts_with(BOM) {
                    start += BOM.len();
                }
            }
            if start == end {
                // A blank line: the event is complete.
                self.event_start = next;
                if let Some(joined) = self.data_joined.take() {
                    self.data_line = None;
                    self.handed_out = joined;
                    return Some(Ok(&self.handed_out));
                }
                if let Some(range) = self.data_line.take() {
                    return Some(Ok(&self.buf[range]));
                }
                continue;
            }
            self.field(start..end);
            if self.data_line.is_none() && self.data_joined.is_none() {
                // Nothing of this event needs keeping (a comment, an `event:` line).
                self.event_start = next;
            }
        }
    }

    /// Reads one non-blank line.
    fn field(&mut self, line: Range<usize>) {
        let bytes = &self.buf[line.clone()];
        let (name, value_start) = match memchr::memchr(b':', bytes) {
            Some(colon) => {
                let mut value = line.start + colon + 1;
                if self.buf.get(value) == Some(&b' ') && value < line.end {
                    value += 1;
                }
                (&bytes[..colon], value)
            }
            None => (bytes, line.end),
        };
        if name != b"data" {
            return;
        }
        let value = value_start..line.end;
        match (&mut self.data_joined, &self.data_line) {
            (Some(joined), _) => {
                joined.push(b'\n');
                joined.extend_from_slice(&self.buf[value]);
            }
            (None, Some(first)) => {
                let mut joined = Vec::with_capacity(first.len() + 1 + value.len());
                joined.extend_from_slice(&self.buf[first.clone()]);
                joined.push(b'\n');
                joined.extend_from_slice(&self.buf[value]);
                self.data_joined = Some(joined);
                self.data_line = None;
            }
            (None, None) => self.data_line = Some(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Feeds `chunks` one after the other and collects every event's data.
    fn read(chunks: &[&[u8]]) -> Vec<String> {
        let mut reader = SseReader::new(1 << 20);
        let mut events = Vec::new();
        for chunk in chunks {
            reader.push(chunk);
            while let Some(event) = reader.next_event() {
                events.push(String::from_utf8(event.unwrap().to_vec()).unwrap());
            }
        }
        events
    }

    /// The body read whole, and split in two at every byte, and fed one byte at a time.
    fn read_every_way(body: &[u8]) -> Vec<String> {
        let whole = read(&[body]);
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(read(&[a, b]), whole, "split at {at}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(read(&bytes), whole, "one byte at a time");
        whole
    }

    #[test]
    fn events_are_the_same_however_the_body_is_split() {
        let body = b"\xEF\xBB\xBFdata: {\"a\":1}\r\n\r\n\
            : a comment\r\n\
            event: message_start\r\ndata: first\r\ndata:  second\r\ndata\r\n\r\n\
            data:{\"b\":2}\rid: 7\rretry: 10\r\r\
            event: ping\n\n\
            unknown: field\ndata: [DONE]\n\n\
            data: never finished\n";
        assert_eq!(
            read_every_way(body),
            vec![
                "{\"a\":1}".to_owned(),
                "first\n second\n".to_owned(),
                "{\"b\":2}".to_owned(),
                "[DONE]".to_owned(),
            ]
        );
    }

    #[test]
    fn an_empty_data_field_is_an_event_with_empty_data() {
        assert_eq!(
            read_every_way(b"data:\n\ndata: x\n\n"),
            vec![String::new(), "x".to_owned()]
        );
    }

    #[test]
    fn a_bom_counts_only_at_the_start_of_the_stream() {
        assert_eq!(
            read_every_way(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"),
            vec!["a"]
        );
    }

    #[test]
    fn an_unfinished_event_past_the_bound_is_refused() {
        let mut reader = SseReader::new(100);
        reader.push(b"data: ok\n\n");
        assert_eq!(reader.next_event(), Some(Ok(&b"ok"[..])));
        assert_eq!(reader.next_event(), None);
        // Many complete events in one chunk are fine; only what is unfinished counts.
        reader.push(&b"data: 0123456789\n\n".repeat(20));
        for _ in 0..20 {
            assert_eq!(reader.next_event(), Some(Ok(&b"0123456789"[..])));
        }
        assert_eq!(reader.next_event(), None);
        reader.push(&[b'x'; 60]);
        assert_eq!(reader.next_event(), None);
        reader.push(b"\ndata: ");
        assert_eq!(reader.next_event(), None);
        reader.push(&[b'y'; 100]);
        assert_eq!(reader.next_event(), Some(Err(SseError::TooLarge)));
    }
}
