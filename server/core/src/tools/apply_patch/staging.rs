//! Applying a parsed patch to the workspace: every operation in memory first, checking
//! paths, hunks and what exists, then all changes at once.
//!
//! Files open in the editor are read from its text. Updates of open files go to the editor
//! first (so they land in its undo history), then everything else to disk: additions,
//! deletions, moves, and updates the editor cannot apply.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::apply::apply_hunks;
use super::parser::{FileOp, Patch, parse_patch};
use crate::documents::{Documents, IN_EDITOR_NOTE};
use crate::tools::beneath::WorkspaceDir;
use crate::tools::diff::unified_diff;
use crate::tools::paths::{display_path, resolve_for_write};
use crate::tools::seen::{SeenFiles, content_hash};
use crate::tools::{Preview, ToolContext, ToolOutput};

/// Appended to every error found before writing.
const NOT_APPLIED: &str = "The patch was not applied; no file was changed.";

/// Parses, checks and applies `text`; the summary lists each file with a git-style letter.
/// Parsing and checking run on the blocking pool, as do the disk writes. When a person
/// approved the change ([`ToolContext::approved_diff`]), only that change is made.
pub(super) async fn run(ctx: &ToolContext, text: &str) -> Result<ToolOutput, String> {
    let staged = staged(ctx, text).await?;
    ctx.check_approved(&staged.diff).map_err(not_applied)?;
    let in_editor = staged.files.commit(ctx.changes.clone()).await?;
    let mut content = format!("Applied the patch:\n{}", staged.summary.join("\n"));
    if !in_editor.is_empty() {
        content.push_str(&format!(
            "\nChanged in the editor: {}. {IN_EDITOR_NOTE}",
            in_editor.join(", ")
        ));
    }
    Ok(ToolOutput::with_diff(content, staged.diff))
}

/// The unified diffs [`run`] would make of `text`, changing nothing.
pub(super) async fn preview(ctx: &ToolContext, text: &str) -> Result<Preview, String> {
    staged(ctx, text).await.map(|staged| {
        let mut preview = Preview {
            diff: staged.diff,
            changes: Vec::new(),
        };
        for file in &staged.files.files {
            preview.push_file(&file.path, file.before.as_deref(), file.after.as_deref());
        }
        preview
    })
}

/// `text` parsed and applied in memory, on the blocking pool.
async fn staged(ctx: &ToolContext, text: &str) -> Result<Staged, String> {
    let workspace = ctx.workspace.clone();
    let documents = ctx.documents.clone();
    let seen = ctx.seen.clone();
    let text = text.to_owned();
    tokio::task::spawn_blocking(move || {
        let patch = parse_patch(&text).map_err(not_applied)?;
        stage(&workspace, documents, seen, &patch).map_err(not_applied)
    })
    .await
    .map_err(|err| format!("apply_patch failed: {err}"))?
}

/// `err`, saying that nothing was written.
pub(super) fn not_applied(err: String) -> String {
    format!("{err}\n{NOT_APPLIED}")
}

/// A patch applied in memory, ready to be written.
struct Staged {
    files: StagedFiles,
    /// One line per operation: `A path`, `M path`, `D path` or `R old -> new`.
    summary: Vec<String>,
    /// The unified diffs of all operations, in order.
    diff: String,
}

/// Every file the patch touches, in the order it first does.
struct StagedFiles {
    workspace: PathBuf,
    /// Every read and write goes through this handle on the workspace, never by path.
    dir: WorkspaceDir,
    /// The editor's open files, when there is an editor.
    documents: Option<Arc<dyn Documents>>,
    /// What the agent last saw of each file; checked as each file is first read.
    seen: Arc<SeenFiles>,
    files: Vec<StagedFile>,
}

