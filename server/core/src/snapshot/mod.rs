//! Session snapshots (seed 004 section 10): every session keeps
//! `.coder/sessions/<session_id>.json` in the workspace, for review, debugging and resuming.
//!
//! The top level is the root conversation in OpenAI Chat Completions form: `model`,
//! `messages` (the system prompt of its last task first) and `tools` (what that task
//! offered, as OpenAI `tools`), enough to replay a request. A conversation that has sent
//! nothing yet is written with what its next task would send, and one taken up from a
//! saved session keeps what its file held until its next task ([`write`]). The session's other
//! conversations follow in `conversations`, in the same shape except for what they share:
//! since version 2 a conversation names its system prompt and tools by their place in the
//! file's `systemPrompts` and `toolSets` (`systemPrompt`, `toolSet`), which hold each
//! distinct one once, however many conversations sent it ([`write`]). A version 1 file
//! (each conversation with its own) is read as well.
//!
//! The journal is the session's record; the snapshot is its compaction. It is written when
//! the session has none yet, at the end, on demand ([`crate::Engine::save`]), and once the
//! session has stayed idle a moment (the driver's `QUIET`, or after a task when the last
//! write is older than [`SAVE_INTERVAL`]) only when that is cheap or has become worth it
//! ([`Saver::due`]): a small snapshot is written again each time, a large one once the
//! journal beside it has grown to a share of its size, so the cost of saving follows what
//! changed, not the size of the session. Nothing is written when the file on disk holds the
//! session as it is ([`Holds`]): a session taken up and left unchanged keeps its file, byte
//! for byte. Each write goes to a temporary file that is renamed over the old one, so a
//! crash never leaves half a snapshot. The directory carries a
//! `.gitignore` of `*`, so snapshots never show in `git status`.
//!
//! A resume reads the file lazily ([`lazy`]): the root and the list of the other
//! conversations with their small state, each one's messages kept as written until it is
//! first used.
//!
//! A repository ships `.coder/` too, links included: the folder and every file in it are
//! reached through the workspace handle without following a link ([`SessionFolder`]), and
//! only regular files are read or written.

pub(crate) mod lazy;
pub(crate) mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coder_protocol::{
    ArchivedSegment, ChatMessage, ConversationId, Mode, Role, SessionId, TodoItem, TokenUsage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::beneath::{OwnDir, WorkspaceDir};
use crate::conversation::{Conversation, ConversationContext};
use crate::error::{EngineError, ErrorKind};
use crate::model::ToolSpec;
use crate::prompt::PromptShape;
use crate::sync::lock;
use crate::tool_selection::ToolSelection;

/// Where snapshots live, relative to the workspace.
pub const SESSIONS_DIR: &str = ".coder/sessions";

/// A busy session (tasks queued back to back) is still saved this often.
const SAVE_INTERVAL: Duration = Duration::from_secs(5);

/// The most coder reads of one session file, a snapshot or a journal. A session's own
/// files stay far below it, images included; a file past it (one a repository ships under
/// `.coder/sessions/`, which git stores in a few kilobytes when it repeats itself) is
/// refused by its size, without being read.
pub(crate) const MAX_FILE_BYTES: u64 = 128 << 20;

/// What the sessions folder's `.gitignore` holds.
const GITIGNORE: &str = "# Written by coder: session snapshots stay out of git.\n*\n";

/// The workspace's `.coder/sessions`, where snapshots and journals are kept. It is reached
/// through a handle on the workspace each time, one name at a time, and nothing in it is
/// opened through a link: a repository ships `.coder/` with whatever links it likes.
#[derive(Debug)]
pub(crate) struct SessionFolder {
    workspace: PathBuf,
    /// Set once a link refused the folder for writing: that is said once, and the session
    /// is simply not saved.
    refused: AtomicBool,
}

impl SessionFolder {
    pub fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            refused: AtomicBool::new(false),
        }
    }

    /// The folder's path (for the engine's API and messages; never opened by it).
    pub fn path(&self) -> PathBuf {
        self.workspace.join(SESSIONS_DIR)
    }

    /// The folder to read from; `None` when it is missing.
    pub fn readable(&self) -> std::io::Result<Option<OwnDir>> {
        WorkspaceDir::open(&self.workspace)
            .map_err(std::io::Error::other)?
            .own_dir(Path::new(SESSIONS_DIR), false)
    }

    /// The folder to write in, made when missing (`.coder` too, never the workspace), with
    /// a `.gitignore` of `*` so its files stay out of `git status`. `Err(Some(warning))`
    /// says why nothing can be saved; `Err(None)` when a link refused it and that was said
    /// already.
    pub fn writable(&self) -> Result<OwnDir, Option<String>> {
        let opened = WorkspaceDir::open(&self.workspace)
            .map_err(std::io::Error::other)
            .and_then(|workspace| workspace.own_dir(Path::new(SESSIONS_DIR), true))
            .and_then(|dir| dir.ok_or_else(|| std::io::ErrorKind::NotFound.into()));
        match opened {
            Ok(dir) => {
                // Whatever is there already (a link included) is left as it is.
                let _ = dir.create_new(".gitignore", GITIGNORE.as_bytes());
                Ok(dir)
            }
            Err(err) if crate::beneath::is_link_refusal(&err) => {
                if self.refused.swap(true, Ordering::Relaxed) {
                    return Err(None);
                }
                Err(Some(format!("this session is not saved: {err}")))
            }
            Err(err) => Err(Some(format!(
                "cannot save the session in {}: {err}",
                self.path().display()
            ))),
        }
    }
}

/// The snapshot format's version: 2 since conversations name the system prompt and tools
/// they share.
pub(crate) const VERSION: u32 = 2;

