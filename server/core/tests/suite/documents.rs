//! The editor overlay: the file tools read open documents' text (unsaved changes included)
//! and hand changes to open documents to the editor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use coder_core::tools::{ApplyPatchTool, EditTool, GlobTool, GrepTool, ReadTool, WriteTool};
use coder_core::{Documents, ProviderKind, Tool, ToolContext, ToolOutput};
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Harness, last_tool_result};

/// An editor in memory: open documents by path, whether it applies edits, which documents
/// it refuses to change, and every change it applied as `(path, old, new)`.
#[derive(Default)]
struct Editor {
    texts: Mutex<HashMap<PathBuf, String>>,
    /// `apply` answers `Ok(false)` (the caller writes the disk) when not set.
    applies: bool,
    refuses: Vec<PathBuf>,
    applied: Mutex<Vec<(PathBuf, String, String)>>,
}

impl Editor {
    fn applying() -> Self {
        Self {
            applies: true,
            ..Self::default()
        }
    }

    fn open(self, path: impl Into<PathBuf>, text: &str) -> Self {
        self.texts.lock().unwrap().insert(path.into(), text.into());
        self
    }

    fn applied(&self) -> Vec<(PathBuf, String, String)> {
        self.applied.lock().unwrap().clone()
    }

    fn text_of(&self, path: &Path) -> String {
        self.texts.lock().unwrap()[path].clone()
    }
}

#[async_trait]
impl Documents for Editor {
    fn text(&self, path: &Path) -> Option<String> {
        self.texts.lock().unwrap().get(path).cloned()
    }

    fn open_paths(&self) -> Vec<PathBuf> {
        self.texts.lock().unwrap().keys().cloned().collect()
    }

    async fn apply(&self, path: &Path, old: &str, new: &str) -> Result<bool, String> {
        if self.refuses.iter().any(|refused| refused == path) {
            return Err("the user rejected the edit".into());
        }
        if !self.applies {
            return Ok(false);
        }
        let mut texts = self.texts.lock().unwrap();
        let Some(current) = texts.get_mut(path) else {
            return Err("not open".into());
        };
        if current != old {
            return Err("the document changed".into());
        }
        *current = new.to_owned();
        self.applied
            .lock()
            .unwrap()
            .push((path.to_path_buf(), old.into(), new.into()));
        Ok(true)
    }
}

/// A workspace (canonical path) with `files` on disk.
fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    (dir, root)
}

fn context(root: &Path, editor: &Arc<Editor>) -> ToolContext {
    let mut ctx = ToolContext::new(root);
    ctx.documents = Some(editor.clone());
    ctx
}

async fn call(tool: &dyn Tool, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
    tool.validate_input(&input, ctx)?;
    tool.call(input, ctx).await
}

fn disk(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap()
}

#[tokio::test]
async fn read_sees_the_unsaved_text_with_the_same_numbering() {
    let (_dir, root) = workspace(&[("a.txt", "on disk\n")]);
    let editor = Arc::new(
        Editor::applying()
            .open(root.join("a.txt"), "one\r\ntwo unsaved\nthree\n")
            .open(root.join("new/draft.md"), "never saved\n"),
    );
    let ctx = context(&root, &editor);
    let read = |input| call(&ReadTool, input, &ctx);
    assert_eq!(
        read(json!({"path": "a.txt"})).await.unwrap().content,
        "     1\tone\n     2\ttwo unsaved\n     3\tthree\n"
    );
    assert_eq!(
        read(json!({"path": "a.txt", "offset": 2, "limit": 1}))
            .await
            .unwrap()
            .content,
        "     2\ttwo unsaved\n(showing lines 2-2 of 3; use offset and limit to read more)\n"
    );
    // A document open in the editor but not saved to disk yet can be read too.
    assert_eq!(
        read(json!({"path": "new/draft.md"})).await.unwrap().content,
        "     1\tnever saved\n"
    );
    let err = read(json!({"path": "missing.txt"})).await.unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
}

