//! Parsing the `*** Begin Patch` format into file operations, without touching the disk.
//!
//! The parser is lenient where the intent is clear: it strips a heredoc or a Markdown fence
//! around the patch, blank lines around the envelope and between sections, `\r` at line
//! ends, and unified-diff line numbers in `@@` lines. Everything else that does not fit
//! the format is an error naming the line.

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: its file operations in the order they appear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Patch {
    pub ops: Vec<FileOp>,
}

/// One `*** ... File:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileOp {
    /// Creates a file that must not exist yet.
    Add { path: String, content: String },
    /// Removes a file that must exist.
    Delete { path: String },
    /// Changes an existing file, and renames it when `move_to` is given.
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

/// One change inside an updated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The texts of the hunk's `@@` lines, outermost first. Each narrows the search to the
    /// part of the file after the first line that matches it.
    pub headers: Vec<String>,
    /// Context, removed and added lines, in file order.
    pub lines: Vec<HunkLine>,
    /// Set by `*** End of File`: the hunk must match at the end of the file.
    pub end_of_file: bool,
}

/// One line of a hunk, without its one-character prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HunkLine {
    /// ` `: a line that stays.
    Context(String),
    /// `-`: a line that goes.
    Remove(String),
    /// `+`: a line that is inserted.
    Add(String),
}

impl Hunk {
    /// The lines the file must contain for the hunk to match: context and removed lines.
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
            HunkLine::Add(_) => None,
        })
    }
}

/// Parses a whole patch. Errors name the patch line (1-based, counted in the text as given)
/// and say what was expected there.
pub(crate) fn parse_patch(text: &str) -> Result<Patch, String> {
    let lines: Vec<&str> = text.lines().collect();
    let (first, last) = unwrap(&lines);
    if first >= last {
        return Err(format!(
            "the patch is empty; it must start with `{BEGIN}` and end with `{END}`"
        ));
    }
    if lines[first].trim() != BEGIN {
        return Err(format!(
            "the patch must start with `{BEGIN}`, but line {} is `{}`",
            first + 1,
            lines[first]
        ));
    }
    if last - first < 2 || lines[last - 1].trim() != END {
        return Err(format!(
            "the patch must end with `{END}`, but the last line ({}) is `{}`",
            last,
            lines[last - 1]
        ));
    }
    let mut parser = Parser {
        lines: &lines,
        at: first + 1,
        end: last - 1,
    };
    let ops = parser.sections()?;
    if ops.is_empty() {
        return Err(format!(
            "the patch has no `{ADD}`, `{DELETE}` or `{UPDATE}` section; nothing to do"
        ));
    }
    Ok(Patch { ops })
}

/// The range of `lines` inside any heredoc or Markdown fence wrapping, without blank lines
/// around it.
fn unwrap(lines: &[&str]) -> (usize, usize) {
    let (mut first, mut last) = (0, lines.len());
    loop {
        while first < last && lines[first].trim().is_empty() {
            first += 1;
        }
        while last > first && lines[last - 1].trim().is_empty() {
            last -= 1;
        }
        if last - first < 2 {
            return (first, last);
        }
        let opening = lines[first].trim();
        let closing = lines[last - 1].trim();
        let fenced = opening.starts_with("```") && closing == "```";
        let heredoc = heredoc_marker(opening).is_some_and(|marker| closing == marker);
        if !fenced && !heredoc {
            return (first, last);
        }
        first += 1;
        last -= 1;
    }
}

/// The end marker of a heredoc opened on `line`, as in `apply_patch <<'EOF'`.
pub(super) fn heredoc_marker(line: &str) -> Option<&str> {
    if line.starts_with("***") {
        return None;
    }
    let (_, rest) = line.split_once("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim();
    let marker = ['\'', '"']
        .iter()
        .find_map(|quote| rest.strip_prefix(*quote)?.strip_suffix(*quote))
        .unwrap_or(rest);
    let valid = !marker.is_empty()
        && marker
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(marker)
}

/// Walks the lines between `*** Begin Patch` and `*** End Patch`.
struct Parser<'a> {
    lines: &'a [&'a str],
    /// The next line to read.
    at: usize,
    /// The index of the `*** End Patch` line.
    end: usize,
}