/// The whole file, as read back: every conversation with its own system prompt (the first
/// of its `messages`) and `tools`, whether the file shares them or not. It is written by
/// [`write::SnapshotFile`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSnapshot {
    pub version: u32,
    pub session_id: SessionId,
    /// RFC 3339.
    pub saved_at: String,
    /// The root conversation (its `model`, `messages` and `tools` make a replayable request).
    #[serde(flatten)]
    pub root: ConversationSnapshot,
    /// The other conversations, oldest first.
    pub conversations: Vec<ConversationSnapshot>,
    /// The last line of the session journal (`<session_id>.jsonl`) this snapshot holds; a
    /// resume replays the lines after it.
    #[serde(skip_serializing_if = "is_zero")]
    pub journal_through: u64,
}

/// The file as written: what the conversations share in tables of their own.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Written {
    version: u32,
    session_id: SessionId,
    saved_at: String,
    #[serde(flatten)]
    root: ConversationSnapshot,
    #[serde(default)]
    conversations: Vec<ConversationSnapshot>,
    #[serde(default)]
    system_prompts: Vec<String>,
    #[serde(default)]
    tool_sets: Vec<Vec<ToolDefinition>>,
    #[serde(default)]
    journal_through: u64,
}

impl<'de> Deserialize<'de> for SessionSnapshot {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = Written::deserialize(deserializer)?;
        let mut conversations = written.conversations;
        for conversation in &mut conversations {
            if let Some(at) = conversation.system_prompt.take() {
                let system = written.system_prompts.get(at).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "conversation {} names system prompt {at}, and the file has {}",
                        conversation.conversation_id,
                        written.system_prompts.len()
                    ))
                })?;
                conversation
                    .messages
                    .insert(0, ChatMessage::system(system.clone()));
            }
            if let Some(at) = conversation.tool_set.take() {
                let tools = written.tool_sets.get(at).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "conversation {} names tool set {at}, and the file has {}",
                        conversation.conversation_id,
                        written.tool_sets.len()
                    ))
                })?;
                conversation.tools = tools.clone();
            }
        }
        Ok(Self {
            version: written.version,
            session_id: written.session_id,
            saved_at: written.saved_at,
            root: written.root,
            conversations,
            journal_through: written.journal_through,
        })
    }
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// One conversation: its messages and tools as a replayable request, and what it needs to
/// go on after a resume.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSnapshot {
    pub conversation_id: ConversationId,
    /// The model the conversation talks to.
    pub model: String,
    /// Set when the conversation was created with a model of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override: Option<String>,
    /// OpenAI Chat Completions messages; the first is the system prompt once a task ran.
    /// On disk they are exactly what a Chat Completions request takes: images as
    /// `image_url` content parts (a tool's in the user message after its results), missing
    /// content as `""` (see [`openai_form`]).
    #[serde(with = "openai_form", default)]
    pub messages: Vec<ChatMessage>,
    /// OpenAI `tools`: `[{type: "function", function: {name, description, parameters}}]`.
    #[serde(default)]
    pub tools: Vec<ToolDefinition>,
    /// In the file, a conversation's system prompt as its place in `systemPrompts` (the
    /// first of its messages then is not one). Read back, the prompt is in `messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) system_prompt: Option<usize>,
    /// In the file, a conversation's tools as their place in `toolSets` (its `tools` then
    /// are empty). Read back, they are in `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_set: Option<usize>,
    /// Instructions that replace the built-in prompt, when the conversation was given some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// The user instructions the conversation was given (also the first user message of
    /// its history, and a later one for each change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_allowlist: Option<Vec<String>>,
    /// The built-in tools it offers (older snapshots also hold `web_search_request` and
    /// `use_streamable_shell_tool`, always false, which are ignored).
    #[serde(default)]
    pub(crate) tools_prefs: ToolSelection,
    #[serde(default)]
    pub mode: Mode,
    /// In plan mode: the mode it entered plan mode from (absent when created in plan mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_before_plan: Option<Mode>,
    /// In plan mode: the plan reminder is still due at the next input.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_reminder_due: bool,
    #[serde(default)]
    pub total_usage: TokenUsage,
    /// The context's size after the last reply, in tokens (0 in older snapshots).
    #[serde(default)]
    pub context_tokens: u64,
    /// What compactions replaced, oldest first (`conversation/archive`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archived: Vec<ArchivedSegment>,
    #[serde(default)]
    pub todos: Vec<TodoItem>,
    /// When the conversation last recorded history or finished a task (RFC 3339, in
    /// milliseconds). Absent in older snapshots: a resumed conversation then counts as active
    /// at the resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_active_at: Option<String>,
    /// Opened by another conversation's `conv_create` (it reports no `token_count`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worker: bool,
    /// With tools described in the prompt (seed 002): the names of the initial tools, which
    /// every batch describes, and of the tools announced since. Absent before the
    /// conversation's first such task (and in older snapshots: its next task's tools are
    /// then taken as the initial ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompted_tools: Option<crate::tool_prompt::PromptedTools>,
    /// Tool calls that were still running when the snapshot was written: their results in
    /// `messages` only say so (the file is a valid request whenever it is written). A
    /// resume takes those results out and goes on from the journal, which holds the real
    /// ones, or repairs the calls as it repairs any call left without a result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_calls: Vec<String>,
    /// The points its history holds (a person's inputs, which a rewind or a fork goes back
    /// to): each one's number and its place among the messages, system prompt left out.
    /// Absent in older snapshots: their conversations have no points before their next
    /// input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) points: Vec<crate::conversation::InputPoint>,
    /// How many inputs of a person the conversation recorded.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub inputs_recorded: usize,
    /// Read back: the system prompt and tools the file holds for the conversation (those
    /// of its last task), which it takes up as its own ([`Conversation::prompt`]), so a
    /// snapshot written before its next task still holds them. `None` when the file has
    /// none (it had sent nothing): the writer then builds what its next task would send.
    #[serde(skip)]
    pub(crate) prompt: Option<Arc<PromptShape>>,
}

