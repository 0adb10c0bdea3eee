//! Shell words: their value where it is known before the command runs, the text a nested
//! shell would see, and the paths they name (resolved lexically, never on disk).

use std::path::{Path, PathBuf};

use tree_sitter::Node;

use crate::tools::paths::normalize;

/// One part of a word.
#[derive(Debug, Clone)]
enum Piece {
    /// Literal text; quoted text is never a glob pattern.
    Text { text: String, quoted: bool },
    /// `~`, `$HOME` or `${HOME}`.
    Home,
    /// `~user`: some user's home directory.
    UserHome(String),
    /// `$PWD` or `${PWD}`.
    Pwd,
    /// A value only known when the command runs; `substitution` for `$(...)` and backticks.
    Unknown { substitution: bool },
}

/// A shell word (a command name or an argument) as far as it can be known statically.
#[derive(Debug, Clone)]
pub(super) struct Word<'t> {
    /// The syntax node the word came from (for synthetic words, the node they were cut from).
    pub(super) node: Node<'t>,
    pieces: Vec<Piece>,
    /// The value when the word is entirely literal, with quotes and escapes removed.
    literal: Option<String>,
    /// The text a shell receives if this word is a script (`sh -c WORD`, `eval WORD`).
    pub(super) shell: String,
    /// The word as written, for messages.
    pub(super) source: String,
}

/// What a word names as a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A path known up to glob patterns and unknown parts. `full` is the whole path (with
    /// `*` standing for unknown parts); `base` is the directory below which something is
    /// named when `children_only` is set (the word had a glob or an unknown part), else
    /// `base` equals `full`.
    Known {
        full: PathBuf,
        base: PathBuf,
        children_only: bool,
    },
    /// Another user's home directory (`~user`), or `~` when the home directory is not known.
    OtherHome(String),
    /// Nothing useful is known.
    Unknown,
}

/// What kind of device file a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Device {
    /// `/dev/null`, `/dev/zero`, the standard streams and the terminal: writing there is harmless.
    Harmless,
    /// A disk or partition: writing there destroys file systems.
    Block,
    /// Any other device.
    Other,
}

/// The source text of a node.
pub(super) fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or_default()
}

impl<'t> Word<'t> {
    /// Reads a word from its syntax node.
    pub(super) fn from_node(node: Node<'t>, src: &str) -> Self {
        let mut word = Word {
            node,
            pieces: Vec::new(),
            literal: None,
            shell: String::new(),
            source: text(node, src).to_owned(),
        };
        word.push(node, src, true);
        word.finish();
        word
    }

    /// A literal word that was not written as such, such as the `/dev/sda` of `of=/dev/sda`.
    pub(super) fn synthetic(value: &str, node: Node<'t>) -> Self {
        let mut word = Word {
            node,
            pieces: vec![Piece::Text {
                text: value.to_owned(),
                quoted: false,
            }],
            literal: None,
            shell: value.to_owned(),
            source: value.to_owned(),
        };
        word.finish();
        word
    }

    /// The word without a literal prefix such as `of=`, if it starts with one.
    pub(super) fn strip_prefix(&self, prefix: &str) -> Option<Self> {
        let Some(Piece::Text { text, quoted }) = self.pieces.first() else {
            return None;
        };
        let rest = text.strip_prefix(prefix)?;
        let mut word = self.clone();
        word.pieces[0] = Piece::Text {
            text: rest.to_owned(),
            quoted: *quoted,
        };
        word.source = self
            .source
            .strip_prefix(prefix)
            .unwrap_or(&self.source)
            .to_owned();
        word.shell = self
            .shell
            .strip_prefix(prefix)
            .unwrap_or(&self.shell)
            .to_owned();
        word.finish();
        Some(word)
    }

    /// The value, when nothing in it depends on the run-time environment.
    pub(super) fn literal(&self) -> Option<&str> {
        self.literal.as_deref()
    }

    /// Whether the word contains a command substitution.
    pub(super) fn has_substitution(&self) -> bool {
        self.pieces
            .iter()
            .any(|piece| matches!(piece, Piece::Unknown { substitution: true }))
    }

