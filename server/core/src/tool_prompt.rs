//! Tool calling through the prompt (seed 002), for models that take tools only as text:
//! the tools are described in a system message, the model writes each call as
//!
//! ```text
//! <tool_call>
//! {"name": "read", "arguments": {"path": "README.md"}}
//! </tool_call>
//! ```
//!
//! and the calls are read back from its reply. The history is sent as text too: a call as
//! the block the model wrote, a result as a user message in `<tool_response>` tags.
//!
//! Which tools are described follows seed 002's batches: the conversation's initial tools
//! ([`PromptedTools`]) are described by one system message that opens every request
//! ([`request_lead`]), never twice; a context that starts over (`/clear`, a compaction,
//! a plan approved with a cleared context: `Conversation::start_batch`) is a new batch, and
//! the description opens it again; tools added later (an MCP server's refresh) are ordinary
//! messages of the batch they arrive in, and so are tools taken away ([`announcement`],
//! which every conversation gets, whatever the tool calling); without initial tools there
//! is no description.

use coder_protocol::{ChatMessage, Role, ToolCall};
use serde_json::Value;

use crate::model::ToolSpec;

/// Opens the system message that describes the initial tools.
pub(crate) const TOOLS_HEADER: &str = "Available tools:";

/// Opens a message that announces tools added during the conversation.
pub(crate) const NEW_TOOLS_HEADER: &str = "New tools available:";

/// Opens the part of that message that names the tools taken away.
pub(crate) const REMOVED_TOOLS_HEADER: &str = "Tools no longer available:";

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// How to call a tool, after the list.
const HOW_TO_CALL: &str = "To call a tool, reply with one block per call, each on lines of its own, and nothing after the last block:\n<tool_call>\n{\"name\": \"TOOL_NAME\", \"arguments\": {\"ARGUMENT\": \"VALUE\"}}\n</tool_call>\nThe result comes back in a <tool_response> message. Reply without a block when no tool is needed.";

/// One line per tool: its name, its arguments (`name: type`, `?` when optional) and the
/// first line of its description.
fn tool_lines(tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .map(|tool| {
            let description = tool.description.lines().next().unwrap_or_default();
            format!(
                "- {}({}): {description}",
                tool.name,
                arguments(&tool.parameters)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The arguments of a schema: the required ones first, in their order, then the others.
fn arguments(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return String::new();
    };
    let kind = |name: &str| {
        properties[name]["type"]
            .as_str()
            .unwrap_or("any")
            .to_owned()
    };
    required
        .iter()
        .filter(|name| properties.contains_key(**name))
        .map(|name| format!("{name}: {}", kind(name)))
        .chain(
            properties
                .keys()
                .filter(|name| !required.contains(&name.as_str()))
                .map(|name| format!("{name}?: {}", kind(name))),
        )
        .collect::<Vec<_>>()
        .join(", ")
}

/// The system message describing `tools`; `None` when there are none.
pub(crate) fn description(tools: &[ToolSpec]) -> Option<ChatMessage> {
    (!tools.is_empty()).then(|| {
        ChatMessage::system(format!(
            "{TOOLS_HEADER}\n{}\n\n{HOW_TO_CALL}",
            tool_lines(tools)
        ))
    })
}

/// An ordinary message announcing the tools `added` and the tools `removed` (by name)
/// during the conversation; `None` when neither has any.
pub(crate) fn announcement(added: &[ToolSpec], removed: &[String]) -> Option<ChatMessage> {
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("{NEW_TOOLS_HEADER}\n{}", tool_lines(added)));
    }
    if !removed.is_empty() {
        let names: Vec<String> = removed.iter().map(|name| format!("- {name}")).collect();
        parts.push(format!("{REMOVED_TOOLS_HEADER}\n{}", names.join("\n")));
    }
    (!parts.is_empty()).then(|| ChatMessage::user(parts.join("\n\n")))
}

/// What a conversation called through the prompt remembers of its tools, by name: the
/// initial ones (described in every batch) and the ones announced since. Saved with the
/// conversation (the session snapshot's and journal's `promptedTools`), so a resumed
/// conversation describes the same tools and announces none twice.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PromptedTools {
    /// The tools of the conversation's first task.
    initial: Vec<String>,
    /// Tools offered since, each announced once by an ordinary message.
    #[serde(default)]
    announced: Vec<String>,
}

