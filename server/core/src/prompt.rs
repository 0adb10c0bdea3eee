//! The system prompt: the built-in `prompt.md` plus facts about the environment.

use std::path::Path;

const DEFAULT_PROMPT: &str = include_str!("prompt.md");

/// The system prompt for a turn in `workspace`.
pub(crate) fn system_prompt(workspace: &Path) -> String {
    format!(
        "{DEFAULT_PROMPT}\n# Environment\nWorking directory: {}\nPlatform: {}\n",
        workspace.display(),
        std::env::consts::OS
    )
}
