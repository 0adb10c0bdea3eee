//! What coder takes from an MCP server, bounded: a server is another program, and what it
//! answers may be hostile or broken. Its tool list is read no further than
//! [`MAX_TOOLS`] tools or [`MAX_PAGES`] pages, a description is cut at
//! [`MAX_DESCRIPTION_BYTES`], a tool whose input schema is larger than
//! [`MAX_SCHEMA_BYTES`] is left out, and a call's result keeps the first
//! [`MAX_RESULT_BYTES`] of its text and images of at most [`MAX_IMAGE_BYTES`] each, at most
//! [`MAX_IMAGES`] of them. Whatever is cut or left out is said: to the person as a `warning`,
//! to the model in the result.

use coder_protocol::Attachment;
use rmcp::model::{PaginatedRequestParams, Tool as RemoteTool};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use crate::tools::ToolOutput;

/// The tools taken from one server.
pub(super) const MAX_TOOLS: usize = 1_000;
/// The pages of its tool list read.
pub(super) const MAX_PAGES: usize = 100;
/// The bytes of a tool's description offered to the model.
pub(super) const MAX_DESCRIPTION_BYTES: usize = 4 * 1024;
/// The bytes of a tool's input schema, as JSON.
pub(super) const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The bytes of a call result's text given to the model: about 25,000 tokens.
pub(super) const MAX_RESULT_BYTES: usize = 100_000;
/// The bytes of one image of a result, as base64.
pub(super) const MAX_IMAGE_BYTES: usize = 8 * 1024 * 1024;
/// The images of one result.
pub(super) const MAX_IMAGES: usize = 20;

/// The server's tools, page after page, until the list ends or a bound is reached, each
/// taken within bounds as its page arrives: its description cut, and left out when its
/// input schema is too large; what coder does not use of a tool (its output schema, icons,
/// metadata) is not kept. With a sentence for the person on each thing cut or left out.
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
) -> Result<(Vec<RemoteTool>, Vec<String>), ServiceError> {
    let mut tools = Vec::new();
    let mut notes = Vec::new();
    let (mut described, mut too_wide) = (Named::default(), Named::default());
    let mut cursor = None;
    let mut ended = false;
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await?;
        for tool in page.tools {
            if tools.len() == MAX_TOOLS {
                notes.push(format!(
                    "it offers more than {MAX_TOOLS} tools; the first {MAX_TOOLS} are used"
                ));
                ended = true;
                break;
            }
            if let Some(kept) = within_bounds(tool, &mut described, &mut too_wide) {
                tools.push(kept);
            }
        }
        cursor = page.next_cursor;
        if ended || cursor.is_none() {
            ended = true;
            break;
        }
    }
    if !ended {
        notes.push(format!(
            "its tool list goes on past {MAX_PAGES} pages; the {} tools of those are used",
            tools.len()
        ));
    }
    notes.extend(described.note(&format!(
        "with a description over {} KiB, of which the model is offered the start",
        MAX_DESCRIPTION_BYTES >> 10
    )));
    notes.extend(too_wide.note(&format!(
        "with an input schema over {} KiB, left out",
        MAX_SCHEMA_BYTES >> 10
    )));
    Ok((tools, notes))
}

/// `tool` as coder keeps it, or `None` when its schema is too large; the names of tools
/// cut or left out go to `described` and `too_wide`.
fn within_bounds(
    mut tool: RemoteTool,
    described: &mut Named,
    too_wide: &mut Named,
) -> Option<RemoteTool> {
    if schema_too_large(&*tool.input_schema).is_some() {
        too_wide.add(&tool.name);
        return None;
    }
    if let Some(text) = &tool.description {
        let (kept, cut) = description(text);
        if cut {
            described.add(&tool.name);
            tool.description = Some(kept.into());
        }
    }
    if tool
        .title
        .as_ref()
        .is_some_and(|title| title.len() > MAX_DESCRIPTION_BYTES)
    {
        tool.title = None;
    }
    tool.output_schema = None;
    tool.icons = None;
    tool.meta = None;
    Some(tool)
}

/// `n` and the noun for it.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Tools a note names: how many, and the first few names, quoted and cut as they come (a
/// server's names may be anything, and as many as its pages hold).
#[derive(Default)]
struct Named {
    count: usize,
    first: Vec<String>,
}

impl Named {
    /// The names a note quotes.
    const SHOWN: usize = 5;

    fn add(&mut self, name: &str) {
        self.count += 1;
        if self.first.len() < Self::SHOWN {
            let cut: String = name.chars().take(64).collect();
            self.first
                .push(format!("`{}`", crate::control_chars::neutralize(&cut)));
        }
    }

    /// `n tools {what}: names`, when there are any.
    fn note(&self, what: &str) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let mut shown = self.first.clone();
        if self.count > self.first.len() {
            shown.push(format!("and {} more", self.count - self.first.len()));
        }
        Some(format!(
            "{} {what}: {}",
            count(self.count, "tool", "tools"),
            shown.join(", ")
        ))
    }
}

/// `description` cut to [`MAX_DESCRIPTION_BYTES`] at a character boundary; whether it was.
pub(super) fn description(description: &str) -> (String, bool) {
    if description.len() <= MAX_DESCRIPTION_BYTES {
        return (description.to_owned(), false);
    }
    let end = description.floor_char_boundary(MAX_DESCRIPTION_BYTES);
    (format!("{}…", &description[..end]), true)
}

