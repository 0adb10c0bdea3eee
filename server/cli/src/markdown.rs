//! The assistant's text as Markdown on a colour terminal, styled as it streams: each delta
//! is written at once, so nothing waits for a line to end.
//!
//! What is styled: `#` headings (bold), `**bold**` (markers dropped), `` `code` `` (markers
//! dropped, cyan), fenced code blocks (fences dim, code green, nothing inside interpreted),
//! `-`/`*`/`+` bullets (shown as `•`) and `>` quotes (shown as a dim bar). Everything else
//! passes through unchanged. A line's start is held back only while it could still be one
//! of these markers (at most a few characters).
//!
//! The text has already been neutralised (no control characters but newlines and tabs), so
//! the only escape sequences written are the styles added here.

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const CYAN: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";

/// The styling state between deltas.
#[derive(Default)]
pub struct Markdown {
    /// The start of the current line while it could still be a marker.
    head: String,
    /// Whether the current line's start is settled.
    settled: bool,
    fence: bool,
    /// The current line is a heading, a fence line or a quote: its style lasts to its end.
    line_style: Option<&'static str>,
    bold: bool,
    code: bool,
    /// A `*` that may be the first of `**`.
    star: bool,
}

impl Markdown {
    /// Styles `delta`, appending the result to `out`.
    pub fn push(&mut self, delta: &str, out: &mut String) {
        for c in delta.chars() {
            self.char(c, out);
        }
    }

    /// Ends the text: whatever is held back is written and every style reset.
    pub fn finish(&mut self, out: &mut String) {
        if !self.settled && !self.head.is_empty() {
            let head = std::mem::take(&mut self.head);
            self.settled = true;
            for c in head.chars() {
                self.inline(c, out);
            }
        }
        self.flush_star(out);
        if self.bold || self.code || self.line_style.is_some() || self.fence {
            out.push_str(RESET);
        }
        *self = Self::default();
    }

    fn char(&mut self, c: char, out: &mut String) {
        if c == '\n' {
            if !self.settled {
                let head = std::mem::take(&mut self.head);
                self.settle(&head, true, out);
            }
            self.flush_star(out);
            if self.bold || self.code || self.line_style.is_some() {
                out.push_str(RESET);
            }
            self.bold = false;
            self.code = false;
            self.line_style = None;
            self.settled = false;
            out.push('\n');
            return;
        }
        if self.settled {
            self.inline(c, out);
            return;
        }
        self.head.push(c);
        let head = self.head.clone();
        if could_be_marker(&head, self.fence) {
            if is_marker(&head, self.fence) {
                self.head.clear();
                self.settle(&head, false, out);
            }
            return;
        }
        self.head.clear();
        self.settle(&head, false, out);
    }

    /// Settles the line's start `head`: a complete marker, or ordinary text.
    fn settle(&mut self, head: &str, at_line_end: bool, out: &mut String) {
        self.settled = true;
        let indent_len = head.len() - head.trim_start_matches(' ').len();
        let (indent, marker) = head.split_at(indent_len);
        out.push_str(indent);
        if marker.starts_with("```") {
            self.fence = !self.fence;
            self.line_style = Some(DIM);
            out.push_str(DIM);
            out.push_str(marker);
            return;
        }
        if self.fence {
            self.line_style = Some(GREEN);
            out.push_str(GREEN);
            out.push_str(marker);
            return;
        }
        if !at_line_end && is_marker(head, false) {
            if marker.starts_with('#') {
                self.line_style = Some(BOLD);
                out.push_str(BOLD);
                out.push_str(marker);
            } else if marker.starts_with('>') {
                out.push_str(DIM);
                out.push_str("│ ");
                out.push_str(RESET);
            } else if marker.starts_with(['-', '*', '+']) {
                out.push_str("• ");
            } else {
                out.push_str(marker);
            }
            return;
        }
        for c in marker.chars() {
            self.inline(c, out);
        }
    }

    fn inline(&mut self, c: char, out: &mut String) {
        if self.fence {
            if self.line_style.is_none() {
                self.line_style = Some(GREEN);
                out.push_str(GREEN);
            }
            out.push(c);
            return;
        }
        if c == '*' && !self.code {
            if self.star {
                self.star = false;
                self.bold = !self.bold;
                out.push_str(if self.bold { BOLD } else { RESET });
                self.restyle(out);
            } else {
                self.star = true;
            }
            return;
        }
        self.flush_star(out);
        if c == '`' {
            self.code = !self.code;
            out.push_str(if self.code { CYAN } else { RESET });
            self.restyle(out);
            return;
        }
        out.push(c);
    }

    /// After a reset inside a line: the styles still on, again.
    fn restyle(&self, out: &mut String) {
        if let Some(style) = self.line_style {
            out.push_str(style);
        }
        if self.bold {
            out.push_str(BOLD);
        }
        if self.code {
            out.push_str(CYAN);
        }
    }

    fn flush_star(&mut self, out: &mut String) {
        if std::mem::take(&mut self.star) {
            out.push('*');
        }
    }
}

