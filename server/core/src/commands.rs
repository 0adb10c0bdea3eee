//! Slash commands: which inputs are one, the custom commands a workspace or a person defines
//! (`.coder/commands/<name>.md`), and how `/name args` expands into a prompt.
//!
//! A custom command is a markdown file whose body is the prompt; its YAML frontmatter may
//! give `description`, `argument-hint` and `model`. In the body, `$ARGUMENTS` is everything
//! after the name and `$1`..`$9` its words, split as a shell would (quotes group words).

use std::path::{Path, PathBuf};

use coder_protocol::methods::{CommandInfo, CommandSource};
use serde::Deserialize;

/// The built-in commands (seed 004 section 4): name, argument hint, description. The
/// session runs them (`session/slash.rs`); every door lists them first.
pub(crate) const BUILT_IN_COMMANDS: &[(&str, &str, &str)] = &[
    ("help", "", "the commands and how input works"),
    (
        "model",
        "[name]",
        "the model; with a name, switch to it and save it in .coder/config.json",
    ),
    (
        "permissions",
        "[preset]",
        "the permission matrix; with a preset (strict, balanced, auto-edit, yolo), switch to it",
    ),
    (
        "mode",
        "[name]",
        "the conversation's mode; with a name (plan, default, auto-edit, yolo), switch to it",
    ),
    ("plan", "", "switch to plan mode"),
    ("default", "", "switch to default mode"),
    ("auto-edit", "", "switch to auto-edit mode"),
    ("yolo", "", "switch to yolo mode"),
    (
        "status",
        "",
        "the model, mode, permission preset, context, session, workspace, sandbox and MCP servers",
    ),
    ("tools", "", "the tools the model may call"),
    (
        "mcp",
        "[reload]",
        "the MCP servers; reload starts the servers a changed file added or changed",
    ),
    ("skills", "", "the skills the model is told about"),
    ("todos", "", "the conversation's todo list"),
    (
        "conversations",
        "",
        "the session's conversations: mode, size, which runs",
    ),
    ("new", "", "start again with an empty context"),
    (
        "clear",
        "",
        "clear the conversation's context: its messages go, the system prompt and tools stay",
    ),
    (
        "resume",
        "[session-id]",
        "the saved sessions; with an id (or its start), take one up",
    ),
    (
        "compact",
        "[instructions]",
        "summarise the conversation's older history now; instructions say what the summary keeps or focuses on",
    ),
    (
        "diff",
        "[full]",
        "the working tree's changes (git); full shows the whole diff",
    ),
    (
        "undo",
        "",
        "revert every file change of the last turn (git)",
    ),
    (
        "rewind",
        "[N]",
        "the points to go back to; with N, show what going back to before point N changes, then do it",
    ),
    (
        "fork",
        "N",
        "start a new session from before point N, leaving this one as it is",
    ),
    (
        "edit",
        "",
        "at the terminal: write the prompt in $VISUAL or $EDITOR (also Ctrl+G)",
    ),
];

/// One choice for a built-in command's argument (`/mode plan`), for a completion menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentChoice {
    /// What goes after the command's name.
    pub value: String,
    /// A few words about it for the menu (`in use`, when a session was saved), if any.
    pub note: Option<String>,
}

impl ArgumentChoice {
    pub(crate) fn word(value: &str) -> Self {
        Self {
            value: value.to_owned(),
            note: None,
        }
    }
}

/// Whether `name` is a built-in command.
pub(crate) fn is_built_in(name: &str) -> bool {
    BUILT_IN_COMMANDS
        .iter()
        .any(|(built_in, _, _)| *built_in == name)
}

/// One custom command, read from its file.
#[derive(Debug, Clone)]
pub(crate) struct CustomCommand {
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub model: Option<String>,
    pub source: CommandSource,
    pub path: PathBuf,
    pub body: String,
}

/// A command file that could not be read, by the name it would have.
#[derive(Debug, Clone)]
pub(crate) struct BrokenCommand {
    pub name: String,
    pub path: PathBuf,
    pub problem: String,
}

/// The custom commands found, the first of each name winning.
#[derive(Debug, Default, Clone)]
pub(crate) struct Commands {
    pub commands: Vec<CustomCommand>,
    pub broken: Vec<BrokenCommand>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Frontmatter {
    description: Option<String>,
    argument_hint: Option<String>,
    model: Option<String>,
}

impl Commands {
    /// Reads `<folder>/commands/*.md` of each folder, in order: a name found in an earlier
    /// folder hides the same name in later ones. Missing folders are skipped. A file that
    /// cannot be used keeps the command `previous` read from it (its last good version); it
    /// is still listed in `broken`, for the warning.
    pub fn load_keeping(folders: &[(CommandSource, PathBuf)], previous: &Self) -> Self {
        let mut found = Self::default();
        for (source, folder) in folders {
            for path in markdown_files(&folder.join("commands")) {
                let Some(name) = path.file_stem().and_then(|stem| stem.to_str()) else {
                    continue;
                };
                if !is_command_name(name) || found.knows(name) || is_built_in(name) {
                    continue;
                }
                match read_command(name, *source, folder, &path) {
                    Ok(command) => found.commands.push(command),
                    Err(problem) => {
                        let kept = previous
                            .commands
                            .iter()
                            .find(|command| command.path == path);
                        found.commands.extend(kept.cloned());
                        found.broken.push(BrokenCommand {
                            name: name.to_owned(),
                            path,
                            problem,
                        });
                    }
                }
            }
        }
        found.commands.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    fn knows(&self, name: &str) -> bool {
        self.commands.iter().any(|command| command.name == name)
            || self.broken.iter().any(|broken| broken.name == name)
    }

    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|command| command.name == name)
    }

