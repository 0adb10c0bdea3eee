//! The editor overlay: files open in an editor, whose text (unsaved changes included) the
//! file tools see instead of the disk's, and whose changes go through the editor so they
//! land in its undo history.
//!
//! The engine only uses this interface; a front door that sits behind an editor (the LSP
//! server) implements it and installs it with [`crate::Engine::set_documents`].

use std::path::{Path, PathBuf};

use async_trait::async_trait;

/// Files open in an editor. Tools read their text instead of the disk's, and hand changes
/// to open files to the editor.
///
/// Paths are absolute and canonical (symbolic links resolved), the way the tools resolve
/// paths inside the workspace; an implementation should key its documents the same way, or
/// lookups miss and the tools fall back to the disk.
#[async_trait]
pub trait Documents: Send + Sync {
    /// The editor's current text of `path` (absolute, already resolved inside the
    /// workspace), when it is open there. Called from blocking threads, so it must not wait
    /// on the async runtime; it should be a quick lookup.
    fn text(&self, path: &Path) -> Option<String>;

    /// The absolute paths of every open document, including ones not saved to disk yet.
    fn open_paths(&self) -> Vec<PathBuf>;

    /// Replaces the text of the open document at `path`: `old` is the text the change was
    /// computed from (what [`Documents::text`] returned), `new` the whole new text.
    /// `Ok(true)`: the editor applied it. `Ok(false)`: the editor cannot apply edits; the
    /// caller writes the disk instead. `Err(reason)`: the editor refused (for example, the
    /// document changed since `old` was read); nothing changed.
    async fn apply(&self, path: &Path, old: &str, new: &str) -> Result<bool, String>;
}

/// Opaque, so that [`crate::ToolContext`] can derive `Debug` with an overlay installed;
/// printing an overlay must not call into the editor.
impl std::fmt::Debug for dyn Documents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Documents").finish_non_exhaustive()
    }
}

/// Said to the model after a change that went to the editor: its commands (such as `bash`)
/// read the disk, which does not have the change until the user saves.
pub(crate) const IN_EDITOR_NOTE: &str = "The file is open in the editor, so the change was made \
     in its buffer and is not saved yet; commands that read the disk do not see it until the \
     user saves.";
