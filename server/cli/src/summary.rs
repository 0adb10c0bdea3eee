//! One-line summaries of tool calls for people: name, key argument, result, duration.

use std::collections::HashMap;

use serde_json::Value;

/// Argument names that best say what a call is about, in order of preference.
const KEY_ARGUMENTS: [&str; 5] = ["path", "file_path", "pattern", "command", "query"];
const MAX_WIDTH: usize = 80;

/// Remembers each started call's key argument until it ends.
#[derive(Default)]
pub struct ToolLines {
    keys: HashMap<String, String>,
}

impl ToolLines {
    pub fn started(&mut self, call_id: &str, arguments: &Value) {
        self.keys
            .insert(call_id.to_owned(), key_argument(arguments));
    }

    pub fn completed(&mut self, call_id: &str, tool: &str, output: &str, millis: u64) -> String {
        let key = self.keys.remove(call_id).unwrap_or_default();
        let lines = output.lines().count();
        let result = if lines > 1 {
            format!("{lines} lines")
        } else {
            shorten(output.trim())
        };
        format!("• {tool} {key} → {result} ({millis} ms)")
    }

    pub fn failed(&mut self, call_id: &str, tool: &str, error: &str, millis: u64) -> String {
        let key = self.keys.remove(call_id).unwrap_or_default();
        let first = error.lines().next().unwrap_or_default();
        format!("✗ {tool} {key} → {} ({millis} ms)", shorten(first))
    }
}

fn key_argument(arguments: &Value) -> String {
    let value = KEY_ARGUMENTS
        .iter()
        .find_map(|name| arguments.get(name).and_then(Value::as_str))
        .or_else(|| {
            arguments
                .as_object()
                .and_then(|object| object.values().find_map(Value::as_str))
        })
        .unwrap_or_default();
    shorten(value)
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_WIDTH {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX_WIDTH - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_name_the_tool_key_argument_result_and_duration() {
        let mut lines = ToolLines::default();
        lines.started("1", &json!({"path": "src/main.rs", "limit": 3}));
        assert_eq!(
            lines.completed("1", "read", "a\nb\nc\n", 4),
            "• read src/main.rs → 3 lines (4 ms)"
        );
        lines.started("2", &json!({"path": "../x"}));
        assert_eq!(
            lines.failed("2", "read", "Error: ../x is outside the workspace\nmore", 0),
            "✗ read ../x → Error: ../x is outside the workspace (0 ms)"
        );
    }
}
