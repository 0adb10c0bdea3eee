//! The shape of the last SSE event that carried nothing but a piece of text (or thinking),
//! so the next events of the same shape are read without parsing them again.
//!
//! A provider streams a reply as thousands of events that differ only in the piece of text
//! they carry: `{"id":"..","object":"chat.completion.chunk",..,"delta":{"content":"tok "},..}`.
//! Parsing each as JSON was most of the work per delta (docs/benchmarks.md). Once one event
//! of that kind has been parsed, its bytes before and after the text are kept; an event that
//! starts and ends with exactly those bytes, with a middle that is a plain JSON string body
//! (no quote, backslash or control character), is the same JSON document with another text,
//! so its text is the middle. Anything else (an escape, another field, a finish reason, a
//! tool call, usage, a field that changes per event) takes the full parse, which learns the
//! shape again.
//!
//! The same holds one level down, for the event's bytes as they arrived (`event: ...`,
//! `data: `, the JSON, the blank line): when the learned event's raw bytes are known, a run
//! of events in the SSE reader's buffer that each are those bytes around another plain
//! text is taken in one pass ([`DeltaTemplate::take_run`]): no line splitting, no second
//! look at each event. Its text holds no line end (a plain string has no control byte),
//! so each such event frames exactly as the learned one did.

/// What a delta event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    Text,
    Reasoning,
}

/// The bytes around the text of the last text-only (or thinking-only) event.
#[derive(Debug)]
pub(crate) struct DeltaTemplate {
    prefix: String,
    suffix: String,
    piece: Piece,
    /// The learned event's raw bytes before and after its text, when known.
    raw: Option<(Vec<u8>, Vec<u8>)>,
    /// The texts of the run being taken, joined (kept between runs for its capacity).
    joined: Vec<u8>,
}

/// What [`DeltaTemplate::take_run`] took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Run {
    /// Bytes of whole events.
    pub bytes: usize,
    /// Events.
    pub events: u64,
}

/// A JSON string body with nothing to unescape: no quote, backslash or control byte.
fn plain(text: &[u8]) -> bool {
    text.iter()
        .all(|&byte| byte >= 0x20 && byte != b'"' && byte != b'\\')
}

/// The length of the plain JSON string body that `bytes` starts with: the bytes before the
/// first quote, when none of them is a backslash or a control byte and they are UTF-8. One
/// pass for the usual ASCII text; only a text with other bytes is checked as UTF-8.
fn plain_prefix(bytes: &[u8]) -> Option<usize> {
    let mut ascii = true;
    for (at, &byte) in bytes.iter().enumerate() {
        match byte {
            b'"' => return (ascii || std::str::from_utf8(&bytes[..at]).is_ok()).then_some(at),
            b'\\' | 0..0x20 => return None,
            0x80.. => ascii = false,
            _ => {}
        }
    }
    None
}

/// The capacity the joined texts keep between runs.
const JOINED_KEEP: usize = 256 * 1024;

impl DeltaTemplate {
    /// The shape of `data`, an event that a full parse found to carry nothing but `text` as
    /// a `piece`; `text` must be borrowed from `data` (a string without escapes), else
    /// there is no shape to learn.
    /// `raw`, the event's bytes as they arrived with `data` inside them, teaches the shape
    /// [`take_run`](Self::take_run) reads.
    pub fn learn(data: &str, raw: Option<&[u8]>, text: &str, piece: Piece) -> Option<Self> {
        let start = (text.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
        let end = start.checked_add(text.len())?;
        if end > data.len() || !data.is_char_boundary(start) || !data.is_char_boundary(end) {
            return None;
        }
        let (prefix, suffix) = (&data[..start], &data[end..]);
        // The text sits between the quotes of a JSON string.
        if !prefix.ends_with('"') || !suffix.starts_with('"') {
            return None;
        }
        let raw = raw.and_then(|raw| raw_around(raw, data.as_bytes(), start..end));
        Some(Self {
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            piece,
            raw,
            joined: Vec::new(),
        })
    }

    /// Takes the events at the start of `raw` (the SSE reader's unread bytes, at an event
    /// boundary) that are the learned event's raw bytes around another plain text, at most
    /// `max_events` of them, and hands their texts, joined, to `take` once; stops after a
    /// text that brings the pieces' bytes past `max_bytes`, so the caller's limits see the
    /// same event as when each is read apart. What it does not take (another shape, an
    /// event not yet whole) is left for the SSE reader.
    pub fn take_run(
        &mut self,
        raw: &[u8],
        max_events: u64,
        max_bytes: usize,
        take: impl FnOnce(Piece, &str),
    ) -> Run {
        let Self {
            raw: Some((head, tail)),
            joined,
            piece,
            ..
        } = self
        else {
            return Run::default();
        };
        joined.clear();
        let mut run = Run::default();
        while run.events < max_events && joined.len() <= max_bytes {
            let Some(after_head) = raw[run.bytes..].strip_prefix(head.as_slice()) else {
                break;
            };
            // A plain text holds no quote: the first one opens the tail.
            let Some(len) = plain_prefix(after_head) else {
                break;
            };
            let (text, after) = after_head.split_at(len);
            if !after.starts_with(tail) {
                break;
            }
            joined.extend_from_slice(text);
            run.bytes += head.len() + len + tail.len();
            run.events += 1;
        }
        if run.events == 0 {
            return run;
        }
        // Each text is UTF-8 on its own, so their join is: this check is one pass over
        // the joined bytes, not one call per event.
        let Ok(text) = std::str::from_utf8(joined) else {
            return Run::default();
        };
        take(*piece, text);
        if joined.capacity() > JOINED_KEEP {
            *joined = Vec::new();
        }
        run
    }

    /// The piece `data` carries when it has this shape. Only the text is checked as UTF-8:
    /// the bytes around it are those of an event that was. An event that matches teaches
    /// its raw bytes (`raw`, with `data` inside them) when they were not known yet.
    pub fn matches<'a>(&mut self, data: &'a [u8], raw: Option<&[u8]>) -> Option<(Piece, &'a str)> {
        let middle = data
            .strip_prefix(self.prefix.as_bytes())?
            .strip_suffix(self.suffix.as_bytes())?;
        if !plain(middle) {
            return None;
        }
        let text = std::str::from_utf8(middle).ok()?;
        if self.raw.is_none() {
            self.raw = raw.and_then(|raw| {
                raw_around(raw, data, self.prefix.len()..data.len() - self.suffix.len())
            });
        }
        Some((self.piece, text))
    }
}

