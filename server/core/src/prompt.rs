//! The system prompt: the built-in `prompt.md` plus facts about the environment.

use std::path::Path;

const DEFAULT_PROMPT: &str = include_str!("prompt.md");

/// The built-in prompt, for front doors that put their own instructions before or after it
/// (a conversation's base instructions replace it).
pub fn built_in_prompt() -> &'static str {
    DEFAULT_PROMPT
}

/// The system prompt for a turn in `workspace`: the given base instructions (a per-turn
/// override or the conversation's) or the built-in prompt, then the environment.
pub(crate) fn system_prompt(base: Option<&str>, workspace: &Path) -> String {
    let base = base.unwrap_or(DEFAULT_PROMPT);
    format!(
        "{base}\n\n# Environment\nWorking directory: {}\nPlatform: {}\n",
        workspace.display(),
        std::env::consts::OS
    )
}
