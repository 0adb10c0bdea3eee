//! A call's title: what it would do, in a few words, from what its tool says of it (its
//! kind, the command line it runs, the paths it reaches), so every door shows a call the
//! same way without knowing the tool.

use std::path::Path;

use coder_protocol::{EventMsg, ToolKind, ToolLocation};
use serde_json::Value;

use super::Tool;

/// The `tool_call_started` of a call of `tool` with `input`: its kind, the paths it
/// reaches and its title, as the tool says.
pub(crate) fn started(tool: &dyn Tool, call_id: &str, input: &Value, workspace: &Path) -> EventMsg {
    let locations = tool.locations(input, workspace);
    EventMsg::ToolCallStarted {
        call_id: call_id.to_owned(),
        tool_name: tool.name().to_owned(),
        arguments: input.clone(),
        kind: tool.kind(),
        title: title(
            tool.kind(),
            tool.name(),
            tool.command_line(input).as_deref(),
            &locations,
        ),
        locations,
    }
}

/// The title of a call of `tool`: the command it runs (its first line), else the paths it
/// reaches, else the tool (`` Run `cargo test` ``, `Edit /abs/src/main.rs`).
pub fn title(
    kind: ToolKind,
    tool: &str,
    command: Option<&str>,
    locations: &[ToolLocation],
) -> String {
    let verb = match kind {
        ToolKind::Read => "Read",
        ToolKind::Edit => "Edit",
        ToolKind::Delete => "Delete",
        ToolKind::Move => "Move",
        ToolKind::Search => "Search",
        ToolKind::Execute => "Run",
        ToolKind::Think => "Note",
        ToolKind::Fetch => "Fetch",
        ToolKind::SwitchMode => "Carry out the plan",
        ToolKind::Other => "Use",
    };
    if let Some(command) = command {
        let first = command.lines().next().unwrap_or_default();
        let more = if command.lines().nth(1).is_some() {
            " …"
        } else {
            ""
        };
        return format!("{verb} `{first}`{more}");
    }
    if kind == ToolKind::SwitchMode {
        return verb.to_owned();
    }
    let paths: Vec<&str> = locations
        .iter()
        .map(|location| location.path.as_str())
        .collect();
    match paths.as_slice() {
        [] => format!("{verb} `{tool}`"),
        [one] => format!("{verb} {one}"),
        [one, rest @ ..] => format!("{verb} {one} and {} more", rest.len()),
    }
}
