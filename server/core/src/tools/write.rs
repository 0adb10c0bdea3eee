//! `write`: creates or replaces a whole file. Also the change machinery of `edit`: a file
//! open in the editor is changed there, any other on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::beneath::WorkspaceDir;
use super::diff::unified_diff;
use super::paths::{display_path, resolve_for_write};
use super::seen::{SeenFiles, content_hash};
use super::{Preview, Tool, ToolContext, ToolOutput};
use crate::documents::{Documents, IN_EDITOR_NOTE};

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

    async fn preview(&self, input: &Value, ctx: &ToolContext) -> Result<Option<Preview>, String> {
        let args: Args = serde_json::from_value(input.clone()).map_err(|err| err.to_string())?;
        preview_change(ctx, args.path, move |_| Ok(args.content))
            .await
            .map(Some)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let lines = args.content.lines().count();
        let change = replace_file(ctx, args.path, move |_| Ok(args.content)).await?;
        let verb = if change.created { "Created" } else { "Wrote" };
        Ok(ToolOutput::with_diff(
            change.report(format!("{verb} {} ({lines} lines).", change.label)),
            change.diff,
        ))
    }
}

/// What a write did.
pub(crate) struct FileChange {
    pub label: String,
    pub created: bool,
    pub diff: String,
    /// The change went to the editor's buffer of the open file, not to the disk.
    pub in_editor: bool,
}

impl FileChange {
    /// `summary` for the model, with a note when the change is in the editor and not saved.
    pub fn report(&self, summary: String) -> String {
        if self.in_editor {
            format!("{summary} {IN_EDITOR_NOTE}")
        } else {
            summary
        }
    }
}

/// A change to one file, computed but not made yet.
pub(crate) struct PendingChange {
    /// The workspace handle the change was read through and is written through.
    dir: WorkspaceDir,
    path: PathBuf,
    label: String,
    /// The text the change was computed from: the editor's when the file is open there,
    /// else the disk's; `None` when the file does not exist.
    old: Option<String>,
    new: String,
    /// Set when the file is open in the editor: the change goes there first.
    editor: Option<Arc<dyn Documents>>,
}

/// Replaces the file at `requested` with what `update` makes of its current content
/// (`None` when it does not exist yet): an open document's change goes to the editor, any
/// other file is written to disk, creating parent directories. The reading and computing
/// run on the blocking pool, and `update` with them.
pub(crate) async fn replace_file(
    ctx: &ToolContext,
    requested: String,
    update: impl FnOnce(Option<&str>) -> Result<String, String> + Send + 'static,
) -> Result<FileChange, String> {
    let workspace = ctx.workspace.clone();
    let documents = ctx.documents.clone();
    let seen = ctx.seen.clone();
    let pending = tokio::task::spawn_blocking(move || {
        prepare_change(&workspace, documents.as_ref(), &seen, &requested, update)
    })
    .await
    .map_err(|err| format!("write failed: {err}"))??;
    ctx.check_approved(&pending.diff())?;
    pending.commit(&ctx.seen, ctx.changes.as_deref()).await
}

/// The unified diff [`replace_file`] would make with the same arguments, changing nothing.
pub(crate) async fn preview_change(
    ctx: &ToolContext,
    requested: String,
    update: impl FnOnce(Option<&str>) -> Result<String, String> + Send + 'static,
) -> Result<Preview, String> {
    let workspace = ctx.workspace.clone();
    let documents = ctx.documents.clone();
    let seen = ctx.seen.clone();
    tokio::task::spawn_blocking(move || {
        prepare_change(&workspace, documents.as_ref(), &seen, &requested, update)
            .map(|pending| pending.preview())
    })
    .await
    .map_err(|err| format!("write failed: {err}"))?
}

