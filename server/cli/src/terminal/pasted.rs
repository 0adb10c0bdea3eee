//! Large pastes: a paste of more than [`LINES`] lines or [`CHARS`] characters shows as one
//! placeholder (`[pasted 3,000 lines]`) where it was put, at the prompt and in the line
//! typed during a task, and the line is sent with the paste whole in its place. A
//! placeholder edited away is just text; one typed by hand that names no paste of this
//! session is sent as typed.

use std::sync::{Arc, Mutex};

use coder_core::numbers::grouped;

/// More lines than this, and a paste is shown as a placeholder.
const LINES: usize = 10;
/// More characters than this (on fewer lines), likewise.
const CHARS: usize = 1_000;

/// The pastes of a session that were shown as placeholders, shared by the prompt and the
/// line typed during a task.
#[derive(Clone, Default)]
pub struct Pastes {
    shown: Arc<Mutex<Vec<(String, String)>>>,
}

impl Pastes {
    fn shown(&self) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
        self.shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What a paste of `text` puts in the line: the text itself (line breaks as the
    /// terminal sent them made `\n`), or a placeholder for a large one.
    pub fn put(&self, text: &str) -> String {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        let chars = text.chars().count();
        if lines <= LINES && chars <= CHARS {
            return text;
        }
        let mut shown = self.shown();
        let size = if lines > 1 {
            format!("{} lines", grouped(lines as u64))
        } else {
            format!("{} characters", grouped(chars as u64))
        };
        let placeholder = if shown.is_empty() {
            format!("[pasted {size}]")
        } else {
            format!("[pasted {size} #{}]", shown.len() + 1)
        };
        shown.push((placeholder.clone(), text));
        placeholder
    }

    /// `line` with every placeholder in it replaced by its paste, in one pass: a paste that
    /// holds a placeholder's text is sent as it was pasted.
    pub fn expand(&self, line: &str) -> String {
        let shown = self.shown();
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(at) = rest.find("[pasted ") {
            out.push_str(&rest[..at]);
            rest = &rest[at..];
            match shown
                .iter()
                .find(|(placeholder, _)| rest.starts_with(placeholder.as_str()))
            {
                Some((placeholder, text)) => {
                    out.push_str(text);
                    rest = &rest[placeholder.len()..];
                }
                None => {
                    out.push('[');
                    rest = &rest[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_paste_is_put_as_it_is_and_a_large_one_as_a_placeholder_sent_whole() {
        let pastes = Pastes::default();
        assert_eq!(pastes.put("one\r\ntwo"), "one\ntwo");
        let big: String = (1..=3_000).map(|n| format!("line {n}\n")).collect();
        let shown = pastes.put(&big);
        assert_eq!(shown, "[pasted 3,000 lines]");
        let long = "x".repeat(1_500);
        assert_eq!(pastes.put(&long), "[pasted 1,500 characters #2]");
        let line = format!("explain {shown} and [pasted 1,500 characters #2]");
        assert_eq!(pastes.expand(&line), format!("explain {big} and {long}"));
        // Edited away, or typed by hand: text as it is.
        assert_eq!(pastes.expand("[pasted 3,000 line]"), "[pasted 3,000 line]");
        assert_eq!(pastes.expand("[pasted 7 lines]"), "[pasted 7 lines]");
    }

    #[test]
    fn a_paste_of_many_placeholders_expands_each_once() {
        let pastes = Pastes::default();
        let shown: Vec<String> = (0..12)
            .map(|n| pastes.put(&format!("{n}\n").repeat(20)))
            .collect();
        assert_eq!(shown[11], "[pasted 20 lines #12]");
        assert_eq!(pastes.expand(&shown[11]), "11\n".repeat(20));
        assert_eq!(pastes.expand(&shown[0]), "0\n".repeat(20));
        // A paste that holds a placeholder's text is sent as pasted.
        let holds = pastes.put(&format!("{}\n", shown[0]).repeat(11));
        assert_eq!(pastes.expand(&holds), format!("{}\n", shown[0]).repeat(11));
    }
}
