//! Seed 004 section 7: whether a request is a complex task. The input is trimmed, then
//! counted in Unicode characters; it is complex when, in this order of priority:
//!
//! 1. it enumerates several goals explicitly (`1. … 2. …`, `(1) … (2) …`, `A/B/C`);
//! 2. it is at least 40 characters long;
//! 3. it holds at least 3 multi-step keywords (并且, 同时, 另外, 分别, 步骤, 重构, 迁移,
//!    优化, and English ones such as "and then", "refactor", "migrate"), or splits into at
//!    least 3 non-empty segments on `，。；、,` and newlines.
//!
//! With `requireTodoForComplex`, a complex request in a conversation without unfinished
//! todos starts a todo list (`session/input.rs`).

/// Which rule found a request complex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Complexity {
    Enumeration,
    Length,
    Keywords,
    Segments,
}

/// The seed's length threshold, in Unicode characters.
const LONG: usize = 40;

/// Keywords and segments needed.
const THRESHOLD: usize = 3;

/// The seed's multi-step keywords.
const KEYWORDS_ZH: &[&str] = &[
    "并且", "同时", "另外", "分别", "步骤", "重构", "迁移", "优化", "然后", "接着", "最后", "首先",
];

/// Their English counterparts, matched as whole words, ignoring case.
const KEYWORDS_EN: &[&str] = &[
    "and then",
    "also",
    "additionally",
    "as well as",
    "respectively",
    "step",
    "steps",
    "refactor",
    "migrate",
    "optimize",
    "then",
    "after that",
    "finally",
    "first",
];

/// Whether `input` is a complex task, and by which rule.
pub(crate) fn complexity(input: &str) -> Option<Complexity> {
    let text = input.trim();
    if text.is_empty() {
        return None;
    }
    if enumerates(text) {
        Some(Complexity::Enumeration)
    } else if text.chars().count() >= LONG {
        Some(Complexity::Length)
    } else if keywords(text) >= THRESHOLD {
        Some(Complexity::Keywords)
    } else if segments(text) >= THRESHOLD {
        Some(Complexity::Segments)
    } else {
        None
    }
}

/// How many keyword occurrences `text` holds.
fn keywords(text: &str) -> usize {
    let chinese: usize = KEYWORDS_ZH
        .iter()
        .map(|keyword| text.matches(keyword).count())
        .sum();
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    // Longer keywords first, each word counted once: "and then" is one keyword, not also
    // "then".
    let mut keywords: Vec<Vec<&str>> = KEYWORDS_EN
        .iter()
        .map(|keyword| keyword.split(' ').collect())
        .collect();
    keywords.sort_by_key(|parts| std::cmp::Reverse(parts.len()));
    let mut used = vec![false; words.len()];
    let mut english = 0;
    for parts in &keywords {
        for at in 0..words.len().saturating_sub(parts.len() - 1) {
            let span = at..at + parts.len();
            if words[span.clone()] == parts[..] && !used[span.clone()].contains(&true) {
                used[span].fill(true);
                english += 1;
            }
        }
    }
    chinese + english
}

/// The non-empty segments of `text` split on `，。；、,` and newlines.
fn segments(text: &str) -> usize {
    text.split(['，', '。', '；', '、', ',', '\n'])
        .filter(|segment| !segment.trim().is_empty())
        .count()
}

/// An explicit enumeration of goals: numbered items `1` and `2` (`1.`, `1)`, `1、`, `(1)`,
/// `（1）`), or three or more words joined by `/` (`A/B/C`; a path, with a dot or a leading
/// `/`, `.` or `~`, is not one).
fn enumerates(text: &str) -> bool {
    numbered(text, 1) && numbered(text, 2) || slashed(text)
}

