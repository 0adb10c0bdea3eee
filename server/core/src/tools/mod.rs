//! Tools: the interface every tool implements, the registry, and the built-ins.
//!
//! A tool call goes through [`runner`]: exists? -> JSON-schema validation ->
//! [`Tool::validate_input`] -> [`Tool::call`], with an event at the end of each path.

mod apply_patch;
mod ask_user;
mod bash;
pub(crate) use crate::beneath;
pub(crate) mod conversation;
pub(crate) mod diff;
mod edit;
mod exit_plan_mode;
mod glob;
mod grep;
pub mod live_output;
pub(crate) mod paths;
pub(crate) mod protected_files;
pub(crate) mod read;
pub mod seen;
pub(crate) mod shell_safety;
mod skill;
mod title;
mod todo_write;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use coder_protocol::{Attachment, ConversationId, EventMsg, TodoItem, ToolKind, ToolLocation};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::documents::Documents;
use crate::error::EngineError;
pub use crate::sandbox::SandboxPolicy;

/// The largest file the writing tools (`write`, `edit`, `apply_patch`) read to change it:
/// a source file is far below it; a larger one is refused by its size, not read whole.
pub(crate) const MAX_EDIT_BYTES: u64 = 64 << 20;

pub(crate) use apply_patch::patch_of_command;
pub use apply_patch::{APPLY_PATCH, ApplyPatchTool};
pub use ask_user::{ASK_USER, AskUserTool};
pub use bash::{BASH, BashTool};
pub use conversation::{CONVERSATION_TOOLS, ConversationTool};
pub use edit::EditTool;
pub use exit_plan_mode::{EXIT_PLAN_MODE, ExitPlanModeTool};
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use read::ReadTool;
pub use skill::{CachedSkills, SKILL, SkillTool};
pub(crate) use title::started;
pub use title::title;
pub(crate) use todo_write::todos_left_by;
pub use todo_write::{TODO_WRITE, TodoWriteTool};
pub use write::WriteTool;

/// A built-in tool as a person reads it in a list of tools.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BuiltinTool {
    pub name: String,
    pub description: String,
    /// Whether tasks starting now are offered it.
    pub offered: bool,
}

/// What a tool looks like to a model: its name, what it is for, and its arguments' schema.
/// The schema is shared: every task offers the tools again, and copying each schema's tree
/// was most of what preparing a turn cost (docs/benchmarks.md).
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: std::sync::Arc<Schema>,
}

/// A tool's argument schema, with its JSON written once: every request carries it, and a
/// new conversation's first request is measured with it, so neither serializes the tree
/// again. Reads as the schema's [`Value`].
#[derive(Debug)]
pub struct Schema {
    value: Value,
    json: Box<serde_json::value::RawValue>,
}

impl Schema {
    pub fn new(value: Value) -> Self {
        // A `Value` always serializes (its map keys are strings): the `null` of the
        // default is never used.
        let json = serde_json::value::to_raw_value(&value).unwrap_or_default();
        Self { value, json }
    }

    /// The schema as JSON, the bytes `serde_json` writes for it.
    pub fn json(&self) -> &serde_json::value::RawValue {
        &self.json
    }
}

impl std::ops::Deref for Schema {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.value
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl PartialEq for ToolSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && (std::sync::Arc::ptr_eq(&self.parameters, &other.parameters)
                || self.parameters == other.parameters)
    }
}

