//! Applying one file's hunks to its text: finding each hunk, then splicing it in.
//!
//! A hunk is found by its context and removed lines, in order, searching forward from
//! where the previous hunk ended. Each search tries exact matches first, then matches that
//! ignore trailing whitespace, then matches that ignore whitespace at both ends. Lines
//! the hunk keeps are copied from the file, so they keep their exact text and line ending;
//! added lines take the file's usual line ending, and the file keeps its final-newline state.

use super::parser::{Hunk, HunkLine};

/// How many matching strategies a hunk's lines are tried with, strictest first.
const LINE_PASSES: usize = 3;

/// One line of a file: its text and the terminator after it (`"\n"`, `"\r\n"`, or `""` for
/// a last line without one).
struct FileLine<'a> {
    text: &'a str,
    eol: &'a str,
}

/// Why a hunk could not be placed.
enum Miss {
    /// No line at or after `from` matches this `@@` header.
    Header { header: String, from: usize },
    /// The hunk's lines do not occur at or after `from`.
    Lines { from: usize },
}

/// Applies `hunks` to `content`, or explains which hunk did not match. `label` names the
/// file in messages.
pub(crate) fn apply_hunks(label: &str, content: &str, hunks: &[Hunk]) -> Result<String, String> {
    let lines = split_lines(content);
    let texts: Vec<&str> = lines.iter().map(|line| line.text).collect();
    let mut starts = Vec::with_capacity(hunks.len());
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let old: Vec<&str> = hunk.old_lines().collect();
        let start = locate(&texts, cursor, &hunk.headers, &old, hunk.end_of_file, None)
            .map_err(|miss| describe_miss(label, index, hunks.len(), hunk, &old, &texts, miss))?;
        starts.push(start);
        cursor = start + old.len();
    }

    let eol = usual_eol(content);
    let mut out: Vec<(&str, &str)> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for (hunk, &start) in hunks.iter().zip(&starts) {
        out.extend(lines[next..start].iter().map(|line| (line.text, line.eol)));
        let mut at = start;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    out.push((lines[at].text, lines[at].eol));
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(text) => out.push((text, eol)),
            }
        }
        next = at;
    }
    out.extend(lines[next..].iter().map(|line| (line.text, line.eol)));

    let ends_with_newline = content.is_empty() || content.ends_with('\n');
    let last = out.len().saturating_sub(1);
    let mut result = String::with_capacity(content.len());
    for (index, (text, line_eol)) in out.into_iter().enumerate() {
        result.push_str(text);
        if index == last && !ends_with_newline {
            continue;
        }
        result.push_str(if line_eol.is_empty() { eol } else { line_eol });
    }
    Ok(result)
}

fn split_lines(content: &str) -> Vec<FileLine<'_>> {
    let mut lines = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let Some(newline) = rest.find('\n') else {
            lines.push(FileLine {
                text: rest,
                eol: "",
            });
            break;
        };
        let (line, tail) = rest.split_at(newline + 1);
        let (text, eol) = match line.strip_suffix("\r\n") {
            Some(text) => (text, "\r\n"),
            None => (&line[..newline], "\n"),
        };
        lines.push(FileLine { text, eol });
        rest = tail;
    }
    lines
}

/// The line ending most of the file uses; LF when it has none.
fn usual_eol(content: &str) -> &'static str {
    let crlf = content.matches("\r\n").count();
    let lf = content.matches('\n').count() - crlf;
    if crlf > lf { "\r\n" } else { "\n" }
}

/// Whether a file line and a patch line are the same under matching strategy `pass`.
fn same(file: &str, patch: &str, pass: usize) -> bool {
    match pass {
        0 => file == patch,
        1 => file.trim_end() == patch.trim_end(),
        _ => file.trim() == patch.trim(),
    }
}

/// Where the hunk with these `headers` and `old` lines starts, searching from `from`.
/// `header_line` is the line the enclosing header matched, where `old` may also start (when
/// the hunk repeats the header line as context).
fn locate(
    texts: &[&str],
    from: usize,
    headers: &[String],
    old: &[&str],
    end_of_file: bool,
    header_line: Option<usize>,
) -> Result<usize, Miss> {
    let Some((header, inner)) = headers.split_first() else {
        return find_lines(texts, from, old, end_of_file, header_line).ok_or(Miss::Lines {
            from: header_line.unwrap_or(from),
        });
    };
    let mut first_miss = None;
    let mut tried = Vec::new();
    // Header lines are also matched by containment, so `@@ fn main` finds `fn main() {`.
    for pass in 0..=LINE_PASSES {
        let Some(found) = (from..texts.len()).find(|&at| header_matches(texts[at], header, pass))
        else {
            continue;
        };
        if tried.contains(&found) {
            continue;
        }
        tried.push(found);
        match locate(texts, found + 1, inner, old, end_of_file, Some(found)) {
            Ok(start) => return Ok(start),
            Err(miss) => {
                first_miss.get_or_insert(miss);
            }
        }
    }
    Err(first_miss.unwrap_or(Miss::Header {
        header: header.clone(),
        from,
    }))
}

