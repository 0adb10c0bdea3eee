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

/// The server's tools, page after page, until the list ends or a bound is reached; with a
/// sentence for the person when the list was longer than what was taken.
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
) -> Result<(Vec<RemoteTool>, Option<String>), ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await?;
        tools.extend(page.tools);
        if tools.len() > MAX_TOOLS {
            tools.truncate(MAX_TOOLS);
            return Ok((
                tools,
                Some(format!(
                    "it offers more than {MAX_TOOLS} tools; the first {MAX_TOOLS} are used"
                )),
            ));
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok((tools, None));
        }
    }
    let taken = tools.len();
    Ok((
        tools,
        Some(format!(
            "its tool list goes on past {MAX_PAGES} pages; the {taken} tools of those are used"
        )),
    ))
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
pub(super) fn schema_too_large(schema: &Value) -> Option<usize> {
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
    let mut left_out = Vec::new();
    for block in content.as_array().into_iter().flatten() {
        let piece = match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_owned(),
            Some("image") => {
                let data = block["data"].as_str().unwrap_or_default();
                if data.len() > MAX_IMAGE_BYTES {
                    left_out.push(format!(
                        "an image of {} bytes of base64, more than {} MiB",
                        data.len(),
                        MAX_IMAGE_BYTES >> 20
                    ));
                } else if attachments.len() == MAX_IMAGES {
                    left_out.push(format!("an image past the first {MAX_IMAGES}"));
                } else {
                    attachments.push(Attachment {
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
    if total > text.len() {
        left_out.insert(
            0,
            format!(
                "the text past its first {} bytes; it had {total}",
                text.len()
            ),
        );
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
        assert_eq!(output.attachments[0].media_type, "image/jpeg");
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
        assert!(output.content.contains(&format!(
            "an image of {} bytes of base64, more than 8 MiB",
            MAX_IMAGE_BYTES + 1
        )));
        assert!(output.content.contains("an image past the first 20"));
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