    /// The words bash's brace expansion makes of this one, in order (`a{b,c}d` is `abd acd`,
    /// `{1..3}` is `1 2 3`, nested braces too), or the word itself when it has none. `None`
    /// when it would make more than [`MAX_BRACE_WORDS`] words.
    pub(super) fn brace_expand(&self) -> Option<Vec<Word<'t>>> {
        if !self.brace_expansion() {
            return Some(vec![self.clone()]);
        }
        let mut tokens = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text { text, quoted } => {
                    tokens.extend(text.chars().map(|c| Token::Char(c, *quoted)));
                }
                other => tokens.push(Token::Piece(other.clone())),
            }
        }
        let mut results = Vec::new();
        expand_braces(tokens, &mut results)?;
        Some(
            results
                .into_iter()
                .map(|tokens| self.with_tokens(tokens))
                .collect(),
        )
    }

    /// A word made of expanded tokens, keeping this word's node.
    fn with_tokens(&self, tokens: Vec<Token>) -> Word<'t> {
        let mut word = Word {
            node: self.node,
            pieces: Vec::new(),
            literal: None,
            shell: String::new(),
            source: String::new(),
        };
        for token in tokens {
            match token {
                Token::Char(c, quoted) => {
                    word.source.push(c);
                    match word.pieces.last_mut() {
                        Some(Piece::Text { text, quoted: was }) if *was == quoted => text.push(c),
                        _ => word.pieces.push(Piece::Text {
                            text: c.to_string(),
                            quoted,
                        }),
                    }
                }
                Token::Piece(piece) => {
                    let shown = match &piece {
                        Piece::Home => "$HOME".to_owned(),
                        Piece::UserHome(user) => format!("~{user}"),
                        Piece::Pwd => "$PWD".to_owned(),
                        Piece::Text { text, .. } => text.clone(),
                        Piece::Unknown { .. } => "$UNKNOWN".to_owned(),
                    };
                    word.source.push_str(&shown);
                    word.pieces.push(piece);
                }
            }
        }
        // Bash expands a `~` that starts a word after its braces (`{~/.ssh/id_rsa,a}`).
        if let Some(Piece::Text {
            text,
            quoted: false,
        }) = word.pieces.first()
            && let Some(after) = text.strip_prefix('~')
        {
            let end = after.find('/').unwrap_or(after.len());
            let home = match &after[..end] {
                "" => Piece::Home,
                "+" => Piece::Pwd,
                "-" => Piece::Unknown {
                    substitution: false,
                },
                user => Piece::UserHome(user.to_owned()),
            };
            let rest = after[end..].to_owned();
            word.pieces.splice(
                0..1,
                [
                    home,
                    Piece::Text {
                        text: rest,
                        quoted: false,
                    },
                ],
            );
        }
        // As a script it is only ever shown, never run: the text as expanded is enough.
        word.shell = word.source.clone();
        word.finish();
        word
    }

    /// Whether the word has a part only known when the command runs (`$X`, `$(...)`, `~-`),
    /// other than `$HOME` and `$PWD`.
    pub(super) fn has_unknown(&self) -> bool {
        self.pieces
            .iter()
            .any(|piece| matches!(piece, Piece::Unknown { .. } | Piece::UserHome(_)))
    }

    /// Whether the shell would brace-expand the word (`{a,b}`, `{1..3}`): an unquoted `{`
    /// followed by an unquoted `,` or `..` before its unquoted `}`. The expansion is not
    /// computed: callers take such a word as unknown.
    pub(super) fn brace_expansion(&self) -> bool {
        let mut open = 0usize;
        let mut previous_dot = false;
        for piece in &self.pieces {
            let Piece::Text {
                text,
                quoted: false,
            } = piece
            else {
                previous_dot = false;
                continue;
            };
            for c in text.chars() {
                match c {
                    '{' => open += 1,
                    '}' => open = open.saturating_sub(1),
                    ',' if open > 0 => return true,
                    '.' if open > 0 && previous_dot => return true,
                    _ => {}
                }
                previous_dot = c == '.';
            }
        }
        false
    }

    /// For `--name=value` (the name written literally), the name and the value as a word;
    /// a `~` that starts the value is the home directory, as bash expands it there.
    pub(super) fn long_option(&self) -> Option<(String, Word<'t>)> {
        let Some(Piece::Text { text, .. }) = self.pieces.first() else {
            return None;
        };
        let (name, _) = text.strip_prefix("--")?.split_once('=')?;
        let name = name.to_owned();
        let mut value = self.strip_prefix(&format!("--{name}="))?;
        if let Some(Piece::Text {
            text,
            quoted: false,
        }) = value.pieces.first()
            && (text == "~" || text.starts_with("~/"))
        {
            let rest = text[1..].to_owned();
            value.pieces.splice(
                0..1,
                [
                    Piece::Home,
                    Piece::Text {
                        text: rest,
                        quoted: false,
                    },
                ],
            );
            value.finish();
        }
        Some((name, value))
    }

    /// Whether the word starts with an unquoted `-` (an option) but is not entirely literal.
    pub(super) fn computed_option(&self) -> bool {
        self.literal.is_none()
            && matches!(self.pieces.first(), Some(Piece::Text { text, .. }) if text.starts_with('-'))
    }

    fn finish(&mut self) {
        self.literal = None;
        let mut literal = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text { text, .. } => literal.push_str(text),
                _ => return,
            }
        }
        self.literal = Some(literal);
    }

    fn text(&mut self, text: String, quoted: bool) {
        self.shell.push_str(&text);
        self.pieces.push(Piece::Text { text, quoted });
    }

    fn push(&mut self, node: Node<'t>, src: &str, first: bool) {
        let raw = text(node, src);
        match node.kind() {
            "word" | "number" => {
                let mut rest = raw;
                if first && let Some(after) = raw.strip_prefix('~') {
                    let end = after.find('/').unwrap_or(after.len());
                    let user = &after[..end];
                    self.pieces.push(match user {
                        "" => Piece::Home,
                        "+" => Piece::Pwd,
                        "-" => Piece::Unknown {
                            substitution: false,
                        },
                        _ => Piece::UserHome(user.to_owned()),
                    });
                    self.shell.push_str(&raw[..=end]);
                    rest = &after[end..];
                }
                self.text(unescape_unquoted(rest), false);
            }
            "raw_string" => {
                let inner = raw
                    .strip_prefix('\'')
                    .map(|s| s.strip_suffix('\'').unwrap_or(s))
                    .unwrap_or(raw);
                self.text(inner.to_owned(), true);
            }
            "string" => self.push_string(node, src),
            "ansi_c_string" => {
                let inner = raw
                    .strip_prefix("$'")
                    .map(|s| s.strip_suffix('\'').unwrap_or(s))
                    .unwrap_or(raw);
                self.text(unescape_ansi_c(inner), true);
            }
            "concatenation" | "command_name" | "translated_string" => {
                let mut cursor = node.walk();
                for (index, child) in node.children(&mut cursor).enumerate() {
                    if child.kind() == "\"" && node.kind() == "translated_string" {
                        continue;
                    }
                    self.push(child, src, first && index == 0);
                }
            }
            "simple_expansion" | "expansion" => self.push_expansion(node, src),
            "command_substitution" | "process_substitution" => {
                self.shell.push_str(raw);
                self.pieces.push(Piece::Unknown { substitution: true });
            }
            _ if !node.is_named() => self.text(raw.to_owned(), false),
            "brace_expression" => self.text(raw.to_owned(), false),
            _ => {
                self.shell.push_str(raw);
                self.pieces.push(Piece::Unknown {
                    substitution: false,
                });
            }
        }
    }

    /// A double-quoted string: literal stretches between the expansions inside it.
    fn push_string(&mut self, node: Node<'t>, src: &str) {
        let start = node.start_byte() + 1;
        let closed = node
            .child(node.child_count().saturating_sub(1))
            .is_some_and(|last| {
                last.kind() == "\"" && !last.is_missing() && last.start_byte() > node.start_byte()
            });
        let end = if closed {
            node.end_byte().saturating_sub(1)
        } else {
            node.end_byte()
        };
        let mut position = start;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind() == "string_content" {
                continue;
            }
            let gap = src.get(position..child.start_byte()).unwrap_or_default();
            if !gap.is_empty() {
                self.text(unescape_double_quoted(gap), true);
            }
            self.push_expansion(child, src);
            position = child.end_byte();
        }
        let gap = src.get(position..end.max(position)).unwrap_or_default();
        if !gap.is_empty() {
            self.text(unescape_double_quoted(gap), true);
        }
    }

    fn push_expansion(&mut self, node: Node<'t>, src: &str) {
        let raw = text(node, src);
        self.shell.push_str(raw);
        let piece = match raw {
            "$HOME" | "${HOME}" => Piece::Home,
            "$PWD" | "${PWD}" => Piece::Pwd,
            _ => Piece::Unknown {
                substitution: matches!(
                    node.kind(),
                    "command_substitution" | "process_substitution"
                ),
            },
        };
        self.pieces.push(piece);
    }

    /// Resolves the word as a path against `cwd` (`None` when the working directory is not known).
    pub(super) fn resolve(&self, cwd: Option<&Path>, home: Option<&Path>) -> Target {
        let mut path = String::new();
        // Where the first glob character or unknown part starts, and whether it is unknown.
        let mut cut: Option<(usize, bool)> = None;
        for piece in &self.pieces {
            match piece {
                Piece::Text { text, quoted } => {
                    if !quoted
                        && cut.is_none()
                        && let Some(at) = text.find(['*', '?', '[', '{'])
                    {
                        cut = Some((path.len() + at, false));
                    }
                    path.push_str(text);
                }
                Piece::Home => match home.and_then(Path::to_str) {
                    Some(home) => path.push_str(home),
                    None => return Target::OtherHome("~".to_owned()),
                },
                Piece::UserHome(user) => return Target::OtherHome(format!("~{user}")),
                Piece::Pwd => match cwd.and_then(Path::to_str) {
                    Some(cwd) => path.push_str(cwd),
                    None => {
                        cut.get_or_insert((path.len(), true));
                        path.push('*');
                    }
                },
                Piece::Unknown { .. } => {
                    cut.get_or_insert((path.len(), true));
                    path.push('*');
                }
            }
        }
        let absolute = |p: &str| {
            if p.starts_with('/') {
                Some(normalize(Path::new(p)))
            } else {
                cwd.map(|cwd| normalize(&cwd.join(p)))
            }
        };
        let Some(full) = absolute(&path) else {
            return Target::Unknown;
        };
        let Some((at, unknown)) = cut else {
            return Target::Known {
                base: full.clone(),
                full,
                children_only: false,
            };
        };
        let prefix = &path[..at];
        if unknown && prefix.is_empty() {
            return Target::Unknown;
        }
        let base = match prefix.rfind('/') {
            Some(0) => "/",
            Some(slash) => &prefix[..slash],
            None => "",
        };
        match absolute(base) {
            Some(base) => Target::Known {
                full,
                base,
                children_only: true,
            },
            None => Target::Unknown,
        }
    }
}

