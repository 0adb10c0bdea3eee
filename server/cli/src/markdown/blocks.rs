//! One block of Markdown (a paragraph, a list, a table, a quote...) rendered as the lines a
//! terminal shows: parsed by pulldown-cmark (CommonMark with tables, strikethrough and task
//! lists), word-wrapped to the width, styled when colour is on.
//!
//! Without colour the structure stays: headings keep their `#`, emphasis and code keep
//! their markers, code blocks their fences, quotes are marked `> `; bullets, numbering,
//! tables and wrapping are the same either way.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::highlight::Highlighter;
use super::styled::{self, Inline, RESET};
use super::table;

const DIM: &str = "\x1b[2m";

/// `source` rendered to lines of at most `width` columns (code lines excepted: they are
/// never broken, so that copying them gives the code back).
pub fn render(source: &str, width: usize, color: bool) -> Vec<String> {
    let mut renderer = Renderer::new(width, color);
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(source, options) {
        renderer.event(event);
    }
    renderer.flush();
    renderer.lines
}

/// A block the text sits in, for the prefix of its lines.
enum Container {
    Quote,
    /// A list item: its marker (`• `, `3. `) goes before its first line, spaces of the
    /// same width before the others.
    Item {
        marker: Option<String>,
        width: usize,
    },
}

struct Renderer {
    width: usize,
    color: bool,
    lines: Vec<String>,
    containers: Vec<Container>,
    /// The next number of each open list; `None` for a bulleted one.
    lists: Vec<Option<u64>>,
    /// The text of the paragraph, heading or table cell being read, styled.
    text: String,
    style: Inline,
    /// Where each open link's text starts in `text`, and its destination.
    links: Vec<(usize, String)>,
    code: Option<Highlighter>,
    table: Option<table::Table>,
    /// A block ended: the next one is set off by an empty line.
    gap: bool,
}