/// A capability the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name on the wire: `^[a-zA-Z0-9_-]{1,64}$`.
    fn name(&self) -> &str;
    /// What the model reads to decide when and how to call the tool.
    fn description(&self) -> &str;
    /// JSON schema of the arguments; calls are validated against it before anything else.
    fn input_schema(&self) -> Value;
    /// What a call does (the Agent Client Protocol's kinds). Events carry it, so a client
    /// shows a call by what it does, never by the tool's name.
    fn kind(&self) -> ToolKind;
    /// The paths a call with `input` reads or changes, absolute; empty when it names none
    /// (or its input is not what the schema asks: it fails its validation then).
    fn locations(&self, _input: &Value, _workspace: &Path) -> Vec<ToolLocation> {
        Vec::new()
    }
    /// The whole command line a call with `input` would run, for a tool that runs one: a
    /// person asked to approve it is shown every line of it.
    fn command_line(&self, _input: &Value) -> Option<String> {
        None
    }
    /// Whether the tool changes nothing outside the session (the todo list, the
    /// conversation tools): every mode allows it.
    fn stays_inside_session(&self) -> bool {
        false
    }
    /// The plan a call with `input` puts to a person, for a tool that switches out of plan
    /// mode: shown whole, as a command line is.
    fn plan(&self, _input: &Value) -> Option<String> {
        None
    }
    /// The questions a call with `input` puts to a person, for a tool that asks some: each
    /// is asked as a permission request whose options are its choices, and the answers are
    /// the call's result.
    fn questions(&self, _input: &Value) -> Option<Vec<coder_protocol::Question>> {
        None
    }
    /// Read-only tools may run concurrently with each other.
    fn is_read_only(&self) -> bool;
    /// Whether the permission policy may take [`Tool::is_read_only`] for a fact (run the
    /// tool unasked where reading is allowed, plan mode included). Only a tool that knows
    /// what it does may; one whose claim comes from elsewhere (an MCP server's
    /// `readOnlyHint`, which a server can lie about) says no, and is asked about as any
    /// other tool.
    fn vouches_read_only(&self) -> bool {
        self.is_read_only()
    }
    /// Checks that need more than the schema (paths, ranges). The message goes to the model.
    fn validate_input(&self, _input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        Ok(())
    }
    /// What the call would change, computed without changing anything, for the person asked
    /// to approve it: for tools that change files, a unified diff and each file's text now
    /// and after; `None` for the others. An `Err` means the call cannot succeed; it fails
    /// with that message, unasked.
    async fn preview(&self, _input: &Value, _ctx: &ToolContext) -> Result<Option<Preview>, String> {
        Ok(None)
    }
    /// The call of another tool this call stands for, with its input, when it is one (a
    /// `bash` command that only applies a patch stands for an `apply_patch` call). Where the
    /// turn allows it, that call runs instead, through every check of that tool.
    fn stands_for(&self, _input: &Value) -> Option<(&'static str, Value)> {
        None
    }
    /// Runs the tool. An `Err` message goes to the model as the failed call's result.
    /// Long-running tools should stop when `ctx.cancel` fires.
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String>;
}

/// What a tool call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root; paths resolve against it and may not leave it.
    pub workspace: PathBuf,
    pub conversation_id: ConversationId,
    pub call_id: String,
    /// Fires when the task is interrupted.
    pub cancel: CancellationToken,
    /// Commands run confined by this policy; `None` runs them unconfined.
    pub sandbox: Option<Arc<SandboxPolicy>>,
    /// What commands inherit of coder's environment: everything but its secrets.
    pub env: Arc<crate::process::ToolEnv>,
    /// The conversation's todo list.
    pub todos: Arc<Mutex<Vec<TodoItem>>>,
    /// Files open in an editor: the file tools read their text and hand changes to them to
    /// the editor. `None` when no editor is attached.
    pub documents: Option<Arc<dyn Documents>>,
    /// The change a person approved ([`Tool::preview`]): a tool that changes files makes
    /// exactly this change, or fails with nothing written when the files changed since.
    pub approved_diff: Option<String>,
    /// What the conversation's agent last saw of each file it read or wrote: `edit`,
    /// `write` and `apply_patch` refuse a file that changed since ([`seen`]).
    pub seen: Arc<seen::SeenFiles>,
    /// Told before a file tool changes a file on disk, so `/undo` keeps what it held.
    pub changes: Option<Arc<dyn ChangeRecorder>>,
    /// Where a command's output, or an MCP tool's progress, goes while it runs
    /// ([`live_output`]); `None` keeps a command's output to the result and drops the
    /// progress.
    pub live_output: Option<live_output::OutputSink>,
}

