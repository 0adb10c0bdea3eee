//! Rules files: instructions the person keeps in the workspace and at user level.

use std::path::PathBuf;

/// One rules file as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleFile {
    /// Where it was read, told to the model as the file's label.
    pub path: PathBuf,
    /// Its text, cut at the size limit.
    pub text: String,
    /// Its size on disk in bytes.
    pub size: u64,
    /// Whether the text was cut.
    pub truncated: bool,
}