/// Whether `head` (the start of a line) may still grow into a block marker.
fn could_be_marker(head: &str, fence: bool) -> bool {
    let marker = head.trim_start_matches(' ');
    if head.len() - marker.len() > 8 {
        return false;
    }
    if marker.is_empty() {
        return true;
    }
    if "```".starts_with(marker) || marker.starts_with("```") && marker.len() == 3 {
        return true;
    }
    if fence {
        return false;
    }
    let hashes = marker.len() - marker.trim_start_matches('#').len();
    if hashes > 0 {
        return hashes <= 6 && (marker.len() == hashes || marker[hashes..] == *" ");
    }
    let digits = marker.len()
        - marker
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    if digits > 0 {
        let rest = &marker[digits..];
        return digits <= 3 && (rest.is_empty() || rest == "." || rest == ". ");
    }
    matches!(marker, "-" | "*" | "+" | ">" | "- " | "* " | "+ " | "> ")
}

/// Whether `head` is a complete block marker.
fn is_marker(head: &str, fence: bool) -> bool {
    let marker = head.trim_start_matches(' ');
    if marker == "```" {
        return true;
    }
    if fence {
        return false;
    }
    let hashes = marker.len() - marker.trim_start_matches('#').len();
    (hashes > 0 && hashes <= 6 && marker.len() == hashes + 1 && marker.ends_with(' '))
        || (marker.ends_with(". ")
            && marker.len() > 2
            && marker[..marker.len() - 2]
                .chars()
                .all(|c| c.is_ascii_digit()))
        || matches!(marker, "- " | "* " | "+ " | "> ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders `deltas` and strips the styles, to compare what shows.
    fn shown(deltas: &[&str]) -> (String, String) {
        let mut md = Markdown::default();
        let mut out = String::new();
        for delta in deltas {
            md.push(delta, &mut out);
        }
        md.finish(&mut out);
        let mut plain = String::new();
        let mut chars = out.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                plain.push(c);
            }
        }
        (plain, out)
    }

    #[test]
    fn inline_markers_are_dropped_and_blocks_keep_their_text() {
        let (plain, styled) = shown(&["# Title\nSome **bold** and `code`.\n- one\n* two\n"]);
        assert_eq!(plain, "# Title\nSome bold and code.\n• one\n• two\n");
        assert!(styled.contains("\x1b[1m# Title"), "{styled:?}");
        assert!(styled.contains("\x1b[36mcode"), "{styled:?}");
    }

    #[test]
    fn deltas_split_anywhere_render_the_same() {
        let text = "## Plan\n1. read `a.rs`\n> note **x**\n```rust\nlet a = `b`; // **no**\n```\nend *star* 3 * 4\n";
        let (whole, _) = shown(&[text]);
        for split in 1..text.len() {
            if !text.is_char_boundary(split) {
                continue;
            }
            let (a, b) = text.split_at(split);
            assert_eq!(shown(&[a, b]).0, whole, "split at {split}");
        }
        assert_eq!(
            whole,
            "## Plan\n1. read a.rs\n│ note x\n```rust\nlet a = `b`; // **no**\n```\nend *star* 3 * 4\n"
        );
    }

    #[test]
    fn text_that_only_looks_like_a_marker_is_left_alone() {
        let (plain, _) = shown(&["#hashtag\n-5 degrees\n2024 was\n    indented\n"]);
        assert_eq!(plain, "#hashtag\n-5 degrees\n2024 was\n    indented\n");
    }

    /// Seeded fuzz: model text made of Markdown's own characters, split into deltas at
    /// random places, renders exactly as the whole text does, and writes no escape
    /// sequence but the styles.
    #[test]
    fn any_text_split_anywhere_renders_as_the_whole() {
        const ALPHABET: &[&str] = &[
            "#", "##", " ", "-", "*", "**", "`", "```", ">", "1", ".", "\n", "a", "é", "+", "\t",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for _ in 0..2_000 {
            let text: String = (0..next(40))
                .map(|_| ALPHABET[next(ALPHABET.len())])
                .collect();
            let (whole, styled) = shown(&[&text]);
            let mut deltas = Vec::new();
            let mut rest = text.as_str();
            while !rest.is_empty() {
                let mut cut = 1 + next(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                let (delta, after) = rest.split_at(cut);
                deltas.push(delta);
                rest = after;
            }
            assert_eq!(shown(&deltas).0, whole, "{text:?} as {deltas:?}");
            assert!(
                styled
                    .split('\x1b')
                    .skip(1)
                    .all(|sequence| sequence.starts_with('[') && sequence.contains('m')),
                "{styled:?}"
            );
        }
    }

    #[test]
    fn an_unfinished_line_is_written_at_the_end() {
        // A bullet is settled as soon as its marker is complete.
        assert_eq!(shown(&["- "]).0, "• ");
        assert_eq!(shown(&["ends with *"]).0, "ends with *");
        assert_eq!(shown(&["##"]).0, "##");
    }
}
