//! A Markdown table laid out in columns with box-drawing borders: each column as wide as
//! its widest cell, the widest columns narrowed (their cells wrapped) until the table fits
//! the width.

use pulldown_cmark::Alignment;

use super::blocks::align;
use super::styled::{self, RESET};

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";

/// The narrowest a column is made.
const MIN_COLUMN: usize = 3;

/// A table's cells, read row by row.
pub struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<String>>,
    row: Vec<String>,
}

impl Table {
    pub fn new(alignments: Vec<Alignment>) -> Self {
        Self {
            alignments,
            rows: Vec::new(),
            row: Vec::new(),
        }
    }

    pub fn cell(&mut self, text: String) {
        self.row.push(text.trim().to_owned());
    }

    pub fn end_row(&mut self) {
        let row = std::mem::take(&mut self.row);
        self.rows.push(row);
    }

    /// The table's lines, at most `width` columns wide when the width leaves each column
    /// one (columns are kept [`MIN_COLUMN`] wide while they can be); the first row is the
    /// header.
    pub fn render(self, width: usize, color: bool) -> Vec<String> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return Vec::new();
        }
        let mut widths = vec![1; columns];
        for row in &self.rows {
            for (at, cell) in row.iter().enumerate() {
                widths[at] = widths[at].max(styled::width(cell));
            }
        }
        // "│ " before each column, " │" after the last.
        let room = width.saturating_sub(3 * columns + 1);
        // Down to MIN_COLUMN first; a terminal narrower still gets columns of one.
        for floor in [MIN_COLUMN, 1] {
            while widths.iter().sum::<usize>() > room {
                let Some((widest, _)) = widths
                    .iter()
                    .enumerate()
                    .filter(|(_, width)| **width > floor)
                    .max_by_key(|(_, width)| **width)
                else {
                    break;
                };
                widths[widest] -= 1;
            }
        }
        let (dim, undim) = if color { (DIM, RESET) } else { ("", "") };
        let border = |left: &str, middle: &str, right: &str| {
            let parts: Vec<String> = widths.iter().map(|width| "─".repeat(width + 2)).collect();
            format!("{dim}{left}{}{right}{undim}", parts.join(middle))
        };
        let mut lines = vec![border("┌", "┬", "┐")];
        for (index, row) in self.rows.iter().enumerate() {
            let header = index == 0;
            let cells: Vec<Vec<String>> = (0..columns)
                .map(|at| {
                    let text = row.get(at).map_or("", String::as_str);
                    let text = if header && color {
                        format!("{BOLD}{text}{RESET}")
                    } else {
                        text.to_owned()
                    };
                    styled::wrap(&text, widths[at], "", "")
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(0).max(1);
            for line in 0..height {
                let mut out = format!("{dim}│{undim}");
                for (at, cell) in cells.iter().enumerate() {
                    let text = cell.get(line).map_or("", String::as_str);
                    let alignment = self.alignments.get(at).copied().unwrap_or(Alignment::None);
                    out.push(' ');
                    out.push_str(&align(alignment, text, widths[at]));
                    out.push_str(&format!(" {dim}│{undim}"));
                }
                lines.push(out);
            }
            if header {
                lines.push(border("├", "┼", "┤"));
            }
        }
        lines.push(border("└", "┴", "┘"));
        lines
    }
}
