//! `apply_patch`: adds, deletes, updates and renames files with one patch in the
//! `*** Begin Patch` format of OpenAI Codex.
//!
//! The whole patch is parsed ([`parser`]), and every hunk located ([`apply`]) and every
//! operation checked in memory ([`staging`]), before anything is written, so a patch with a
//! malformed line, an unmatched hunk or a bad path changes nothing. Operations apply in
//! order, so a later section sees what earlier ones did. Files open in the editor are
//! patched from its text, and updates to them go through it.

mod apply;
mod parser;
mod staging;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use self::parser::{FileOp, parse_patch};
use self::staging::{not_applied, preview, run};
use super::{Preview, Tool, ToolContext, ToolOutput};

/// The tool's name.
pub const APPLY_PATCH: &str = "apply_patch";

pub struct ApplyPatchTool;

/// The patch a shell command applies, when the whole command is `apply_patch` reading a
/// patch from a here-document, as the apply_patch instructions teach a conversation that is
/// not offered the tool (seed 003):
///
/// ```text
/// apply_patch <<'EOF'
/// *** Begin Patch
/// ...
/// *** End Patch
/// EOF
/// ```
///
/// Anything more in the command (another command, a pipe, a redirection, text after the
/// closing marker) makes it no patch: it is left to the shell.
pub(crate) fn patch_of_command(command: &str) -> Option<String> {
    let command = command.trim();
    let (opening, rest) = command.split_once('\n')?;
    let after_name = opening.trim_start().strip_prefix(APPLY_PATCH)?;
    if !after_name.trim_start().starts_with("<<") {
        return None;
    }
    let marker = parser::heredoc_marker(opening)?;
    let body = rest.strip_suffix(marker)?;
    // The marker closes the here-document only on a line of its own.
    let body = body
        .strip_suffix('\n')
        .or_else(|| body.is_empty().then_some(body))?;
    // A marker line inside ends the here-document there: what follows is more commands.
    if body.lines().any(|line| line == marker) {
        return None;
    }
    Some(body.to_owned())
}

#[derive(Deserialize)]
struct Args {
    patch: String,
}

#[async_trait]
impl Tool for ApplyPatchTool {
    fn name(&self) -> &str {
        APPLY_PATCH
    }

    fn description(&self) -> &str {
        "Add, delete, update and rename files in one call with a patch. The whole patch is \
         checked first and applied only if every part fits; a failed call changes nothing. \
         Example:\n\
         *** Begin Patch\n\
         *** Add File: docs/notes.md\n\
         +Every line of a new file starts with +.\n\
         *** Delete File: old.txt\n\
         *** Update File: src/app.py\n\
         *** Move to: src/main.py\n\
         @@ def greet():\n\
         \x20   name = input()\n\
         -    print(\"hi\")\n\
         +    print(\"hello\", name)\n\
         \x20   return name\n\
         *** End Patch\n\
         In an update, each hunk starts with `@@`, optionally followed by a line of the file \
         (such as a function signature) that the change comes after. Then come the file's \
         lines in order: a space before unchanged context lines, `-` before removed lines and \
         `+` before added ones. Give about 3 lines of context around each change, copied \
         exactly from the current file; no line numbers. Hunks must be in file order. \
         `*** Move to:` right after `*** Update File:` renames the file. A hunk followed by \
         `*** End of File` must match at the end of the file. Paths are relative to the \
         workspace root."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "patch": {
                    "type": "string",
                    "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`.",
                },
            },
            "required": ["patch"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Edit
    }

