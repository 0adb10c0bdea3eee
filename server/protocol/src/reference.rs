//! What an `@` reference in user input attached (the `file_reference` event).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One `@` reference of an input and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileReference {
    /// The path as the user wrote it (without `@`, quotes or `#L` range).
    pub path: String,
    pub kind: FileReferenceKind,
    /// The lines attached (1-based, inclusive), for a text file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub lines: Option<LineRange>,
    /// Part of the file or listing was left out (too long).
    pub truncated: bool,
    /// With `refused`: why nothing was attached (what the model was told too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub error: Option<String>,
    /// What the model was given for it, as text: the file's lines or the directory's
    /// listing with the words around them (absent for an image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub content: Option<String>,
}

/// What an `@` reference attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileReferenceKind {
    /// A text file, or a range of its lines, with line numbers.
    File,
    /// A directory's listing.
    Directory,
    /// An image, as image input.
    Image,
    /// Nothing: the path is unknown, outside the workspace, protected or unreadable.
    Refused,
}

/// Lines `start..=end`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}
