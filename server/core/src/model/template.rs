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
}

impl DeltaTemplate {
    /// The shape of `data`, an event that a full parse found to carry nothing but `text` as
    /// a `piece`; `text` must be borrowed from `data` (a string without escapes), else
    /// there is no shape to learn.
    pub fn learn(data: &str, text: &str, piece: Piece) -> Option<Self> {
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
        Some(Self {
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            piece,
        })
    }

    /// The piece `data` carries when it has this shape. Only the text is checked as UTF-8:
    /// the bytes around it are those of an event that was.
    pub fn matches<'a>(&self, data: &'a [u8]) -> Option<(Piece, &'a str)> {
        let middle = data
            .strip_prefix(self.prefix.as_bytes())?
            .strip_suffix(self.suffix.as_bytes())?;
        let plain = middle
            .iter()
            .all(|&byte| byte >= 0x20 && byte != b'"' && byte != b'\\');
        if !plain {
            return None;
        }
        Some((self.piece, std::str::from_utf8(middle).ok()?))
    }
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
        DeltaTemplate::learn(CHUNK, &CHUNK[at..at + 4], Piece::Text).unwrap()
    }

    #[test]
    fn an_event_of_the_same_shape_gives_its_text() {
        let template = learned();
        let next = CHUNK.replace("tok ", "héllo wörld");
        assert_eq!(
            template.matches(next.as_bytes()),
            Some((Piece::Text, "héllo wörld"))
        );
        let empty = CHUNK.replace("tok ", "");
        assert_eq!(template.matches(empty.as_bytes()), Some((Piece::Text, "")));
    }

    #[test]
    fn anything_that_is_not_a_plain_string_in_the_same_place_is_not_matched() {
        let template = learned();
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
            assert_eq!(template.matches(other.as_bytes()), None, "{other}");
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
        let template = learned();
        let at = CHUNK.find("tok ").unwrap();
        let mut bytes = CHUNK.as_bytes().to_vec();
        bytes[at] = 0xFF;
        assert_eq!(template.matches(&bytes), None);
    }

    #[test]
    fn text_that_is_not_borrowed_from_the_event_teaches_nothing() {
        let owned = String::from("tok ");
        assert!(DeltaTemplate::learn(CHUNK, &owned, Piece::Text).is_none());
        // Borrowed, but not the whole string between two quotes.
        let at = CHUNK.find("tok ").unwrap();
        assert!(DeltaTemplate::learn(CHUNK, &CHUNK[at..at + 2], Piece::Text).is_none());
    }
}
