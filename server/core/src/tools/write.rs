//! `write`: creates or replaces a whole file.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::diff::unified_diff;
use super::paths::{display_path, resolve_for_write};
use super::{Tool, ToolContext, ToolOutput};

pub struct WriteTool;

#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
}

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Create a file, or replace a file's whole content. Parent directories are created. \
         Prefer `edit` or `apply_patch` to change part of an existing file. `path` is \
         relative to the workspace root."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to write, relative to the workspace root."},
                "content": {"type": "string", "description": "The complete new content."},
            },
            "required": ["path", "content"],
            "additionalProperties": false,
        })
    }

    fn is_read_only(&self) -> bool {
        false
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let workspace = ctx.workspace.clone();
        tokio::task::spawn_blocking(move || {
            let change = replace_file(&workspace, &args.path, |_| Ok(args.content.clone()))?;
            let verb = if change.created { "Created" } else { "Wrote" };
            let lines = args.content.lines().count();
            Ok(ToolOutput::with_diff(
                format!("{verb} {} ({lines} lines).", change.label),
                change.diff,
            ))
        })
        .await
        .map_err(|err| format!("write failed: {err}"))?
    }
}

/// What a write did.
pub(crate) struct FileChange {
    pub label: String,
    pub created: bool,
    pub diff: String,
}

/// Replaces the file at `requested` with what `update` makes of its current content
/// (`None` when it does not exist yet), creating parent directories.
pub(crate) fn replace_file(
    workspace: &Path,
    requested: &str,
    update: impl FnOnce(Option<&str>) -> Result<String, String>,
) -> Result<FileChange, String> {
    let path = resolve_for_write(workspace, requested)?;
    let label = display_path(workspace, &path);
    if path.is_dir() {
        return Err(format!("{label} is a directory"));
    }
    let old = match std::fs::read(&path) {
        Ok(bytes) => Some(
            String::from_utf8(bytes)
                .map_err(|_| format!("{label} is not UTF-8 text; it cannot be edited"))?,
        ),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(format!("cannot read {label}: {err}")),
    };
    let new = update(old.as_deref())?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
    }
    std::fs::write(&path, &new).map_err(|err| format!("cannot write {label}: {err}"))?;
    Ok(FileChange {
        diff: unified_diff(&label, old.as_deref(), Some(&new)),
        created: old.is_none(),
        label,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_and_replaces_files_with_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let change = replace_file(dir.path(), "a/b.txt", |_| Ok("x\n".into())).unwrap();
        assert!(change.created);
        assert_eq!(change.label, "a/b.txt");
        assert!(change.diff.contains("+x"));
        let change = replace_file(dir.path(), "a/b.txt", |old| {
            assert_eq!(old, Some("x\n"));
            Ok("y\n".into())
        })
        .unwrap();
        assert!(!change.created && change.diff.contains("-x\n+y"));
        assert!(
            replace_file(dir.path(), "../out.txt", |_| Ok(String::new()))
                .err()
                .unwrap()
                .contains("outside")
        );
    }
}