impl PromptedTools {
    /// At a task's start, with the tools it offers: the first task's become the initial
    /// tools; a later task's that were never seen are returned, to be announced.
    pub fn update(known: &mut Option<Self>, offered: &[ToolSpec]) -> Vec<ToolSpec> {
        let names = || offered.iter().map(|tool| tool.name.clone()).collect();
        let Some(known) = known else {
            *known = Some(Self {
                initial: names(),
                announced: Vec::new(),
            });
            return Vec::new();
        };
        let new: Vec<ToolSpec> = offered
            .iter()
            .filter(|tool| {
                !known.initial.contains(&tool.name) && !known.announced.contains(&tool.name)
            })
            .cloned()
            .collect();
        known
            .announced
            .extend(new.iter().map(|tool| tool.name.clone()));
        new
    }

    /// The initial tools among `offered` (a tool no longer offered is not described).
    pub fn initial(&self, offered: &[ToolSpec]) -> Vec<ToolSpec> {
        offered
            .iter()
            .filter(|tool| self.initial.contains(&tool.name))
            .cloned()
            .collect()
    }
}

/// What a request in prompt form writes before its history ([`message_as_text`] writes
/// each message of that): the description of the `initial` tools. Seed 002's batch start:
/// the history never holds the description (it is built here for every request), so each
/// batch, whatever cleared the history before it (`Conversation::start_batch`), holds it
/// exactly once; without initial tools there is none.
pub(crate) fn request_lead(initial: &[ToolSpec]) -> Vec<ChatMessage> {
    description(initial).into_iter().collect()
}

/// The messages of a request in prompt form, all of them: [`request_lead`], then
/// `history` as text.
#[cfg(test)]
pub(crate) fn request_messages(initial: &[ToolSpec], history: &[ChatMessage]) -> Vec<ChatMessage> {
    request_lead(initial)
        .into_iter()
        .chain(as_text(history))
        .collect()
}

/// A request's history in prompt form ([`message_as_text`]).
#[cfg(test)]
pub(crate) fn as_text(history: &[ChatMessage]) -> Vec<ChatMessage> {
    history.iter().map(message_as_text).collect()
}

/// A history message in prompt form: the calls of an assistant message as the blocks a
/// model writes, a tool result as a user message in `<tool_response>` tags, others as
/// they are.
pub(crate) fn message_as_text(message: &ChatMessage) -> ChatMessage {
    match message.role {
        Role::Assistant if !message.tool_calls.is_empty() => {
            let mut text = message.content.clone().unwrap_or_default();
            for call in &message.tool_calls {
                let arguments: Value = serde_json::from_str(&call.function.arguments)
                    .unwrap_or_else(|_| Value::String(call.function.arguments.clone()));
                let block = serde_json::json!({"name": call.function.name, "arguments": arguments});
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!("{OPEN}\n{block}\n{CLOSE}"));
            }
            ChatMessage {
                content: Some(text),
                tool_calls: Vec::new(),
                ..message.clone()
            }
        }
        Role::Tool => {
            let name = message.name.as_deref().unwrap_or("tool");
            let mut response = ChatMessage::user(format!(
                "<tool_response name=\"{name}\">\n{}\n</tool_response>",
                message.content.as_deref().unwrap_or_default()
            ));
            response.attachments = message.attachments.clone();
            response
        }
        _ => message.clone(),
    }
}