struct StagedFile {
    path: PathBuf,
    label: String,
    /// The file is open in the editor, and `before` is the editor's text.
    open: bool,
    /// Set once the editor has applied the change; the disk is then left alone.
    applied_in_editor: bool,
    /// The content before the patch, the editor's when the file is open there; `None` when
    /// the file does not exist.
    before: Option<String>,
    /// The content after the operations so far; `None` when the file does not exist.
    after: Option<String>,
    /// Permission bits for the written file: those of the file it was moved from.
    permissions: Option<u32>,
}

/// Applies every operation in memory, refusing escapes from the workspace, files that
/// changed since the agent saw them ([`SeenFiles::check`]), hunks that do not match, and
/// operations that do not fit what exists.
fn stage(
    workspace: &Path,
    documents: Option<Arc<dyn Documents>>,
    seen: Arc<SeenFiles>,
    patch: &Patch,
) -> Result<Staged, String> {
    let mut files = StagedFiles {
        workspace: workspace.to_path_buf(),
        dir: WorkspaceDir::open(workspace)?,
        documents,
        seen,
        files: Vec::new(),
    };
    let mut summary = Vec::new();
    let mut diff = String::new();
    for op in &patch.ops {
        match op {
            FileOp::Add { path, content } => {
                let index = files.open(path)?;
                let file = &mut files.files[index];
                if file.after.is_some() {
                    return Err(format!(
                        "cannot add {}: it already exists; use `*** Update File:` to change it",
                        file.label
                    ));
                }
                file.after = Some(content.clone());
                summary.push(format!("A {}", file.label));
                diff.push_str(&file_diff(&file.label, None, Some(content)));
            }
            FileOp::Delete { path } => {
                let index = files.open(path)?;
                let file = &mut files.files[index];
                let Some(old) = file.after.take() else {
                    return Err(format!("cannot delete {}: it does not exist", file.label));
                };
                file.permissions = None;
                summary.push(format!("D {}", file.label));
                diff.push_str(&file_diff(&file.label, Some(&old), None));
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                let source = files.open(path)?;
                let label = files.files[source].label.clone();
                let Some(old) = files.files[source].after.clone() else {
                    return Err(format!(
                        "cannot update {label}: it does not exist; use `*** Add File:` to \
                         create it"
                    ));
                };
                let new = apply_hunks(&label, &old, hunks)?;
                let target = match move_to {
                    Some(to) => Some(files.open(to)?),
                    None => None,
                };
                match target.filter(|&target| target != source) {
                    None => {
                        summary.push(format!("M {label}"));
                        diff.push_str(&file_diff(&label, Some(&old), Some(&new)));
                        files.files[source].after = Some(new);
                    }
                    Some(target) => {
                        let target_label = files.files[target].label.clone();
                        if files.files[target].after.is_some() {
                            return Err(format!(
                                "cannot move {label} to {target_label}: {target_label} already \
                                 exists"
                            ));
                        }
                        summary.push(format!("R {label} -> {target_label}"));
                        diff.push_str(&rename_diff(&label, &target_label, &old, &new));
                        let permissions = files.files[source].take_permissions(&files.dir);
                        files.files[source].after = None;
                        files.files[target].after = Some(new);
                        files.files[target].permissions = permissions;
                    }
                }
            }
        }
    }
    Ok(Staged {
        files,
        summary,
        diff,
    })
}

impl StagedFiles {
    /// The index of the staged file at `requested`, reading it when first seen: from the
    /// editor when it is open there, else from disk.
    fn open(&mut self, requested: &str) -> Result<usize, String> {
        let path = resolve_for_write(&self.workspace, requested)?;
        if let Some(index) = self.files.iter().position(|file| file.path == path) {
            return Ok(index);
        }
        let label = display_path(&self.workspace, &path);
        if self
            .dir
            .file_type(&path)
            .is_ok_and(|kind| kind == Some(rustix::fs::FileType::Directory))
        {
            return Err(format!("{label} is a directory, not a file"));
        }
        let open = self
            .documents
            .as_ref()
            .and_then(|documents| documents.text(&path));
        let is_open = open.is_some();
        let before = match open {
            Some(text) => Some(text),
            None => read_text(&self.dir, &path, &label)?,
        };
        self.seen
            .check(&path, &label, before.as_deref().map(str::as_bytes))?;
        self.files.push(StagedFile {
            path,
            label,
            open: is_open,
            applied_in_editor: false,
            after: before.clone(),
            before,
            permissions: None,
        });
        Ok(self.files.len() - 1)
    }