/// A hunk being read; `blank` marks lines that were empty in the patch, which are dropped
/// when they end the hunk (they separate sections rather than match anything).
struct HunkDraft {
    /// The index of the hunk's first patch line, for messages.
    start: usize,
    headers: Vec<String>,
    lines: Vec<(HunkLine, bool)>,
}

impl Parser<'_> {
    /// The 1-based number of the line at `index`, for messages.
    fn number(index: usize) -> usize {
        index + 1
    }

    /// Whether the line at `index` starts a new section (or ends the patch early).
    fn is_section_start(&self, index: usize) -> bool {
        let line = self.lines[index].trim_end();
        line.starts_with(ADD) || line.starts_with(DELETE) || line.starts_with(UPDATE) || line == END
    }

    fn sections(&mut self) -> Result<Vec<FileOp>, String> {
        let mut ops = Vec::new();
        while self.at < self.end {
            let index = self.at;
            let line = self.lines[index].trim_end();
            self.at += 1;
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix(ADD) {
                let path = path_of(rest, ADD, index)?;
                ops.push(self.add_section(path)?);
            } else if let Some(rest) = line.strip_prefix(DELETE) {
                let path = path_of(rest, DELETE, index)?;
                ops.push(self.delete_section(path)?);
            } else if let Some(rest) = line.strip_prefix(UPDATE) {
                let path = path_of(rest, UPDATE, index)?;
                ops.push(self.update_section(path)?);
            } else if line == END {
                return Err(format!(
                    "line {}: `{END}` must be the last line of the patch",
                    Self::number(index)
                ));
            } else {
                return Err(format!(
                    "line {}: expected a section header (`{ADD} path`, `{DELETE} path` or \
                     `{UPDATE} path`), found `{line}`",
                    Self::number(index)
                ));
            }
        }
        Ok(ops)
    }

    fn add_section(&mut self, path: String) -> Result<FileOp, String> {
        // `None` stands for a blank line: an empty line of the file, unless only blank
        // lines follow before the next section.
        let mut lines: Vec<Option<&str>> = Vec::new();
        while self.at < self.end && !self.is_section_start(self.at) {
            let line = self.lines[self.at];
            if let Some(text) = line.strip_prefix('+') {
                lines.push(Some(text));
            } else if line.trim().is_empty() {
                lines.push(None);
            } else {
                return Err(format!(
                    "line {}: every line of an added file starts with `+` (a lone `+` for an \
                     empty line), but `{path}` has `{line}`",
                    Self::number(self.at)
                ));
            }
            self.at += 1;
        }
        while lines.last() == Some(&None) {
            lines.pop();
        }
        let mut content = String::new();
        for line in lines {
            content.push_str(line.unwrap_or_default());
            content.push('\n');
        }
        Ok(FileOp::Add { path, content })
    }

    fn delete_section(&mut self, path: String) -> Result<FileOp, String> {
        while self.at < self.end && !self.is_section_start(self.at) {
            let line = self.lines[self.at];
            if !line.trim().is_empty() {
                return Err(format!(
                    "line {}: `{DELETE} {path}` takes no lines, but is followed by `{line}`",
                    Self::number(self.at)
                ));
            }
            self.at += 1;
        }
        Ok(FileOp::Delete { path })
    }

    fn update_section(&mut self, path: String) -> Result<FileOp, String> {
        let mut move_to = None;
        if self.at < self.end {
            let line = self.lines[self.at].trim_end();
            if let Some(rest) = line.strip_prefix(MOVE) {
                move_to = Some(path_of(rest, MOVE, self.at)?);
                self.at += 1;
            }
        }
        let mut hunks = Vec::new();
        let mut draft: Option<HunkDraft> = None;
        while self.at < self.end && !self.is_section_start(self.at) {
            let index = self.at;
            let line = self.lines[index];
            let marker = line.trim_end();
            self.at += 1;
            if let Some(header) = marker.strip_prefix("@@") {
                let header = header_text(header);
                match &mut draft {
                    // Consecutive `@@` lines narrow the search step by step.
                    Some(open) if open.lines.iter().all(|(_, blank)| *blank) => {
                        open.lines.clear();
                        open.headers.extend(header);
                    }
                    _ => {
                        finish(&mut hunks, draft.take(), false, &path)?;
                        draft = Some(HunkDraft {
                            start: index,
                            headers: header.into_iter().collect(),
                            lines: Vec::new(),
                        });
                    }
                }
                continue;
            }
            if marker == END_OF_FILE {
                if draft.as_ref().is_none_or(|open| open.lines.is_empty()) {
                    return Err(format!(
                        "line {}: `{END_OF_FILE}` must follow the lines of a hunk",
                        Self::number(index)
                    ));
                }
                finish(&mut hunks, draft.take(), true, &path)?;
                continue;
            }
            let parsed = match line.chars().next() {
                None => (HunkLine::Context(String::new()), true),
                Some(' ') => (HunkLine::Context(line[1..].to_owned()), false),
                Some('-') => (HunkLine::Remove(line[1..].to_owned()), false),
                Some('+') => (HunkLine::Add(line[1..].to_owned()), false),
                Some(_) => {
                    return Err(format!(
                        "line {}: `{line}` is not a hunk line of `{UPDATE} {path}`; each line \
                         starts with ` ` (context), `-` (removed) or `+` (added), and each \
                         hunk with `@@`",
                        Self::number(index)
                    ));
                }
            };
            match &mut draft {
                Some(open) => open.lines.push(parsed),
                // The first hunk may leave out its `@@` line.
                None if hunks.is_empty() => {
                    draft = Some(HunkDraft {
                        start: index,
                        headers: Vec::new(),
                        lines: vec![parsed],
                    });
                }
                None if parsed.1 => {}
                None => {
                    return Err(format!(
                        "line {}: a hunk after `{END_OF_FILE}` must start with `@@`",
                        Self::number(index)
                    ));
                }
            }
        }
        finish(&mut hunks, draft, false, &path)?;
        if hunks.is_empty() && move_to.is_none() {
            return Err(format!(
                "`{UPDATE} {path}` has no hunks; give at least one `@@` hunk, or a `{MOVE}` line \
                 to rename the file"
            ));
        }
        Ok(FileOp::Update {
            path,
            move_to,
            hunks,
        })
    }
}