/// The size of `schema` as JSON when it is larger than [`MAX_SCHEMA_BYTES`].
pub(super) fn schema_too_large(schema: &impl serde::Serialize) -> Option<usize> {
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |json| json.len());
    (size > MAX_SCHEMA_BYTES).then_some(size)
}

/// A call result's content blocks as what the model receives: text blocks joined by
/// newlines, images attached, anything else as its JSON; each bound applied and said.
pub(super) fn result(content: &Value) -> ToolOutput {
    let mut text = String::new();
    // Every byte of text the blocks hold, kept or not.
    let mut total = 0;
    let mut attachments = Vec::new();
    // Images left out: over the size, and past the count.
    let (mut too_large, mut past_the_last) = (0, 0);
    for block in content.as_array().into_iter().flatten() {
        let piece = match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_owned(),
            Some("image") => {
                let data = block["data"].as_str().unwrap_or_default();
                if data.len() > MAX_IMAGE_BYTES {
                    too_large += 1;
                } else if attachments.len() == MAX_IMAGES {
                    past_the_last += 1;
                } else {
                    attachments.push(Attachment::Inline {
                        media_type: block["mimeType"].as_str().unwrap_or("image/png").to_owned(),
                        data: data.to_owned(),
                    });
                }
                continue;
            }
            _ => block.to_string(),
        };
        let separator = if total > 0 { "\n" } else { "" };
        total += separator.len() + piece.len();
        for part in [separator, piece.as_str()] {
            let room = MAX_RESULT_BYTES.saturating_sub(text.len());
            text.push_str(&part[..part.floor_char_boundary(room.min(part.len()))]);
        }
    }
    let mut left_out = Vec::new();
    if total > text.len() {
        left_out.push(format!(
            "the text past its first {} bytes; it had {total}",
            text.len()
        ));
    }
    if too_large > 0 {
        left_out.push(format!(
            "{} of more than {} MiB of base64",
            count(too_large, "image", "images"),
            MAX_IMAGE_BYTES >> 20
        ));
    }
    if past_the_last > 0 {
        left_out.push(format!(
            "{} past the first {MAX_IMAGES}",
            count(past_the_last, "image", "images")
        ));
    }
    for what in left_out {
        text.push_str(&format!("\n[left out of the MCP tool's result: {what}]"));
    }
    let mut output = ToolOutput::text(text);
    output.attachments = attachments;
    output
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_within_the_bounds_is_given_whole() {
        let output = result(&json!([
            {"type": "text", "text": "one"},
            {"type": "resource", "uri": "file:///x"},
            {"type": "image", "mimeType": "image/jpeg", "data": "AAAA"},
            {"type": "text", "text": "two"},
        ]));
        assert_eq!(
            output.content,
            "one\n{\"type\":\"resource\",\"uri\":\"file:///x\"}\ntwo"
        );
        assert_eq!(output.attachments.len(), 1);
        assert_eq!(output.attachments[0].url(), "data:image/jpeg;base64,AAAA");
    }

    #[test]
    fn text_past_the_bound_is_cut_at_a_character_and_its_size_said() {
        // Three-byte characters, so the bound falls inside one.
        let long = "€".repeat(MAX_RESULT_BYTES);
        let output = result(&json!([
            {"type": "text", "text": "head"},
            {"type": "text", "text": long},
            {"type": "text", "text": "never seen"},
        ]));
        let total = 4 + 1 + long.len() + 1 + 10;
        let (kept, note) = output.content.rsplit_once('\n').unwrap();
        assert!(kept.len() <= MAX_RESULT_BYTES && kept.len() > MAX_RESULT_BYTES - 3);
        assert!(kept.starts_with("head\n€€"));
        assert!(!output.content.contains("never seen"));
        assert_eq!(
            note,
            format!(
                "[left out of the MCP tool's result: the text past its first {} bytes; it had {total}]",
                kept.len()
            )
        );
    }

    #[test]
    fn images_too_large_or_too_many_are_left_out_and_said() {
        let mut blocks = vec![json!({"type": "image", "data": "A".repeat(MAX_IMAGE_BYTES + 1)})];
        blocks.extend((0..MAX_IMAGES + 1).map(|_| json!({"type": "image", "data": "AAAA"})));
        let output = result(&Value::Array(blocks));
        assert_eq!(output.attachments.len(), MAX_IMAGES);
        assert!(
            output
                .content
                .contains("1 image of more than 8 MiB of base64")
        );
        assert!(output.content.contains("1 image past the first 20"));
        // However many are left out, one line says so.
        let many: Vec<Value> = (0..10_000)
            .map(|_| json!({"type": "image", "data": ""}))
            .collect();
        let output = result(&Value::Array(many));
        assert_eq!(
            output.content,
            "\n[left out of the MCP tool's result: 9980 images past the first 20]"
        );
    }

    #[test]
    fn a_long_description_is_cut_and_a_large_schema_is_named() {
        let (short, cut) = description("fine");
        assert_eq!((short.as_str(), cut), ("fine", false));
        let (long, cut) = description(&"é".repeat(MAX_DESCRIPTION_BYTES));
        assert!(cut && long.ends_with('…'));
        assert!(long.len() <= MAX_DESCRIPTION_BYTES + '…'.len_utf8());
        let properties: serde_json::Map<String, Value> = (0..5_000)
            .map(|k| (format!("p{k}"), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        assert!(schema_too_large(&schema).is_some_and(|size| size > MAX_SCHEMA_BYTES));
        assert_eq!(schema_too_large(&json!({"type": "object"})), None);
    }
}