#[tokio::test]
async fn grep_searches_the_editor_text_and_unsaved_documents() {
    let (_dir, root) = workspace(&[
        (".gitignore", "build/\n"),
        ("src/a.rs", "fn disk_only() {}\n"),
        ("src/b.rs", "fn on_disk_too() {}\n"),
        ("build/keep", ""),
    ]);
    let editor = Arc::new(
        Editor::applying()
            .open(root.join("src/a.rs"), "// header\nfn buffer_only() {}\n")
            .open(root.join("src/new.rs"), "fn buffer_only_new() {}\n")
            .open(root.join("build/gen.rs"), "fn buffer_only_ignored() {}\n")
            .open(root.join(".hidden/x.rs"), "fn buffer_only_hidden() {}\n"),
    );
    let ctx = context(&root, &editor);
    let grep = |input| call(&GrepTool, input, &ctx);
    assert_eq!(
        grep(json!({"pattern": "buffer_only", "output_mode": "content"}))
            .await
            .unwrap()
            .content,
        "src/a.rs:2:fn buffer_only() {}\n--\nsrc/new.rs:1:fn buffer_only_new() {}\n"
    );
    assert_eq!(
        grep(json!({"pattern": "disk_only"})).await.unwrap().content,
        "No matches for `disk_only`."
    );
    assert_eq!(
        grep(json!({"pattern": "fn", "output_mode": "count"}))
            .await
            .unwrap()
            .content,
        "src/a.rs:1\nsrc/b.rs:1\nsrc/new.rs:1\n"
    );
    // Unsaved documents pass the same filters as files on disk.
    assert_eq!(
        grep(json!({"pattern": "buffer_only", "glob": "*.py"}))
            .await
            .unwrap()
            .content,
        "No matches for `buffer_only`."
    );
    assert_eq!(
        grep(json!({"pattern": "buffer_only", "path": "src", "glob": "new.*"}))
            .await
            .unwrap()
            .content,
        "src/new.rs\n"
    );
    assert_eq!(
        grep(json!({"pattern": "buffer", "path": "src/new.rs"}))
            .await
            .unwrap()
            .content,
        "src/new.rs\n"
    );
    // As on disk, a file named by the call is searched even where the walk would skip it.
    assert_eq!(
        grep(json!({"pattern": "buffer", "path": "build/gen.rs"}))
            .await
            .unwrap()
            .content,
        "build/gen.rs\n"
    );
}