fn is_zero_usize(value: &usize) -> bool {
    *value == 0
}

/// Messages on disk in the form a Chat Completions request takes, and back.
pub(crate) mod openai_form {
    use coder_protocol::{Attachment, ChatMessage, Role, ToolCall};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(
        messages: &[ChatMessage],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        crate::model::chat_messages(messages, true).serialize(serializer)
    }

    /// A message as written (older snapshots kept images in `attachments`).
    #[derive(Deserialize)]
    struct Written {
        role: Role,
        #[serde(default)]
        content: Value,
        #[serde(default)]
        reasoning: Option<String>,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        #[serde(default)]
        tool_call_id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        attachments: Vec<Attachment>,
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<ChatMessage>, D::Error> {
        Ok(assemble(Vec::<Written>::deserialize(deserializer)?))
    }

    /// Messages kept as written, one raw value each ([`super::lazy`]), read now.
    pub fn from_raw(
        raw: &[Box<serde_json::value::RawValue>],
    ) -> Result<Vec<ChatMessage>, serde_json::Error> {
        let written = raw
            .iter()
            .map(|message| serde_json::from_str::<Written>(message.get()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(assemble(written))
    }

    /// The messages of `written`, their images back where they were.
    fn assemble(written: Vec<Written>) -> Vec<ChatMessage> {
        let mut messages: Vec<ChatMessage> = Vec::with_capacity(written.len());
        for message in written {
            let (text, mut images) = content(message.content);
            images.extend(message.attachments);
            // The images of tool results go back to the last result they followed.
            if message.role == Role::User
                && text.as_deref() == Some(crate::model::TOOL_IMAGES)
                && let Some(result) = messages.last_mut().filter(|m| m.role == Role::Tool)
            {
                result.attachments.extend(images);
                continue;
            }
            // An empty text beside tool calls was a missing one.
            let text = text.filter(|text| !text.is_empty() || message.tool_calls.is_empty());
            messages.push(ChatMessage {
                role: message.role,
                content: text,
                reasoning: message.reasoning,
                tool_calls: message.tool_calls,
                tool_call_id: message.tool_call_id,
                name: message.name,
                attachments: images,
            });
        }
        messages
    }

    /// The text of a content (a string, or the text parts of an array, joined by blank
    /// lines) and its images (the `data:` or `http(s)` URLs of `image_url` parts).
    fn content(content: Value) -> (Option<String>, Vec<Attachment>) {
        match content {
            Value::String(text) => (Some(text), Vec::new()),
            Value::Array(parts) => {
                let mut texts = Vec::new();
                let mut images = Vec::new();
                for part in parts {
                    match part["type"].as_str() {
                        Some("text") => texts.extend(part["text"].as_str().map(str::to_owned)),
                        Some("image_url") => images.extend(
                            part["image_url"]["url"]
                                .as_str()
                                .and_then(|url| crate::conversation::image_of_url(url).ok()),
                        ),
                        _ => {}
                    }
                }
                ((!texts.is_empty()).then(|| texts.join("\n\n")), images)
            }
            _ => (None, Vec::new()),
        }
    }
}

/// One entry of OpenAI's `tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionDefinition,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl From<&ToolDefinition> for ToolSpec {
    fn from(definition: &ToolDefinition) -> Self {
        Self {
            name: definition.function.name.clone(),
            description: definition.function.description.clone(),
            parameters: Arc::new(crate::tools::Schema::new(
                definition.function.parameters.clone(),
            )),
        }
    }
}

/// The system prompt and tools a file holds for a conversation, as the shape its requests
/// are sent with.
pub(crate) fn shape_of(system: String, tools: &[ToolDefinition]) -> Arc<PromptShape> {
    Arc::new(PromptShape {
        system,
        tools: tools.iter().map(ToolSpec::from).collect(),
    })
}

impl From<&ToolSpec> for ToolDefinition {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            kind: "function".to_owned(),
            function: FunctionDefinition {
                name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: Value::clone(&spec.parameters),
            },
        }
    }
}

impl ConversationSnapshot {
    /// `session_model` is the session's model, used unless the conversation has its own;
    /// `unsent`, what its next task would send besides its history, is written for a
    /// conversation that has sent nothing yet (and holds no prompt of a saved session).
    /// Written at any moment, it is a replayable request as it is: a tool call still
    /// running (a long command, a handoff's target at work) is written closed, with a result
    /// saying so ([`crate::conversation::RUNNING_CALL_RESULT`]).
    pub(crate) fn of(
        conversation: &Conversation,
        session_model: &str,
        unsent: Option<&PromptShape>,
    ) -> Self {
        let mut snapshot = Self::without_prompt(conversation, session_model);
        if let Some(shape) = conversation.prompt.as_deref().or(unsent) {
            snapshot
                .messages
                .insert(0, ChatMessage::system(shape.system.clone()));
            snapshot.tools = shape.tools.iter().map(ToolDefinition::from).collect();
        }
        snapshot
    }

    /// As [`ConversationSnapshot::of`], without the system prompt and tools of the
    /// conversation's last task (which the file shares between conversations).
    pub(crate) fn without_prompt(conversation: &Conversation, session_model: &str) -> Self {
        let mut history = conversation.history.to_vec();
        let running_calls = crate::conversation::close_unanswered_calls(
            &mut history,
            crate::conversation::RUNNING_CALL_RESULT,
        );
        Self {
            running_calls,
            model: conversation
                .context
                .model
                .clone()
                .unwrap_or_else(|| session_model.to_owned()),
            messages: history,
            archived: conversation.archive.clone(),
            ..Self::state_of(conversation)
        }
    }