/// The calls written in a reply, and its text without them. A block whose JSON is not a
/// call (`{"name": ..., "arguments": {...}}`) stays in the text. `ids` names each call.
pub(crate) fn parse_calls(text: &str, mut ids: impl FnMut() -> String) -> (String, Vec<ToolCall>) {
    let mut visible = String::with_capacity(text.len());
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find(CLOSE) else {
            break;
        };
        let block = after[..end].trim();
        let call = serde_json::from_str::<Value>(block).ok().and_then(|value| {
            let name = value["name"].as_str()?.to_owned();
            let arguments = match &value["arguments"] {
                Value::Null => "{}".to_owned(),
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            Some(ToolCall::function(ids(), name, arguments))
        });
        match call {
            Some(call) => {
                visible.push_str(&rest[..start]);
                calls.push(call);
            }
            None => visible.push_str(&rest[..start + OPEN.len() + end + CLOSE.len()]),
        }
        rest = &after[end + CLOSE.len()..];
    }
    visible.push_str(rest);
    (visible.trim().to_owned(), calls)
}

/// Holds back streamed text that may be a tool call block, so people see the reply's text,
/// not the calls: text before `<tool_call>` goes out at once, a block never does.
#[derive(Debug, Default)]
pub(crate) struct DeltaFilter {
    held: String,
    in_block: bool,
}