#[tokio::test]
async fn edit_of_an_open_document_goes_to_the_editor_and_leaves_the_disk() {
    let (_dir, root) = workspace(&[("a.txt", "x = 1\n")]);
    let path = root.join("a.txt");
    let editor = Arc::new(Editor::applying().open(&path, "x = 1\ny = 2\n"));
    let ctx = context(&root, &editor);
    let output = call(
        &EditTool,
        json!({"path": "a.txt", "old_string": "y = 2", "new_string": "y = 3"}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(
        editor.applied(),
        [(
            path.clone(),
            "x = 1\ny = 2\n".into(),
            "x = 1\ny = 3\n".into()
        )]
    );
    assert_eq!(disk(&root, "a.txt"), "x = 1\n");
    assert!(
        output
            .content
            .starts_with("Edited a.txt: replaced once. The file is open in the editor"),
        "{}",
        output.content
    );
    assert!(
        output.content.contains("not saved yet"),
        "{}",
        output.content
    );
    assert!(output.diff.unwrap().contains("-y = 2\n+y = 3\n"));
    // `write` of an open document goes to the editor too; of another file, to disk.
    let output = call(&WriteTool, json!({"path": "a.txt", "content": "z\n"}), &ctx)
        .await
        .unwrap();
    assert!(
        output
            .content
            .starts_with("Wrote a.txt (1 lines). The file is open")
    );
    assert_eq!(editor.text_of(&path), "z\n");
    assert_eq!(disk(&root, "a.txt"), "x = 1\n");
    let output = call(&WriteTool, json!({"path": "b.txt", "content": "b\n"}), &ctx)
        .await
        .unwrap();
    assert_eq!(output.content, "Created b.txt (1 lines).");
    assert_eq!(disk(&root, "b.txt"), "b\n");
    assert_eq!(editor.applied().len(), 2);
}

#[tokio::test]
async fn an_editor_that_cannot_apply_edits_leaves_the_change_to_the_disk() {
    let (_dir, root) = workspace(&[("a.txt", "old on disk\n")]);
    let path = root.join("a.txt");
    let editor = Arc::new(Editor::default().open(&path, "unsaved\n"));
    let ctx = context(&root, &editor);
    let output = call(
        &EditTool,
        json!({"path": "a.txt", "old_string": "unsaved", "new_string": "edited"}),
        &ctx,
    )
    .await
    .unwrap();
    // The change is computed from the editor's text and written to disk.
    assert_eq!(output.content, "Edited a.txt: replaced once.");
    assert_eq!(disk(&root, "a.txt"), "edited\n");
    assert_eq!(
        output.diff.unwrap(),
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-unsaved\n+edited\n"
    );
    assert!(editor.applied().is_empty());
}

#[tokio::test]
async fn an_editor_refusal_fails_the_call_and_changes_nothing() {
    let (_dir, root) = workspace(&[("a.txt", "on disk\n")]);
    let path = root.join("a.txt");
    let editor = Arc::new(Editor {
        refuses: vec![path.clone()],
        ..Editor::applying().open(&path, "in editor\n")
    });
    let ctx = context(&root, &editor);
    let err = call(
        &EditTool,
        json!({"path": "a.txt", "old_string": "in editor", "new_string": "changed"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        "the editor refused the change to a.txt: the user rejected the edit. Nothing was \
         changed; read the file again before retrying."
    );
    assert_eq!(disk(&root, "a.txt"), "on disk\n");
    assert_eq!(editor.text_of(&path), "in editor\n");
}

#[tokio::test]
async fn apply_patch_updates_open_documents_through_the_editor() {
    let (_dir, root) = workspace(&[("a.txt", "a on disk\n"), ("gone.txt", "bye\n")]);
    let path = root.join("a.txt");
    let editor = Arc::new(Editor::applying().open(&path, "one\ntwo\n"));
    let ctx = context(&root, &editor);
    let patch = "*** Begin Patch\n\
                 *** Update File: a.txt\n\
                 \x20one\n\
                 -two\n\
                 +2\n\
                 *** Add File: new.txt\n\
                 +new\n\
                 *** Delete File: gone.txt\n\
                 *** End Patch";
    let output = call(&ApplyPatchTool, json!({ "patch": patch }), &ctx)
        .await
        .unwrap();
    assert_eq!(
        editor.applied(),
        [(path.clone(), "one\ntwo\n".into(), "one\n2\n".into())]
    );
    assert_eq!(disk(&root, "a.txt"), "a on disk\n");
    assert_eq!(disk(&root, "new.txt"), "new\n");
    assert!(!root.join("gone.txt").exists());
    assert!(
        output.content.starts_with(
            "Applied the patch:\nM a.txt\nA new.txt\nD gone.txt\nChanged in the editor: a.txt. \
             The file is open in the editor"
        ),
        "{}",
        output.content
    );
    assert!(output.diff.unwrap().contains("-two\n+2\n"));
}

#[tokio::test]
async fn apply_patch_reports_what_the_editor_applied_before_a_refusal() {
    let (_dir, root) = workspace(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let (a, b) = (root.join("a.txt"), root.join("b.txt"));
    let editor = Arc::new(Editor {
        refuses: vec![b.clone()],
        ..Editor::applying().open(&a, "a\n").open(&b, "b\n")
    });
    let ctx = context(&root, &editor);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n-b\n\
                 +B\n*** Add File: c.txt\n+c\n*** End Patch";
    let err = call(&ApplyPatchTool, json!({ "patch": patch }), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.starts_with("the editor refused the change to b.txt: the user rejected the edit\n"),
        "{err}"
    );
    assert!(
        err.contains(
            "applied only in part: a.txt (in the editor, not saved) had already been changed"
        ),
        "{err}"
    );
    assert_eq!(editor.text_of(&a), "A\n");
    assert_eq!(editor.text_of(&b), "b\n");
    assert!(!root.join("c.txt").exists());
    // A patch whose hunk does not fit the editor's text changes nothing anywhere.
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+x\n*** End Patch";
    let err = call(&ApplyPatchTool, json!({ "patch": patch }), &ctx)
        .await
        .unwrap_err();
    assert!(err.ends_with("no file was changed."), "{err}");
    assert_eq!(editor.applied().len(), 1);
}

#[tokio::test]
async fn open_documents_outside_the_workspace_stay_out_of_reach() {
    let (_outside_dir, outside) = workspace(&[("secret.txt", "secret on disk\n")]);
    let (_dir, root) = workspace(&[("inside.txt", "inside\n")]);
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    let secret = outside.join("secret.txt");
    let editor = Arc::new(
        Editor::applying()
            .open(&secret, "secret in editor\n")
            .open(outside.join("draft.txt"), "secret draft\n")
            .open(root.join("link/draft.txt"), "secret draft\n")
            .open(root.join("../escape.txt"), "secret escape\n"),
    );
    let ctx = context(&root, &editor);
    let secret_path = secret.display().to_string();
    let outside_draft = outside.join("draft.txt").display().to_string();
    for (path, refusal) in [
        (secret_path.as_str(), "outside the workspace"),
        ("../secret.txt", "outside the workspace"),
        ("link/secret.txt", "outside the workspace"),
        (outside_draft.as_str(), "outside the workspace"),
        // Resolved through the link it is outside, so as for any missing file:
        ("link/draft.txt", "does not exist"),
    ] {
        let err = call(&ReadTool, json!({ "path": path }), &ctx)
            .await
            .unwrap_err();
        assert!(err.contains(refusal), "{path}: {err}");
    }
    let err = call(
        &EditTool,
        json!({"path": secret_path, "old_string": "secret", "new_string": "leaked"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    let err = call(
        &GrepTool,
        json!({"pattern": "secret", "path": secret_path}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    assert_eq!(
        call(&GrepTool, json!({"pattern": "secret"}), &ctx)
            .await
            .unwrap()
            .content,
        "No matches for `secret`."
    );
    assert!(editor.applied().is_empty());
    assert_eq!(disk(&outside, "secret.txt"), "secret on disk\n");
    // `glob` lists the disk only.
    assert_eq!(
        call(&GlobTool, json!({"pattern": "**/*.txt"}), &ctx)
            .await
            .unwrap()
            .content,
        "inside.txt\n"
    );
}

/// An `edit` call from the model, through the engine, lands in the editor installed with
/// `set_documents`.
#[tokio::test]
async fn the_engine_hands_the_editor_to_its_tools() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "c1",
            "edit",
            json!({"path": "lib.rs", "old_string": "answer", "new_string": "reply"}),
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.write("lib.rs", "fn answer() {}\n");
    let path = h.workspace.path().canonicalize().unwrap().join("lib.rs");
    let editor = Arc::new(Editor::applying().open(&path, "// unsaved\nfn answer() {}\n"));
    h.engine.set_documents(editor.clone());
    h.run("rename it").await;
    assert_eq!(
        editor.applied(),
        [(
            path.clone(),
            "// unsaved\nfn answer() {}\n".into(),
            "// unsaved\nfn reply() {}\n".into()
        )]
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fn answer() {}\n");
    let result = last_tool_result(&server);
    assert!(
        result.starts_with("Edited lib.rs: replaced once. The file is open in the editor"),
        "{result}"
    );
}