    /// Everything of the conversation but its messages, tools and archive (the session
    /// journal's state of a conversation; `model` is its own model or empty).
    pub(crate) fn state_of(conversation: &Conversation) -> Self {
        let context = &conversation.context;
        Self {
            conversation_id: conversation.id,
            model: context.model.clone().unwrap_or_default(),
            model_override: context.model.clone(),
            messages: Vec::new(),
            tools: Vec::new(),
            system_prompt: None,
            tool_set: None,
            base_instructions: context.base_instructions.clone(),
            user_instructions: context.user_instructions.clone(),
            mcp_allowlist: context.mcp_view.allowlist().map(<[String]>::to_vec),
            tools_prefs: context.tools,
            mode: conversation.mode,
            mode_before_plan: conversation.mode_before_plan,
            plan_reminder_due: conversation.plan_reminder_due,
            total_usage: conversation.total_usage,
            context_tokens: conversation.size.tokens,
            archived: Vec::new(),
            todos: lock(&conversation.todos).clone(),
            last_active_at: Some(
                humantime::format_rfc3339_millis(conversation.last_active_at).to_string(),
            ),
            worker: conversation.worker,
            prompted_tools: conversation.prompted_tools.clone(),
            running_calls: Vec::new(),
            points: conversation.points.clone(),
            inputs_recorded: conversation.inputs_recorded,
            prompt: None,
        }
    }

    /// Cuts the messages before the history's message `at` (a point; the system prompt,
    /// when the snapshot holds one, is not counted) and the points among those cut.
    pub(crate) fn cut_before(&mut self, at: usize) {
        let lead = self
            .messages
            .iter()
            .take_while(|message| message.role == Role::System)
            .count();
        self.messages.truncate(lead + at);
        self.inputs_recorded =
            crate::conversation::cut_points(&mut self.points, at).unwrap_or(self.inputs_recorded);
        self.running_calls.clear();
        self.context_tokens = 0;
    }

    /// The messages as the conversation held them when the snapshot was written, which a
    /// journal line's `from` counts in: without the system prompt (kept with the tools as
    /// [`ConversationSnapshot::prompt`]), and without the results the writer gave calls
    /// still running ([`ConversationSnapshot::running_calls`]).
    pub(crate) fn take_written_history(&mut self) {
        let tools = std::mem::take(&mut self.tools);
        if let Some(system) = self
            .messages
            .first()
            .filter(|message| message.role == Role::System)
            .and_then(|message| message.content.clone())
        {
            self.prompt = Some(shape_of(system, &tools));
        }
        let running = std::mem::take(&mut self.running_calls);
        self.messages.retain(|message| match message.role {
            Role::System => false,
            Role::Tool => !message
                .tool_call_id
                .as_ref()
                .is_some_and(|id| running.contains(id)),
            Role::User | Role::Assistant => true,
        });
    }

    /// The conversation again, its history without the recorded system prompt, which it
    /// keeps with the tools as the prompt of its last task until its next task builds its
    /// own.
    pub(crate) fn restore(self) -> Conversation {
        let mut conversation = Conversation::new(Default::default(), self.mode);
        conversation.id = self.conversation_id;
        // The view is built by the session that takes the conversation up.
        conversation.context = ConversationContext {
            base_instructions: self.base_instructions,
            user_instructions: self.user_instructions,
            mcp_view: crate::mcp::McpView::new(self.mcp_allowlist),
            tools: self.tools_prefs,
            model: self.model_override,
        };
        conversation.history = self
            .messages
            .into_iter()
            .filter(|message| message.role != Role::System)
            .collect::<Vec<_>>()
            .into();
        conversation.mode_before_plan = self.mode_before_plan;
        conversation.plan_reminder_due = self.plan_reminder_due && self.mode == Mode::Plan;
        conversation.total_usage = self.total_usage;
        conversation.size = crate::tokens::ContextSize {
            tokens: self.context_tokens,
            through: conversation.history.len(),
        };
        conversation.archive = self.archived;
        // Everything restored is on disk already.
        conversation.unjournaled_from = conversation.history.len();
        conversation.archive_journaled = conversation.archive.len();
        conversation.worker = self.worker;
        conversation.prompted_tools = self.prompted_tools;
        let held = conversation.history.len();
        conversation.points = self
            .points
            .into_iter()
            .filter(|input| input.at < held)
            .collect();
        conversation.inputs_recorded = self.inputs_recorded;
        conversation.todos = Arc::new(Mutex::new(self.todos));
        conversation.prompt = self.prompt;
        if let Some(at) = self
            .last_active_at
            .as_deref()
            .and_then(|at| humantime::parse_rfc3339_weak(at).ok())
        {
            conversation.last_active_at = at;
        }
        conversation
    }
}

/// When and where a session saves its snapshot.
pub(crate) struct Saver {
    /// `None` when saving is switched off.
    folder: Option<Arc<SessionFolder>>,
    last_saved: Mutex<Option<Instant>>,
    /// Snapshots are numbered as they are taken ([`Saver::ticket`]).
    taken: AtomicU64,
    /// Locked by the thread writing a snapshot, until its file is renamed: a write whose
    /// caller went away (a task cancelled at shutdown) still holds it, so the last save
    /// waits for it, and nothing is written after the last save, so the process never exits
    /// mid-write.
    on_disk: Arc<Mutex<OnDisk>>,
}

#[derive(Default)]
struct OnDisk {
    /// The number of the snapshot on disk.
    number: u64,
    /// Set by the last save; later writes are dropped.
    closed: bool,
    /// The size of the session's snapshot on disk, once this session wrote or read one.
    bytes: Option<u64>,
    /// What the snapshot on disk holds, when this session wrote it or took it up whole.
    holds: Option<Holds>,
}

/// What a snapshot was taken from, as far as a save tells a change: the last journal line
/// it holds (every change to a conversation's history or state is a line, a destroyed
/// conversation too), the session's model and how many conversations the session has (one
/// opened is no line before its first change). A session whose snapshot on disk holds what
/// it has now is not written again: taking up a saved session and leaving it unchanged
/// leaves its file as it was, its time included (`/resume` lists sessions by it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holds {
    pub through: u64,
    pub model: String,
    pub conversations: usize,
}