/// The bytes of `raw` before and after `text` (a range of `data`, which lies inside `raw`).
fn raw_around(raw: &[u8], data: &[u8], text: std::ops::Range<usize>) -> Option<(Vec<u8>, Vec<u8>)> {
    let data_start = (data.as_ptr() as usize).checked_sub(raw.as_ptr() as usize)?;
    if data_start.checked_add(data.len())? > raw.len() {
        return None;
    }
    Some((
        raw[..data_start + text.start].to_vec(),
        raw[data_start + text.end..].to_vec(),
    ))
}

/// Deserializes an optional string borrowed from the input when it holds no escapes. (An
/// `Option<Cow<str>>` field is always owned, whatever `#[serde(borrow)]` says: serde only
/// borrows a `Cow<str>` it meets directly.) Use with `#[serde(default, borrow,
/// deserialize_with = "borrowed_str")]`.
pub(crate) fn borrowed_str<'de: 'a, 'a, D>(
    deserializer: D,
) -> Result<Option<std::borrow::Cow<'a, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(serde::Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);
    let value: Option<Borrowed<'a>> = serde::Deserialize::deserialize(deserializer)?;
    Ok(value.map(|Borrowed(text)| text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: &str =
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}"#;

    fn learned() -> DeltaTemplate {
        let at = CHUNK.find("tok ").unwrap();
        DeltaTemplate::learn(CHUNK, None, &CHUNK[at..at + 4], Piece::Text).unwrap()
    }

    #[test]
    fn an_event_of_the_same_shape_gives_its_text() {
        let mut template = learned();
        let next = CHUNK.replace("tok ", "héllo wörld");
        assert_eq!(
            template.matches(next.as_bytes(), None),
            Some((Piece::Text, "héllo wörld"))
        );
        let empty = CHUNK.replace("tok ", "");
        assert_eq!(
            template.matches(empty.as_bytes(), None),
            Some((Piece::Text, ""))
        );
    }

    /// `CHUNK` with `text`, framed as an SSE event.
    fn event(text: &str) -> String {
        format!("data: {}\n\n", CHUNK.replace("tok ", text))
    }

    /// A template learned from the raw event of `CHUNK`.
    fn learned_raw() -> DeltaTemplate {
        let raw = event("tok ");
        let data = &raw["data: ".len()..raw.len() - 2];
        let at = data.find("tok ").unwrap();
        DeltaTemplate::learn(data, Some(raw.as_bytes()), &data[at..at + 4], Piece::Text).unwrap()
    }

    /// What a run over `raw` takes: the run and its texts, joined.
    fn run(
        template: &mut DeltaTemplate,
        raw: impl AsRef<[u8]>,
        max_events: u64,
        max_bytes: usize,
    ) -> (Run, String) {
        let mut texts = String::new();
        let run = template.take_run(raw.as_ref(), max_events, max_bytes, |piece, text| {
            assert_eq!(piece, Piece::Text);
            texts.push_str(text);
        });
        (run, texts)
    }

    #[test]
    fn a_run_of_same_shape_events_is_taken_until_one_differs() {
        let mut template = learned_raw();
        let body = [
            event("a"),
            event("é"),
            event(""),
            event(r"x\ny"),
            event("b"),
        ]
        .concat();
        let (taken, texts) = run(&mut template, &body, 100, 1000);
        assert_eq!(texts, "aé");
        assert_eq!(taken.events, 3);
        assert_eq!(&body[taken.bytes..], [event(r"x\ny"), event("b")].concat());
        // An event not whole yet, or framed otherwise, is left to the SSE reader.
        let partial = [event("a"), event("b")[..10].to_owned()].concat();
        assert_eq!(run(&mut template, &partial, 100, 1000).1, "a");
        let crlf = event("a").replace('\n', "\r\n");
        assert_eq!(run(&mut template, &crlf, 100, 1000).0, Run::default());
        // A quote ends the text: what follows it must be the learned tail.
        let quoted = format!("data: {}\n\n", CHUNK.replace("tok ", r#"a","x":"b"#));
        assert_eq!(run(&mut template, &quoted, 100, 1000).0, Run::default());
        // Without raw bytes learned, nothing is taken.
        assert_eq!(run(&mut learned(), event("a"), 100, 1000).0, Run::default());
    }

    #[test]
    fn a_text_that_is_not_utf8_on_its_own_ends_the_run_even_when_the_next_completes_it() {
        let mut template = learned_raw();
        // "中" is E4 B8 AD: split over two events, neither text is UTF-8 alone.
        let bytes = |text: &[u8]| {
            let at = CHUNK.find("tok ").unwrap();
            [
                b"data: ",
                &CHUNK.as_bytes()[..at],
                text,
                &CHUNK.as_bytes()[at + 4..],
                b"\n\n",
            ]
            .concat()
        };
        let body = [bytes(b"a"), bytes(b"\xE4\xB8"), bytes(b"\xAD"), bytes(b"b")].concat();
        let (taken, texts) = run(&mut template, &body, 100, 1000);
        assert_eq!((taken.events, texts.as_str()), (1, "a"));
        let whole = [bytes("中".as_bytes()), bytes(b"b")].concat();
        assert_eq!(run(&mut template, &whole, 100, 1000).1, "中b");
    }

    #[test]
    fn a_run_stops_at_its_event_count_and_after_the_text_that_passes_its_bytes() {
        let mut template = learned_raw();
        let body = [event("ab"), event("cd"), event("ef"), event("gh")].concat();
        assert_eq!(run(&mut template, &body, 2, 1000).1, "abcd");
        // 3 bytes allowed: the second text passes them and is the last taken.
        assert_eq!(run(&mut template, &body, 100, 3).1, "abcd");
        assert_eq!(run(&mut template, &body, 100, 4).1, "abcdef");
    }

    #[test]
    fn a_matching_event_teaches_its_raw_bytes_once() {
        let mut template = learned();
        let raw = event("zz");
        let data = &raw.as_bytes()["data: ".len()..raw.len() - 2];
        assert_eq!(
            template.matches(data, Some(raw.as_bytes())),
            Some((Piece::Text, "zz"))
        );
        assert_eq!(run(&mut template, event("a"), 100, 1000).1, "a");
    }

    #[test]
    fn anything_that_is_not_a_plain_string_in_the_same_place_is_not_matched() {
        let mut template = learned();
        for other in [
            // A quote would let the middle close the string and add fields.
            CHUNK.replace("tok ", r#"a","role":"x"#),
            CHUNK.replace("tok ", r"a\nb"),
            CHUNK.replace("tok ", "a\u{1}b"),
            CHUNK.replace("null", r#""stop""#),
            CHUNK.replace(r#""id":"c""#, r#""id":"d""#),
            format!("{CHUNK} "),
            "[DONE]".to_owned(),
        ] {
            assert_eq!(template.matches(other.as_bytes(), None), None, "{other}");
        }
    }

    #[test]
    fn plain_strings_are_borrowed_and_escaped_ones_decoded() {
        use std::borrow::Cow;
        #[derive(serde::Deserialize)]
        struct Delta<'a> {
            #[serde(default, borrow, deserialize_with = "borrowed_str")]
            content: Option<Cow<'a, str>>,
        }
        let plain: Delta = serde_json::from_str(r#"{"content":"tok "}"#).unwrap();
        assert!(matches!(plain.content, Some(Cow::Borrowed("tok "))));
        let escaped: Delta = serde_json::from_str(r#"{"content":"a\nb"}"#).unwrap();
        assert!(matches!(escaped.content, Some(Cow::Owned(text)) if text == "a\nb"));
        let missing: Delta = serde_json::from_str("{}").unwrap();
        assert!(missing.content.is_none());
        let null: Delta = serde_json::from_str(r#"{"content":null}"#).unwrap();
        assert!(null.content.is_none());
    }

    #[test]
    fn text_that_is_not_utf8_is_left_to_the_full_parse() {
        let mut template = learned();
        let at = CHUNK.find("tok ").unwrap();
        let mut bytes = CHUNK.as_bytes().to_vec();
        bytes[at] = 0xFF;
        assert_eq!(template.matches(&bytes, None), None);
    }

    #[test]
    fn text_that_is_not_borrowed_from_the_event_teaches_nothing() {
        let owned = String::from("tok ");
        assert!(DeltaTemplate::learn(CHUNK, None, &owned, Piece::Text).is_none());
        // Borrowed, but not the whole string between two quotes.
        let at = CHUNK.find("tok ").unwrap();
        assert!(DeltaTemplate::learn(CHUNK, None, &CHUNK[at..at + 2], Piece::Text).is_none());
    }
}
