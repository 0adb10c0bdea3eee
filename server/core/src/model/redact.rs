//! Keeping the API key out of what a provider sends back.
//!
//! A provider's error body may quote the request's credentials (a proxy that echoes the
//! headers, a server that says which key it refused). Those messages become `warning` and
//! `error` events, lines on stderr and entries in the session file, so the client removes
//! the key from every message before it leaves: the exact key wherever it appears (when it
//! is long enough to be told from ordinary text), and any `Bearer <token>` whatever the
//! token.

pub(crate) use crate::secrets::{REDACTED, redact_values};

/// `message` without `key` (when there is one long enough, see [`redact_values`]) and
/// without the token of any `Bearer <token>`.
pub(crate) fn redact(message: String, key: Option<&str>) -> String {
    redact_bearer(redact_values(message, key.into_iter()))
}

/// Replaces the token after each `Bearer ` (any case) up to the next space, quote or comma.
fn redact_bearer(message: String) -> String {
    const WORD: &str = "bearer ";
    let lower = message.to_ascii_lowercase();
    if !lower.contains(WORD) {
        return message;
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = 0;
    while let Some(found) = lower[rest..].find(WORD) {
        let token_start = rest + found + WORD.len();
        let token_len = message[token_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']' | '\\'))
            .unwrap_or(message.len() - token_start);
        out.push_str(&message[rest..token_start]);
        if token_len > 0 {
            out.push_str(REDACTED);
        }
        rest = token_start + token_len;
    }
    out.push_str(&message[rest..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_key_and_bearer_tokens_are_removed() {
        let key = Some("sk-live-123");
        assert_eq!(
            redact("bad key sk-live-123 (sk-live-123)".into(), key),
            "bad key [redacted] ([redacted])"
        );
        assert_eq!(
            redact(
                r#"{"echo":"Authorization: Bearer sk-other-9","x":1}"#.into(),
                None
            ),
            r#"{"echo":"Authorization: Bearer [redacted]","x":1}"#
        );
        assert_eq!(
            redact("BEARER abc and bearer def".into(), None),
            "BEARER [redacted] and bearer [redacted]"
        );
        assert_eq!(redact("nothing here".into(), Some("")), "nothing here");
        // A placeholder key is not looked for: it would garble ordinary words.
        assert_eq!(
            redact("cannot reach http://example.com/v1".into(), Some("x")),
            "cannot reach http://example.com/v1"
        );
        assert_eq!(
            redact("the key none-of-it".into(), Some("none")),
            "the key none-of-it"
        );
        assert_eq!(
            redact("ends with Bearer ".into(), None),
            "ends with Bearer "
        );
    }
}