impl DeltaFilter {
    /// The part of `delta` that can be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        let mut shown = String::new();
        loop {
            if self.in_block {
                match self.held.find(CLOSE) {
                    Some(end) => {
                        self.held.drain(..end + CLOSE.len());
                        self.in_block = false;
                    }
                    None => return shown,
                }
            } else {
                match self.held.find(OPEN) {
                    Some(start) => {
                        shown.push_str(&self.held[..start]);
                        self.held.drain(..start + OPEN.len());
                        self.in_block = true;
                    }
                    None => {
                        // Keep a tail that could be the start of `<tool_call>`.
                        let keep = (1..OPEN.len())
                            .rev()
                            .find(|n| {
                                self.held.len() >= *n
                                    && self.held.is_char_boundary(self.held.len() - n)
                                    && OPEN.starts_with(&self.held[self.held.len() - n..])
                            })
                            .unwrap_or(0);
                        let cut = self.held.len() - keep;
                        shown.push_str(&self.held[..cut]);
                        self.held.drain(..cut);
                        return shown;
                    }
                }
            }
        }
    }

    /// What is left at the end of the reply that is not inside a block.
    pub fn finish(&mut self) -> String {
        if self.in_block {
            // An unclosed block: the model's text, shown as it is.
            return format!("{OPEN}{}", std::mem::take(&mut self.held));
        }
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("Does {name}.\nMore detail."),
            parameters: std::sync::Arc::new(crate::tools::Schema::new(
                json!({"type": "object", "properties": {"path": {"type": "string"},
                "limit": {"type": "integer"}}, "required": ["path"]}),
            )),
        }
    }

    /// The first line of each message of a request.
    fn texts(messages: &[ChatMessage]) -> Vec<String> {
        messages
            .iter()
            .map(|m| m.content.clone().unwrap_or_default())
            .map(|text| text.lines().next().unwrap_or_default().to_owned())
            .collect()
    }

    // Seed 002's scenarios through a whole conversation are in the core's integration
    // tests (`tests/suite/prompt_tools.rs`); these check the request's shape.

    #[test]
    fn a_request_opens_with_the_initial_tools_described_once() {
        let history = [ChatMessage::user("question")];
        let messages = request_messages(&[tool("read"), tool("grep")], &history);
        assert_eq!(texts(&messages), ["Available tools:", "question"]);
        let text = messages[0].content.as_deref().unwrap();
        assert_eq!(messages[0].role, Role::System);
        assert!(
            text.starts_with(
                "Available tools:\n- read(path: string, limit?: integer): Does read.\n- grep("
            ),
            "{text}"
        );
        assert!(text.contains("<tool_call>"));
        assert!(!text.contains("More detail."));
        // A new batch (an empty history) opens with it too.
        assert_eq!(
            texts(&request_messages(&[tool("read")], &[])),
            ["Available tools:"]
        );
    }

    #[test]
    fn without_initial_tools_a_request_has_no_description() {
        let history = [ChatMessage::user("hi")];
        assert_eq!(texts(&request_messages(&[], &history)), ["hi"]);
        assert!(request_messages(&[], &[]).is_empty());
    }

    #[test]
    fn tools_added_later_are_an_ordinary_message_and_leave_the_description_alone() {
        let history = [announcement(&[tool("docs__search")], &[]).unwrap()];
        let messages = request_messages(&[tool("read")], &history);
        assert_eq!(
            texts(&messages),
            ["Available tools:", "New tools available:"]
        );
        assert_eq!(messages[1].role, Role::User);
        assert!(
            !messages[0]
                .content
                .clone()
                .unwrap()
                .contains("docs__search")
        );
    }

    #[test]
    fn a_later_task_announces_the_tools_it_gains_once_and_describes_only_the_initial_ones() {
        let mut known = None;
        assert_eq!(PromptedTools::update(&mut known, &[tool("read")]), []);
        let gained = [tool("read"), tool("docs__search")];
        let new = PromptedTools::update(&mut known, &gained);
        let announced = announcement(&new, &[]).unwrap();
        assert!(
            announced
                .content
                .unwrap()
                .starts_with("New tools available:\n- docs__search(")
        );
        assert_eq!(PromptedTools::update(&mut known, &gained), []);
        let initial = known.unwrap().initial(&gained);
        assert_eq!(initial.len(), 1);
        assert_eq!(initial[0].name, "read");
    }

    #[test]
    fn tools_taken_away_are_announced_after_the_new_ones() {
        let removed = ["docs__old".to_owned(), "docs__older".to_owned()];
        let both = announcement(&[tool("docs__search")], &removed).unwrap();
        let text = both.content.unwrap();
        assert!(
            text.starts_with("New tools available:\n- docs__search("),
            "{text}"
        );
        assert!(
            text.ends_with("\n\nTools no longer available:\n- docs__old\n- docs__older"),
            "{text}"
        );
        let only_removed = announcement(&[], &removed[..1]).unwrap().content.unwrap();
        assert_eq!(only_removed, "Tools no longer available:\n- docs__old");
        assert_eq!(announcement(&[], &[]), None);
    }

    #[test]
    fn calls_are_read_from_the_reply_and_the_text_around_them_is_kept() {
        let mut n = 0;
        let reply = "Let me look.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>\n<tool_call>{\"name\": \"ls\"}</tool_call>";
        let (text, calls) = parse_calls(reply, || {
            n += 1;
            format!("call_{n}")
        });
        assert_eq!(text, "Let me look.");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].function.name, "read");
        assert_eq!(calls[0].function.arguments, r#"{"path":"a.rs"}"#);
        assert_eq!(calls[1].function.arguments, "{}");
        // Not a call: left as text.
        let (text, calls) = parse_calls("<tool_call>not json</tool_call> ok", String::new);
        assert!(calls.is_empty());
        assert_eq!(text, "<tool_call>not json</tool_call> ok");
    }

    #[test]
    fn streamed_blocks_are_never_shown_whatever_the_pieces() {
        let reply = "Sure.\n<tool_call>\n{\"name\": \"read\"}\n</tool_call>\nDone <b>.";
        for size in 1..reply.len() {
            let mut filter = DeltaFilter::default();
            let mut shown = String::new();
            let chars: Vec<char> = reply.chars().collect();
            for piece in chars.chunks(size) {
                shown.push_str(&filter.push(&piece.iter().collect::<String>()));
            }
            shown.push_str(&filter.finish());
            assert_eq!(shown, "Sure.\n\nDone <b>.", "pieces of {size}");
        }
    }

    #[test]
    fn the_history_goes_as_text() {
        let call = ToolCall::function("c1".into(), "read".into(), r#"{"path":"a"}"#.into());
        let history = vec![
            ChatMessage::assistant("Looking.".into(), String::new(), vec![call]),
            ChatMessage::tool_result("c1", "read", "contents"),
        ];
        let text = as_text(&history);
        assert_eq!(
            text[0].content.as_deref(),
            Some(
                "Looking.\n<tool_call>\n{\"arguments\":{\"path\":\"a\"},\"name\":\"read\"}\n</tool_call>"
            )
        );
        assert!(text[0].tool_calls.is_empty());
        assert_eq!(text[1].role, Role::User);
        assert_eq!(
            text[1].content.as_deref(),
            Some("<tool_response name=\"read\">\ncontents\n</tool_response>")
        );
    }
}