    /// Every file the patch adds, deletes, changes or renames (both names of a rename).
    fn locations(
        &self,
        input: &Value,
        workspace: &std::path::Path,
    ) -> Vec<coder_protocol::ToolLocation> {
        let Some(Ok(patch)) = input["patch"].as_str().map(parse_patch) else {
            return Vec::new();
        };
        patch
            .ops
            .iter()
            .flat_map(|op| match op {
                FileOp::Add { path, .. } | FileOp::Delete { path } => vec![path.as_str()],
                FileOp::Update { path, move_to, .. } => std::iter::once(path.as_str())
                    .chain(move_to.as_deref())
                    .collect(),
            })
            .filter_map(|path| super::paths::location(workspace, Some(path), None))
            .collect()
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn validate_input(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        let Some(patch) = input.get("patch").and_then(Value::as_str) else {
            return Err("`patch` must be a string".to_owned());
        };
        parse_patch(patch).map(drop).map_err(not_applied)
    }

    async fn preview(&self, input: &Value, ctx: &ToolContext) -> Result<Option<Preview>, String> {
        let args: Args = serde_json::from_value(input.clone()).map_err(|err| err.to_string())?;
        preview(ctx, &args.patch).await.map(Some)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        run(ctx, &args.patch).await
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    fn context(workspace: &Path) -> ToolContext {
        ToolContext::new(workspace)
    }

    fn read(dir: &Path, path: &str) -> String {
        fs::read_to_string(dir.join(path)).unwrap()
    }

    #[test]
    fn only_a_command_that_is_all_apply_patch_and_its_heredoc_is_a_patch() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch";
        for command in [
            format!("apply_patch <<'EOF'\n{patch}\nEOF"),
            format!("  apply_patch <<\"PATCH\"\n{patch}\nPATCH\n"),
            format!("apply_patch<<EOF\n{patch}\nEOF"),
        ] {
            assert_eq!(
                patch_of_command(&command).as_deref(),
                Some(patch),
                "{command}"
            );
        }
        for command in [
            format!("apply_patch <<'EOF' && rm -rf build\n{patch}\nEOF"),
            format!("apply_patch <<'EOF'\n{patch}\nEOF\nrm -rf build"),
            format!("apply_patch <<'EOF'\n{patch}\nEOF\necho EOF"),
            format!("apply_patch <<'EOF'\n{patch}\nEOF\nEOF"),
            format!("cat > a.txt <<'EOF'\n{patch}\nEOF"),
            format!("apply_patchy <<'EOF'\n{patch}\nEOF"),
            format!("apply_patch '{patch}'"),
            "apply_patch".to_owned(),
        ] {
            assert_eq!(patch_of_command(&command), None, "{command}");
        }
    }

    #[tokio::test]
    async fn the_tool_applies_a_heredoc_wrapped_patch() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "one  \ntwo\n").unwrap();
        let tool = ApplyPatchTool;
        let ctx = context(dir.path());
        let patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n one\n-two\n+2\n*** End Patch\nEOF\n";
        let input = json!({ "patch": patch });
        assert_eq!(tool.validate_input(&input, &ctx), Ok(()));
        let output = tool.call(input, &ctx).await.unwrap();
        assert_eq!(output.content, "Applied the patch:\nM a.txt");
        assert!(output.diff.unwrap().contains("-two\n+2\n"));
        assert_eq!(read(dir.path(), "a.txt"), "one  \n2\n");
        assert_eq!(tool.name(), "apply_patch");
        assert!(!tool.is_read_only());
        assert!(jsonschema::validator_for(&tool.input_schema()).is_ok());
    }

    #[tokio::test]
    async fn a_preview_carries_each_file_before_and_after_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("b.txt"), "bee\n").unwrap();
        fs::write(dir.path().join("c.txt"), "sea\n").unwrap();
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+ay\n*** Update File: b.txt\n-bee\n+BEE\n*** Delete File: c.txt\n*** End Patch\n";
        let preview = ApplyPatchTool
            .preview(&json!({ "patch": patch }), &context(dir.path()))
            .await
            .unwrap()
            .unwrap();
        let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        let texts: Vec<(String, Option<&str>, Option<&str>)> = preview
            .changes
            .iter()
            .map(|change| {
                (
                    change.path.clone(),
                    change.old_text.as_deref(),
                    change.new_text.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            texts,
            [
                (at("a.txt"), None, Some("ay\n")),
                (at("b.txt"), Some("bee\n"), Some("BEE\n")),
                (at("c.txt"), Some("sea\n"), None),
            ]
        );
        assert!(preview.diff.contains("+BEE"), "{}", preview.diff);
        assert!(!dir.path().join("a.txt").exists());
        assert_eq!(read(dir.path(), "c.txt"), "sea\n");
    }

    #[tokio::test]
    async fn the_tool_rejects_malformed_and_unmatched_patches() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let tool = ApplyPatchTool;
        let ctx = context(dir.path());
        let malformed = json!({ "patch": "*** Begin Patch\n*** Update File: a.txt\n one\n" });
        let err = tool.validate_input(&malformed, &ctx).unwrap_err();
        assert!(err.contains("*** End Patch"), "{err}");
        assert!(tool.call(malformed, &ctx).await.is_err());
        let fenced = "```\n*** Begin Patch\n*** Update File: a.txt\n-zero\n+0\n*** End Patch\n```";
        let unmatched = json!({ "patch": fenced });
        assert_eq!(tool.validate_input(&unmatched, &ctx), Ok(()));
        let err = tool.call(unmatched, &ctx).await.unwrap_err();
        assert!(
            err.contains("a.txt: hunk 1 of 1") && err.contains("-zero"),
            "{err}"
        );
        assert_eq!(read(dir.path(), "a.txt"), "one\n");
    }
}