/// Closes a draft hunk: drops blank lines that end it (unless it is anchored at the end of
/// the file, where they are real empty lines) and checks that something is left.
fn finish(
    hunks: &mut Vec<Hunk>,
    draft: Option<HunkDraft>,
    end_of_file: bool,
    path: &str,
) -> Result<(), String> {
    let Some(mut draft) = draft else {
        return Ok(());
    };
    if !end_of_file {
        while draft.lines.last().is_some_and(|(_, blank)| *blank) {
            draft.lines.pop();
        }
    }
    if draft.lines.is_empty() {
        if draft.headers.is_empty() {
            return Ok(());
        }
        return Err(format!(
            "line {}: hunk {} of `{UPDATE} {path}` has an `@@` line but no lines; list the \
             context, removed and added lines after it",
            draft.start + 1,
            hunks.len() + 1
        ));
    }
    hunks.push(Hunk {
        headers: draft.headers,
        lines: draft.lines.into_iter().map(|(line, _)| line).collect(),
        end_of_file,
    });
    Ok(())
}

/// The path after a section header's colon.
fn path_of(rest: &str, header: &str, index: usize) -> Result<String, String> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(format!(
            "line {}: `{header}` must be followed by a path",
            index + 1
        ));
    }
    Ok(path.to_owned())
}