/// A change a file tool would make, computed without making it ([`Tool::preview`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preview {
    /// The change as a unified diff: what the call then makes exactly, or fails.
    pub diff: String,
    /// Each file it touches, whole, before and after (up to [`PREVIEW_TEXT_LIMIT`]).
    pub changes: Vec<coder_protocol::FileDiff>,
}

/// The largest file whose text a [`Preview`] carries whole; a larger one is in its diff
/// only.
pub const PREVIEW_TEXT_LIMIT: usize = 1 << 20;

impl Preview {
    /// Adds one file's change from `old` (`None`: it does not exist yet) to `new` (`None`:
    /// it is deleted); nothing for a file left as it was or too large to carry whole.
    pub(crate) fn push_file(&mut self, path: &Path, old: Option<&str>, new: Option<&str>) {
        let fits = |text: Option<&str>| text.is_none_or(|text| text.len() <= PREVIEW_TEXT_LIMIT);
        if old == new || !fits(old) || !fits(new) {
            return;
        }
        self.changes.push(coder_protocol::FileDiff {
            path: path.to_string_lossy().into_owned(),
            old_text: old.map(str::to_owned),
            new_text: new.map(str::to_owned),
        });
    }
}

/// What is told of each file a file tool is about to change on disk (by its absolute path),
/// before it changes: `/undo`'s checkpoints keep what the file held.
pub trait ChangeRecorder: Send + Sync + std::fmt::Debug {
    fn before_change(&self, path: &Path);
}

impl ToolContext {
    /// A context for `workspace` with a fresh conversation id, no sandbox, the default
    /// environment rule (secrets by name withheld), no todos and no editor: for tools run outside a session and for tests.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            conversation_id: ConversationId::new(),
            call_id: String::new(),
            cancel: CancellationToken::new(),
            sandbox: None,
            env: Arc::default(),
            todos: Arc::default(),
            documents: None,
            approved_diff: None,
            seen: Arc::default(),
            changes: None,
            live_output: None,
        }
    }

    /// Fails when a person approved a change and `diff` is not that change: the files
    /// changed between the approval and now, and what was approved is not what would be
    /// written.
    pub(crate) fn check_approved(&self, diff: &str) -> Result<(), String> {
        match &self.approved_diff {
            Some(approved) if approved != diff => Err(
                "the files changed after the change was approved, so it is no longer the \
                 change the user saw; nothing was written. Read the files again and retry."
                    .to_owned(),
            ),
            _ => Ok(()),
        }
    }
}

/// The result of a successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// What the model receives.
    pub content: String,
    /// For tools that change files: what changed, as a unified diff.
    pub diff: Option<String>,
    /// An event to emit before the call's completion (for example `todo_updated`).
    pub event: Option<EventMsg>,
    /// Images for the model (a `read` of an image file).
    pub attachments: Vec<Attachment>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            diff: None,
            event: None,
            attachments: Vec::new(),
        }
    }

    /// A result that changed files; the diff goes to the event and, after `content`, to the
    /// model.
    pub fn with_diff(content: impl Into<String>, diff: String) -> Self {
        Self {
            content: content.into(),
            diff: (!diff.is_empty()).then_some(diff),
            event: None,
            attachments: Vec::new(),
        }
    }
}

pub(crate) struct Registered {
    pub tool: Arc<dyn Tool>,
    /// Compiled at the tool's first call: compiling every tool's schema (each checked
    /// against the JSON Schema meta-schema first) was more than half of the work of
    /// starting a session, paid by every `coder exec` whether it called a tool or not.
    validator: std::sync::OnceLock<Result<jsonschema::Validator, String>>,
}

