//! The built-in slash commands (seed 004 section 4) and `!command` (section 3), run by the
//! engine for every door
//! (`Engine::command`, `conversation/command`, the SDK's `command`): each answers with text
//! for people and, for some, a task or a conversation to follow. A custom command
//! (`.coder/commands/<name>.md`) in the same namespace becomes a task's input; an unknown
//! command is an error and never reaches the model.

use coder_protocol::methods::CommandResult;
use coder_protocol::{ConversationId, EventMsg, InputItem, Mode, Preset, TodoStatus};

use super::Session;
use crate::commands::{is_built_in, slash_command};
use crate::conversation::ConversationSpec;
use crate::error::EngineError;
use crate::sync::lock;

/// How the terminal and the other doors take input, for `/help`.
const INPUT_HELP: &str = "Enter sends; Alt+Enter or Ctrl+J (or a line ending in \\) starts a new line; Tab completes /commands, their arguments (/mode, /permissions, /model, /resume) and @paths, matched fuzzily; Up and Down recall earlier input; Shift+Tab switches to the next mode; Ctrl+G (or /edit) writes the prompt in $VISUAL or $EDITOR; a large paste shows as one line ([pasted 3,000 lines]) and is sent whole. At an approval, one key answers (y, a, n, s; n asks why). Ctrl+C interrupts the running task (a second Ctrl+C at an empty prompt exits); Ctrl+D exits. `!command` runs a shell command in the workspace; `@path` attaches a file.";

fn text(text: impl Into<String>) -> CommandResult {
    CommandResult {
        text: text.into(),
        task_id: None,
        conversation_id: None,
        diff: false,
    }
}

impl Session {
    /// What a person typed, taken as seed 001's `processUserInput` takes it: a built-in
    /// `/command` (one text item, nothing else) runs as [`Session::command`] and never
    /// reaches the model; anything else, a custom command included, is queued by
    /// [`Session::send`]. Only doors call this: what the model sends with `conv_send` is
    /// never a command.
    pub fn input(
        self: &std::sync::Arc<Self>,
        conversation: ConversationId,
        items: Vec<InputItem>,
    ) -> Result<CommandResult, EngineError> {
        if let [InputItem::Text { text: typed }] = items.as_slice()
            && slash_command(typed).is_some_and(|(name, _)| is_built_in(name))
        {
            return self.command(conversation, typed);
        }
        let task = self.send(conversation, items, None)?;
        Ok(CommandResult {
            task_id: Some(task),
            ..text("")
        })
    }

    /// Runs `/name args` in `conversation`.
    pub fn command(
        self: &std::sync::Arc<Self>,
        conversation: ConversationId,
        input: &str,
    ) -> Result<CommandResult, EngineError> {
        self.conversation(conversation)?;
        if let Some(command) = input.trim_start().strip_prefix('!') {
            return self.shell_command(conversation, command.trim());
        }
        let (name, args) = slash_command(input).ok_or_else(|| {
            EngineError::invalid_params(format!(
                "`{}` is not a command: commands start with / and a name",
                input.trim()
            ))
        })?;
        match name {
            "help" => Ok(self.help()),
            "status" => Ok(text(self.status_text(conversation)?)),
            "model" => self.model_command(conversation, args),
            "permissions" => self.permissions_command(conversation, args),
            "mode" => self.mode_command(conversation, args),
            "plan" | "default" | "auto-edit" | "yolo" => self.mode_command(conversation, name),
            "tools" => self.tools_command(conversation),
            "mcp" => self.mcp_command(args),
            "skills" => Ok(self.skills_command()),
            "todos" => self.todos_command(conversation),
            "conversations" => self.conversations_command(conversation),
            "new" => self.new_command(),
            "clear" => self.clear_command(conversation, args),
            "resume" => self.resume_command(args),
            "compact" => {
                if self.holds_nothing(conversation)? {
                    return Ok(text(
                        "nothing to compact: the conversation is empty; nothing was sent to the model",
                    ));
                }
                let focus = (!args.is_empty()).then(|| args.to_owned());
                let task = self.compact(conversation, focus)?;
                Ok(CommandResult {
                    task_id: Some(task),
                    ..text("compacting the conversation")
                })
            }
            "diff" => self.diff_command(args),
            "undo" => self.undo_command(conversation),
            "rewind" if args.trim().is_empty() => self.points_command(conversation),
            "rewind" | "fork" => Err(EngineError::invalid_params(format!(
                "/{name} N goes through `conversation/rewind` or `session/fork` in this door \
                 (the terminal asks before it changes files); /rewind lists the points"
            ))),
            "edit" => Err(EngineError::invalid_params(
                "/edit opens the prompt in an editor at the terminal; an editor's own input is \
                 already one",
            )),
            _ => {
                // A custom command: its prompt becomes the conversation's input.
                let task = self.send(
                    conversation,
                    vec![InputItem::Text {
                        text: input.to_owned(),
                    }],
                    None,
                )?;
                Ok(CommandResult {
                    task_id: Some(task),
                    ..text(format!("/{name} sent"))
                })
            }
        }
    }

