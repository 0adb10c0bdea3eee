//! The system prompt: what the model is told before the conversation's history.
//!
//! [`assemble::system_prompt`] puts it together for every task from, in order: the
//! conversation's base instructions (or a per-turn override) or the built-in prompt
//! (`built_in.md`), which the apply_patch instructions (`apply_patch.md`) may follow; the
//! environment ([`Environment`]); the conversation's mode, with plan
//! mode's own guidance (`plan.md`); the rules files ([`rules`]); and a summary of the
//! available skills. Everything in it is stable between the turns of a conversation (no
//! clock time, no counters; the date changes once a day) so that providers' prompt caches
//! keep hitting. [`shapes`] keeps one shared copy of equal prompts.

mod assemble;
pub(crate) mod rules;
mod shapes;

pub(crate) use assemble::{Environment, PatchInstructions, PromptInputs, system_prompt};
pub(crate) use shapes::{PromptShape, PromptShapes};

const BUILT_IN_PROMPT: &str = include_str!("built_in.md");

/// The instructions of a compaction's summary request: a per-turn override of the system
/// prompt (seed 003), never written back to the conversation.
pub(crate) const COMPACT_PROMPT: &str = include_str!("compact.md");

/// The instructions of a summary request: [`COMPACT_PROMPT`], followed by what the person
/// who asked for it wants kept or stressed (`/compact <instructions>`), when they said.
pub(crate) fn compact_prompt(focus: Option<&str>) -> std::borrow::Cow<'static, str> {
    match focus.map(str::trim).filter(|focus| !focus.is_empty()) {
        None => std::borrow::Cow::Borrowed(COMPACT_PROMPT),
        Some(focus) => std::borrow::Cow::Owned(format!(
            "{COMPACT_PROMPT}\nThe person who asked for this summary adds what it should keep or focus on; follow it, within the rules above:\n\n{focus}\n"
        )),
    }
}

/// Opens the user message that holds a compaction's summary, in place of the history's
/// older part.
pub(crate) const SUMMARY_OPEN: &str = "<conversation-summary>\nThe earlier part of this conversation was compacted into the summary below; the messages after it are the most recent, kept as they were.\n\n";
/// Closes it.
pub(crate) const SUMMARY_CLOSE: &str = "\n</conversation-summary>";

/// The built-in prompt, for front doors that put their own instructions before or after it
/// (a conversation's base instructions replace it).
pub fn built_in_prompt() -> &'static str {
    BUILT_IN_PROMPT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolRegistry;

    #[test]
    fn the_built_in_prompt_tells_how_to_use_every_built_in_tool() {
        for tool in ToolRegistry::builtin() {
            let name = format!("`{}`", tool.name());
            assert!(BUILT_IN_PROMPT.contains(&name), "{name} is not explained");
        }
        for topic in [
            "# Checking your work",
            "# Safety",
            "# Reporting",
            "`path:line`",
        ] {
            assert!(BUILT_IN_PROMPT.contains(topic), "{topic}");
        }
    }
}