    /// The built-in commands, then the custom ones, as the doors list them.
    pub fn infos(&self) -> Vec<CommandInfo> {
        let built_in = BUILT_IN_COMMANDS
            .iter()
            .map(|(name, hint, description)| CommandInfo {
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                argument_hint: (!hint.is_empty()).then(|| (*hint).to_owned()),
                model: None,
                source: CommandSource::Builtin,
                path: None,
                body: None,
            });
        let custom = self.commands.iter().map(|command| CommandInfo {
            name: command.name.clone(),
            description: command.description.clone(),
            argument_hint: command.argument_hint.clone(),
            model: command.model.clone(),
            source: command.source,
            path: Some(command.path.display().to_string()),
            body: Some(command.body.clone()),
        });
        built_in.chain(custom).collect()
    }

    /// Why `/name` cannot be sent: a broken file, or a name nobody defined (with the
    /// names that are known).
    pub fn refusal(&self, name: &str) -> String {
        if let Some(broken) = self.broken.iter().find(|broken| broken.name == name) {
            return format!(
                "command /{name} cannot be used: {}: {}",
                broken.path.display(),
                broken.problem
            );
        }
        let known: Vec<String> = self
            .infos()
            .iter()
            .map(|info| format!("/{}", info.name))
            .collect();
        if known.is_empty() {
            format!(
                "unknown command /{name}: no commands are defined (custom commands are \
                 .coder/commands/<name>.md files)"
            )
        } else {
            format!(
                "unknown command /{name}; known commands: {}",
                known.join(", ")
            )
        }
    }
}

/// The name and arguments of a slash command, when `text` is one: a `/` first (after
/// blanks), then a name of letters, digits, `_`, `-`, `.` or `:` ending the text or followed
/// by a blank. `/usr/bin/env`, `//` or `/ x` are not commands.
pub(crate) fn slash_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
        .unwrap_or(rest.len());
    let (name, after) = rest.split_at(end);
    let starts_well = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let ends_well = after.chars().next().is_none_or(char::is_whitespace);
    (starts_well && ends_well).then(|| (name, after.trim()))
}

/// The prompt `/name args` becomes: `$ARGUMENTS` replaced by `args`, `$1`..`$9` by its
/// words (split as a shell would; a word that is missing is empty). A body that uses
/// neither gets the arguments appended as `ARGUMENTS: args`. `None` as soon as the prompt
/// passes `limit` bytes: a command file repeating `$ARGUMENTS` could otherwise make a
/// prompt of gigabytes out of a short input.
pub(crate) fn expand_within(body: &str, args: &str, limit: usize) -> Option<String> {
    let words =
        shlex::split(args).unwrap_or_else(|| args.split_whitespace().map(str::to_owned).collect());
    let mut out = String::with_capacity(body.len().min(limit) + args.len().min(limit));
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| matches!(c, '1'..='9')) {
            let index = digit as usize - '1' as usize;
            out.push_str(words.get(index).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
        if out.len() > limit {
            return None;
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        out = format!("{}\n\nARGUMENTS: {args}", out.trim_end());
    }
    (out.len() <= limit).then_some(out)
}

/// [`expand_within`] without a limit.
#[cfg(test)]
fn expand(body: &str, args: &str) -> String {
    expand_within(body, args, usize::MAX).unwrap_or_default()
}

fn read_command(
    name: &str,
    source: CommandSource,
    folder: &Path,
    path: &Path,
) -> Result<CustomCommand, String> {
    let text = crate::frontmatter::read_file(source, folder, path)?;
    let doc = crate::frontmatter::parse::<Frontmatter>(&text)?;
    let description = doc.meta.description.unwrap_or_else(|| {
        // Without one, the body's first line says what the command does.
        doc.body
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or_default()
            .to_owned()
    });
    Ok(CustomCommand {
        name: name.to_owned(),
        description: description.trim().to_owned(),
        argument_hint: doc.meta.argument_hint,
        model: doc.meta.model,
        source,
        path: path.to_path_buf(),
        body: doc.body,
    })
}

fn is_command_name(name: &str) -> bool {
    slash_command(&format!("/{name}")).is_some_and(|(parsed, _)| parsed == name)
}

/// The `*.md` files of a folder, sorted; none when it cannot be read.
fn markdown_files(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_inputs_are_slash_commands() {
        assert_eq!(slash_command("/review a b"), Some(("review", "a b")));
        assert_eq!(slash_command("  /fix-it"), Some(("fix-it", "")));
        assert_eq!(slash_command("/ns:cmd\nmore"), Some(("ns:cmd", "more")));
        assert_eq!(slash_command("/usr/bin/env ls"), None);
        assert_eq!(slash_command("//comment"), None);
        assert_eq!(slash_command("/ x"), None);
        assert_eq!(slash_command("please /review"), None);
    }

    #[test]
    fn arguments_and_words_are_substituted() {
        assert_eq!(
            expand(
                "Review $1 for $2 ($ARGUMENTS), $3.",
                "src/a.rs \"memory leaks\""
            ),
            "Review src/a.rs for memory leaks (src/a.rs \"memory leaks\"), ."
        );
        assert_eq!(expand("Costs $5 $", ""), "Costs  $");
        assert_eq!(expand("Do it.\n", "now"), "Do it.\n\nARGUMENTS: now");
        assert_eq!(expand("Do it.\n", ""), "Do it.\n");
    }
}