    /// Makes the staged changes: updates of open files in the editor first, then the rest
    /// on disk (new and changed files, then removals, so a moved file exists at its new path
    /// before the old one goes). Returns the files changed in the editor.
    async fn commit(
        mut self,
        changes: Option<Arc<dyn crate::tools::ChangeRecorder>>,
    ) -> Result<Vec<String>, String> {
        let mut in_editor = Vec::new();
        if let Some(documents) = self.documents.clone() {
            for file in &mut self.files {
                let (Some(before), Some(after)) = (&file.before, &file.after) else {
                    continue;
                };
                if !file.open || before == after || file.permissions.is_some() {
                    continue;
                }
                match documents.apply(&file.path, before, after).await {
                    Ok(true) => {
                        file.applied_in_editor = true;
                        in_editor.push(file.label.clone());
                    }
                    Ok(false) => {}
                    Err(reason) => {
                        let err =
                            format!("the editor refused the change to {}: {reason}", file.label);
                        return Err(partly_applied(&err, &in_editor, &[]));
                    }
                }
            }
        }
        let changed_in_editor = in_editor.clone();
        // What the agent will have seen of each file once the patch is applied.
        let seen = self.seen.clone();
        let written: Vec<_> = self
            .files
            .iter()
            .map(|file| {
                let hash = file
                    .after
                    .as_deref()
                    .map(|text| content_hash(text.as_bytes()));
                (file.path.clone(), hash)
            })
            .collect();
        tokio::task::spawn_blocking(move || {
            self.write_disk(&changed_in_editor, changes.as_deref())
        })
        .await
        .map_err(|err| partly_applied(&format!("apply_patch failed: {err}"), &in_editor, &[]))??;
        for (path, hash) in written {
            seen.saw(&path, hash);
        }
        Ok(in_editor)
    }

    /// Writes what did not go to the editor; `in_editor` names what did, for the message
    /// of a failure.
    fn write_disk(
        &self,
        in_editor: &[String],
        changes: Option<&dyn crate::tools::ChangeRecorder>,
    ) -> Result<(), String> {
        let mut done: Vec<&str> = Vec::new();
        for file in &self.files {
            let Some(content) = &file.after else {
                continue;
            };
            if file.applied_in_editor
                || (file.before.as_ref() == Some(content) && file.permissions.is_none())
            {
                continue;
            }
            if let Some(changes) = changes {
                changes.before_change(&file.path);
            }
            write_file(&self.dir, file, content)
                .map_err(|err| partly_applied(&err, in_editor, &done))?;
            done.push(&file.label);
        }
        for file in &self.files {
            if file.after.is_none() && file.before.is_some() {
                if let Some(changes) = changes {
                    changes.before_change(&file.path);
                }
                match self.dir.remove(&file.path) {
                    Ok(()) => {}
                    // A file open in the editor but never saved has nothing on disk.
                    Err(err) if file.open && err.kind() == std::io::ErrorKind::NotFound => {}
                    Err(err) => {
                        let err = format!("cannot delete {}: {err}", file.label);
                        return Err(partly_applied(&err, in_editor, &done));
                    }
                }
                done.push(&file.label);
            }
        }
        Ok(())
    }
}

impl StagedFile {
    /// The permissions a file moved from here should get: those it was given, or those
    /// of the file on disk.
    fn take_permissions(&mut self, dir: &WorkspaceDir) -> Option<u32> {
        self.permissions.take().or_else(|| {
            self.before.as_ref()?;
            dir.permissions(&self.path).ok()
        })
    }
}

