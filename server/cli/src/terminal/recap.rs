//! Where a session taken up had got to: its last exchanges, shortened (each input the
//! person gave, the first lines of the answers, one line per tool call), printed after
//! `/resume`, `--resume` and `--continue`.

use coder_core::Engine;
use coder_core::control_chars::neutralize;
use coder_protocol::{ConversationId, Role};

/// How many of the last exchanges are shown.
const EXCHANGES: usize = 3;
/// How many lines of an answer are shown.
const ANSWER_LINES: usize = 3;

/// The recap of `conversation`'s last exchanges; empty when it has none.
pub fn recap(engine: &Engine, conversation: ConversationId) -> String {
    let (Ok(points), Ok(history)) = (
        engine.rewind_points(conversation),
        engine.history(conversation),
    ) else {
        return String::new();
    };
    let starts: Vec<usize> = points
        .iter()
        .map(|point| history.len().saturating_sub(point.messages))
        .collect();
    let first = points.len().saturating_sub(EXCHANGES);
    let mut out = String::new();
    for (at, point) in points.iter().enumerate().skip(first) {
        let end = starts.get(at + 1).copied().unwrap_or(history.len());
        out.push_str(&format!("› {}\n", neutralize(&point.text)));
        for message in history.get(starts[at] + 1..end).unwrap_or_default() {
            if message.role != Role::Assistant {
                continue;
            }
            let text = message.content.as_deref().unwrap_or_default().trim();
            let lines: Vec<&str> = text
                .lines()
                .filter(|line| !line.trim().is_empty())
                .collect();
            for line in lines.iter().take(ANSWER_LINES) {
                out.push_str(&format!("  {}\n", neutralize(line)));
            }
            if lines.len() > ANSWER_LINES {
                out.push_str("  …\n");
            }
            for call in &message.tool_calls {
                out.push_str(&format!("  • {}\n", neutralize(&call.function.name)));
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    let earlier = if first > 0 {
        format!(" (of {})", points.len())
    } else {
        String::new()
    };
    format!("── the last exchanges{earlier} ──\n{out}──")
}