fn header_matches(line: &str, header: &str, pass: usize) -> bool {
    if pass < LINE_PASSES {
        return same(line, header, pass);
    }
    let header = header.trim();
    !header.is_empty() && line.contains(header)
}

/// Where `old` occurs at or after `from` (or after `header_line`, from the header line
/// itself). A hunk that only adds lines goes right after its header, or at the end of the
/// file when it has none.
fn find_lines(
    texts: &[&str],
    from: usize,
    old: &[&str],
    end_of_file: bool,
    header_line: Option<usize>,
) -> Option<usize> {
    if old.is_empty() {
        return Some(if end_of_file || header_line.is_none() {
            texts.len()
        } else {
            from
        });
    }
    let first = header_line.unwrap_or(from);
    let last = texts.len().checked_sub(old.len())?;
    if first > last {
        return None;
    }
    let candidates = if end_of_file {
        last..=last
    } else {
        first..=last
    };
    (0..LINE_PASSES).find_map(|pass| {
        candidates.clone().find(|&at| {
            old.iter()
                .zip(&texts[at..])
                .all(|(patch, file)| same(file, patch, pass))
        })
    })
}

/// The message for a hunk that did not match: which file and hunk, what was expected, and
/// what the file has instead when part of the hunk matched.
fn describe_miss(
    label: &str,
    index: usize,
    total: usize,
    hunk: &Hunk,
    old: &[&str],
    texts: &[&str],
    miss: Miss,
) -> String {
    let which = format!("{label}: hunk {} of {total}", index + 1);
    let from = match miss {
        Miss::Header { header, from } => {
            return format!(
                "{which}: no line{} matches the `@@ {header}` line. Copy the header from the \
                 current file (a line such as a function signature above the change), or leave \
                 it out.",
                after(from)
            );
        }
        Miss::Lines { from } => from,
    };
    let place = if hunk.end_of_file {
        " at the end of the file (the hunk ends with `*** End of File`)".to_owned()
    } else {
        after(from)
    };
    let mut message = format!(
        "{which} does not match the file. These lines were expected{place}, in this order:\n"
    );
    for line in &hunk.lines {
        match line {
            HunkLine::Context(text) => message.push_str(&format!(" {text}\n")),
            HunkLine::Remove(text) => message.push_str(&format!("-{text}\n")),
            HunkLine::Add(_) => {}
        }
    }
    if let Some(at) = find_lines(texts, 0, old, false, None) {
        let reason = if hunk.end_of_file && at + old.len() < texts.len() {
            "which is not the end of the file"
        } else {
            "before where this hunk could start (hunks must be in file order, must not \
             overlap, and each `@@` line limits the search to after the line it matches)"
        };
        message.push_str(&format!("They do occur at line {}, {reason}.\n", at + 1));
    } else if let Some((at, matched)) = best_partial(texts, from, old) {
        message.push_str(&format!(
            "The closest match starts at line {}: its first {matched} line(s) match, but line \
             {} is `{}` where the hunk expects `{}`.\n",
            at + 1,
            at + matched + 1,
            texts.get(at + matched).copied().unwrap_or("(end of file)"),
            old[matched],
        ));
    }
    message.push_str("Read the file again and copy its current lines exactly.");
    message
}

/// `" after line N"` for a search that started past the first line.
fn after(from: usize) -> String {
    if from == 0 {
        String::new()
    } else {
        format!(" after line {from}")
    }
}

