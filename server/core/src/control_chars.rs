//! Making untrusted text safe to print on a terminal.
//!
//! Text from the model, from tools and from files may carry bytes a terminal obeys rather
//! than shows: escape sequences (CSI cursor movement and line erasure, OSC 52 clipboard
//! writes, OSC 0 title changes, DCS), `\r` and backspace that overwrite what was printed,
//! C1 controls (which some terminals take as CSI/OSC on their own) and bidirectional
//! overrides that make a line read differently from what it is. Printed raw, a command's
//! output could erase coder's approval prompt and print a harmless-looking fake one.
//!
//! [`neutralize`] shows each such character visibly instead, one character at a time: C0
//! controls in caret notation (`\x1b` as `^[`, `\x07` as `^G`, `\r` as `^M`, DEL as `^?`),
//! C1 controls and bidi controls as `\u{…}`. It keeps no state, so text cut into streamed
//! pieces is neutralised the same as whole, and a sequence split across two pieces is still
//! shown, never obeyed. `\n` and `\t` pass, and so does `\r\n`, the line ending of
//! Windows files, which moves nothing. Every front door that writes to a terminal uses it on
//! the text it did not write itself, and adds its own colouring afterwards.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character shown visibly instead of obeyed; borrowed when there
/// is none (the common case costs one scan).
pub fn neutralize(text: &str) -> Cow<'_, str> {
    if !has_control(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => out.push(c),
            '\u{0}'..='\u{1f}' => {
                out.push('^');
                out.push(char::from(c as u8 ^ 0x40));
            }
            '\u{7f}' => out.push_str("^?"),
            c if is_c1(c) || is_bidi_control(c) => {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether `text` holds anything [`neutralize`] would change.
pub fn has_control(text: &str) -> bool {
    if !text.bytes().any(may_start_control) {
        return false;
    }
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let shown = match c {
            '\n' | '\t' => false,
            '\r' => chars.peek() != Some(&'\n'),
            c => c.is_ascii_control() || is_c1(c) || is_bidi_control(c),
        };
        if shown {
            return true;
        }
    }
    false
}

/// A byte that is, or may begin the UTF-8 encoding of, a character [`neutralize`] changes:
/// C0 controls but `\n` and `\t`, DEL, the lead byte of U+0080–U+00BF (C1 controls), and the
/// lead byte of U+2000–U+2FFF (bidi controls). A false positive only costs the slow path.
fn may_start_control(byte: u8) -> bool {
    (byte < 0x20 && byte != b'\n' && byte != b'\t') || byte == 0x7f || byte == 0xc2 || byte == 0xe2
}

/// C1 controls, U+0080–U+009F: `\u{9b}` is CSI and `\u{9d}` OSC on terminals that take
/// 8-bit controls.
fn is_c1(c: char) -> bool {
    ('\u{80}'..='\u{9f}').contains(&c)
}

/// Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): they
/// reorder what follows them, so a line can read differently from what it holds.
fn is_bidi_control(c: char) -> bool {
    ('\u{202a}'..='\u{202e}').contains(&c) || ('\u{2066}'..='\u{2069}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn check(input: &str, shown: &str) {
        assert_eq!(neutralize(input), shown, "input {input:?}");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for text in [
            "",
            "hello\n\tworld",
            "héllo — “quoted” 日本語 🚀",
            "a\r\nb\r\n",
        ] {
            let shown = neutralize(text);
            assert!(matches!(shown, Cow::Borrowed(_)), "{text:?}");
            assert_eq!(shown, text);
            assert!(!has_control(text));
        }
    }

    #[test]
    fn escape_sequences_and_controls_are_shown_not_obeyed() {
        check("\x1b]52;c;ZXZpbA==\x07", "^[]52;c;ZXZpbA==^G");
        check("\x1b]0;title\x07", "^[]0;title^G");
        check("\x1b[2K\rfake prompt", "^[[2K^Mfake prompt");
        check("\x1bP1$r\x1b\\", "^[P1$r^[\\");
        check("abc\x08\x08\x08xyz", "abc^H^H^Hxyz");
        check("\0\x7f", "^@^?");
        check("\u{9b}2J\u{9d}0;t\u{9c}", "\\u{9b}2J\\u{9d}0;t\\u{9c}");
        check("a\u{202e}cba\u{202c}", "a\\u{202e}cba\\u{202c}");
        check("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}");
        // A lone `\r` at the end, or before anything but `\n`, overwrites: shown.
        check("done\r", "done^M");
        // Characters whose encoding shares a lead byte with a control pass unchanged.
        check("é — ’", "é — ’");
    }

    #[test]
    fn a_sequence_split_across_pieces_is_neutralised_in_each() {
        let whole = "\x1b]52;c;abc\x07";
        let (a, b) = whole.split_at(3);
        assert_eq!(
            format!("{}{}", neutralize(a), neutralize(b)),
            neutralize(whole)
        );
        assert!(!neutralize(whole).contains('\x1b'));
        assert!(has_control(whole) && !has_control("ok\n"));
    }
}
