//! Unified diffs of what write tools changed.

use similar::TextDiff;

/// A unified diff of one file, `a/label` to `b/label`, with three lines of context.
/// A created file diffs from `/dev/null`, a deleted one to it. Empty when nothing changed.
pub(crate) fn unified_diff(label: &str, old: Option<&str>, new: Option<&str>) -> String {
    let before = old.unwrap_or_default();
    let after = new.unwrap_or_default();
    if old.is_some() && old == new {
        return String::new();
    }
    let from = if old.is_some() {
        format!("a/{label}")
    } else {
        "/dev/null".to_owned()
    };
    let to = if new.is_some() {
        format!("b/{label}")
    } else {
        "/dev/null".to_owned()
    };
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&from, &to)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_edits_creations_and_deletions() {
        let edit = unified_diff("f.txt", Some("a\nb\n"), Some("a\nc\n"));
        assert!(edit.starts_with("--- a/f.txt\n+++ b/f.txt\n"), "{edit}");
        assert!(edit.contains("-b\n+c\n"));
        assert!(unified_diff("n.txt", None, Some("x\n")).starts_with("--- /dev/null\n+++ b/n.txt"));
        assert!(unified_diff("d.txt", Some("x\n"), None).contains("+++ /dev/null"));
        assert_eq!(unified_diff("s.txt", Some("same\n"), Some("same\n")), "");
    }
}