/// The file's text, `None` when it does not exist.
fn read_text(dir: &WorkspaceDir, path: &Path, label: &str) -> Result<Option<String>, String> {
    match dir.read(path, crate::tools::MAX_EDIT_BYTES) {
        Ok(Some(bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{label} is not UTF-8 text; apply_patch edits text files only")),
        Ok(None) => Ok(None),
        Err(err) => Err(format!("cannot read {label}: {err}")),
    }
}

fn write_file(dir: &WorkspaceDir, file: &StagedFile, content: &str) -> Result<(), String> {
    dir.write(&file.path, content.as_bytes(), file.permissions)
        .map_err(|err| format!("cannot write {}: {err}", file.label))
}

/// The message for a change that failed after the checks passed: which files had already
/// been changed, in the editor (`in_editor`, not saved) or on disk (`on_disk`).
fn partly_applied(err: &str, in_editor: &[String], on_disk: &[&str]) -> String {
    let mut done: Vec<String> = in_editor
        .iter()
        .map(|label| format!("{label} (in the editor, not saved)"))
        .collect();
    done.extend(on_disk.iter().map(|label| (*label).to_owned()));
    if done.is_empty() {
        format!("{err}\n{NOT_APPLIED}")
    } else {
        format!(
            "{err}\nThe patch was applied only in part: {} had already been changed; the \
             rest was not. Read the files again before retrying.",
            done.join(", ")
        )
    }
}

/// A unified diff as people read it: CRLF endings are shown as plain newlines.
fn file_diff(label: &str, old: Option<&str>, new: Option<&str>) -> String {
    let old = old.map(|text| text.replace("\r\n", "\n"));
    let new = new.map(|text| text.replace("\r\n", "\n"));
    unified_diff(label, old.as_deref(), new.as_deref())
}

/// The diff of a renamed file: from `a/{from}` to `b/{to}`; empty when only the name changed.
fn rename_diff(from: &str, to: &str, old: &str, new: &str) -> String {
    let diff = file_diff(to, Some(old), Some(new));
    match diff.strip_prefix(&format!("--- a/{to}\n")) {
        Some(rest) => format!("--- a/{from}\n{rest}"),
        None => diff,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// Runs a patch with no editor, as the tool does, on a runtime of its own.
    fn run(root: &Path, patch: &str) -> Result<ToolOutput, String> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(super::run(&ToolContext::new(root), patch))
    }

    fn read(dir: &Path, path: &str) -> String {
        fs::read_to_string(dir.join(path)).unwrap()
    }

    #[test]
    fn adds_deletes_updates_and_moves_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("path")).unwrap();
        fs::write(root.join("path/old.txt"), "gone\n").unwrap();
        fs::write(
            root.join("path/src.rs"),
            "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n",
        )
        .unwrap();
        fs::write(root.join("keep.txt"), "a\nb\nc\n").unwrap();
        let patch = "*** Begin Patch\n\
                     *** Add File: path/deep/new.txt\n\
                     +line one\n\
                     +line two\n\
                     *** Delete File: path/old.txt\n\
                     *** Update File: path/src.rs\n\
                     *** Move to: path/renamed.rs\n\
                     @@ fn main() {\n\
                     -    let x = 1;\n\
                     +    let x = 2;\n\
                     \x20   println!(\"{x}\");\n\
                     *** Update File: keep.txt\n\
                     @@\n\
                     \x20a\n\
                     -b\n\
                     +B\n\
                     *** End Patch\n";
        let output = run(root, patch).unwrap();
        assert_eq!(read(root, "path/deep/new.txt"), "line one\nline two\n");
        assert!(!root.join("path/old.txt").exists());
        assert!(!root.join("path/src.rs").exists());
        assert_eq!(
            read(root, "path/renamed.rs"),
            "fn main() {\n    let x = 2;\n    println!(\"{x}\");\n}\n"
        );
        assert_eq!(read(root, "keep.txt"), "a\nB\nc\n");
        assert_eq!(
            output.content,
            "Applied the patch:\n\
             A path/deep/new.txt\n\
             D path/old.txt\n\
             R path/src.rs -> path/renamed.rs\n\
             M keep.txt"
        );
        let diff = output.diff.unwrap();
        assert!(
            diff.contains("--- /dev/null\n+++ b/path/deep/new.txt\n"),
            "{diff}"
        );
        assert!(
            diff.contains("--- a/path/old.txt\n+++ /dev/null\n"),
            "{diff}"
        );
        assert!(
            diff.contains("--- a/path/src.rs\n+++ b/path/renamed.rs\n"),
            "{diff}"
        );
        assert!(
            diff.contains("-    let x = 1;\n+    let x = 2;\n"),
            "{diff}"
        );
        assert!(diff.contains("--- a/keep.txt\n+++ b/keep.txt\n"), "{diff}");
        assert!(diff.contains("-b\n+B\n"), "{diff}");
    }

    #[test]
    fn applies_multiple_hunks_and_end_of_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let lines: Vec<String> = (1..=20).map(|n| format!("line {n}")).collect();
        fs::write(root.join("f.txt"), lines.join("\n") + "\n").unwrap();
        let patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n line 2\n-line 3\n+line three\n line 4\n@@\n line 10\n+line 10.5\n line 11\n@@\n line 19\n-line 20\n+line twenty\n*** End of File\n*** End Patch";
        run(root, patch).unwrap();
        let text = read(root, "f.txt");
        assert!(text.contains("line 2\nline three\nline 4\n"), "{text}");
        assert!(text.contains("line 10\nline 10.5\nline 11\n"), "{text}");
        assert!(text.ends_with("line 19\nline twenty\n"), "{text}");
    }

    #[test]
    fn keeps_crlf_files_crlf() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("w.txt"), "one\r\ntwo\r\nthree").unwrap();
        let patch = "*** Begin Patch\r\n*** Update File: w.txt\r\n one\r\n-two\r\n+2\r\n+2.5\r\n three\r\n*** End Patch\r\n";
        let output = run(root, patch).unwrap();
        assert_eq!(read(root, "w.txt"), "one\r\n2\r\n2.5\r\nthree");
        let diff = output.diff.unwrap();
        assert!(diff.contains("-two\n+2\n+2.5\n"), "{diff}");
        assert!(!diff.contains('\r'), "{diff}");
    }

    #[test]
    fn operations_see_earlier_ones_in_the_same_patch() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: ./a.txt\n-x\n+y\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch";
        let output = run(root, patch).unwrap();
        assert!(!root.join("a.txt").exists());
        assert_eq!(read(root, "b.txt"), "y\n");
        assert_eq!(
            output.content,
            "Applied the patch:\nA a.txt\nM a.txt\nR a.txt -> b.txt"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_moved_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("run.sh"), "echo hi\n").unwrap();
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        let patch = "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n-echo hi\n+echo hello\n*** End Patch";
        run(root, patch).unwrap();
        let mode = fs::metadata(root.join("bin/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(read(root, "bin/run.sh"), "echo hello\n");
    }

    #[test]
    fn unmatched_hunks_name_the_file_and_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("first.txt"), "alpha\nbeta\n").unwrap();
        fs::write(root.join("second.txt"), "gamma\ndelta\n").unwrap();
        let patch = "*** Begin Patch\n\
                     *** Update File: first.txt\n\
                     -alpha\n\
                     +ALPHA\n\
                     *** Add File: created.txt\n\
                     +new\n\
                     *** Delete File: second.txt\n\
                     *** Add File: second.txt\n\
                     +gamma\n\
                     +delta\n\
                     *** Update File: second.txt\n\
                     @@\n\
                     \x20gamma\n\
                     -epsilon\n\
                     +zeta\n\
                     *** End Patch";
        let err = run(root, patch).unwrap_err();
        assert!(err.starts_with("second.txt: hunk 1 of 1"), "{err}");
        assert!(err.contains(" gamma\n-epsilon\n"), "{err}");
        assert!(err.ends_with(NOT_APPLIED), "{err}");
        assert_eq!(read(root, "first.txt"), "alpha\nbeta\n");
        assert_eq!(read(root, "second.txt"), "gamma\ndelta\n");
        assert!(!root.join("created.txt").exists());
    }

    #[test]
    fn refuses_operations_that_do_not_fit_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("here.txt"), "x\n").unwrap();
        fs::write(root.join("there.txt"), "y\n").unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        let err = |body: &str| {
            let patch = format!("*** Begin Patch\n{body}\n*** End Patch");
            let err = run(root, &patch).unwrap_err();
            assert!(err.ends_with(NOT_APPLIED), "{err}");
            err
        };
        let added = err("*** Add File: here.txt\n+z");
        assert!(
            added.contains("cannot add here.txt: it already exists"),
            "{added}"
        );
        let deleted = err("*** Delete File: missing.txt");
        assert!(deleted.contains("cannot delete missing.txt"), "{deleted}");
        let updated = err("*** Update File: missing.txt\n-x\n+y");
        assert!(updated.contains("cannot update missing.txt"), "{updated}");
        let moved = err("*** Update File: here.txt\n*** Move to: there.txt\n-x\n+z");
        assert!(
            moved.contains("cannot move here.txt to there.txt"),
            "{moved}"
        );
        assert!(err("*** Delete File: sub").contains("directory"));
        assert_eq!(read(root, "here.txt"), "x\n");
        assert_eq!(read(root, "there.txt"), "y\n");
    }

    #[test]
    fn refuses_paths_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir(&root).unwrap();
        fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
        let absolute = dir.path().join("outside.txt").display().to_string();
        for body in [
            "*** Add File: ../escape.txt\n+x".to_owned(),
            "*** Delete File: ../outside.txt".to_owned(),
            format!("*** Delete File: {absolute}"),
            "*** Update File: link/outside.txt\n-secret\n+leaked".to_owned(),
            "*** Add File: link/new.txt\n+x".to_owned(),
            "*** Add File: ok.txt\n+x\n*** Update File: ok.txt\n*** Move to: ../moved.txt"
                .to_owned(),
        ] {
            let patch = format!("*** Begin Patch\n{body}\n*** End Patch");
            let err = run(&root, &patch).unwrap_err();
            assert!(err.contains("outside the workspace"), "{body}: {err}");
        }
        assert_eq!(read(dir.path(), "outside.txt"), "secret\n");
        assert!(!dir.path().join("escape.txt").exists());
        assert!(!dir.path().join("new.txt").exists());
        assert!(!root.join("ok.txt").exists());
    }

    #[test]
    fn refuses_paths_through_symbolic_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("real.txt"), "x\n").unwrap();
        std::os::unix::fs::symlink("real.txt", root.join("link.txt")).unwrap();
        for body in [
            "*** Delete File: link.txt",
            "*** Update File: link.txt\n*** Move to: moved.txt",
            "*** Update File: link.txt\n-x\n+y",
        ] {
            let patch = format!("*** Begin Patch\n{body}\n*** End Patch");
            let err = run(root, &patch).unwrap_err();
            assert!(
                err.contains("link.txt is a symbolic link (to real.txt)"),
                "{err}"
            );
        }
        assert_eq!(read(root, "real.txt"), "x\n");
        assert!(root.join("link.txt").is_symlink());
    }

    #[test]
    fn absolute_paths_inside_the_workspace_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let path = root.join("abs.txt").display().to_string();
        let patch = format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch");
        let output = run(&root, &patch).unwrap();
        assert_eq!(output.content, "Applied the patch:\nA abs.txt");
        assert_eq!(read(&root, "abs.txt"), "x\n");
    }
}