/// A snapshot at most this large is written again whenever the session saves (about a
/// millisecond of work): it stays current, as cheaply as a journal line.
const SMALL_SNAPSHOT: u64 = 256 << 10;

/// A larger snapshot is written again once the journal beside it holds at least this share
/// of its size (one byte in `JOURNAL_SHARE`): each byte a turn appends costs at most that
/// many bytes of snapshot writing, and a resume replays at most that share.
const JOURNAL_SHARE: u64 = 4;

/// Whether a save is the session's last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Save {
    Again,
    Last,
}

impl Saver {
    pub fn new(workspace: &Path, enabled: bool) -> Self {
        Self {
            folder: enabled.then(|| Arc::new(SessionFolder::new(workspace))),
            last_saved: Mutex::new(None),
            taken: AtomicU64::new(0),
            on_disk: Arc::default(),
        }
    }

    /// The snapshot file of `session`, when saving is on.
    pub fn path(&self, session: SessionId) -> Option<PathBuf> {
        self.folder
            .as_ref()
            .map(|folder| folder.path().join(file_name(session)))
    }

    /// Where snapshots and journals are kept, when saving is on.
    pub fn folder(&self) -> Option<&Arc<SessionFolder>> {
        self.folder.as_ref()
    }

    /// Whether a snapshot of `session` is on disk (anything at its name).
    pub fn exists(&self, session: SessionId) -> bool {
        self.folder
            .as_ref()
            .and_then(|folder| folder.readable().ok().flatten())
            .is_some_and(|dir| dir.exists(&file_name(session)))
    }

    /// The sessions saved in the workspace, newest first (none when saving is off).
    pub fn list(&self) -> Vec<coder_protocol::methods::SessionInfo> {
        self.folder
            .as_ref()
            .and_then(|folder| folder.readable().ok().flatten())
            .map(|dir| list(&dir))
            .unwrap_or_default()
    }

    /// Whether the session should write its snapshot now, with `journal_bytes` in its
    /// journal: once it stayed idle (`idle`), or after a task when the last write is older
    /// than [`SAVE_INTERVAL`]; then when it has no snapshot yet, when its snapshot is small
    /// ([`SMALL_SNAPSHOT`]) or when the journal has grown to a share of it
    /// ([`JOURNAL_SHARE`]). Otherwise the journal holds what changed, and the snapshot is
    /// written at the end or on demand.
    pub fn due(&self, journal_bytes: u64, idle: bool) -> bool {
        if self.folder.is_none() {
            return false;
        }
        if !idle && lock(&self.last_saved).is_some_and(|saved| saved.elapsed() < SAVE_INTERVAL) {
            return false;
        }
        worth_writing(lock(&self.on_disk).bytes, journal_bytes)
    }

    /// Takes up a resumed session's snapshot, `bytes` long (`None`: it has none), which
    /// `holds` the session as it is taken up (`None`: its journal holds more, or there is
    /// no snapshot).
    pub fn resumed(&self, bytes: Option<u64>, holds: Option<Holds>) {
        let mut on_disk = lock(&self.on_disk);
        on_disk.bytes = bytes;
        on_disk.holds = holds;
    }

    /// Whether the snapshot on disk holds the session as `now` says it is: a save then
    /// has nothing to write.
    pub fn holds(&self, now: &Holds) -> bool {
        lock(&self.on_disk).holds.as_ref() == Some(now)
    }

