//! Finding `@` references in the text of user input.
//!
//! Forms: `@path`, `@dir/`, `@path#L10-40`, `@path#L10`, `@"path with spaces"` (optionally
//! followed by `#L..`). An `@` counts only at the start of the text or after whitespace or an
//! opening bracket or quote, so `me@example.com` and `a@b` are left alone. Trailing sentence
//! punctuation (`.`, `,`, `:`, `;`, `!`, `?`, closing brackets and quotes) is not part of an
//! unquoted path.

/// A `#L` range: its first line and, for `#L10-40`, its last (1-based).
pub(crate) type Lines = (usize, Option<usize>);

/// One `@` reference as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The path, without `@`, quotes or line range.
    pub path: String,
    /// `#L10-40` as `(10, Some(40))`, `#L10` as `(10, None)`.
    pub lines: Option<Lines>,
}

/// The references of `text`, in order, each once.
pub(crate) fn references(text: &str) -> Vec<Reference> {
    let mut found: Vec<Reference> = Vec::new();
    let mut index = 0;
    while let Some(offset) = text[index..].find('@') {
        let at = index + offset;
        index = at + 1;
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || "([{\"'`".contains(c))) {
            continue;
        }
        let Some((reference, used)) = one(&text[at + 1..]) else {
            continue;
        };
        index = at + 1 + used;
        if !found.contains(&reference) {
            found.push(reference);
        }
    }
    found
}

/// The reference at the start of `text` (just after its `@`) and the bytes it spans.
fn one(text: &str) -> Option<(Reference, usize)> {
    let (path, used) = if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted.find('"')?;
        (quoted[..end].to_owned(), end + 2)
    } else {
        let end = text.find(char::is_whitespace).unwrap_or(text.len());
        let word = text[..end].trim_end_matches(|c: char| ".,:;!?)]}\"'`".contains(c));
        (word.to_owned(), word.len())
    };
    // The range follows the path: inside an unquoted word, after the closing quote.
    let (path, lines, used) = match path.rsplit_once("#L") {
        Some((file, range)) if !file.is_empty() => match line_range(range) {
            Some(lines) => (file.to_owned(), Some(lines), used),
            None => (path, None, used),
        },
        _ => match text[used..].strip_prefix("#L") {
            Some(tail) => {
                let len = tail
                    .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                    .unwrap_or(tail.len());
                match line_range(&tail[..len]) {
                    Some(lines) => (path, Some(lines), used + 2 + len),
                    None => (path, None, used),
                }
            }
            None => (path, None, used),
        },
    };
    if path.is_empty() || path.starts_with('@') {
        return None;
    }
    Some((Reference { path, lines }, used))
}

/// `10-40` or `10` (1-based; the end not before the start).
fn line_range(text: &str) -> Option<Lines> {
    let (start, end) = match text.split_once('-') {
        Some((start, end)) => (start, Some(end)),
        None => (text, None),
    };
    let start: usize = start.parse().ok().filter(|n| *n >= 1)?;
    let end = match end {
        Some(end) => Some(end.parse().ok().filter(|n| *n >= start)?),
        None => None,
    };
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn check(text: &str, expected: &[(&str, Option<Lines>)]) {
        let found: Vec<(String, Option<Lines>)> = references(text)
            .into_iter()
            .map(|r| (r.path, r.lines))
            .collect();
        let expected: Vec<(String, Option<Lines>)> = expected
            .iter()
            .map(|(path, lines)| ((*path).to_owned(), *lines))
            .collect();
        assert_eq!(found, expected, "{text}");
    }

    #[test]
    fn every_form() {
        check("look at @src/lib.rs please", &[("src/lib.rs", None)]);
        check("@src/", &[("src/", None)]);
        check("see @a.rs#L10-40.", &[("a.rs", Some((10, Some(40))))]);
        check("see @a.rs#L7, and", &[("a.rs", Some((7, None)))]);
        check("open @\"my file.txt\" now", &[("my file.txt", None)]);
        check(
            "(@\"my file.txt\"#L2-3)",
            &[("my file.txt", Some((2, Some(3))))],
        );
        check(
            "@a.rs and @b.rs and @a.rs",
            &[("a.rs", None), ("b.rs", None)],
        );
    }

    #[test]
    fn not_references() {
        check("mail me@example.com or a@b", &[]);
        check("a lone @ and @@ and @\"unclosed", &[]);
        check("odd range @a.rs#L0", &[("a.rs#L0", None)]);
    }
}