/// The start at or after `from` where the most leading lines of `old` match (ignoring
/// surrounding whitespace), with that count; `None` when not even the first line matches.
fn best_partial(texts: &[&str], from: usize, old: &[&str]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for at in from..texts.len() {
        let matched = old
            .iter()
            .zip(&texts[at..])
            .take_while(|(patch, file)| same(file, patch, LINE_PASSES - 1))
            .count();
        if matched > 0 && matched < old.len() && best.is_none_or(|(_, most)| matched > most) {
            best = Some((at, matched));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(headers: &[&str], lines: &[&str], end_of_file: bool) -> Hunk {
        let lines = lines
            .iter()
            .map(|line| {
                let (kind, text) = line.split_at(1);
                match kind {
                    " " => HunkLine::Context(text.to_owned()),
                    "-" => HunkLine::Remove(text.to_owned()),
                    _ => HunkLine::Add(text.to_owned()),
                }
            })
            .collect();
        Hunk {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            lines,
            end_of_file,
        }
    }

    #[test]
    fn applies_several_hunks_in_order() {
        let text = "a\nb\nc\nd\ne\nf\n";
        let hunks = [
            hunk(&[], &[" a", "-b", "+B"], false),
            hunk(&[], &[" e", "-f", "+F", "+G"], false),
        ];
        assert_eq!(
            apply_hunks("t", text, &hunks).unwrap(),
            "a\nB\nc\nd\ne\nF\nG\n"
        );
    }

    #[test]
    fn headers_narrow_the_search() {
        let text = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
        let hunks = [hunk(&["fn b() {"], &["-    x();", "+    y();"], false)];
        assert_eq!(
            apply_hunks("t", text, &hunks).unwrap(),
            "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n"
        );
        // A partial header matches by containment; a header repeated as context matches too.
        let hunks = [hunk(
            &["fn b"],
            &[" fn b() {", "-    x();", "+    z();"],
            false,
        )];
        assert!(
            apply_hunks("t", text, &hunks)
                .unwrap()
                .ends_with("fn b() {\n    z();\n}\n")
        );
        // Stacked headers narrow step by step; a hunk that only adds goes after the header.
        let text = "class A:\n  def f():\n    pass\nclass B:\n  def f():\n    pass\n";
        let hunks = [hunk(&["class B:", "def f():"], &["+    # B.f"], false)];
        assert_eq!(
            apply_hunks("t", text, &hunks).unwrap(),
            "class A:\n  def f():\n    pass\nclass B:\n  def f():\n    # B.f\n    pass\n"
        );
    }

    #[test]
    fn tolerates_whitespace_differences_but_keeps_the_file_text() {
        let text = "keep   \n  old\t\nend\n";
        let hunks = [hunk(&[], &[" keep", "-old", "+new", " end  "], false)];
        assert_eq!(
            apply_hunks("t", text, &hunks).unwrap(),
            "keep   \nnew\nend\n"
        );
    }

    #[test]
    fn keeps_line_endings_and_final_newline_state() {
        let hunks = [hunk(&[], &[" a", "-b", "+c", "+d"], false)];
        assert_eq!(
            apply_hunks("t", "a\r\nb\r\n", &hunks).unwrap(),
            "a\r\nc\r\nd\r\n"
        );
        assert_eq!(apply_hunks("t", "a\nb", &hunks).unwrap(), "a\nc\nd");
        let append = [hunk(&[], &["+z"], false)];
        assert_eq!(apply_hunks("t", "a\r\nb", &append).unwrap(), "a\r\nb\r\nz");
        assert_eq!(apply_hunks("t", "", &append).unwrap(), "z\n");
        let clear = [hunk(&[], &["-a", "-b"], false)];
        assert_eq!(apply_hunks("t", "a\nb\n", &clear).unwrap(), "");
    }

    #[test]
    fn end_of_file_hunks_match_only_at_the_end() {
        let text = "x\ny\nx\ny\n";
        let hunks = [hunk(&[], &[" x", "-y", "+z"], true)];
        assert_eq!(apply_hunks("t", text, &hunks).unwrap(), "x\ny\nx\nz\n");
        let hunks = [hunk(&[], &["-x"], true)];
        let err = apply_hunks("t", "x\ny\n", &hunks).unwrap_err();
        assert!(err.contains("at the end of the file"), "{err}");
        assert!(err.contains("not the end of the file"), "{err}");
    }

    #[test]
    fn misses_name_the_file_hunk_and_expected_lines() {
        let text = "one\ntwo\nthree\n";
        let hunks = [
            hunk(&[], &[" one", "-two", "+2"], false),
            hunk(&[], &[" three", "-four", "+4"], false),
        ];
        let err = apply_hunks("src/x.txt", text, &hunks).unwrap_err();
        assert!(err.starts_with("src/x.txt: hunk 2 of 2"), "{err}");
        assert!(err.contains(" three\n-four\n"), "{err}");
        assert!(
            err.contains("line 4 is `(end of file)` where the hunk expects `four`"),
            "{err}"
        );
        // Lines that occur only before the previous hunk are reported as out of order.
        let hunks = [
            hunk(&[], &[" two", "-three", "+3"], false),
            hunk(&[], &["-one", "+1"], false),
        ];
        let err = apply_hunks("t", text, &hunks).unwrap_err();
        assert!(err.contains("occur at line 1"), "{err}");
        let hunks = [hunk(&["fn nope"], &["-one"], false)];
        let err = apply_hunks("t", text, &hunks).unwrap_err();
        assert!(err.contains("`@@ fn nope`"), "{err}");
    }

    #[test]
    fn describes_the_closest_partial_match() {
        let text = "a\nb\nc\n";
        let hunks = [hunk(&[], &[" a", " b", "-x"], false)];
        let err = apply_hunks("t", text, &hunks).unwrap_err();
        assert!(
            err.contains("first 2 line(s) match, but line 3 is `c` where the hunk expects `x`"),
            "{err}"
        );
    }
}