    /// Whether `conversation` has no history and no task of it runs or waits: `/compact`
    /// has nothing to summarise.
    fn holds_nothing(&self, conversation: ConversationId) -> Result<bool, EngineError> {
        let held = self.conversation(conversation)?;
        let state = self.state();
        let empty = lock(&held).history.is_empty();
        Ok(empty && !state.queue.holds(conversation) && state.queue.at_rest())
    }

    /// Queues a person's `!command` as a task of its own (`session/shell.rs`).
    fn shell_command(
        &self,
        conversation: ConversationId,
        command: &str,
    ) -> Result<CommandResult, EngineError> {
        if command.is_empty() {
            return Err(EngineError::invalid_params(
                "give a command after `!`, as in `!ls`",
            ));
        }
        let mut plan = super::driver::TaskPlan::new(conversation, Vec::new(), 0);
        plan.shell = Some(command.to_owned());
        let task_id = plan.task_id;
        self.driver.enqueue(vec![plan]);
        Ok(CommandResult {
            task_id: Some(task_id),
            ..text(format!("running `{command}`"))
        })
    }

    /// `/rewind`: the conversation's points, numbered, first line each.
    fn points_command(&self, conversation: ConversationId) -> Result<CommandResult, EngineError> {
        let points = self.points(conversation)?;
        if points.is_empty() {
            return Ok(text(
                "no points to go back to: nothing typed into this conversation is in its history",
            ));
        }
        let mut lines = vec![
            "Points (/rewind N goes back to before one, /fork N starts a new session from it):"
                .to_owned(),
        ];
        lines.extend(
            points
                .iter()
                .map(|point| format!("  {:>3}  {}", point.point, point.text)),
        );
        Ok(text(lines.join("\n")))
    }

    /// `/undo`: the files of the last turn put back, and the model told
    /// (`session/command_notes.rs`).
    fn undo_command(&self, conversation: ConversationId) -> Result<CommandResult, EngineError> {
        if self.driver.running().is_some() {
            return Err(EngineError::new(
                crate::error::ErrorKind::Busy,
                "a task is running: /undo after it ends, or interrupt it first",
            ));
        }
        let said = self
            .services
            .checkpoints
            .undo()
            .map_err(EngineError::invalid_params)?;
        self.tell_model(conversation, "/undo", &said);
        Ok(text(said))
    }

    fn help(&self) -> CommandResult {
        let mut lines = vec!["Commands:".to_owned()];
        for info in self.commands() {
            let hint = info
                .argument_hint
                .map(|hint| format!(" {hint}"))
                .unwrap_or_default();
            lines.push(format!("  /{}{hint}  {}", info.name, info.description));
        }
        lines.push(String::new());
        lines.push(INPUT_HELP.to_owned());
        text(lines.join("\n"))
    }

    /// `/model`: the model now; `/model <name>`: switch at once and write it to the
    /// workspace's `.coder/config.json` (seed 004 section 9; a failed write keeps the switch).
    fn model_command(
        &self,
        conversation: ConversationId,
        args: &str,
    ) -> Result<CommandResult, EngineError> {
        let current = self.model_settings().ok_or_else(EngineError::no_provider)?;
        if args.is_empty() {
            return Ok(text(format!("model: {}", current.model)));
        }
        let name = args.split_whitespace().next().unwrap_or(args);
        self.set_model(crate::model::ModelSettings {
            model: name.to_owned(),
            ..current.clone()
        })?;
        self.report_window(conversation, &current, name);
        let workspace = self.config().workspace.clone();
        let path = workspace.join(".coder/config.json");
        let said = match persist_model(&workspace, name) {
            Ok(Persisted::Ignored) => {
                format!(
                    "model: {name} (saved in {}, which git ignores)",
                    path.display()
                )
            }
            Ok(Persisted::Written) => format!("model: {name} (saved in {})", path.display()),
            Err(err) => format!(
                "model: {name} for this session; it could not be saved in {}: {err}",
                path.display()
            ),
        };
        self.tell_model(
            conversation,
            &format!("/model {name}"),
            &format!("model: {name}"),
        );
        Ok(text(said))
    }

