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
//! A run of events shaped like one already read (a stream's text deltas) can also be taken
//! straight from the buffer: at an event boundary, [`rest`](SseReader::rest) shows the bytes
//! not yet read and [`skip`](SseReader::skip) steps over the whole events a wire format's
//! parser took from them; [`SseEvent::raw`] gives the bytes of one event as they arrived, to
//! learn the shape from (see `template.rs`).
//!
//! The bytes of the unfinished event are bounded (see `limits.rs`, the transport limit):
//! past the bound the reader reports [`SseError::TooLarge`] instead of buffering more.

use std::ops::Range;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The most bytes of lines without data (`event:`, `id:`, comments) kept before an event's
/// data so its raw bytes can be handed out; past it the event has no raw form.
const RAW_HEAD_MAX: usize = 4096;

/// One event the reader completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    /// Its data (several `data` lines joined).
    pub data: &'a [u8],
    /// Its bytes as they arrived, from its first line through the blank line that ended
    /// it, with `data` inside them: only for an event whose data is one line and whose
    /// bytes are all still in the buffer (not the stream's first event when it began with
    /// a BOM, nor one whose last CR ended the bytes so far: an LF may follow).
    pub raw: Option<&'a [u8]>,
}

impl<'a> SseEvent<'a> {
    /// An event of `data` whose raw bytes are not known (tests).
    #[cfg(test)]
    pub fn of(data: &'a [u8]) -> Self {
        Self { data, raw: None }
    }
}

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
    /// Where the unfinished event's data starts (past the lines it does not need); what lies
    /// before it (or before `raw_start`) is dropped at the next push.
    event_start: usize,
    /// Where the unfinished event's first line starts, while its bytes are kept whole.
    raw_start: Option<usize>,
    /// The unfinished event's first line began with the stream's BOM.
    after_bom: bool,
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
            raw_start: Some(0),
            after_bom: false,
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
        if self
            .raw_start
            .is_some_and(|raw| self.event_start - raw > RAW_HEAD_MAX)
        {
            self.raw_start = None;
        }
        let start = self.raw_start.unwrap_or(self.event_start);
        if start > 0 {
            self.buf.drain(..start);
            self.line_start -= start;
            self.scan -= start;
            self.event_start -= start;
            if let Some(range) = &mut self.data_line {
                *range = range.start - start..range.end - start;
            }
            self.raw_start = self.raw_start.map(|raw| raw - start);
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The data of the next complete event that has any, or `None` when the reader needs
    /// another chunk. Events without a `data` field are skipped; an empty `data` is an
    /// event with empty data.
    /// The data is bytes: the wire format's parser checks what it reads as UTF-8 (an event
    /// shaped like the one before it only has its text checked, see `template.rs`).
    pub fn next_event(&mut self) -> Option<Result<SseEvent<'_>, SseError>> {
        loop {
            if self.skip_lf && self.line_start < self.buf.len() {
                self.skip_lf = false;
                if self.buf[self.line_start] == b'\n' {
                    // The LF ends the line the CR before it ended.
                    if self.raw_start == Some(self.line_start) {
                        self.raw_start = Some(self.line_start + 1);
                    }
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
                    self.after_bom = true;
                }
            }
            if start == end {
                // A blank line: the event is complete.
                self.event_start = next;
                let raw_start = self.raw_start.replace(next);
                // A CR at the end of the bytes so far may still get its LF: the event's
                // bytes are not known yet.
                let whole = !std::mem::take(&mut self.after_bom) && !self.skip_lf;
                if let Some(joined) = self.data_joined.take() {
                    self.data_line = None;
                    self.handed_out = joined;
                    return Some(Ok(SseEvent {
                        data: &self.handed_out,
                        raw: None,
                    }));
                }
                if let Some(range) = self.data_line.take() {
                    let raw = raw_start
                        .filter(|_| whole)
                        .map(|raw_start| &self.buf[raw_start..next]);
                    return Some(Ok(SseEvent {
                        data: &self.buf[range],
                        raw,
                    }));
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

    /// The bytes not read yet, when the reader stands between two events (nothing of an
    /// unfinished event read): a parser may take whole events from their start and say how
    /// many bytes it took with [`skip`](Self::skip).
    pub fn rest(&self) -> Option<&[u8]> {
        let between = !self.first_line
            && !self.skip_lf
            && self.data_line.is_none()
            && self.data_joined.is_none()
            && self.raw_start == Some(self.line_start)
            && self.event_start == self.line_start
            && self.scan == self.line_start;
        between.then(|| &self.buf[self.line_start..])
    }

    /// Steps over `taken` bytes of [`rest`](Self::rest): whole events, each ended by its
    /// blank line.
    pub fn skip(&mut self, taken: usize) {
        debug_assert!(self.rest().is_some_and(|rest| taken <= rest.len()));
        self.line_start += taken;
        self.scan = self.line_start;
        self.event_start = self.line_start;
        self.raw_start = Some(self.line_start);
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
                events.push(String::from_utf8(event.unwrap().data.to_vec()).unwrap());
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

    fn data(reader: &mut SseReader) -> Option<Result<Vec<u8>, SseError>> {
        reader
            .next_event()
            .map(|event| event.map(|event| event.data.to_vec()))
    }

    #[test]
    fn an_unfinished_event_past_the_bound_is_refused() {
        let mut reader = SseReader::new(100);
        reader.push(b"data: ok\n\n");
        assert_eq!(data(&mut reader), Some(Ok(b"ok".to_vec())));
        assert_eq!(reader.next_event(), None);
        // Many complete events in one chunk are fine; only what is unfinished counts.
        reader.push(&b"data: 0123456789\n\n".repeat(20));
        for _ in 0..20 {
            assert_eq!(data(&mut reader), Some(Ok(b"0123456789".to_vec())));
        }
        assert_eq!(reader.next_event(), None);
        reader.push(&[b'x'; 60]);
        assert_eq!(reader.next_event(), None);
        reader.push(b"\ndata: ");
        assert_eq!(reader.next_event(), None);
        reader.push(&[b'y'; 100]);
        assert_eq!(reader.next_event(), Some(Err(SseError::TooLarge)));
    }

    /// Every event's data and raw bytes, the body fed in `chunks`.
    fn raw_events(chunks: &[&[u8]]) -> Vec<(String, Option<String>)> {
        let mut reader = SseReader::new(1 << 20);
        let mut events = Vec::new();
        for chunk in chunks {
            reader.push(chunk);
            while let Some(event) = reader.next_event() {
                let event = event.unwrap();
                let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).unwrap();
                if let Some(raw) = event.raw {
                    // The data lies inside the raw bytes.
                    let start = event.data.as_ptr() as usize - raw.as_ptr() as usize;
                    assert_eq!(&raw[start..start + event.data.len()], event.data);
                }
                events.push((text(event.data), event.raw.map(text)));
            }
        }
        events
    }

    #[test]
    fn an_event_gives_its_bytes_as_they_arrived_when_its_data_is_one_line() {
        let body =
            b"event: delta\ndata: {\"a\":1}\n\n: note\r\ndata: b\r\n\r\ndata: c\ndata: d\n\n";
        let expected = vec![
            (
                "{\"a\":1}".to_owned(),
                Some("event: delta\ndata: {\"a\":1}\n\n".to_owned()),
            ),
            ("b".to_owned(), Some(": note\r\ndata: b\r\n\r\n".to_owned())),
            // Joined data has no raw form.
            ("c\nd".to_owned(), None),
        ];
        assert_eq!(raw_events(&[body]), expected);
        // However the body is split, the raw bytes are the same (the buffer keeps them),
        // unless the split falls between a CR and an LF that may follow it.
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            let events = raw_events(&[a, b]);
            let cr_at_end = a.ends_with(b"\r");
            for ((data, raw), (expected_data, expected_raw)) in events.iter().zip(&expected) {
                assert_eq!(data, expected_data, "split at {at}");
                assert!(
                    raw == expected_raw || (raw.is_none() && cr_at_end),
                    "split at {at}: {raw:?}"
                );
            }
            assert_eq!(events.len(), expected.len());
        }
        // A stream's BOM is not part of a shape to learn.
        assert_eq!(
            raw_events(&[b"\xEF\xBB\xBFdata: x\n\ndata: y\n\n"]),
            vec![
                ("x".to_owned(), None),
                ("y".to_owned(), Some("data: y\n\n".to_owned())),
            ]
        );
    }

    #[test]
    fn many_lines_without_data_keep_no_raw_form_and_no_memory() {
        let mut reader = SseReader::new(1 << 20);
        for _ in 0..1000 {
            reader.push(b": keep-alive comment without an end\n");
            assert!(reader.next_event().is_none());
        }
        assert!(reader.buf.len() < 2 * RAW_HEAD_MAX, "{}", reader.buf.len());
        reader.push(b"data: z\n\n");
        let event = reader.next_event().unwrap().unwrap();
        assert_eq!((event.data, event.raw), (&b"z"[..], None));
    }

    #[test]
    fn whole_events_taken_from_the_rest_are_stepped_over() {
        let mut reader = SseReader::new(1 << 20);
        // Before the first line (it may hold a BOM) there is no boundary to offer.
        reader.push(b"data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4");
        assert_eq!(reader.rest(), None);
        assert_eq!(data(&mut reader), Some(Ok(b"1".to_vec())));
        let rest = reader.rest().unwrap();
        assert!(rest.starts_with(b"data: 2\n\n"));
        reader.skip(b"data: 2\n\n".len());
        assert_eq!(data(&mut reader), Some(Ok(b"3".to_vec())));
        assert_eq!(reader.next_event(), None);
        // Part of an event is read: no boundary until it ends.
        assert_eq!(reader.rest(), None);
        reader.push(b"\n\ndata: 5\n\n");
        assert_eq!(data(&mut reader), Some(Ok(b"4".to_vec())));
        assert_eq!(reader.rest(), Some(&b"data: 5\n\n"[..]));
        reader.skip(b"data: 5\n\n".len());
        assert_eq!(reader.rest(), Some(&b""[..]));
        assert_eq!(reader.next_event(), None);
    }
}
