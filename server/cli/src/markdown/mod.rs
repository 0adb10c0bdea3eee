//! The assistant's answer as Markdown on a terminal, rendered as it streams.
//!
//! The answer is cut into blocks as it arrives, and each block is rendered once, whole,
//! when it is complete ([`blocks::render`]): that is what lets a table line up its columns
//! and a paragraph wrap at word boundaries, and it keeps rendering linear in the answer's
//! length. A block is complete at:
//! - a blank line followed by a line that starts at the left margin (an indented line
//!   after a blank one continues a list item);
//! - an ATX heading (`# ...`), which is a block of its own, or the start of a fenced code
//!   block;
//! - [`FORCE_LINES`] lines without either (a table that long goes on as another table with
//!   its header repeated).
//!
//! Fenced code is not held back: each line is written, highlighted, as soon as it ends.
//! The block still being written is shown by [`Markdown::preview`] in the terminal's live
//! region, so the person sees it grow; it is printed for good once complete.
//!
//! The text has already been neutralised (no control characters but newlines and tabs), so
//! the only escape sequences written are the styles added here.

mod blocks;
mod highlight;
mod styled;
mod table;

pub use highlight::warm_up;
pub use styled::{cut, wrap};

use highlight::Highlighter;

/// The most lines a block is held back before it is written anyway.
pub const FORCE_LINES: usize = 200;
/// The most bytes of a block still being written that the preview renders: its end.
const PREVIEW_BYTES: usize = 4096;

/// The rendering state between deltas.
pub struct Markdown {
    color: bool,
    /// The current block's complete lines, then the line being written.
    pending: String,
    /// Where the line being written starts in `pending`.
    scanned: usize,
    /// How many lines the current block has.
    block_lines: usize,
    /// The current block was followed by a blank line: it is complete once a line starts
    /// at the left margin.
    blank_after: bool,
    fence: Option<Fence>,
    /// Something was written: an empty line goes between it and the next block.
    wrote: bool,
    /// A blank line separated the last block from the next one.
    gap: bool,
    /// The header of a table written in parts, repeated before its next part.
    table_header: Option<String>,
}

/// An open fenced code block.
struct Fence {
    marker: char,
    length: usize,
    indent: usize,
    highlighter: Highlighter,
}

impl Markdown {
    /// Styles with colour when `color`; otherwise only the structure.
    pub fn new(color: bool) -> Self {
        Self {
            color,
            pending: String::new(),
            scanned: 0,
            block_lines: 0,
            blank_after: false,
            fence: None,
            wrote: false,
            gap: false,
            table_header: None,
        }
    }

    /// Takes `delta`; appends to `out` the lines of every block it completed, each ending
    /// with a newline, wrapped to `width`.
    pub fn push(&mut self, delta: &str, width: usize, out: &mut String) {
        self.pending.push_str(delta);
        while let Some(end) = self.pending[self.scanned..].find('\n') {
            let end = self.scanned + end;
            self.line(end, width, out);
        }
        // A block followed by a blank line is complete as soon as the next line shows
        // that it starts at the margin.
        let next = &self.pending[self.scanned..];
        if self.blank_after && next.starts_with(|c: char| !c.is_whitespace()) {
            self.commit(self.scanned, width, out);
        }
    }

    /// Ends the answer: whatever is held back is written.
    pub fn finish(&mut self, width: usize, out: &mut String) {
        if let Some(fence) = &mut self.fence {
            let rest = &self.pending[self.scanned..];
            if !rest.is_empty() {
                out.push_str(&fence.highlighter.line(strip_indent(rest, fence.indent)));
                out.push('\n');
            }
            self.pending.clear();
        }
        self.fence = None;
        let end = self.pending.len();
        self.commit(end, width, out);
        *self = Self::new(self.color);
    }

    /// The block being written as it would be shown now, its last `rows` lines at most, each
    /// cut to `width`.
    pub fn preview(&self, width: usize, rows: usize) -> Vec<String> {
        if let Some(fence) = &self.fence {
            let rest = &self.pending[self.scanned..];
            if rest.is_empty() {
                return Vec::new();
            }
            return vec![cut(strip_indent(rest, fence.indent), width)];
        }
        if self.pending.trim().is_empty() {
            return Vec::new();
        }
        let mut start = self.pending.len().saturating_sub(PREVIEW_BYTES);
        while !self.pending.is_char_boundary(start) {
            start += 1;
        }
        let lines = blocks::render(&self.pending[start..], width, self.color);
        let skip = lines.len().saturating_sub(rows);
        lines
            .into_iter()
            .skip(skip)
            .map(|line| cut(&line, width))
            .collect()
    }