    /// The number of a snapshot being taken; take it under the lock that orders the
    /// session's state, so numbers follow the states they were taken from.
    pub fn ticket(&self) -> u64 {
        self.taken.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Writes the snapshot of another session (a fork) now, beside this one's. Its file
    /// must be new: nothing is written over an existing one.
    pub fn write_other(&self, snapshot: &write::SnapshotFile) -> Result<(), EngineError> {
        let folder = self
            .folder
            .as_ref()
            .ok_or_else(|| EngineError::invalid_params("saving sessions is switched off"))?;
        let dir = folder.writable().map_err(|warning| {
            EngineError::io(warning.unwrap_or_else(|| "not saved".to_owned()))
        })?;
        let name = file_name(snapshot.session_id());
        if dir.exists(&name) {
            return Err(EngineError::invalid_params(format!(
                "{} exists already",
                dir.shown(&name).display()
            )));
        }
        write_atomic(&dir, &name, snapshot).map_err(EngineError::io)?;
        Ok(())
    }

    /// Drops every snapshot taken before now that is not written yet: the session is
    /// another one from here on (a fork), and the one it was stays on disk as it is.
    pub fn drop_earlier(&self) {
        let ticket = self.ticket();
        let mut on_disk = lock(&self.on_disk);
        on_disk.number = on_disk.number.max(ticket);
    }

    /// Stops saving at once: waits for a write in flight, and nothing is written after.
    pub fn close(&self) {
        lock(&self.on_disk).closed = true;
    }

    /// Writes `snapshot` (numbered `ticket`, taken from the session as `holds` says)
    /// atomically, off the async threads; an older snapshot never replaces a newer one, and
    /// nothing follows the [`Save::Last`] one. Returns whether it was written.
    pub async fn write(
        &self,
        ticket: u64,
        snapshot: write::SnapshotFile,
        save: Save,
        holds: Holds,
    ) -> Result<bool, EngineError> {
        let Some(folder) = self.folder.clone() else {
            return Ok(false);
        };
        *lock(&self.last_saved) = Some(Instant::now());
        let on_disk = self.on_disk.clone();
        tokio::task::spawn_blocking(move || {
            let mut on_disk = lock(&on_disk);
            if on_disk.closed {
                return Ok(false);
            }
            on_disk.closed = save == Save::Last;
            if on_disk.number > ticket {
                return Ok(false);
            }
            let dir = match folder.writable() {
                Ok(dir) => dir,
                Err(None) => return Ok(false),
                Err(Some(warning)) => return Err(warning),
            };
            let bytes = write_atomic(&dir, &file_name(snapshot.session_id()), &snapshot)?;
            on_disk.number = ticket;
            on_disk.bytes = Some(bytes);
            on_disk.holds = Some(holds);
            Ok::<bool, String>(true)
        })
        .await
        .map_err(|err| EngineError::internal(format!("the snapshot writer failed: {err}")))?
        .map_err(EngineError::io)
    }
}

/// Whether a snapshot of `on_disk` bytes (`None`: there is none) should be written again
/// with `journal_bytes` in the journal beside it.
fn worth_writing(on_disk: Option<u64>, journal_bytes: u64) -> bool {
    on_disk.is_none_or(|bytes| {
        bytes <= SMALL_SNAPSHOT || journal_bytes.saturating_mul(JOURNAL_SHARE) >= bytes
    })
}

/// The snapshot file's name of `session`.
pub(crate) fn file_name(session: SessionId) -> String {
    format!("{session}.json")
}

/// Writes `snapshot` as `name` in `dir`, atomically: synced before it replaces the old one
/// (the journal it folds in is removed after). Returns its size.
fn write_atomic(dir: &OwnDir, name: &str, snapshot: &impl Serialize) -> Result<u64, String> {
    let shown = dir.shown(name);
    let mut written = 0;
    dir.write_atomic(name, |file| {
        let mut writer = Counted {
            inner: std::io::BufWriter::new(file),
            bytes: 0,
        };
        serde_json::to_writer(&mut writer, snapshot).map_err(std::io::Error::other)?;
        written = writer.bytes;
        std::io::Write::flush(&mut writer)
    })
    .map(|()| written)
    .map_err(|err| {
        format!(
            "cannot save {}",
            crate::beneath::own_file_error(&shown, &err)
        )
    })
}

/// A writer that counts what it wrote.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The sessions saved in `dir`, newest first. A file that is not a snapshot (a temporary
/// file, a corrupt or foreign one, a link, anything but a regular file) is left out.
/// Messages are read lightly: their roles, and the text of the root's questions as far as
/// the title needs it (a message's content is skipped, images and all, until then).
pub(crate) fn list(dir: &OwnDir) -> Vec<coder_protocol::methods::SessionInfo> {
    /// What a listing reads of a root's message: its content is read only for the title.
    #[derive(Deserialize)]
    struct Message<'a> {
        role: Role,
        #[serde(default, borrow)]
        content: Option<&'a RawValue>,
    }
    /// What a listing reads of another conversation's message.
    #[derive(Deserialize)]
    struct Counted {
        role: Role,
    }
    /// What a listing reads of a conversation: its messages, lightly.
    #[derive(Deserialize)]
    struct Listed {
        #[serde(default)]
        messages: Vec<Counted>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head<'a> {
        session_id: SessionId,
        saved_at: String,
        model: String,
        #[serde(default, borrow)]
        messages: Vec<Message<'a>>,
        #[serde(default)]
        conversations: Vec<Listed>,
    }
    let Ok(names) = dir.names() else {
        return Vec::new();
    };
    let mut sessions: Vec<coder_protocol::methods::SessionInfo> = names
        .iter()
        .filter(|name| name.ends_with(".json"))
        .filter_map(|name| {
            let bytes = dir.read(name, MAX_FILE_BYTES).ok()??;
            let head: Head = serde_json::from_slice(&bytes).ok()?;
            let title = first_question(head.messages.iter().map(|m| {
                let text = (m.role == Role::User)
                    .then(|| m.content.and_then(text_of))
                    .flatten();
                (m.role, text)
            }));
            Some(coder_protocol::methods::SessionInfo {
                session_id: head.session_id,
                saved_at: head.saved_at,
                model: head.model,
                conversations: 1 + head.conversations.len(),
                messages: head
                    .messages
                    .iter()
                    .filter(|m| m.role != Role::System)
                    .count()
                    + head
                        .conversations
                        .iter()
                        .map(|c| c.messages.iter().filter(|m| m.role != Role::System).count())
                        .sum::<usize>(),
                title,
            })
        })
        .collect();
    sessions.sort_by(|a, b| b.saved_at.cmp(&a.saved_at));
    sessions
}

