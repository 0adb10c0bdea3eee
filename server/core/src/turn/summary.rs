//! One line per tool call for people, as `tool_call_completed` and `tool_call_failed` carry
//! it (`summary`): the call's key argument and its result. Every door shows this line rather
//! than composing its own.

use serde_json::Value;

use crate::control_chars::neutralize;

/// Argument names that best say what a call is about, in order of preference.
const KEY_ARGUMENTS: [&str; 6] = ["path", "file_path", "pattern", "command", "query", "title"];
/// The widest a key argument or a result is shown, in characters.
const PART_WIDTH: usize = 60;

/// The key argument of a call: the first of [`KEY_ARGUMENTS`] it has, else its first string
/// argument, shortened; empty when it has none.
pub(crate) fn key_argument(arguments: &Value) -> String {
    let value = KEY_ARGUMENTS
        .iter()
        .find_map(|name| arguments.get(name).and_then(Value::as_str))
        .or_else(|| {
            arguments
                .as_object()
                .and_then(|object| object.values().find_map(Value::as_str))
        })
        .unwrap_or_default();
    one_line(value)
}

/// The key argument of a call whose arguments are still the model's JSON text.
pub(crate) fn key_of_raw(arguments: &str) -> String {
    serde_json::from_str(arguments)
        .map(|arguments: Value| key_argument(&arguments))
        .unwrap_or_default()
}

/// A finished call: `key → result`, where the result is its one line, or how many lines it
/// has; for a command's report (`Exit code: N` first), its exit code and how many lines it
/// printed.
pub(crate) fn completed(key: &str, output: &str) -> String {
    if let Some(rest) = output.strip_prefix("Exit code: ") {
        let (code, report) = rest.split_once('\n').unwrap_or((rest, ""));
        let printed = report
            .lines()
            .filter(|line| !line.starts_with("Wall time: "))
            .filter(|line| *line != "Output:" && *line != "Stderr:")
            .count();
        let code = one_line(code);
        return join(
            key,
            &match printed {
                0 => format!("exit {code}"),
                1 => format!("exit {code}, 1 line"),
                n => format!("exit {code}, {n} lines"),
            },
        );
    }
    let lines = output.lines().count();
    let result = match lines {
        0 => "no output".to_owned(),
        1 => one_line(output.trim()),
        _ => format!("{lines} lines"),
    };
    join(key, &result)
}

/// A failed call: `key → the error's first line`.
pub(crate) fn failed(key: &str, error: &str) -> String {
    join(key, &one_line(error.lines().next().unwrap_or_default()))
}

fn join(key: &str, result: &str) -> String {
    if key.is_empty() {
        result.to_owned()
    } else {
        format!("{key} → {result}")
    }
}

/// The first line of `text`, neutralised and cut to [`PART_WIDTH`] characters.
fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let safe = neutralize(first);
    if safe.chars().count() <= PART_WIDTH {
        return safe.into_owned();
    }
    let cut: String = safe.chars().take(PART_WIDTH - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_names_the_key_argument_and_the_result() {
        let key = key_argument(&json!({"path": "src/main.rs", "limit": 3}));
        assert_eq!(completed(&key, "a\nb\nc\n"), "src/main.rs → 3 lines");
        assert_eq!(completed(&key, "  ok  "), "src/main.rs → ok");
        assert_eq!(completed(&key, ""), "src/main.rs → no output");
        assert_eq!(
            completed("ls", "Exit code: 0\nWall time: 0.0s\nOutput:\na\nb\n"),
            "ls → exit 0, 2 lines"
        );
        assert_eq!(
            completed("touch x", "Exit code: 0\nWall time: 0.0s\n"),
            "touch x → exit 0"
        );
        assert_eq!(
            failed(&key_of_raw(r#"{"path": "../x"}"#), "Error: outside\nmore"),
            "../x → Error: outside"
        );
        assert_eq!(failed(&key_of_raw("not json"), "Error: bad"), "Error: bad");
    }

    #[test]
    fn a_summary_is_one_short_line_that_a_terminal_shows_not_obeys() {
        let key = key_argument(&json!({"command": "echo \u{1b}[2Jhi\nrm -rf /"}));
        assert_eq!(key, "echo ^[[2Jhi");
        let long = "x".repeat(500);
        let line = completed(&key_argument(&json!({"path": long})), &long);
        assert!(line.chars().count() <= 2 * PART_WIDTH + 3, "{line}");
        assert!(!line.contains('\n'));
    }
}