/// The kind of device a path names, if it is under `/dev` (`/dev/shm` holds ordinary files).
pub(super) fn device_kind(path: &Path) -> Option<Device> {
    const HARMLESS: [&str; 6] = ["null", "zero", "stdin", "stdout", "stderr", "tty"];
    const BLOCK: [&str; 10] = [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "md", "dm-", "mapper/",
    ];
    let name = path.to_str()?.strip_prefix("/dev/")?;
    if name.starts_with("shm/") {
        None
    } else if HARMLESS.contains(&name) || name.starts_with("fd/") {
        Some(Device::Harmless)
    } else if BLOCK.iter().any(|prefix| name.starts_with(prefix)) {
        Some(Device::Block)
    } else {
        Some(Device::Other)
    }
}

/// The last component of a command name: `/bin/rm` is `rm`.
pub(super) fn basename(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Removes the backslashes of an unquoted word (`\;` is `;`; a backslash-newline vanishes).
fn unescape_unquoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            c => out.push(c),
        }
    }
    out
}

/// Removes the backslashes that escape something inside double quotes.
fn unescape_double_quoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '$' | '`' | '"' | '\\' | '\n')
        {
            chars.next();
            if next != '\n' {
                out.push(next);
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Interprets the common escapes of a `$'...'` string.
fn unescape_ansi_c(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('e' | 'E') => out.push('\u{1b}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// How many words one brace expansion may make before the analysis gives up on the word.
const MAX_BRACE_WORDS: usize = 64;

/// One character of a word, or a part that is not literal text, for brace expansion.
#[derive(Debug, Clone)]
enum Token {
    /// A character and whether it was quoted (quoted braces and commas are literal).
    Char(char, bool),
    Piece(Piece),
}

/// Expands the first brace expression of `tokens` and, recursively, the rest; pushes the
/// results. `None` when they would exceed [`MAX_BRACE_WORDS`].
fn expand_braces(tokens: Vec<Token>, results: &mut Vec<Vec<Token>>) -> Option<()> {
    let unquoted =
        |token: &Token, wanted: char| matches!(token, Token::Char(c, false) if *c == wanted);
    for open in 0..tokens.len() {
        if !unquoted(&tokens[open], '{') {
            continue;
        }
        // The matching `}` and the top-level commas between them.
        let mut depth = 0;
        let mut commas = Vec::new();
        let mut close = None;
        for (at, token) in tokens.iter().enumerate().skip(open + 1) {
            if unquoted(token, '{') {
                depth += 1;
            } else if unquoted(token, '}') {
                if depth == 0 {
                    close = Some(at);
                    break;
                }
                depth -= 1;
            } else if depth == 0 && unquoted(token, ',') {
                commas.push(at);
            }
        }
        let Some(close) = close else {
            continue;
        };
        let prefix = &tokens[..open];
        let suffix = &tokens[close + 1..];
        let alternatives: Vec<Vec<Token>> = if commas.is_empty() {
            match sequence(&tokens[open + 1..close]) {
                Some(items) => items
                    .into_iter()
                    .map(|item| item.chars().map(|c| Token::Char(c, false)).collect())
                    .collect(),
                None => continue,
            }
        } else {
            let mut bounds = vec![open];
            bounds.extend(&commas);
            bounds.push(close);
            bounds
                .windows(2)
                .map(|pair| tokens[pair[0] + 1..pair[1]].to_vec())
                .collect()
        };
        if alternatives.len() > MAX_BRACE_WORDS {
            return None;
        }
        for alternative in alternatives {
            let mut word = prefix.to_vec();
            word.extend(alternative);
            word.extend_from_slice(suffix);
            expand_braces(word, results)?;
            if results.len() > MAX_BRACE_WORDS {
                return None;
            }
        }
        return Some(());
    }
    results.push(tokens);
    (results.len() <= MAX_BRACE_WORDS).then_some(())
}

/// The items of a sequence expression's inside (`1..3`, `a..e`, `10..1..3`), or `None`
/// when it is not one (bash then leaves the braces as they are).
fn sequence(inside: &[Token]) -> Option<Vec<String>> {
    let text: String = inside
        .iter()
        .map(|token| match token {
            Token::Char(c, false) => Some(*c),
            _ => None,
        })
        .collect::<Option<String>>()?;
    let parts: Vec<&str> = text.split("..").collect();
    let (start, end, step) = match parts.as_slice() {
        [start, end] => (*start, *end, None),
        [start, end, step] => (*start, *end, Some(step.parse::<i64>().ok()?)),
        _ => return None,
    };
    let step = step.unwrap_or(1).checked_abs()?.max(1);
    let range = |from: i64, to: i64| -> Option<Vec<i64>> {
        let count = from.abs_diff(to) / step.unsigned_abs() + 1;
        if count > MAX_BRACE_WORDS as u64 {
            return None;
        }
        let step = if from <= to { step } else { -step };
        let mut items = Vec::new();
        let mut at = from;
        for _ in 0..count {
            items.push(at);
            at = at.checked_add(step)?;
        }
        Some(items)
    };
    if let (Ok(from), Ok(to)) = (start.parse::<i64>(), end.parse::<i64>()) {
        return Some(range(from, to)?.iter().map(i64::to_string).collect());
    }
    let (mut from, mut to) = (start.chars(), end.chars());
    match (from.next(), from.next(), to.next(), to.next()) {
        (Some(from), None, Some(to), None) if from.is_ascii() && to.is_ascii() => Some(
            range(i64::from(from as u8), i64::from(to as u8))?
                .into_iter()
                .filter_map(|code| u8::try_from(code).ok())
                .map(|code| char::from(code).to_string())
                .collect(),
        ),
        _ => None,
    }
}
