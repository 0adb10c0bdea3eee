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
/// When coder was started below the workspace root, the prompt says where, so the model can
/// resolve what the person means by a relative path (tools resolve from the root).
pub(crate) fn system_prompt(
    base: Option<&str>,
    workspace: &Path,
    started_in: Option<&Path>,
) -> String {
    let base = base.unwrap_or(DEFAULT_PROMPT);
    let started = started_in
        .and_then(|dir| dir.strip_prefix(workspace).ok())
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| {
            format!(
                "The user started coder in {} (relative to the working directory); \
                 paths you pass to tools are relative to the working directory.\n",
                dir.display()
            )
        })
        .unwrap_or_default();
    format!(
        "{base}\n\n# Environment\nWorking directory: {}\n{started}Platform: {}\n",
        workspace.display(),
        std::env::consts::OS
    )
}