    /// Reports `conversation`'s context against `model`'s window at once (a `token_count`
    /// of no new usage), so a door's context line follows `/model` before the next turn.
    fn report_window(
        &self,
        conversation: ConversationId,
        settings: &crate::model::ModelSettings,
        model: &str,
    ) {
        let Ok(held) = self.conversation(conversation) else {
            return;
        };
        let (total, context_tokens) = {
            let held = lock(&held);
            (held.total_usage, held.size.tokens)
        };
        let (limits, _) = settings.limits_of(model);
        self.services.hub.emit(
            conversation,
            None,
            EventMsg::TokenCount {
                last: coder_protocol::TokenUsage::default(),
                total,
                context_tokens,
                context_window: Some(limits.context_window),
            },
        );
    }

    fn permissions_command(
        &self,
        conversation: ConversationId,
        args: &str,
    ) -> Result<CommandResult, EngineError> {
        if let Some(id) = args.strip_prefix("remove") {
            let id = id.trim();
            return match self.remove_permission_rule(id)? {
                true => {
                    let said = format!("removed the rule {id}");
                    self.tell_model(conversation, &format!("/permissions remove {id}"), &said);
                    Ok(text(said))
                }
                false => Err(EngineError::invalid_params(format!(
                    "no recorded rule `{id}` in this project: /permissions lists them"
                ))),
            };
        }
        if !args.is_empty() {
            let preset: Preset = serde_json::from_value(serde_json::Value::String(args.to_owned()))
                .map_err(|_| {
                    EngineError::invalid_params(format!(
                        "unknown preset `{args}`: strict, balanced, auto-edit or yolo"
                    ))
                })?;
            // Policies only narrow (seed 003): the configured preset is the ceiling, as the
            // configured mode is for `/mode`.
            let ceiling = self.config().preset;
            let rank = |preset: Preset| Preset::ALL.iter().position(|p| *p == preset);
            let granted = if rank(preset) > rank(ceiling) {
                self.services.hub.emit(
                    conversation,
                    None,
                    coder_protocol::EventMsg::Warning {
                        message: format!(
                            "preset {} is looser than the session's {}; the session uses {}",
                            preset.as_str(),
                            ceiling.as_str(),
                            ceiling.as_str()
                        ),
                    },
                );
                ceiling
            } else {
                preset
            };
            self.permissions().set_preset(granted);
            let mode = self.mode(conversation)?;
            self.tell_model(
                conversation,
                &format!("/permissions {args}"),
                &format!("preset: {}, mode: {}", granted.as_str(), mode.as_str()),
            );
        }
        let mode = self.mode(conversation)?;
        let permissions = self.permissions();
        let rows = crate::permissions::describe(mode, permissions.preset(), &permissions.rules());
        let mut lines = vec![format!(
            "preset: {}, mode: {}",
            permissions.preset().as_str(),
            mode.as_str()
        )];
        lines.extend(rows.iter().map(|row| {
            format!(
                "  {:<24} {:<5} ({})",
                row.subject,
                row.decision.as_str(),
                row.source
            )
        }));
        let recorded = permissions.lasting_rules();
        if !recorded.is_empty() {
            lines.push(
                "recorded with \"always\" (/permissions remove <id> takes one away):".to_owned(),
            );
            lines.extend(
                recorded.iter().map(|rule| {
                    format!("  {} {} ({})", rule.decision.as_str(), rule.covers, rule.id)
                }),
            );
        }
        Ok(text(lines.join("\n")))
    }

    /// The permission rules recorded with "always" for this project.
    pub fn permission_rules(&self) -> Vec<coder_protocol::PermissionRule> {
        self.permissions().lasting_rules()
    }

    /// Removes a recorded permission rule; whether there was one of that id.
    pub fn remove_permission_rule(&self, id: &str) -> Result<bool, EngineError> {
        self.permissions()
            .remove_lasting_rule(id)
            .map_err(|problem| EngineError::new(crate::error::ErrorKind::Io, problem))
    }