/// The text of an `@@` line after the `@@`, or `None` when it has none. Unified-diff line
/// numbers (`@@ -3,4 +3,5 @@ fn main`) are dropped, keeping any text after them.
fn header_text(rest: &str) -> Option<String> {
    let text = rest.trim();
    let text = strip_line_numbers(text).unwrap_or(text).trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// `text` after a `-a,b +c,d @@` prefix, when it has one.
fn strip_line_numbers(text: &str) -> Option<&str> {
    let range = |part: &str, sign: char| {
        let digits = part.strip_prefix(sign)?;
        let valid = !digits.is_empty()
            && digits.split(',').count() <= 2
            && digits
                .split(',')
                .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        valid.then_some(())
    };
    let mut parts = text.splitn(3, ' ');
    range(parts.next()?, '-')?;
    range(parts.next()?, '+')?;
    let rest = parts.next().unwrap_or_default();
    Some(rest.strip_prefix("@@").unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(text: &str) -> HunkLine {
        HunkLine::Context(text.to_owned())
    }

    fn remove(text: &str) -> HunkLine {
        HunkLine::Remove(text.to_owned())
    }

    fn add(text: &str) -> HunkLine {
        HunkLine::Add(text.to_owned())
    }

    #[test]
    fn parses_every_section_kind() {
        let patch = "*** Begin Patch\n\
                     *** Add File: path/new.txt\n\
                     +line one\n\
                     +\n\
                     +line two\n\
                     *** Delete File: path/old.txt\n\
                     *** Update File: path/src.rs\n\
                     *** Move to: path/renamed.rs\n\
                     @@ fn main() {\n \
                     context line\n\
                     -removed line\n\
                     +added line\n \
                     context line\n\
                     @@\n \
                     more context\n\
                     -x\n\
                     +y\n\
                     *** End of File\n\
                     *** End Patch";
        let parsed = parse_patch(patch).unwrap();
        assert_eq!(
            parsed.ops,
            vec![
                FileOp::Add {
                    path: "path/new.txt".into(),
                    content: "line one\n\nline two\n".into(),
                },
                FileOp::Delete {
                    path: "path/old.txt".into()
                },
                FileOp::Update {
                    path: "path/src.rs".into(),
                    move_to: Some("path/renamed.rs".into()),
                    hunks: vec![
                        Hunk {
                            headers: vec!["fn main() {".into()],
                            lines: vec![
                                context("context line"),
                                remove("removed line"),
                                add("added line"),
                                context("context line"),
                            ],
                            end_of_file: false,
                        },
                        Hunk {
                            headers: vec![],
                            lines: vec![context("more context"), remove("x"), add("y")],
                            end_of_file: true,
                        },
                    ],
                },
            ]
        );
    }

    #[test]
    fn first_hunk_may_omit_its_header_and_headers_may_stack() {
        let patch = "*** Begin Patch\n*** Update File: a.py\n-a\n+b\n@@ class A\n@@ -10,2 +10,2 @@ def f():\n x\n*** End Patch\n";
        let Some(FileOp::Update { hunks, .. }) = parse_patch(patch).unwrap().ops.pop() else {
            panic!("expected an update");
        };
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].headers, Vec::<String>::new());
        assert_eq!(hunks[0].lines, vec![remove("a"), add("b")]);
        assert_eq!(hunks[1].headers, vec!["class A", "def f():"]);
        assert_eq!(hunks[1].old_lines().collect::<Vec<_>>(), vec!["x"]);
    }

    #[test]
    fn add_file_may_be_empty_and_blank_separators_are_ignored() {
        let patch = "\n\n*** Begin Patch\n\n*** Add File: empty.txt\n\n*** Add File: b.txt\n+b\n\n\n*** Update File: c.txt\n\n@@\n-c\n+d\n\n*** Delete File: d.txt\n\n*** End Patch\n\n";
        let ops = parse_patch(patch).unwrap().ops;
        assert_eq!(
            ops[0],
            FileOp::Add {
                path: "empty.txt".into(),
                content: String::new()
            }
        );
        assert_eq!(
            ops[1],
            FileOp::Add {
                path: "b.txt".into(),
                content: "b\n".into()
            }
        );
        let FileOp::Update { hunks, .. } = &ops[2] else {
            panic!("expected an update");
        };
        assert_eq!(hunks[0].lines, vec![remove("c"), add("d")]);
        assert_eq!(
            ops[3],
            FileOp::Delete {
                path: "d.txt".into()
            }
        );
    }

    #[test]
    fn blank_lines_inside_hunks_are_empty_context_lines() {
        let patch = "*** Begin Patch\n*** Update File: a\n@@\n a\n\n-b\n+c\n*** End Patch";
        let Some(FileOp::Update { hunks, .. }) = parse_patch(patch).unwrap().ops.pop() else {
            panic!("expected an update");
        };
        assert_eq!(
            hunks[0].lines,
            vec![context("a"), context(""), remove("b"), add("c")]
        );
    }

    #[test]
    fn strips_heredocs_fences_and_crlf() {
        let inner = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch";
        let expected = vec![FileOp::Delete {
            path: "a.txt".into(),
        }];
        for wrapped in [
            format!("<<'EOF'\n{inner}\nEOF\n"),
            format!("apply_patch <<\"PATCH\"\n{inner}\nPATCH"),
            format!("cat <<-EOF\n{inner}\nEOF"),
            format!("```\n{inner}\n```"),
            format!("\n```diff\n<<'EOF'\n{inner}\nEOF\n```\n\n"),
            inner.replace('\n', "\r\n"),
            format!("  {inner}  \n"),
        ] {
            assert_eq!(parse_patch(&wrapped).unwrap().ops, expected, "{wrapped}");
        }
    }

    #[test]
    fn rejects_malformed_patches_with_the_line() {
        let err = |patch: &str| parse_patch(patch).unwrap_err();
        assert!(err("").contains("empty"));
        assert!(err("*** Update File: a\n*** End Patch").contains("must start with"));
        assert!(err("*** Begin Patch\n*** Delete File: a").contains("must end with"));
        assert!(err("*** Begin Patch\n*** End Patch").contains("nothing to do"));
        assert!(err("*** Begin Patch\n*** Frobnicate: a\n*** End Patch").contains("line 2"));
        assert!(err("*** Begin Patch\n*** Add File:\n*** End Patch").contains("path"));
        let bad_add = err("*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch");
        assert!(
            bad_add.contains("line 4") && bad_add.contains("`+`"),
            "{bad_add}"
        );
        let bad_delete = err("*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch");
        assert!(bad_delete.contains("takes no lines"), "{bad_delete}");
        let bad_line = err("*** Begin Patch\n*** Update File: a\n@@\n x\n\ty\n*** End Patch");
        assert!(bad_line.contains("line 5"), "{bad_line}");
        assert!(err("*** Begin Patch\n*** Update File: a\n*** End Patch").contains("no hunks"));
        assert!(
            err("*** Begin Patch\n*** Update File: a\n@@ f\n*** End Patch").contains("no lines")
        );
        assert!(
            err("*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch")
                .contains("must follow")
        );
        assert!(
            err("*** Begin Patch\n*** Update File: a\n-x\n*** End of File\n-y\n*** End Patch")
                .contains("must start with `@@`")
        );
        assert!(
            err("*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b\n*** End Patch")
                .contains("must be the last line")
        );
    }

    #[test]
    fn a_rename_needs_no_hunks() {
        let patch = "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch";
        assert_eq!(
            parse_patch(patch).unwrap().ops,
            vec![FileOp::Update {
                path: "a".into(),
                move_to: Some("b".into()),
                hunks: vec![],
            }]
        );
    }
}
