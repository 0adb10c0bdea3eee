//! Resolving one `@` reference inside the workspace into what the model is given: a text
//! file's numbered lines, a directory's listing or an image, each with the reminder text
//! that presents it; or a reminder saying why nothing was attached.

use std::path::Path;

use coder_protocol::{Attachment, FileReference, FileReferenceKind, LineRange};

use super::parse::Reference;
use crate::documents::Documents;
use crate::tools::paths::{display_path, resolve_existing};
use crate::tools::protected_files::is_protected;
use crate::tools::read::{Numbered, image_type, read_image, read_lines};

/// At most this many lines of a file are attached.
pub(crate) const MAX_LINES: usize = 1000;
/// At most this many bytes of numbered lines are attached.
pub(crate) const MAX_BYTES: usize = 64 * 1024;
/// At most this many entries of a directory are listed.
pub(crate) const MAX_ENTRIES: usize = 200;

/// What one reference gives the model, and what the `file_reference` event reports of it.
#[derive(Debug)]
pub(crate) struct Attached {
    /// The reminder's text (without the `<system-reminder>` wrapping).
    pub reminder: String,
    pub image: Option<Attachment>,
    pub report: FileReference,
}

/// Resolves `reference` as the file tools do: confined to `workspace`, the editor's text
/// for open documents, protected paths (`.git/`, `.coder/`, `.mcp.json`) refused.
pub(crate) fn attach(
    workspace: &Path,
    documents: Option<&dyn Documents>,
    reference: &Reference,
) -> Attached {
    let path = reference.path.as_str();
    match resolve(workspace, documents, reference) {
        Ok(attached) => attached,
        Err(error) => Attached {
            reminder: format!(
                "The user's message mentions @{path}, but nothing was attached for it: {error}."
            ),
            image: None,
            report: report(path, FileReferenceKind::Refused, None, false, Some(error)),
        },
    }
}

fn resolve(
    workspace: &Path,
    documents: Option<&dyn Documents>,
    reference: &Reference,
) -> Result<Attached, String> {
    let path = reference.path.as_str();
    if let Some(reason) = is_protected(workspace, Path::new(path)) {
        return Err(format!("it is protected ({reason})"));
    }
    if let Ok(resolved) = resolve_existing(workspace, path)
        && resolved.is_dir()
    {
        return Ok(directory(workspace, &resolved, path));
    }
    if let Some(media_type) = image_type(path) {
        let output = read_image(workspace, path, media_type)?;
        return Ok(Attached {
            reminder: format!(
                "The user's message refers to the image @{path}; it is attached to this message."
            ),
            image: output.attachments.into_iter().next(),
            report: report(path, FileReferenceKind::Image, None, false, None),
        });
    }
    text_file(workspace, documents, reference)
}

/// A text file's lines (all, or the range asked for), capped.
fn text_file(
    workspace: &Path,
    documents: Option<&dyn Documents>,
    reference: &Reference,
) -> Result<Attached, String> {
    let path = reference.path.as_str();
    let (first, wanted_end) = match reference.lines {
        Some((start, end)) => (start, Some(end.unwrap_or(start))),
        None => (1, None),
    };
    let wanted = wanted_end.map_or(MAX_LINES, |end| end + 1 - first);
    let mut numbered = read_lines(
        workspace,
        documents,
        path,
        Some(first),
        Some(wanted.min(MAX_LINES)),
    )?;
    cut_to_bytes(&mut numbered);
    let Numbered {
        text,
        first,
        last,
        total,
        ..
    } = numbered;
    let end_asked = wanted_end.unwrap_or(total).min(total);
    let truncated = last < end_asked;
    let (lines, reminder) = if total == 0 {
        (
            None,
            format!("The user's message refers to @{path}, which is empty."),
        )
    } else {
        let mut reminder = format!(
            "The user's message refers to @{path}; here are its lines {first}-{last} of \
             {total}, numbered as the read tool numbers them:\n{text}"
        );
        if truncated {
            reminder.push_str(&format!(
                "(cut after line {last}: the rest is too long to attach; read it with the read \
                 tool if needed)\n"
            ));
        }
        let range = LineRange {
            start: u32::try_from(first).unwrap_or(u32::MAX),
            end: u32::try_from(last).unwrap_or(u32::MAX),
        };
        (Some(range), reminder)
    };
    Ok(Attached {
        reminder: reminder.trim_end().to_owned(),
        image: None,
        report: report(path, FileReferenceKind::File, lines, truncated, None),
    })
}

/// Keeps whole lines within [`MAX_BYTES`].
fn cut_to_bytes(numbered: &mut Numbered) {
    if numbered.text.len() <= MAX_BYTES {
        return;
    }
    let end = numbered.text[..MAX_BYTES]
        .rfind('\n')
        .map_or(0, |at| at + 1);
    numbered.text.truncate(end);
    let kept = numbered.text.matches('\n').count();
    numbered.last = (numbered.first + kept).saturating_sub(1);
}

/// A directory's files and folders (recursively, `.gitignore` and hidden files skipped,
/// sorted, capped), relative to the workspace.
fn directory(workspace: &Path, dir: &Path, path: &str) -> Attached {
    let mut entries = Vec::new();
    let mut truncated = false;
    let walk = crate::ignore_files::walker(workspace, dir)
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walk.flatten().filter(|entry| entry.depth() > 0) {
        if entries.len() == MAX_ENTRIES {
            truncated = true;
            break;
        }
        let shown = display_path(workspace, entry.path());
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        entries.push(if is_dir { format!("{shown}/") } else { shown });
    }
    let mut reminder = if entries.is_empty() {
        format!("The user's message refers to the directory @{path}, which is empty.")
    } else {
        format!(
            "The user's message refers to the directory @{path}; its files (without those \
             .gitignore excludes):\n{}",
            entries.join("\n")
        )
    };
    if truncated {
        reminder.push_str(&format!(
            "\n(listing cut at {MAX_ENTRIES} entries; use glob or bash to see more)"
        ));
    }
    Attached {
        reminder,
        image: None,
        report: report(path, FileReferenceKind::Directory, None, truncated, None),
    }
}

fn report(
    path: &str,
    kind: FileReferenceKind,
    lines: Option<LineRange>,
    truncated: bool,
    error: Option<String>,
) -> FileReference {
    FileReference {
        path: path.to_owned(),
        kind,
        lines,
        truncated,
        error,
        content: None,
    }
}