impl Renderer {
    fn new(width: usize, color: bool) -> Self {
        Self {
            width: width.max(8),
            color,
            lines: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            text: String::new(),
            style: Inline::default(),
            links: Vec::new(),
            code: None,
            table: None,
            gap: false,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if self.code.is_some() {
                    self.code_text(&text);
                } else {
                    self.text.push_str(&text);
                }
            }
            Event::Code(code) => {
                if self.color {
                    self.styled(|style| style.code += 1);
                    self.text.push_str(&code);
                    self.styled(|style| style.code -= 1);
                } else {
                    self.text.push('`');
                    self.text.push_str(&code);
                    self.text.push('`');
                }
            }
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text.push_str(&math),
            Event::Html(html) | Event::InlineHtml(html) => {
                self.text.push_str(html.trim_end_matches('\n'));
                if html.ends_with('\n') {
                    self.text.push('\n');
                }
            }
            Event::FootnoteReference(label) => {
                self.text.push_str(&format!("[^{label}]"));
            }
            Event::SoftBreak => self.text.push(' '),
            Event::HardBreak => self.text.push('\n'),
            Event::Rule => {
                self.block_start();
                let (first, _) = self.prefixes();
                let room = self.width.saturating_sub(styled::width(&first));
                let rule = "─".repeat(room);
                let line = if self.color {
                    format!("{first}{DIM}{rule}{RESET}")
                } else {
                    format!("{first}{rule}")
                };
                self.push_line(line);
                self.gap = true;
            }
            Event::TaskListMarker(done) => self.text.push_str(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                if self.color {
                    self.styled(|style| {
                        style.bold += 1;
                        if level == HeadingLevel::H1 {
                            style.underline += 1;
                        }
                    });
                } else {
                    self.text.push_str(&"#".repeat(level as usize));
                    self.text.push(' ');
                }
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let language = match &kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                if !self.color {
                    let (first, _) = self.prefixes();
                    self.push_line(format!("{first}```{language}"));
                }
                self.code = Some(Highlighter::new(&language, self.color));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.block_start();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                let width = styled::width(&marker);
                self.containers.push(Container::Item {
                    marker: Some(marker),
                    width,
                });
            }
            Tag::Emphasis => self.marked(|style| style.italic += 1, "*"),
            Tag::Strong => self.marked(|style| style.bold += 1, "**"),
            Tag::Strikethrough => self.marked(|style| style.strike += 1, "~~"),
            Tag::Superscript | Tag::Subscript => {}
            Tag::Link { dest_url, .. } => {
                self.links.push((self.text.len(), dest_url.to_string()));
                if self.color {
                    self.styled(|style| style.link += 1);
                }
            }
            Tag::Image { dest_url, .. } => {
                self.links.push((self.text.len(), dest_url.to_string()));
                self.text.push_str("[image: ");
            }
            Tag::Table(alignments) => {
                self.block_start();
                self.table = Some(table::Table::new(alignments));
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {}
            Tag::FootnoteDefinition(label) => {
                self.block_start();
                self.text.push_str(&format!("[^{label}]: "));
            }
            Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.block_start(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => self.block_end(),
            TagEnd::DefinitionList => {}
            TagEnd::Heading(_) => {
                if self.color {
                    self.style = Inline::default();
                    self.text.push_str(RESET);
                }
                self.block_end();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                self.code = None;
                if !self.color {
                    let (_, rest) = self.prefixes();
                    self.push_line(format!("{rest}```"));
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.gap = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Emphasis => self.marked(|style| style.italic -= 1, "*"),
            TagEnd::Strong => self.marked(|style| style.bold -= 1, "**"),
            TagEnd::Strikethrough => self.marked(|style| style.strike -= 1, "~~"),
            TagEnd::Superscript | TagEnd::Subscript => {}
            TagEnd::Link => {
                if self.color {
                    self.styled(|style| style.link -= 1);
                }
                self.link_end("");
            }
            TagEnd::Image => self.link_end("]"),
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.text);
                if let Some(table) = &mut self.table {
                    table.cell(cell);
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    table.end_row();
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let (first, rest) = self.prefixes();
                    let room = self.width.saturating_sub(styled::width(&first));
                    for (at, line) in table.render(room, self.color).into_iter().enumerate() {
                        let prefix = if at == 0 { &first } else { &rest };
                        self.push_line(format!("{prefix}{line}"));
                    }
                }
                self.gap = true;
            }
        }
    }

    /// After a link's text: its destination, unless the text already says it.
    fn link_end(&mut self, close: &str) {
        let Some((start, destination)) = self.links.pop() else {
            return;
        };
        self.text.push_str(close);
        let shown = strip_escapes(&self.text[start.min(self.text.len())..]);
        let bare = destination.strip_prefix("mailto:").unwrap_or(&destination);
        if destination.is_empty() || shown == destination || shown == bare {
            return;
        }
        if self.color {
            let outer = self.style.sgr();
            self.text
                .push_str(&format!(" {DIM}({destination}){RESET}{outer}"));
        } else {
            self.text.push_str(&format!(" ({destination})"));
        }
    }

    /// An inline style changed: with colour, the sequence for the new style; without, the
    /// Markdown marker.
    fn marked(&mut self, change: impl FnOnce(&mut Inline), marker: &str) {
        if self.color {
            self.styled(change);
        } else {
            self.text.push_str(marker);
        }
    }

    fn styled(&mut self, change: impl FnOnce(&mut Inline)) {
        change(&mut self.style);
        self.text.push_str(&self.style.sgr());
    }

    fn code_text(&mut self, text: &str) {
        let (_, rest) = self.prefixes();
        let Some(code) = self.code.as_mut() else {
            return;
        };
        let lines: Vec<String> = text
            .strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .map(|line| format!("{rest}{}", code.line(line)))
            .collect();
        for line in lines {
            self.push_line(line);
        }
    }

    /// A block begins: the text before it is written, and an empty line after the block
    /// before.
    fn block_start(&mut self) {
        self.flush();
        if std::mem::take(&mut self.gap) && !self.lines.is_empty() {
            let (_, rest) = self.prefixes();
            let line = rest.trim_end().to_owned();
            self.lines.push(line);
        }
    }

    fn block_end(&mut self) {
        self.flush();
        self.gap = true;
    }

    /// Writes the text read so far, wrapped under the containers' prefixes.
    fn flush(&mut self) {
        if self.text.trim().is_empty() {
            self.text.clear();
            return;
        }
        let text = std::mem::take(&mut self.text);
        let (first, rest) = self.prefixes();
        for line in styled::wrap(text.trim_end(), self.width, &first, &rest) {
            self.push_line(line);
        }
        if self.style != Inline::default() {
            self.text.push_str(&self.style.sgr());
        }
    }

    /// Adds a line; the first line of a list item takes its marker, once.
    fn push_line(&mut self, line: String) {
        for container in &mut self.containers {
            if let Container::Item { marker, .. } = container {
                marker.take();
            }
        }
        self.lines.push(line);
    }

    /// The prefixes of the next line and of the lines after it.
    fn prefixes(&self) -> (String, String) {
        let (mut first, mut rest) = (String::new(), String::new());
        for container in &self.containers {
            match container {
                Container::Quote => {
                    let bar = if self.color {
                        format!("{DIM}│{RESET} ")
                    } else {
                        "> ".to_owned()
                    };
                    first.push_str(&bar);
                    rest.push_str(&bar);
                }
                Container::Item { marker, width } => {
                    let blank = " ".repeat(*width);
                    first.push_str(marker.as_deref().unwrap_or(&blank));
                    rest.push_str(&blank);
                }
            }
        }
        (first, rest)
    }
}

/// `text` without its escape sequences.
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The alignment of a column, for the table module.
pub fn align(alignment: Alignment, text: &str, width: usize) -> String {
    let free = width.saturating_sub(styled::width(text));
    match alignment {
        Alignment::Right => format!("{}{text}", " ".repeat(free)),
        Alignment::Center => {
            let left = free / 2;
            format!("{}{text}{}", " ".repeat(left), " ".repeat(free - left))
        }
        Alignment::Left | Alignment::None => styled::pad(text, width),
    }
}

#[cfg(test)]
mod tests;