impl Registered {
    /// The tool's argument validator; `Err` names why its schema does not compile. Built-in
    /// schemas are checked by a unit test, MCP schemas when their server lists them.
    pub fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(&self.tool.input_schema()).map_err(|err| err.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// The tools offered to the model, sorted by name, each with its schema validator built at
/// its first call.
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, Registered>,
    specs: Vec<ToolSpec>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.specs.iter().map(|s| &s.name))
            .finish()
    }
}

impl ToolRegistry {
    /// Builds the registry; fails on an invalid name or a duplicate name.
    pub fn new(mut tools: Vec<Arc<dyn Tool>>) -> Result<Self, EngineError> {
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        let mut by_name = HashMap::new();
        for tool in &tools {
            let name = tool.name();
            let valid_name = !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid_name {
                return Err(EngineError::invalid_params(format!(
                    "tool name `{name}` must match ^[a-zA-Z0-9_-]{{1,64}}$"
                )));
            }
            let entry = Registered {
                tool: tool.clone(),
                validator: std::sync::OnceLock::new(),
            };
            if by_name.insert(name.to_owned(), entry).is_some() {
                return Err(EngineError::invalid_params(format!(
                    "two tools are named `{name}`"
                )));
            }
        }
        let specs = tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: std::sync::Arc::new(Schema::new(tool.input_schema())),
            })
            .collect();
        Ok(Self {
            tools,
            by_name,
            specs,
        })
    }

    /// A registry with no tools.
    pub fn empty() -> Self {
        Self {
            tools: Vec::new(),
            by_name: HashMap::new(),
            specs: Vec::new(),
        }
    }

    /// The built-in tools.
    pub fn builtin() -> Vec<Arc<dyn Tool>> {
        Self::builtin_with_user_folder(None)
    }

    /// The built-in tools, the `skill` tool reading the user-level folder's skills too.
    pub fn builtin_with_user_folder(user_folder: Option<PathBuf>) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = ConversationTool::all();
        tools.extend::<Vec<Arc<dyn Tool>>>(vec![
            Arc::new(ApplyPatchTool),
            Arc::new(AskUserTool),
            Arc::new(BashTool),
            Arc::new(EditTool),
            Arc::new(ExitPlanModeTool),
            Arc::new(GlobTool),
            Arc::new(GrepTool),
            Arc::new(ReadTool),
            Arc::new(SkillTool::new(user_folder)),
            Arc::new(TodoWriteTool),
            Arc::new(WriteTool),
        ]);
        tools
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The specs offered to one conversation: all but the `hidden` tools, in name order.
    pub fn offered(&self, hidden: &[&str]) -> Vec<ToolSpec> {
        self.specs
            .iter()
            .filter(|spec| !hidden.contains(&spec.name.as_str()))
            .cloned()
            .collect()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Registered> {
        self.by_name.get(name)
    }

    pub(crate) fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }
}

#[cfg(test)]
mod schema_tests {
    use super::*;

    /// Seed 003: tool names are unique; a second tool of a name already taken (a tool an
    /// embedder adds under a built-in's name) is refused, naming it, never shadowed.
    #[test]
    fn a_second_tool_of_a_taken_name_is_refused() {
        let mut tools = ToolRegistry::builtin();
        let read = tools
            .iter()
            .find(|tool| tool.name() == "read")
            .cloned()
            .unwrap();
        tools.push(read);
        let refused = ToolRegistry::new(tools).unwrap_err();
        assert!(
            refused.to_string().contains("two tools are named `read`"),
            "{refused}"
        );
    }

    /// Validators are compiled at a tool's first call, so a broken built-in schema must
    /// be caught here: each is checked against the JSON Schema meta-schema and compiled.
    #[test]
    fn every_built_in_schema_is_valid_and_compiles() {
        let registry = ToolRegistry::new(ToolRegistry::builtin()).unwrap();
        for spec in registry.specs() {
            let registered = registry.by_name.get(&spec.name).unwrap();
            assert!(
                registered.validator().is_ok(),
                "{}: {:?}",
                spec.name,
                registered.validator().err()
            );
        }
    }
}
