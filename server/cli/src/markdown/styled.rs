//! Styled text for a terminal: the inline styles as SGR sequences, and lines wrapped or cut
//! to a width with their style carried over.
//!
//! Every style change is written as one sequence that resets and then sets the whole
//! current style (`ESC[0;1;3m`), so the style in force at any point is the last sequence
//! before it. Wrapping relies on that: a line cut inside a styled span ends with a reset,
//! and the next line starts with the sequence again, so no style ever leaks into the
//! prefix of the next line (a quote's bar, a list's indent) or past the end of the text.

use unicode_width::UnicodeWidthChar;

pub const RESET: &str = "\x1b[0m";

/// The inline styles in force, counted so that nesting (`**a *b* c**`) ends right.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Inline {
    pub bold: u8,
    pub italic: u8,
    pub strike: u8,
    pub link: u8,
    pub code: u8,
    pub underline: u8,
    pub dim: u8,
}

impl Inline {
    /// The sequence that sets exactly this style.
    pub fn sgr(&self) -> String {
        let mut codes = String::from("\x1b[0");
        for (on, code) in [
            (self.bold > 0, ";1"),
            (self.dim > 0, ";2"),
            (self.italic > 0, ";3"),
            (self.underline > 0 || self.link > 0, ";4"),
            (self.strike > 0, ";9"),
            (self.code > 0, ";36"),
            (self.link > 0 && self.code == 0, ";34"),
        ] {
            if on {
                codes.push_str(code);
            }
        }
        codes.push('m');
        codes
    }
}

/// The display width of `text`, escape sequences not counted.
pub fn width(text: &str) -> usize {
    textwrap::core::display_width(text)
}

/// `text` word-wrapped to `width` columns (words longer than a line are broken), its first
/// line after `first`, the others after `rest` (prefixes, which may carry their own style;
/// at least one column is left for the text).
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let widest = self::width(first).max(self::width(rest));
    let options = textwrap::Options::new(width.max(widest + 1))
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(true)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    let mut carried = String::new();
    let mut lines = Vec::new();
    for (at, line) in textwrap::wrap(text, options).into_iter().enumerate() {
        let prefix = if at == 0 { first } else { rest };
        // The style in force goes after the prefix, which has its own.
        let line = line.strip_prefix(prefix).unwrap_or(&line);
        let mut out = String::with_capacity(prefix.len() + carried.len() + line.len() + 4);
        out.push_str(prefix);
        out.push_str(&carried);
        out.push_str(line);
        carried = last_style(line).map_or(carried, str::to_owned);
        if carried == RESET {
            carried.clear();
        }
        if !carried.is_empty() {
            out.push_str(RESET);
        }
        lines.push(out);
    }
    lines
}

/// `line` cut to `width` columns, with `…` where it was cut and, when it holds a style,
/// every style ended.
pub fn cut(line: &str, width: usize) -> String {
    if self::width(line) <= width {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len());
    let mut used = 0;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            out.push(c);
            for c in chars.by_ref() {
                out.push(c);
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    if line.contains('\x1b') {
        out.push_str(RESET);
    }
    out
}

/// The last SGR sequence in `text`, if any.
fn last_style(text: &str) -> Option<&str> {
    let start = text.rfind("\x1b[")?;
    let end = text[start..].find('m')?;
    Some(&text[start..=start + end])
}

/// Pads `text` with spaces to `width` columns.
pub fn pad(text: &str, width: usize) -> String {
    let mut out = text.to_owned();
    for _ in self::width(text)..width {
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_style_cut_by_wrapping_ends_on_its_line_and_starts_the_next() {
        let bold = Inline {
            bold: 1,
            ..Inline::default()
        };
        let text = format!("plain {}bold words here{RESET} end", bold.sgr());
        let lines = wrap(&text, 12, "> ", "> ");
        assert_eq!(
            lines,
            vec![
                format!("> plain {}bold{RESET}", bold.sgr()),
                format!("> {}words here{RESET}", bold.sgr()),
                "> end".to_owned(),
            ]
        );
        assert!(lines.iter().all(|line| width(line) <= 12));
    }

    #[test]
    fn cutting_counts_columns_not_escapes() {
        let line = format!("{}abcdef{RESET}", Inline::default().sgr());
        assert_eq!(width(&cut(&line, 4)), 4);
        assert_eq!(cut("ab", 4), "ab");
    }
}
