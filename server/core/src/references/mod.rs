//! `@` references in user input (`@path`, `@dir/`, `@path#L10-40`, `@"with spaces"`):
//! resolved inside the workspace and given to the model as system reminders recorded right
//! after the user's message, so history and snapshots show them as what they are. A
//! reference that cannot be attached becomes a reminder saying why, never an error.
//!
//! See `docs/references.md`.

mod attach;
pub(crate) mod parse;

use std::path::Path;

use coder_protocol::{Attachment, FileReference, FileReferenceKind, InputItem};

use crate::documents::Documents;

/// What the `@` references of one input attach.
#[derive(Debug, Default)]
pub(crate) struct Expanded {
    /// One reminder text per reference, in order (not wrapped yet).
    pub reminders: Vec<String>,
    pub images: Vec<Attachment>,
    /// What the `file_reference` event reports.
    pub references: Vec<FileReference>,
}

/// Whether a text item of `input` has an `@` reference, without resolving any: an input
/// without one needs no thread to read files on.
pub(crate) fn any(input: &[InputItem]) -> bool {
    input.iter().any(|item| match item {
        InputItem::Text { text } => !parse::references(text).is_empty(),
        _ => false,
    })
}

/// Resolves the references in the text items of `input`. Blocking: reads files.
pub(crate) fn expand(
    workspace: &Path,
    documents: Option<&dyn Documents>,
    input: &[InputItem],
) -> Expanded {
    let mut expanded = Expanded::default();
    let mut seen = Vec::new();
    for item in input {
        let InputItem::Text { text } = item else {
            continue;
        };
        for reference in parse::references(text) {
            if seen.contains(&reference) {
                continue;
            }
            let attached = attach::attach(workspace, documents, &reference);
            seen.push(reference);
            let mut report = attached.report;
            if matches!(
                report.kind,
                FileReferenceKind::File | FileReferenceKind::Directory
            ) {
                report.content = Some(attached.reminder.clone());
            }
            expanded.reminders.push(attached.reminder);
            expanded.images.extend(attached.image);
            expanded.references.push(report);
        }
    }
    expanded
}