    fn mode_command(
        &self,
        conversation: ConversationId,
        args: &str,
    ) -> Result<CommandResult, EngineError> {
        if args.is_empty() {
            return Ok(text(format!("mode: {}", self.mode(conversation)?.as_str())));
        }
        let mode: Mode = serde_json::from_value(serde_json::Value::String(args.to_owned()))
            .map_err(|_| {
                EngineError::invalid_params(format!(
                    "unknown mode `{args}`: plan, default, auto-edit or yolo"
                ))
            })?;
        self.set_mode(conversation, mode)?;
        let said = format!("mode: {}", self.mode(conversation)?.as_str());
        self.tell_model(conversation, &format!("/mode {args}"), &said);
        Ok(text(said))
    }

    /// `/mcp`: the servers and any change held for a person; `/mcp reload` starts the
    /// servers a file added or changed ([`Session::confirm_mcp`]).
    fn mcp_command(self: &std::sync::Arc<Self>, args: &str) -> Result<CommandResult, EngineError> {
        match args.trim() {
            "" => Ok(text(self.mcp_listing())),
            "reload" => Ok(text(self.confirm_mcp())),
            other => Err(EngineError::invalid_params(format!(
                "/mcp takes nothing or `reload`, not `{other}`"
            ))),
        }
    }

    /// `/tools`: the built-in tools, then the MCP tools the conversation's view holds (built
    /// again first when the servers' tools changed since).
    /// The tools the conversation's next request would carry, as that request is built (its
    /// mode, its tool choices, the MCP tools it may see): built-in ones, then MCP ones, each
    /// with the first sentence of its description.
    fn tools_command(&self, conversation: ConversationId) -> Result<CommandResult, EngineError> {
        let active = self.state().model.clone();
        let (shape, mcp) = {
            let conversation = self.conversation(conversation)?;
            let mut conversation = crate::sync::lock(&conversation);
            let view = &mut conversation.context.mcp_view;
            if !view.is_current(&self.services.mcp) {
                view.rebuild(&self.services.mcp);
            }
            let mcp: Vec<String> = view
                .tools()
                .specs()
                .iter()
                .map(|spec| spec.name.clone())
                .collect();
            (self.next_prompt(&conversation, active.as_deref()), mcp)
        };
        let line = |spec: &&crate::tools::ToolSpec| {
            format!("  {:<16} {}", spec.name, first_sentence(&spec.description))
        };
        let (from_mcp, built_in): (Vec<_>, Vec<_>) = shape
            .tools
            .iter()
            .partition(|spec| mcp.contains(&spec.name));
        let mut listing = format!(
            "Tools:\n{}",
            built_in.iter().map(line).collect::<Vec<_>>().join("\n")
        );
        if !from_mcp.is_empty() {
            let lines: Vec<String> = from_mcp.iter().map(line).collect();
            listing.push_str(&format!("\nMCP tools:\n{}", lines.join("\n")));
        }
        Ok(text(listing))
    }

    fn skills_command(&self) -> CommandResult {
        let skills = self.skills();
        if skills.is_empty() {
            return text("No skills (.coder/skills/<name>/SKILL.md).");
        }
        let lines: Vec<String> = skills
            .iter()
            .map(|skill| format!("  {:<16} {}", skill.name, skill.description))
            .collect();
        text(format!("Skills:\n{}", lines.join("\n")))
    }

    /// `/conversations`: the session's conversations, the root first, each with its mode,
    /// size and last activity; the one the command came from and the one running are
    /// marked (seed 000: the front ends list them by id).
    fn conversations_command(&self, current: ConversationId) -> Result<CommandResult, EngineError> {
        let running = self.driver.running().map(|(conversation, _)| conversation);
        let mut lines = vec!["Conversations:".to_owned()];
        for summary in self.list_conversations() {
            let mut marks = Vec::new();
            if summary.is_root {
                marks.push("root");
            }
            if summary.id == current {
                marks.push("here");
            }
            if Some(summary.id) == running {
                marks.push("running");
            }
            if self.driver.awaits_continuation(summary.id) {
                marks.push("waiting for another conversation");
            }
            let marks = if marks.is_empty() {
                String::new()
            } else {
                format!(" ({})", marks.join(", "))
            };
            let mode = self.mode(summary.id)?;
            lines.push(format!(
                "  {}{marks}: {} mode, {} messages, last active {}",
                summary.id,
                mode.as_str(),
                summary.message_count,
                summary.last_active_at
            ));
        }
        Ok(text(lines.join("\n")))
    }