/// The text of a message's content as written: a string, or the text parts of an array
/// (a question with images beside it) joined by blank lines, as a resume reads them
/// ([`openai_form`]). `None` for a content without text.
fn text_of(content: &RawValue) -> Option<String> {
    /// A part of a content array; an image's is skipped.
    #[derive(Deserialize)]
    struct Part {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        text: Option<String>,
    }
    if let Ok(text) = serde_json::from_str::<String>(content.get()) {
        return Some(text);
    }
    let parts: Vec<Part> = serde_json::from_str(content.get()).ok()?;
    let texts: Vec<String> = parts
        .into_iter()
        .filter(|part| part.kind == "text")
        .filter_map(|part| part.text)
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// What a listing calls a session: the first thing a person asked in `messages`, cut to
/// 100 characters (reminders and compaction summaries are not questions).
pub(crate) fn title(messages: &[ChatMessage]) -> Option<String> {
    first_question(messages.iter().map(|m| (m.role, m.content.as_deref())))
}

fn first_question<S: AsRef<str>>(
    mut messages: impl Iterator<Item = (Role, Option<S>)>,
) -> Option<String> {
    messages
        .find_map(|(role, content)| {
            content.filter(|text| {
                let text = text.as_ref();
                role == Role::User
                    && !text.starts_with(crate::reminders::OPEN)
                    && !text.starts_with(crate::prompt::SUMMARY_OPEN)
            })
        })
        .map(|text| text.as_ref().chars().take(100).collect())
}

/// The bytes of the snapshot of `session` in `dir` (`None`: the folder is missing), and
/// the name it is shown by.
pub(crate) fn read_bytes(
    dir: Option<&OwnDir>,
    session: SessionId,
) -> Result<(Vec<u8>, PathBuf), EngineError> {
    let name = file_name(session);
    let shown = Path::new(SESSIONS_DIR).join(&name);
    let missing = || {
        EngineError::new(
            ErrorKind::NotFound,
            format!("cannot read {}: no such file", shown.display()),
        )
    };
    let dir = dir.ok_or_else(missing)?;
    let bytes = dir
        .read(&name, MAX_FILE_BYTES)
        .map_err(|err| {
            let message = format!(
                "cannot read {}",
                crate::beneath::own_file_error(&shown, &err)
            );
            match err.kind() {
                std::io::ErrorKind::NotFound => EngineError::new(ErrorKind::NotFound, message),
                std::io::ErrorKind::FileTooLarge | std::io::ErrorKind::InvalidInput => {
                    EngineError::invalid_params(message)
                }
                _ if crate::beneath::is_link_refusal(&err) => EngineError::invalid_params(message),
                _ => EngineError::io(message),
            }
        })?
        .ok_or_else(missing)?;
    Ok((bytes, shown))
}

/// Refuses a file of a format newer than this coder reads.
pub(crate) fn check_version(version: u32, shown: &Path) -> Result<(), EngineError> {
    if version > VERSION {
        return Err(EngineError::invalid_params(format!(
            "{} was written by a newer coder (snapshot version {version})",
            shown.display(),
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::{FunctionCall, ToolCall};
    use serde_json::json;
    use write::{Entry, LiveConversations};

    /// Live conversations as the writer takes them.
    fn live(conversations: Vec<Conversation>) -> LiveConversations {
        LiveConversations {
            model: "m".into(),
            conversations: conversations
                .into_iter()
                .map(|conversation| Entry::Live(Arc::new(Mutex::new(conversation))))
                .collect(),
            unsent: std::collections::HashMap::new(),
        }
    }

    fn shape(system: &str, tools: &[&str]) -> Arc<PromptShape> {
        Arc::new(PromptShape {
            system: system.into(),
            tools: tools
                .iter()
                .map(|name| ToolSpec {
                    name: (*name).into(),
                    description: format!("Does {name}."),
                    parameters: Arc::new(crate::tools::Schema::new(
                        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                    )),
                })
                .collect(),
        })
    }

    #[test]
    fn conversations_name_the_prompts_and_tools_they_share_which_the_file_holds_once() {
        let common = shape("You are coder, a long system prompt.", &["read", "grep"]);
        // Equal to `common`, built apart: shared by content too.
        let equal = shape("You are coder, a long system prompt.", &["read", "grep"]);
        let other = shape("You are the reviewer.", &["read", "grep"]);
        let mut root = Conversation::new(Default::default(), Mode::Default);
        root.prompt = Some(common.clone());
        root.record([ChatMessage::user("root question")]);
        let conversations: Vec<Conversation> = [Some(common), Some(equal), Some(other), None]
            .into_iter()
            .enumerate()
            .map(|(at, prompt)| {
                let mut conversation = Conversation::new(Default::default(), Mode::Default);
                conversation.prompt = prompt;
                conversation.record([ChatMessage::user(format!("question {at}"))]);
                conversation
            })
            .collect();
        let session = SessionId::new();
        let file = write::SnapshotFile::new(
            session,
            ConversationSnapshot::of(&root, "m", None),
            live(conversations),
        );
        let text = serde_json::to_string(&file).unwrap();
        // The root's request keeps its own; the tables hold each distinct one once.
        assert_eq!(text.matches("You are coder").count(), 2, "{text}");
        assert_eq!(text.matches("You are the reviewer").count(), 1, "{text}");
        assert_eq!(text.matches("Does grep.").count(), 2, "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["version"], 2);
        assert_eq!(value["messages"][0]["role"], "system");
        assert_eq!(value["tools"].as_array().unwrap().len(), 2);
        let written = value["conversations"].as_array().unwrap();
        let places: Vec<(Value, Value)> = written
            .iter()
            .map(|c| (c["systemPrompt"].clone(), c["toolSet"].clone()))
            .collect();
        assert_eq!(
            places,
            [
                (json!(0), json!(0)),
                (json!(0), json!(0)),
                (json!(1), json!(0)),
                (Value::Null, Value::Null)
            ]
        );
        assert_eq!(written[0]["messages"][0]["role"], "user");
        assert_eq!(written[0]["tools"], json!([]));
        assert_eq!(
            value["toolSets"][0][1],
            json!({"type": "function", "function": {"name": "grep", "description": "Does grep.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}})
        );

        // Read back, each conversation is a replayable request of its own again.
        let back: SessionSnapshot = serde_json::from_str(&text).unwrap();
        let systems: Vec<Option<&str>> = back
            .conversations
            .iter()
            .map(|c| {
                c.messages
                    .first()
                    .filter(|m| m.role == Role::System)
                    .and_then(|m| m.content.as_deref())
            })
            .collect();
        assert_eq!(
            systems,
            [
                Some("You are coder, a long system prompt."),
                Some("You are coder, a long system prompt."),
                Some("You are the reviewer."),
                None
            ]
        );
        assert_eq!(back.conversations[2].tools.len(), 2);
        assert!(back.conversations[3].tools.is_empty());
        assert_eq!(back.conversations[2].system_prompt, None);

        // A place past the tables is refused, by the conversation it names.
        let mut broken = value;
        broken["conversations"][2]["toolSet"] = json!(7);
        let err = serde_json::from_value::<SessionSnapshot>(broken).unwrap_err();
        assert!(err.to_string().contains("names tool set 7"), "{err}");
    }

    #[test]
    fn a_large_snapshot_is_written_again_only_once_the_journal_grew_to_a_share_of_it() {
        // None yet, or a small one: written.
        assert!(worth_writing(None, 0));
        assert!(worth_writing(Some(SMALL_SNAPSHOT), 0));
        // A large one: not for a turn's lines, once the journal holds a quarter of it.
        let large = 64 << 20;
        assert!(!worth_writing(Some(large), 4_000));
        assert!(!worth_writing(Some(large), large / JOURNAL_SHARE - 1));
        assert!(worth_writing(Some(large), large / JOURNAL_SHARE));
        assert!(worth_writing(Some(large), u64::MAX));
    }

    #[test]
    fn the_file_is_a_replayable_chat_completions_request() {
        let mut conversation = Conversation::new(Default::default(), Mode::Default);
        conversation.prompt = Some(Arc::new(PromptShape {
            system: "You are coder.".into(),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Reads a file.".into(),
                parameters: Arc::new(crate::tools::Schema::new(json!({"type": "object"}))),
            }],
        }));
        conversation.record([
            ChatMessage::user("show the readme"),
            ChatMessage::assistant(
                String::new(),
                String::new(),
                vec![ToolCall {
                    id: "call_1".into(),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: "read".into(),
                        arguments: r#"{"path":"README.md"}"#.into(),
                    },
                }],
            ),
            ChatMessage::tool_result("call_1", "read", "# coder"),
        ]);
        let session = SessionId::new();
        let value = serde_json::to_value(write::SnapshotFile::new(
            session,
            ConversationSnapshot::of(&conversation, "gpt-5", None),
            live(Vec::new()),
        ))
        .unwrap();
        assert_eq!(value["sessionId"], session.to_string());
        assert_eq!(value["model"], "gpt-5");
        assert_eq!(
            value["tools"],
            json!([{"type": "function", "function": {"name": "read",
                "description": "Reads a file.", "parameters": {"type": "object"}}}])
        );
        let messages = value["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[1]["role"], "user");
        assert_eq!(
            messages[2]["tool_calls"],
            json!([{"id": "call_1", "type": "function",
                "function": {"name": "read", "arguments": "{\"path\":\"README.md\"}"}}])
        );
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], "call_1");
        assert_eq!(messages[3]["name"], "read");

        let back: SessionSnapshot = serde_json::from_value(value).unwrap();
        let restored = back.root.restore();
        assert_eq!(restored.id, conversation.id);
        assert_eq!(restored.history, conversation.history);
    }

    #[test]
    fn images_are_content_parts_on_disk_and_come_back_where_they_were() {
        let png = coder_protocol::Attachment::Inline {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let mut pasted = ChatMessage::user("what is in this picture?");
        pasted.attachments = vec![png.clone()];
        let call = ToolCall::function("call_1".into(), "read".into(), "{}".into());
        let mut read = ChatMessage::tool_result("call_1", "read", "an image, 1x1");
        read.attachments = vec![png.clone()];
        let mut conversation = Conversation::new(Default::default(), Mode::Default);
        conversation.record([
            pasted,
            ChatMessage::assistant(String::new(), "look first".into(), vec![call]),
            read,
            ChatMessage::assistant("A single pixel.".into(), String::new(), Vec::new()),
        ]);
        let value =
            serde_json::to_value(ConversationSnapshot::of(&conversation, "m", None)).unwrap();
        let text = value.to_string();
        assert!(!text.contains("attachments"), "{text}");
        let messages = value["messages"].as_array().unwrap();
        let url = "data:image/png;base64,iVBORw0KGgo=";
        assert_eq!(
            messages[0]["content"],
            json!([{"type": "text", "text": "what is in this picture?"},
                   {"type": "image_url", "image_url": {"url": url}}])
        );
        // Content is never null (llama.cpp refuses it); thinking is kept for people.
        assert_eq!(messages[1]["content"], "");
        assert_eq!(messages[1]["reasoning"], "look first");
        assert_eq!(messages[2]["content"], "an image, 1x1");
        assert_eq!(messages[3]["role"], "user");
        assert_eq!(messages[3]["content"][1]["image_url"]["url"], url);
        assert_eq!(messages.len(), 5);

        let back: ConversationSnapshot = serde_json::from_value(value).unwrap();
        assert_eq!(back.messages, *conversation.history);
    }

    /// A session as a save tells it, at journal line `through`.
    fn holds(through: u64) -> Holds {
        Holds {
            through,
            model: "m".into(),
            conversations: 1,
        }
    }

    #[tokio::test]
    async fn nothing_is_written_after_the_last_save() {
        let workspace = tempfile::tempdir().unwrap();
        let saver = Saver::new(workspace.path(), true);
        let session = SessionId::new();
        let mut conversation = Conversation::new(Default::default(), Mode::Default);
        conversation.record([ChatMessage::user("first")]);
        let first = write::SnapshotFile::new(
            session,
            ConversationSnapshot::of(&conversation, "m", None),
            live(Vec::new()),
        );
        saver
            .write(saver.ticket(), first, Save::Last, holds(1))
            .await
            .unwrap();
        conversation.record([ChatMessage::user("after the end")]);
        let late = write::SnapshotFile::new(
            session,
            ConversationSnapshot::of(&conversation, "m", None),
            live(Vec::new()),
        );
        saver
            .write(saver.ticket(), late, Save::Again, holds(2))
            .await
            .unwrap();

        let path = saver.path(session).unwrap();
        let dir = saver.folder().unwrap().readable().unwrap();
        let saved = lazy::read(dir.as_ref(), session).unwrap();
        let Some(lazy::Held::Read(root)) = saved.conversations.first() else {
            panic!("the root is read");
        };
        assert_eq!(root.messages.len(), 1);
        let mut files: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [".gitignore".to_owned(), format!("{session}.json")],
            "no temporary file is left behind"
        );
    }
}
