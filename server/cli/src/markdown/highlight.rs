//! Code blocks coloured by their language, with syntect's grammars and one of its themes,
//! a line at a time (a block streams line by line, and the highlighter keeps its state
//! between lines).
//!
//! The grammars and the theme are loaded once, on the first code block. A language
//! syntect does not know is shown in the theme's plain colour. Colours are written as
//! 24-bit when the terminal says it takes them (`COLORTERM=truecolor` or `24bit`), else as
//! the nearest of the 256-colour palette, which every terminal in use takes.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{Color, FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::styled::RESET;

/// The theme: readable on the dark backgrounds most terminals have.
const THEME: &str = "base16-ocean.dark";

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn assets() -> Option<&'static Assets> {
    static ASSETS: OnceLock<Option<Assets>> = OnceLock::new();
    ASSETS
        .get_or_init(|| {
            let syntaxes = SyntaxSet::load_defaults_newlines();
            let theme = ThemeSet::load_defaults().themes.remove(THEME)?;
            Some(Assets { syntaxes, theme })
        })
        .as_ref()
}

/// Loads the grammars and the theme on a thread of their own, so that the first code block
/// does not wait for them.
pub fn warm_up() {
    let _ = std::thread::Builder::new()
        .name("coder-highlight".to_owned())
        .spawn(|| {
            assets();
        });
}

/// One code block's highlighter.
pub struct Highlighter {
    lines: Option<HighlightLines<'static>>,
    truecolor: bool,
}

impl Highlighter {
    /// A highlighter for code in `language` (a fence's info string: its first word counts),
    /// or one that leaves lines as they are when `color` is off.
    pub fn new(language: &str, color: bool) -> Self {
        let lines = color.then(assets).flatten().map(|assets| {
            let token = language.split_whitespace().next().unwrap_or("");
            let syntax = assets
                .syntaxes
                .find_syntax_by_token(token)
                .unwrap_or_else(|| assets.syntaxes.find_syntax_plain_text());
            HighlightLines::new(syntax, &assets.theme)
        });
        let truecolor =
            std::env::var("COLORTERM").is_ok_and(|value| value == "truecolor" || value == "24bit");
        Self { lines, truecolor }
    }

    /// One line of code (without its newline), styled.
    pub fn line(&mut self, line: &str) -> String {
        let (Some(lines), Some(assets)) = (self.lines.as_mut(), assets()) else {
            return line.to_owned();
        };
        let with_newline = format!("{line}\n");
        let Ok(regions) = lines.highlight_line(&with_newline, &assets.syntaxes) else {
            return line.to_owned();
        };
        let mut out = String::with_capacity(line.len() * 2);
        for (style, text) in regions {
            let text = text.trim_end_matches('\n');
            if text.is_empty() {
                continue;
            }
            out.push_str("\x1b[0");
            if style.font_style.contains(FontStyle::BOLD) {
                out.push_str(";1");
            }
            if style.font_style.contains(FontStyle::ITALIC) {
                out.push_str(";3");
            }
            out.push_str(&self.foreground(style.foreground));
            out.push('m');
            out.push_str(text);
        }
        out.push_str(RESET);
        out
    }

    fn foreground(&self, color: Color) -> String {
        if self.truecolor {
            format!(";38;2;{};{};{}", color.r, color.g, color.b)
        } else {
            format!(";38;5;{}", palette_index(color))
        }
    }
}

/// The nearest colour of the 6x6x6 cube of the 256-colour palette.
fn palette_index(color: Color) -> u8 {
    let level = |value: u8| -> u8 {
        match value {
            0..48 => 0,
            48..115 => 1,
            _ => (value - 35) / 40,
        }
    };
    16 + 36 * level(color.r) + 6 * level(color.g) + level(color.b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_language_is_coloured_and_an_unknown_one_is_kept_whole() {
        let mut rust = Highlighter::new("rust", true);
        let line = rust.line("fn main() {}");
        assert!(line.contains("\x1b[0;38;"), "{line:?}");
        assert_eq!(super::super::styled::width(&line), "fn main() {}".len());
        let mut plain = Highlighter::new("no-such-language", false);
        assert_eq!(plain.line("fn main() {}"), "fn main() {}");
    }

    #[test]
    fn the_palette_spans_black_to_white() {
        let black = Color {
            r: 0,
            g: 0,
            b: 0,
            a: 255,
        };
        let white = Color {
            r: 255,
            g: 255,
            b: 255,
            a: 255,
        };
        assert_eq!(palette_index(black), 16);
        assert_eq!(palette_index(white), 231);
    }
}