    fn todos_command(&self, conversation: ConversationId) -> Result<CommandResult, EngineError> {
        let conversation = self.conversation(conversation)?;
        let todos = lock(&conversation).todos.clone();
        let todos = lock(&todos).clone();
        if todos.is_empty() {
            return Ok(text("No todos."));
        }
        let lines: Vec<String> = todos
            .iter()
            .map(|todo| {
                let mark = match todo.status {
                    TodoStatus::Completed => "[x]",
                    TodoStatus::InProgress => "[>]",
                    TodoStatus::Pending => "[ ]",
                };
                format!("  {mark} {}", todo.content)
            })
            .collect();
        Ok(text(format!("Todos:\n{}", lines.join("\n"))))
    }

    /// `/clear`: the conversation's context starts over (seed 002's clear,
    /// [`crate::conversation::Conversation::start_batch`]): its messages go, the system
    /// prompt and the tools stay. Refused while its history is in use: a task of it runs
    /// (the turn records into it), or it waits for a handoff's continuation (whose answer
    /// needs the call it answers).
    fn clear_command(
        &self,
        conversation: ConversationId,
        args: &str,
    ) -> Result<CommandResult, EngineError> {
        if !args.is_empty() {
            return Err(EngineError::invalid_params(format!(
                "/clear takes nothing, not `{args}`"
            )));
        }
        let held = self.conversation(conversation)?;
        let cleared = {
            // Under the session's lock, so no task of the conversation starts meanwhile.
            let state = self.state();
            if state.queue.holds(conversation) {
                return Err(EngineError::new(
                    crate::error::ErrorKind::Busy,
                    "this conversation's task is running or waits for another conversation's answer: /clear after it ends, or interrupt it first",
                ));
            }
            let mut held = lock(&held);
            let cleared = held.start_batch(Vec::new());
            self.services.journal.persist(&mut held);
            cleared
        };
        if let Some(message) = self.services.journal.take_warning() {
            self.services
                .hub
                .emit(conversation, None, EventMsg::Warning { message });
        }
        self.services.hub.emit(
            conversation,
            None,
            EventMsg::ContextCleared {
                cleared_messages: cleared,
            },
        );
        Ok(text(format!(
            "context cleared: {cleared} messages left it; the system prompt and the tools stay"
        )))
    }

    fn new_command(&self) -> Result<CommandResult, EngineError> {
        let id = self.open_conversation(
            ConversationSpec::default(),
            super::conversations::Opener::FrontDoor,
        )?;
        Ok(CommandResult {
            conversation_id: Some(id),
            ..text("a new conversation, with an empty context")
        })
    }