/// Whether item `n` is marked in `text`, at its start or after whitespace or punctuation.
fn numbered(text: &str, n: u32) -> bool {
    let n = n.to_string();
    let markers = [
        format!("{n}."),
        format!("{n})"),
        format!("{n}、"),
        format!("({n})"),
        format!("（{n}）"),
    ];
    markers.iter().any(|marker| {
        text.match_indices(marker.as_str()).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + marker.len()..].chars().next();
            // A parenthesised marker stands on its own; `1.` needs a break before it.
            let starts =
                marker.starts_with(['(', '（']) || before.is_none_or(|c| !c.is_alphanumeric());
            // `1.5` is a number, not an item.
            let item = after.is_none_or(|c| !c.is_ascii_digit());
            starts && item
        })
    })
}

fn slashed(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "，。；、,:：()（）".contains(c))
        .any(|token| {
            let parts: Vec<&str> = token.split('/').collect();
            parts.len() >= 3
                && !token.starts_with(['/', '.', '~'])
                && !token.contains('.')
                && parts.iter().all(|part| {
                    !part.is_empty()
                        && part.chars().count() <= 20
                        && part
                            .chars()
                            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    use Complexity::{Enumeration, Keywords, Length, Segments};

    #[test]
    fn the_seeds_rules_in_their_order_on_chinese_and_english_requests() {
        let cases: &[(&str, Option<Complexity>)] = &[
            // Simple.
            ("", None),
            ("   ", None),
            ("hi", None),
            ("修复这个错误", None),
            ("Fix the typo in main.rs", None),
            ("读一下 README", None),
            ("What does this do?", None),
            ("Rename foo to bar.", None),
            ("解释一下这个函数", None),
            ("Run the tests", None),
            ("优化这个循环", None),
            ("重构并且测试", None),
            ("Version 1.5 is out, 2.0 soon", None),
            ("see src/lib.rs", None),
            ("open ./a/b/c", None),
            ("look at /etc/x/y", None),
            ("a, b", None),
            // Explicit enumeration first, however short.
            ("1. 读 2. 写", Some(Enumeration)),
            ("1) read 2) write", Some(Enumeration)),
            ("(1) 读取 (2) 写入", Some(Enumeration)),
            ("（1）读取（2）写入", Some(Enumeration)),
            ("1、读取 2、写入", Some(Enumeration)),
            ("do 1. x\n2. y", Some(Enumeration)),
            ("改 A/B/C", Some(Enumeration)),
            ("update lexer/parser/checker", Some(Enumeration)),
            ("前端/后端/数据库", Some(Enumeration)),
            (
                "1. Add a flag to the parser and 2. document it in the README",
                Some(Enumeration),
            ),
            // Then length: 40 characters or more, counted as characters, not bytes.
            ("Please fix the failing test in the parser", Some(Length)),
            (
                "这个项目的解析器在处理嵌套注释时会崩溃请帮我找出原因并修复它同时加上回归测试确保以后不会再出现",
                Some(Length),
            ),
            (&"x".repeat(40), Some(Length)),
            (&"字".repeat(40), Some(Length)),
            (&"x".repeat(39), None),
            (&"字".repeat(39), None),
            (&format!("  {}  ", "x".repeat(39)), None),
            // Then keywords (three occurrences) and segments (three).
            ("重构并且迁移", Some(Keywords)),
            ("先重构同时优化另外迁移", Some(Keywords)),
            ("refactor, then migrate", Some(Keywords)),
            ("Refactor; Migrate; Optimize", Some(Keywords)),
            ("读，写，测", Some(Segments)),
            ("读。写。测", Some(Segments)),
            ("a, b, c", Some(Segments)),
            ("a\nb\nc", Some(Segments)),
            ("读；写；测", Some(Segments)),
            ("读、写、测", Some(Segments)),
            ("a,, ,b", None),
            ("steps", None),
            ("then also first", Some(Keywords)),
            ("thenalso first", None),
            // "and then" is one keyword, not two.
            ("refactor and then test", None),
            ("refactor and then migrate", Some(Keywords)),
        ];
        assert!(cases.len() >= 40);
        for (input, expected) in cases {
            assert_eq!(complexity(input), *expected, "{input:?}");
        }
    }
}
