//! The editor's open documents as the engine's overlay ([`coder_core::Documents`]).
//!
//! `didOpen`/`didChange`/`didClose` keep the text of every open file under the workspace, so
//! `read`, `grep` and `edit` see what the user sees, unsaved changes included. When the
//! client said it can (`workspace.applyEdit`), changes to open files go out as
//! `workspace/applyEdit` requests, line hunks rather than one whole replacement, so they land
//! in the editor's undo history and keep the cursor where the text did not change.
//!
//! Positions are UTF-16 code units, as LSP says by default. Files are keyed by canonical
//! path, the way the tools resolve paths.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use coder_core::Documents;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::request::ApplyWorkspaceEdit;
use tower_lsp_server::ls_types::{
    ApplyWorkspaceEditParams, OptionalVersionedTextDocumentIdentifier, Position, Range,
    TextDocumentContentChangeEvent, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

struct Open {
    uri: Uri,
    version: i32,
    text: String,
}

/// The open documents of one connection.
pub(crate) struct EditorDocuments {
    workspace: PathBuf,
    client: Client,
    /// Whether the client advertised `workspace.applyEdit`.
    can_apply: AtomicBool,
    open: Mutex<HashMap<PathBuf, Open>>,
}

impl EditorDocuments {
    pub fn new(workspace: &Path, client: Client) -> Self {
        Self {
            workspace: workspace
                .canonicalize()
                .unwrap_or_else(|_| workspace.to_owned()),
            client,
            can_apply: AtomicBool::new(false),
            open: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, Open>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_can_apply(&self, can: bool) {
        self.can_apply.store(can, Ordering::Relaxed);
    }

    /// The canonical path of a `file:` URI inside the workspace; other documents (untitled
    /// buffers, files elsewhere) are not the tools' business.
    fn path_of(&self, uri: &Uri) -> Option<PathBuf> {
        let path = uri.to_file_path()?.into_owned();
        // A file not saved yet has no canonical form; its directory may.
        let canonical = match path.canonicalize() {
            Ok(path) => path,
            Err(_) => {
                let parent = path.parent()?.canonicalize().ok()?;
                parent.join(path.file_name()?)
            }
        };
        canonical.starts_with(&self.workspace).then_some(canonical)
    }

    pub fn did_open(&self, uri: Uri, version: i32, text: String) {
        if let Some(path) = self.path_of(&uri) {
            self.lock().insert(path, Open { uri, version, text });
        }
    }

    pub fn did_change(
        &self,
        uri: &Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) {
        let Some(path) = self.path_of(uri) else {
            return;
        };
        let mut open = self.lock();
        let Some(document) = open.get_mut(&path) else {
            tracing::warn!("didChange for {} which is not open", uri.as_str());
            return;
        };
        for change in changes {
            match change.range {
                Some(range) => {
                    let start = offset(&document.text, range.start);
                    let end = offset(&document.text, range.end).max(start);
                    document.text.replace_range(start..end, &change.text);
                }
                None => document.text = change.text,
            }
        }
        document.version = version;
    }

    pub fn did_close(&self, uri: &Uri) {
        if let Some(path) = self.path_of(uri) {
            self.lock().remove(&path);
        }
    }
}

#[async_trait]
impl Documents for EditorDocuments {
    fn text(&self, path: &Path) -> Option<String> {
        self.lock().get(path).map(|open| open.text.clone())
    }

    fn open_paths(&self) -> Vec<PathBuf> {
        self.lock().keys().cloned().collect()
    }

    async fn apply(&self, path: &Path, old: &str, new: &str) -> Result<bool, String> {
        if !self.can_apply.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let (uri, version) = {
            let open = self.lock();
            let Some(document) = open.get(path) else {
                return Ok(false);
            };
            if document.text != old {
                return Err("the document changed in the editor meanwhile; read it again".into());
            }
            (document.uri.clone(), document.version)
        };
        let edit = WorkspaceEdit {
            document_changes: Some(tower_lsp_server::ls_types::DocumentChanges::Edits(vec![
                TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier {
                        uri,
                        version: Some(version),
                    },
                    edits: line_edits(old, new)
                        .into_iter()
                        .map(tower_lsp_server::ls_types::OneOf::Left)
                        .collect(),
                },
            ])),
            ..WorkspaceEdit::default()
        };
        let label = path
            .strip_prefix(&self.workspace)
            .unwrap_or(path)
            .display()
            .to_string();
        let response = self
            .client
            .send_request::<ApplyWorkspaceEdit>(ApplyWorkspaceEditParams {
                label: Some(format!("coder: edit {label}")),
                edit,
            })
            .await
            .map_err(|err| format!("the editor did not apply the edit: {}", err.message))?;
        if !response.applied {
            return Err(format!(
                "the editor refused the edit{}",
                response
                    .failure_reason
                    .map(|reason| format!(": {reason}"))
                    .unwrap_or_default()
            ));
        }
        // The editor's didChange follows; until it arrives, the overlay already holds what
        // the editor now shows, so a read right after the edit sees it.
        if let Some(document) = self.lock().get_mut(path)
            && document.text == old
        {
            document.text = new.to_owned();
        }
        Ok(true)
    }
}

/// The byte offset in `text` of an LSP position (UTF-16 columns), clamped to the text.
fn offset(text: &str, position: Position) -> usize {
    let mut line_start = 0;
    for _ in 0..position.line {
        match text[line_start..].find('\n') {
            Some(at) => line_start += at + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |at| line_start + at);
    let mut units = 0;
    for (at, ch) in text[line_start..line_end].char_indices() {
        if units >= position.character as usize {
            return line_start + at;
        }
        units += ch.len_utf16();
    }
    line_end
}

/// The LSP position just past the first `lines` lines of `text` (its end when it has no
/// more).
fn position_after(text: &str, lines: usize) -> Position {
    let mut start = 0;
    for line in 0..lines {
        match text[start..].find('\n') {
            Some(at) => start += at + 1,
            None => {
                let last = &text[start..];
                return Position::new(line as u32, last.encode_utf16().count() as u32);
            }
        }
    }
    Position::new(lines as u32, 0)
}

/// The change from `old` to `new` as one text edit per changed run of lines.
fn line_edits(old: &str, new: &str) -> Vec<TextEdit> {
    let diff = similar::TextDiff::from_lines(old, new);
    let new_lines: Vec<&str> = diff.new_slices().to_vec();
    diff.ops()
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .map(|op| {
            let old_range = op.old_range();
            let new_range = op.new_range();
            TextEdit {
                range: Range::new(
                    position_after(old, old_range.start),
                    position_after(old, old_range.end),
                ),
                new_text: new_lines[new_range].concat(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies `edits` (non-overlapping, any order) to `text` the way an editor would.
    fn apply(text: &str, edits: &[TextEdit]) -> String {
        let mut sorted: Vec<&TextEdit> = edits.iter().collect();
        sorted.sort_by_key(|e| std::cmp::Reverse((e.range.start.line, e.range.start.character)));
        let mut out = text.to_owned();
        for edit in sorted {
            let start = offset(&out, edit.range.start);
            let end = offset(&out, edit.range.end);
            out.replace_range(start..end, &edit.new_text);
        }
        out
    }

    #[test]
    fn line_edits_turn_old_into_new() {
        let cases = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc", "a\nb\nc\nd"),
            ("a\nb", "x\nb\ny"),
            ("", "new\n"),
            ("gone\n", ""),
            ("é😀\nz\n", "é😀\nzz\n"),
            ("one\ntwo\nthree\nfour\n", "zero\none\nthree\nfour\nfive\n"),
        ];
        for (old, new) in cases {
            let edits = line_edits(old, new);
            assert_eq!(apply(old, &edits), new, "{old:?} -> {new:?}: {edits:?}");
        }
        assert_eq!(line_edits("a\nb\nc\n", "a\nB\nc\n").len(), 1);
    }

    #[test]
    fn positions_count_utf16_units() {
        let text = "a😀b\nsecond";
        assert_eq!(offset(text, Position::new(0, 3)), "a😀".len());
        assert_eq!(offset(text, Position::new(0, 99)), "a😀b".len());
        assert_eq!(offset(text, Position::new(1, 2)), "a😀b\nse".len());
        assert_eq!(offset(text, Position::new(7, 0)), text.len());
        assert_eq!(position_after(text, 1), Position::new(1, 0));
        assert_eq!(position_after(text, 2), Position::new(1, 6));
    }
}