    /// Handles the complete line that ends at `end` (its newline).
    fn line(&mut self, end: usize, width: usize, out: &mut String) {
        let start = self.scanned;
        let line = &self.pending[start..end];
        if let Some(fence) = &mut self.fence {
            if closes(line, fence.marker, fence.length) {
                if !self.color {
                    out.push_str(line.trim_start());
                    out.push('\n');
                }
                self.fence = None;
                self.wrote = true;
            } else {
                out.push_str(&fence.highlighter.line(strip_indent(line, fence.indent)));
                out.push('\n');
            }
            self.pending.drain(..=end);
            self.scanned = 0;
            return;
        }
        if line.trim().is_empty() {
            if self.block_lines > 0 {
                self.blank_after = true;
                self.scanned = end + 1;
            } else {
                self.pending.drain(..=end);
                self.scanned = 0;
                self.gap = true;
                // A blank line ends a table written in parts.
                self.table_header = None;
            }
            return;
        }
        if self.blank_after && !line.starts_with(char::is_whitespace) {
            self.commit(start, width, out);
            return;
        }
        let line = &self.pending[start..end];
        if let Some(fence) = opens_fence(line) {
            self.commit(start, width, out);
            let (marker, length, indent, language) = fence;
            if !self.color {
                self.separate(out);
                out.push_str(self.pending[..end - start].trim_start());
                out.push('\n');
            } else {
                self.separate(out);
            }
            self.fence = Some(Fence {
                marker,
                length,
                indent,
                highlighter: Highlighter::new(&language, self.color),
            });
            self.wrote = true;
            self.pending.drain(..=end - start);
            self.scanned = 0;
            return;
        }
        if is_heading(line) {
            self.commit(start, width, out);
            let end = end - start;
            self.scanned = end + 1;
            self.block_lines = 1;
            self.commit(end + 1, width, out);
            return;
        }
        self.blank_after = false;
        self.block_lines += 1;
        self.scanned = end + 1;
        if self.block_lines >= FORCE_LINES {
            self.force(width, out);
        }
    }

    /// Writes the block that is too long to wait for its end, and keeps a table's header
    /// for the part that follows.
    fn force(&mut self, width: usize, out: &mut String) {
        let header = self
            .table_header
            .clone()
            .or_else(|| table_header(&self.pending));
        self.commit(self.scanned, width, out);
        self.table_header = header;
    }

    /// Writes the first `end` bytes of `pending` as a complete block, and drops them.
    fn commit(&mut self, end: usize, width: usize, out: &mut String) {
        let source: String = self.pending.drain(..end).collect();
        self.scanned -= end.min(self.scanned);
        self.block_lines = 0;
        let blank_after = std::mem::take(&mut self.blank_after);
        if source.trim().is_empty() {
            return;
        }
        let source = match self.table_header.take() {
            Some(header) => format!("{header}{source}"),
            None => source,
        };
        self.separate(out);
        for line in blocks::render(&source, width, self.color) {
            out.push_str(&line);
            out.push('\n');
        }
        self.wrote = true;
        self.gap = blank_after;
    }

    /// Before a block: an empty line, if the source had one since the last block.
    fn separate(&mut self, out: &mut String) {
        if std::mem::take(&mut self.gap) && self.wrote {
            out.push('\n');
        }
    }
}

/// A fence that opens a code block: its marker, length, indent and language.
fn opens_fence(line: &str) -> Option<(char, usize, usize, String)> {
    let trimmed = line.trim_start_matches(' ');
    let indent = line.len() - trimmed.len();
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let length = trimmed.chars().take_while(|c| *c == marker).count();
    if length < 3 {
        return None;
    }
    let info = trimmed[length..].trim();
    if marker == '`' && info.contains('`') {
        return None;
    }
    Some((marker, length, indent, info.to_owned()))
}

/// Whether `line` closes a fence of `length` `marker`s.
fn closes(line: &str, marker: char, length: usize) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return false;
    }
    let count = trimmed.chars().take_while(|c| *c == marker).count();
    count >= length && trimmed[count..].trim().is_empty()
}

/// An ATX heading: up to three spaces, one to six `#`, then a space or the end.
fn is_heading(line: &str) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return false;
    }
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&hashes)
        && trimmed[hashes..]
            .chars()
            .next()
            .is_none_or(|c| c == ' ' || c == '\t')
}

/// The header and delimiter rows, when `source` starts with a table.
fn table_header(source: &str) -> Option<String> {
    let mut lines = source.split_inclusive('\n');
    let (header, delimiter) = (lines.next()?, lines.next()?);
    let is_delimiter = delimiter.contains('-')
        && delimiter
            .trim()
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'));
    (header.contains('|') && is_delimiter).then(|| format!("{header}{delimiter}"))
}

/// `line` without up to `indent` leading spaces (a fence's indent, as CommonMark strips it).
fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.chars().take(indent).take_while(|c| *c == ' ').count();
    &line[spaces..]
}

#[cfg(test)]
mod tests;
