//! `edit`: replaces an exact string in a file (in the editor's text when it is open there).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::write::{PendingChange, prepare_change};
use super::{Preview, Tool, ToolContext, ToolOutput};

pub struct EditTool;

#[derive(Deserialize)]
struct Args {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Replace an exact string in a file. `old_string` must appear exactly once (include \
         enough surrounding lines to make it unique) unless `replace_all` is true. Match the \
         file's text exactly, including indentation; read the file first. To create a file, \
         use `write`."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to edit, relative to the workspace root."},
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Edit
    }

    fn locations(
        &self,
        input: &Value,
        workspace: &std::path::Path,
    ) -> Vec<coder_protocol::ToolLocation> {
        super::paths::path_argument(workspace, input, None, None)
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn validate_input(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        if input["old_string"].as_str().is_some_and(str::is_empty) {
            return Err("old_string is empty; use `write` to create a file".to_owned());
        }
        if input["old_string"] == input["new_string"] {
            return Err("old_string and new_string are the same; nothing would change".to_owned());
        }
        Ok(())
    }

    async fn preview(&self, input: &Value, ctx: &ToolContext) -> Result<Option<Preview>, String> {
        let (pending, _) = pending_edit(input.clone(), ctx).await?;
        Ok(Some(pending.preview()))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let (pending, replaced) = pending_edit(input, ctx).await?;
        ctx.check_approved(&pending.diff())?;
        let change = pending.commit(&ctx.seen, ctx.changes.as_deref()).await?;
        let times = if replaced == 1 {
            "once".to_owned()
        } else {
            format!("{replaced} times")
        };
        Ok(ToolOutput::with_diff(
            change.report(format!("Edited {}: replaced {times}.", change.label)),
            change.diff,
        ))
    }
}

/// The edit `input` asks for, computed but not made, and the number of replacements.
async fn pending_edit(input: Value, ctx: &ToolContext) -> Result<(PendingChange, usize), String> {
    let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
    let workspace = ctx.workspace.clone();
    let documents = ctx.documents.clone();
    let seen = ctx.seen.clone();
    tokio::task::spawn_blocking(move || {
        let mut replaced = 0;
        let pending = prepare_change(&workspace, documents.as_ref(), &seen, &args.path, |old| {
            let Some(old) = old else {
                return Err(format!(
                    "{} does not exist; use `write` to create it",
                    args.path
                ));
            };
            let (text, count) = replace(old, &args)?;
            replaced = count;
            Ok(text)
        })?;
        Ok((pending, replaced))
    })
    .await
    .map_err(|err| format!("edit failed: {err}"))?
}

/// The new text and the number of replacements. A file with CRLF line endings also matches
/// an `old_string` written with LF, and keeps its CRLF endings.
fn replace(text: &str, args: &Args) -> Result<(String, usize), String> {
    let mut old = args.old_string.clone();
    let mut new = args.new_string.clone();
    let mut count = text.matches(&old).count();
    if count == 0 && text.contains("\r\n") && !old.contains('\r') {
        old = old.replace('\n', "\r\n");
        new = new.replace('\n', "\r\n");
        count = text.matches(&old).count();
    }
    match count {
        0 => {
            let hint = if text.contains(args.old_string.trim()) {
                " (it does appear with different surrounding whitespace; copy the exact text)"
            } else {
                ""
            };
            Err(format!("old_string was not found in {}{hint}", args.path))
        }
        1 => Ok((text.replacen(&old, &new, 1), 1)),
        _ if args.replace_all => Ok((text.replace(&old, &new), count)),
        _ => Err(format!(
            "old_string appears {count} times in {}; include more surrounding lines to make it \
             unique, or set replace_all to replace every occurrence",
            args.path
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(old: &str, new: &str, all: bool) -> Args {
        Args {
            path: "f.txt".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn replaces_unique_strings_and_refuses_ambiguity() {
        assert_eq!(
            replace("a b c", &args("b", "x", false)).unwrap(),
            ("a x c".into(), 1)
        );
        assert!(
            replace("a b c", &args("z", "x", false))
                .unwrap_err()
                .contains("not found")
        );
        let err = replace("b b", &args("b", "x", false)).unwrap_err();
        assert!(err.contains("appears 2 times"), "{err}");
        assert_eq!(
            replace("b b", &args("b", "x", true)).unwrap(),
            ("x x".into(), 2)
        );
        assert!(
            replace("  fn x()", &args("fn x() ", "y", false))
                .unwrap_err()
                .contains("different surrounding whitespace")
        );
    }

    #[test]
    fn crlf_files_keep_their_line_endings() {
        let (text, _) = replace("a\r\nb\r\nc\r\n", &args("a\nb", "a\nB", false)).unwrap();
        assert_eq!(text, "a\r\nB\r\nc\r\n");
    }
}
