//! The system prompt: the built-in `prompt.md` plus facts about the environment.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::model::ToolSpec;
use crate::sync::lock;

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

/// What a conversation's last task sent besides its history: the system prompt and tools.
#[derive(Debug)]
pub(crate) struct PromptShape {
    pub system: String,
    pub tools: Vec<ToolSpec>,
}

/// Hands out one shared [`PromptShape`] for equal prompts: conversations whose tasks send the
/// same system prompt and tools (the usual case) hold one copy between them, not one each
/// (tens of kilobytes a conversation once the tool schemas are counted).
#[derive(Default)]
pub(crate) struct PromptShapes {
    last: Mutex<Option<Arc<PromptShape>>>,
}

impl PromptShapes {
    pub fn share(&self, system: &str, tools: &[ToolSpec]) -> Arc<PromptShape> {
        let mut last = lock(&self.last);
        if let Some(shape) = last
            .as_ref()
            .filter(|shape| shape.system == system && shape.tools.as_slice() == tools)
        {
            return shape.clone();
        }
        let shape = Arc::new(PromptShape {
            system: system.to_owned(),
            tools: tools.to_vec(),
        });
        *last = Some(shape.clone());
        shape
    }
}