/// Reads the file at `requested` (from the editor when it is open there) and computes its
/// new content with `update`, changing nothing yet. Fails when the agent saw the file with
/// other content than it has now ([`SeenFiles::check`]): the preview a person approves and
/// the change made are both computed from the content checked here.
pub(crate) fn prepare_change(
    workspace: &Path,
    documents: Option<&Arc<dyn Documents>>,
    seen: &SeenFiles,
    requested: &str,
    update: impl FnOnce(Option<&str>) -> Result<String, String>,
) -> Result<PendingChange, String> {
    let path = resolve_for_write(workspace, requested)?;
    let label = display_path(workspace, &path);
    let dir = WorkspaceDir::open(workspace)?;
    if dir
        .file_type(&path)
        .is_ok_and(|kind| kind == Some(rustix::fs::FileType::Directory))
    {
        return Err(format!("{label} is a directory"));
    }
    let open = documents.and_then(|documents| Some((documents, documents.text(&path)?)));
    let (old, editor) = match open {
        Some((documents, text)) => (Some(text), Some(documents.clone())),
        None => (read_disk(&dir, &path, &label)?, None),
    };
    seen.check(&path, &label, old.as_deref().map(str::as_bytes))?;
    let new = update(old.as_deref())?;
    Ok(PendingChange {
        dir,
        path,
        label,
        old,
        new,
        editor,
    })
}

/// The file's text on disk, read through the workspace handle; `None` when it does not
/// exist.
fn read_disk(dir: &WorkspaceDir, path: &Path, label: &str) -> Result<Option<String>, String> {
    match dir.read(path, crate::tools::MAX_EDIT_BYTES) {
        Ok(Some(bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{label} is not UTF-8 text; it cannot be edited")),
        Ok(None) => Ok(None),
        Err(err) => Err(format!("cannot read {label}: {err}")),
    }
}

impl PendingChange {
    /// The change as a unified diff.
    pub(crate) fn diff(&self) -> String {
        unified_diff(&self.label, self.old.as_deref(), Some(&self.new))
    }

    /// The change as a person is shown it: the diff, and the file before and after.
    pub(crate) fn preview(&self) -> Preview {
        let mut preview = Preview {
            diff: self.diff(),
            changes: Vec::new(),
        };
        preview.push_file(&self.path, self.old.as_deref(), Some(&self.new));
        preview
    }

    /// Makes the change: in the editor when the file is open there and the editor applies
    /// edits, else on disk. An editor's refusal fails the call with nothing changed. The new
    /// content is recorded in `seen`: the agent's own write is what it last saw.
    pub(crate) async fn commit(
        self,
        seen: &SeenFiles,
        changes: Option<&dyn crate::tools::ChangeRecorder>,
    ) -> Result<FileChange, String> {
        let (path, written) = (self.path.clone(), content_hash(self.new.as_bytes()));
        let mut in_editor = false;
        if let (Some(editor), Some(old)) = (&self.editor, &self.old) {
            in_editor = editor
                .apply(&self.path, old, &self.new)
                .await
                .map_err(|reason| {
                    format!(
                        "the editor refused the change to {}: {reason}. Nothing was changed; \
                         read the file again before retrying.",
                        self.label
                    )
                })?;
        }
        let diff = self.diff();
        let created = self.old.is_none();
        let label = if in_editor {
            self.label
        } else {
            if let Some(changes) = changes {
                changes.before_change(&self.path);
            }
            tokio::task::spawn_blocking(move || self.write_disk())
                .await
                .map_err(|err| format!("cannot write: {err}"))??
        };
        seen.saw(&path, Some(written));
        Ok(FileChange {
            label,
            created,
            diff,
            in_editor,
        })
    }

    /// Writes the new content to disk through the workspace handle, creating parent
    /// directories; returns the label.
    fn write_disk(self) -> Result<String, String> {
        self.dir
            .write(&self.path, self.new.as_bytes(), None)
            .map_err(|err| format!("cannot write {}: {err}", self.label))?;
        Ok(self.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn creates_and_replaces_files_with_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let change = replace_file(&ctx, "a/b.txt".into(), |_| Ok("x\n".into()))
            .await
            .unwrap();
        assert!(change.created && !change.in_editor);
        assert_eq!(change.label, "a/b.txt");
        assert!(change.diff.contains("+x"));
        assert_eq!(change.report("Wrote.".into()), "Wrote.");
        let change = replace_file(&ctx, "a/b.txt".into(), |old| {
            assert_eq!(old, Some("x\n"));
            Ok("y\n".into())
        })
        .await
        .unwrap();
        assert!(!change.created && change.diff.contains("-x\n+y"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b.txt")).unwrap(),
            "y\n"
        );
        assert!(
            replace_file(&ctx, "../out.txt".into(), |_| Ok(String::new()))
                .await
                .err()
                .unwrap()
                .contains("outside")
        );
    }
}