    /// `/resume`: the saved sessions, newest first; `/resume <id or prefix>` takes one up.
    fn resume_command(&self, args: &str) -> Result<CommandResult, EngineError> {
        let saved = self.saved_sessions();
        if args.is_empty() {
            if saved.is_empty() {
                return Ok(text("No saved sessions."));
            }
            let current = self.session_id();
            let now = std::time::SystemTime::now();
            let lines: Vec<String> = saved
                .iter()
                .take(RESUME_LISTED)
                .enumerate()
                .map(|(at, session)| {
                    let here = if session.session_id == current {
                        "  (this session)"
                    } else {
                        ""
                    };
                    format!(
                        "  {:>2}  {:<12}  {:>4} messages  {}  {}{here}",
                        at + 1,
                        ago(&session.saved_at, now),
                        session.messages,
                        session.session_id,
                        crate::control_chars::neutralize(session.title.as_deref().unwrap_or("")),
                    )
                })
                .collect();
            return Ok(text(format!(
                "Saved sessions, newest first (/resume N, or /resume and the start of an id):\n{}",
                lines.join("\n")
            )));
        }
        // A number names a session of the list, unless an id starts with it.
        let by_id = |session: &&coder_protocol::methods::SessionInfo| {
            session.session_id.to_string().starts_with(args)
        };
        let numbered = args
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=RESUME_LISTED).contains(n) && !saved.iter().any(|s| by_id(&s)))
            .and_then(|n| saved.get(n - 1));
        let matching: Vec<_> = match numbered {
            Some(session) => vec![session],
            None => saved.iter().filter(by_id).collect(),
        };
        let session = match matching.as_slice() {
            [one] => one.session_id,
            [] => {
                return Err(EngineError::new(
                    crate::error::ErrorKind::NotFound,
                    format!("no saved session starts with `{args}`; /resume lists them"),
                ));
            }
            _ => {
                return Err(EngineError::invalid_params(format!(
                    "`{args}` starts {} saved sessions; give more of the id",
                    matching.len()
                )));
            }
        };
        let loaded = self.resume(session)?;
        Ok(text(format!(
            "resumed session {session}: {loaded} messages"
        )))
    }

    /// `/diff`: the working tree's changes against git's index and HEAD, summarised;
    /// `/diff full` shows the whole diff.
    fn diff_command(&self, args: &str) -> Result<CommandResult, EngineError> {
        let workspace = self.config().workspace.clone();
        let git = |arguments: &[&str]| -> Result<String, EngineError> {
            let output = crate::undo::safe_git(&workspace)
                .args(arguments)
                .output()
                .map_err(|err| EngineError::io(format!("cannot run git: {err}")))?;
            if !output.status.success() {
                return Err(EngineError::invalid_params(format!(
                    "/diff needs a git repository: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                )));
            }
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let full = args == "full";
        let changed = git(&["status", "--porcelain", "--untracked-files=all"])?;
        if changed.trim().is_empty() {
            return Ok(text("No changes."));
        }
        // Against HEAD, or against the index in a repository without commits.
        let diff = |against_head: bool| {
            let mut args = vec![
                "--no-pager",
                "diff",
                "--no-color",
                "--no-textconv",
                "--no-ext-diff",
            ];
            if !full {
                args.push("--stat");
            }
            if against_head {
                args.push("HEAD");
            }
            git(&args)
        };
        let shown = diff(true).or_else(|_| diff(false))?;
        let untracked: Vec<&str> = changed
            .lines()
            .filter_map(|line| line.strip_prefix("?? "))
            .collect();
        let mut out = shown.trim_end().to_owned();
        if !untracked.is_empty() {
            out.push_str(&format!("\nNew files: {}", untracked.join(", ")));
        }
        if full {
            out.push_str(&new_files_diff(&workspace));
        } else {
            out.push_str("\n(/diff full shows the whole diff)");
        }
        Ok(CommandResult {
            diff: full,
            ..text(out.trim_start().to_owned())
        })
    }
}

/// A new file larger than this is named in `/diff full`, not shown.
const NEW_FILE_SHOWN_MAX: u64 = 256 * 1024;

/// The files git does not track (and does not ignore) under `workspace`, each as a diff
/// against nothing (what `git diff` shows for a file once added), for `/diff full`. Read
/// without touching the index: `git diff --no-index` against `/dev/null`. A file past
/// [`NEW_FILE_SHOWN_MAX`] is named with its size instead; git shows a binary file as such.
fn new_files_diff(workspace: &std::path::Path) -> String {
    let Ok(listed) = crate::undo::safe_git(workspace)
        .args(["ls-files", "--others", "--exclude-standard", "-z"])
        .output()
    else {
        return String::new();
    };
    let mut out = String::new();
    for path in listed
        .stdout
        .split(|byte| *byte == 0)
        .filter(|p| !p.is_empty())
    {
        let path = String::from_utf8_lossy(path);
        // Only what git lists (regular files and symbolic links, shown as their target's
        // name): reading anything else (a FIFO made since) could wait for ever.
        let Ok(metadata) = std::fs::symlink_metadata(workspace.join(&*path)) else {
            continue;
        };
        if !metadata.is_file() && !metadata.file_type().is_symlink() {
            continue;
        }
        let size = metadata.len();
        if size > NEW_FILE_SHOWN_MAX {
            out.push_str(&format!("\n\nnew file {path}: {size} bytes, not shown"));
            continue;
        }
        // `--no-index` exits 1 when the files differ, which a new file always does.
        let Ok(shown) = crate::undo::safe_git(workspace)
            .args([
                "--no-pager",
                "diff",
                "--no-index",
                "--no-color",
                "--no-textconv",
                "--no-ext-diff",
                "--",
                "/dev/null",
                &path,
            ])
            .output()
        else {
            continue;
        };
        let shown = String::from_utf8_lossy(&shown.stdout);
        if !shown.trim().is_empty() {
            out.push_str("\n\n");
            out.push_str(shown.trim_end());
        }
    }
    out
}

/// How `/model` saved the model.
enum Persisted {
    /// In a `.coder/config.json` coder made, which its `.coder/.gitignore` keeps out of git.
    Ignored,
    /// In the project's own `.coder/config.json`, or beside the project's own
    /// `.coder/.gitignore`: the project decides what git sees.
    Written,
}

/// What `.coder/.gitignore` holds when coder makes it, making `.coder/config.json`: coder's
/// own state stays out of `git status` and `/diff`.
const CODER_GITIGNORE: &str = "# Made by coder with the model /model saved: coder's own state stays out of git.\n# Remove a line to share that file with the project.\n/.gitignore\n/config.json\n";

/// Writes `model` into the workspace's `.coder/config.json`, keeping the rest of it. The
/// file is read and replaced through the workspace handle, never through a link: a linked
/// `.coder` or `.coder/config.json` (to the person's own configuration, with their key) is
/// refused and nothing is written. When coder makes the file and `.coder` has no
/// `.gitignore`, it makes one that keeps the file out of git ([`CODER_GITIGNORE`]); a file
/// the project made is the project's, and no ignore rule is added for it.
fn persist_model(workspace: &std::path::Path, model: &str) -> Result<Persisted, String> {
    const NAME: &str = "config.json";
    let dir = crate::beneath::WorkspaceDir::open(workspace)?
        .own_dir(std::path::Path::new(".coder"), true)
        .map_err(|err| err.to_string())?
        .ok_or_else(|| "the folder .coder is missing".to_owned())?;
    let shown = dir.shown(NAME);
    let failed = |err: std::io::Error| crate::beneath::own_file_error(&shown, &err);
    let mut config = match dir
        .read(NAME, crate::bounded::MAX_CONFIG_BYTES)
        .map_err(failed)?
    {
        Some(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
            .map_err(|err| format!("it is not valid JSON ({err})"))?,
        None => serde_json::json!({}),
    };
    let made_by_coder = !dir.exists(NAME);
    let object = config
        .as_object_mut()
        .ok_or_else(|| "it is not a JSON object".to_owned())?;
    object.insert(
        "model".to_owned(),
        serde_json::Value::String(model.to_owned()),
    );
    let mut text = serde_json::to_string_pretty(&config).map_err(|err| err.to_string())?;
    text.push('\n');
    dir.write_atomic(NAME, |file| {
        std::io::Write::write_all(file, text.as_bytes())
    })
    .map_err(failed)?;
    // Whatever is there already (a link included) is left as it is.
    let ignored = made_by_coder
        && dir
            .create_new(".gitignore", CODER_GITIGNORE.as_bytes())
            .unwrap_or(false);
    Ok(if ignored || ignored_before(&dir) {
        Persisted::Ignored
    } else {
        Persisted::Written
    })
}

/// Whether `.coder/.gitignore` is the one coder makes: a later `/model` says git ignores
/// the file still.
fn ignored_before(dir: &crate::beneath::OwnDir) -> bool {
    dir.read(".gitignore", CODER_GITIGNORE.len() as u64)
        .ok()
        .flatten()
        .is_some_and(|held| held == CODER_GITIGNORE.as_bytes())
}

/// The first sentence of `text`: up to the first `. ` that does not end an abbreviation
/// (`e.g. \`x\`` goes on), or the end of its first line.
fn first_sentence(text: &str) -> &str {
    const ABBREVIATIONS: [&str; 4] = ["e.g", "i.e", "etc", "vs"];
    let line = text.lines().next().unwrap_or_default();
    let end = line.match_indices(". ").map(|(at, _)| at).find(|&at| {
        let word = line[..at].rsplit(' ').next().unwrap_or_default();
        !ABBREVIATIONS.contains(&word.trim_start_matches('('))
    });
    end.map_or(line, |end| &line[..=end])
}

/// How many saved sessions `/resume` lists (and numbers).
const RESUME_LISTED: usize = 20;

/// How long ago `saved_at` (RFC 3339) was: `just now`, `5 min ago`, `3 h ago`, `2 days
/// ago`; the time itself when it cannot be read.
fn ago(saved_at: &str, now: std::time::SystemTime) -> String {
    let Ok(then) = humantime::parse_rfc3339_weak(saved_at) else {
        return saved_at.to_owned();
    };
    let seconds = now
        .duration_since(then)
        .map_or(0, |elapsed| elapsed.as_secs());
    match seconds {
        0..60 => "just now".to_owned(),
        60..3_600 => format!("{} min ago", seconds / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}
