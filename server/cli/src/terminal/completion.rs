//! Tab completion at the prompt: `/` commands at the start of the line, a built-in
//! command's argument after its name (`/mode <Tab>`), and `@` paths anywhere. The choices
//! and their order come from the engine (`Engine::commands`, `Engine::complete_argument`,
//! `Engine::complete_paths`, which matches paths fuzzily); this module only places them in
//! the line.

use coder_core::Engine;
use coder_core::control_chars::{has_control, neutralize};
use rustyline::completion::Pair;

/// The most `@` path matches one Tab offers.
const PATH_MATCHES: usize = 50;

/// Where the completed word starts in `line` and what may replace it, for the cursor at
/// `pos`.
pub(super) fn complete(engine: &Engine, line: &str, pos: usize) -> (usize, Vec<Pair>) {
    let before = &line[..pos];
    let start = before.rfind(char::is_whitespace).map_or(0, |at| {
        at + before[at..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    if let Some(name) = word.strip_prefix('/')
        && start == 0
    {
        return (0, commands(engine, name));
    }
    if let Some(query) = word.strip_prefix('@') {
        return (start, paths(engine, query));
    }
    if let Some(command) = argument_of(&before[..start]) {
        return (start, arguments(engine, command, word));
    }
    (pos, Vec::new())
}

/// The commands whose name starts with `name`.
fn commands(engine: &Engine, name: &str) -> Vec<Pair> {
    engine
        .commands()
        .into_iter()
        .filter(|command| command.name.starts_with(name))
        // What a repository's files say is shown, never obeyed: a name that holds a control
        // character would be written into the line as it is, so it is not offered;
        // descriptions are neutralised.
        .filter(|command| !has_control(&command.name))
        .map(|command| Pair {
            display: format!("/{} — {}", command.name, neutralize(&command.description)),
            replacement: format!("/{} ", command.name),
        })
        .collect()
}

/// The workspace paths matching `query` (fuzzily: `@mainrs` finds `src/main.rs`), best
/// first.
fn paths(engine: &Engine, query: &str) -> Vec<Pair> {
    engine
        .complete_paths(query, PATH_MATCHES)
        .into_iter()
        .filter(|found| !has_control(&found.path))
        .map(|found| Pair {
            display: found.path.clone(),
            replacement: format!("@{}", found.path),
        })
        .collect()
}

/// The choices for `/command`'s argument that start with `typed`.
fn arguments(engine: &Engine, command: &str, typed: &str) -> Vec<Pair> {
    engine
        .complete_argument(command, typed)
        .into_iter()
        .filter(|choice| !has_control(&choice.value))
        .map(|choice| Pair {
            display: match &choice.note {
                Some(note) => format!("{} — {}", choice.value, neutralize(note)),
                None => choice.value.clone(),
            },
            replacement: choice.value,
        })
        .collect()
}

/// The command's name when `head` (the line before the word being completed) is a
/// `/command` and its blanks, nothing else: the word is the command's first argument.
fn argument_of(head: &str) -> Option<&str> {
    let name = head.strip_prefix('/')?.trim_end();
    let bare =
        !name.is_empty() && name.len() < head.len() - 1 && !name.contains(char::is_whitespace);
    bare.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_is_completed_only_right_after_a_command() {
        assert_eq!(argument_of("/mode "), Some("mode"));
        assert_eq!(argument_of("/model   "), Some("model"));
        assert_eq!(argument_of("/mode"), None);
        assert_eq!(argument_of("/mode plan "), None);
        assert_eq!(argument_of("tell /mode "), None);
        assert_eq!(argument_of("/ "), None);
    }
}
