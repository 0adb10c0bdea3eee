//! Session snapshots (seed 004 section 10): every session keeps
//! `.coder/sessions/<session_id>.json` in the workspace, for review, debugging and resuming.
//!
//! The top level is the root conversation in OpenAI Chat Completions form: `model`,
//! `messages` (the system prompt of its last task first) and `tools` (what that task
//! offered, as OpenAI `tools`), enough to replay a request. The session's other
//! conversations follow in `conversations`, in the same shape.
//!
//! The file is written once the session has stayed idle a moment (the driver's `QUIET`),
//! after a task when the last write is older than [`SAVE_INTERVAL`] (so after the first
//! task too), and when the session shuts down. The journal holds every change before that. Each write goes to a
//! temporary file that is renamed over the old one, so a crash never leaves half a snapshot.
//! The directory carries a `.gitignore` of `*`, so snapshots never show in `git status`.
//!
//! A repository ships `.coder/` too, links included: the folder and every file in it are
//! reached through the workspace handle without following a link ([`SessionFolder`]), and
//! only regular files are read or written.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use coder_protocol::{
    ArchivedSegment, ChatMessage, ConversationId, Mode, Role, SessionId, TodoItem, TokenUsage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::beneath::{OwnDir, WorkspaceDir};
use crate::conversation::{Conversation, ConversationContext};
use crate::error::{EngineError, ErrorKind};
use crate::model::ToolSpec;
#[cfg(test)]
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

/// The snapshot format's version.
const VERSION: u32 = 1;

/// The whole file. `Others` is how the other conversations are held: read back as
/// [`ConversationSnapshot`]s, written from the live conversations ([`LiveConversations`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSnapshot<Others = Vec<ConversationSnapshot>> {
    pub version: u32,
    pub session_id: SessionId,
    /// RFC 3339.
    pub saved_at: String,
    /// The root conversation (its `model`, `messages` and `tools` make a replayable request).
    #[serde(flatten)]
    pub root: ConversationSnapshot,
    /// The other conversations, oldest first.
    #[serde(default)]
    pub conversations: Others,
    /// The last line of the session journal (`<session_id>.jsonl`) this snapshot holds; a
    /// resume replays the lines after it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub journal_through: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The session's other conversations as they are written: each is copied into its
/// [`ConversationSnapshot`] only while it is serialized, under its own lock, so a save never
/// holds a second copy of the whole session.
pub(crate) struct LiveConversations {
    /// The session's model, for conversations without one of their own.
    pub model: String,
    pub conversations: Vec<Arc<Mutex<Conversation>>>,
}

impl Serialize for LiveConversations {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.conversations
                .iter()
                .map(|conversation| ConversationSnapshot::of(&lock(conversation), &self.model)),
        )
    }
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
}

/// Messages on disk in the form a Chat Completions request takes, and back.
mod openai_form {
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
        let written = Vec::<Written>::deserialize(deserializer)?;
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
        Ok(messages)
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
    /// `session_model` is the session's model, used unless the conversation has its own.
    /// Written at any moment, it is a replayable request as it is: a tool call still
    /// running (a long command, a handoff's target at work) is written closed, with a result
    /// saying so ([`crate::conversation::RUNNING_CALL_RESULT`]).
    pub(crate) fn of(conversation: &Conversation, session_model: &str) -> Self {
        let shape = conversation.prompt.as_deref();
        let system = shape.map(|shape| ChatMessage::system(shape.system.clone()));
        let mut history = conversation.history.clone();
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
            messages: system.into_iter().chain(history).collect(),
            tools: shape
                .map(|shape| shape.tools.iter().map(ToolDefinition::from).collect())
                .unwrap_or_default(),
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
        }
    }

    /// The messages as the conversation held them when the snapshot was written, which a
    /// journal line's `from` counts in: without the system prompt (each task builds its
    /// own), and without the results the writer gave calls still running
    /// ([`ConversationSnapshot::running_calls`]).
    pub(crate) fn take_written_history(&mut self) {
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

    /// The conversation again, its history without the recorded system prompt (each task
    /// builds its own).
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
            .collect();
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
        conversation.todos = Arc::new(Mutex::new(self.todos));
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
}

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

    /// Whether a busy session should save now.
    pub fn due(&self) -> bool {
        self.folder.is_some()
            && lock(&self.last_saved).is_none_or(|saved| saved.elapsed() >= SAVE_INTERVAL)
    }

    /// The number of a snapshot being taken; take it under the lock that orders the
    /// session's state, so numbers follow the states they were taken from.
    pub fn ticket(&self) -> u64 {
        self.taken.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Stops saving at once: waits for a write in flight, and nothing is written after.
    pub fn close(&self) {
        lock(&self.on_disk).closed = true;
    }

    /// Writes `snapshot` (numbered `ticket`) atomically, off the async threads; an older
    /// snapshot never replaces a newer one, and nothing follows the [`Save::Last`] one.
    /// Returns whether it was written.
    pub async fn write(
        &self,
        ticket: u64,
        snapshot: SessionSnapshot<LiveConversations>,
        save: Save,
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
            write_atomic(&dir, &file_name(snapshot.session_id), &snapshot)?;
            on_disk.number = ticket;
            Ok::<bool, String>(true)
        })
        .await
        .map_err(|err| EngineError::internal(format!("the snapshot writer failed: {err}")))?
        .map_err(EngineError::io)
    }
}

/// A snapshot of a session in the making.
pub(crate) fn snapshot<Others>(
    session_id: SessionId,
    root: ConversationSnapshot,
    conversations: Others,
) -> SessionSnapshot<Others> {
    SessionSnapshot {
        version: VERSION,
        session_id,
        saved_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        root,
        conversations,
        journal_through: 0,
    }
}

/// The snapshot file's name of `session`.
pub(crate) fn file_name(session: SessionId) -> String {
    format!("{session}.json")
}

/// Writes `snapshot` as `name` in `dir`, atomically: synced before it replaces the old one
/// (the journal it folds in is removed after).
fn write_atomic(dir: &OwnDir, name: &str, snapshot: &impl Serialize) -> Result<(), String> {
    let shown = dir.shown(name);
    dir.write_atomic(name, |file| {
        let mut writer = std::io::BufWriter::new(file);
        serde_json::to_writer(&mut writer, snapshot).map_err(std::io::Error::other)?;
        std::io::Write::flush(&mut writer)
    })
    .map_err(|err| {
        format!(
            "cannot save {}",
            crate::beneath::own_file_error(&shown, &err)
        )
    })
}

/// The sessions saved in `dir`, newest first. A file that is not a snapshot (a temporary
/// file, a corrupt or foreign one, a link, anything but a regular file) is left out.
pub(crate) fn list(dir: &OwnDir) -> Vec<coder_protocol::methods::SessionInfo> {
    /// What a listing reads of a message.
    #[derive(Deserialize)]
    struct Message {
        role: Role,
        #[serde(default)]
        content: Option<String>,
    }
    /// What a listing reads of a conversation: its messages, lightly.
    #[derive(Deserialize)]
    struct Listed {
        #[serde(default)]
        messages: Vec<Message>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        session_id: SessionId,
        saved_at: String,
        model: String,
        #[serde(default)]
        messages: Vec<Message>,
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
            let title =
                first_question(head.messages.iter().map(|m| (m.role, m.content.as_deref())));
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

/// What a listing calls a session: the first thing a person asked in `messages`, cut to
/// 100 characters (reminders and compaction summaries are not questions).
pub(crate) fn title(messages: &[ChatMessage]) -> Option<String> {
    first_question(messages.iter().map(|m| (m.role, m.content.as_deref())))
}

fn first_question<'a>(
    mut messages: impl Iterator<Item = (Role, Option<&'a str>)>,
) -> Option<String> {
    messages
        .find_map(|(role, content)| {
            content.filter(|text| {
                role == Role::User
                    && !text.starts_with(crate::reminders::OPEN)
                    && !text.starts_with(crate::prompt::SUMMARY_OPEN)
            })
        })
        .map(|text| text.chars().take(100).collect())
}

/// Reads the snapshot of `session` from `dir` (`None`: the folder is missing).
pub(crate) fn read(
    dir: Option<&OwnDir>,
    session: SessionId,
) -> Result<SessionSnapshot, EngineError> {
    let name = file_name(session);
    let shown = Path::new(SESSIONS_DIR).join(&name);
    let missing = || {
        EngineError::new(
            ErrorKind::NotFound,
            format!("cannot read {}: no such file", shown.display()),
        )
    };
    let dir = dir.ok_or_else(missing)?;
    let text = dir
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
    let snapshot: SessionSnapshot = serde_json::from_slice(&text).map_err(|err| {
        EngineError::invalid_params(format!(
            "{} is not a session snapshot: {err}",
            shown.display()
        ))
    })?;
    if snapshot.version > VERSION {
        return Err(EngineError::invalid_params(format!(
            "{} was written by a newer coder (snapshot version {})",
            shown.display(),
            snapshot.version
        )));
    }
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::{FunctionCall, ToolCall};
    use serde_json::json;

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
        let value = serde_json::to_value(snapshot(
            session,
            ConversationSnapshot::of(&conversation, "gpt-5"),
            Vec::<ConversationSnapshot>::new(),
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
        let value = serde_json::to_value(ConversationSnapshot::of(&conversation, "m")).unwrap();
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
        assert_eq!(back.messages, conversation.history);
    }

    #[tokio::test]
    async fn nothing_is_written_after_the_last_save() {
        let workspace = tempfile::tempdir().unwrap();
        let saver = Saver::new(workspace.path(), true);
        let session = SessionId::new();
        let mut conversation = Conversation::new(Default::default(), Mode::Default);
        let live = || LiveConversations {
            model: "m".into(),
            conversations: Vec::new(),
        };
        conversation.record([ChatMessage::user("first")]);
        let first = snapshot(
            session,
            ConversationSnapshot::of(&conversation, "m"),
            live(),
        );
        saver
            .write(saver.ticket(), first, Save::Last)
            .await
            .unwrap();
        conversation.record([ChatMessage::user("after the end")]);
        let late = snapshot(
            session,
            ConversationSnapshot::of(&conversation, "m"),
            live(),
        );
        saver
            .write(saver.ticket(), late, Save::Again)
            .await
            .unwrap();

        let path = saver.path(session).unwrap();
        let dir = saver.folder().unwrap().readable().unwrap();
        let saved = read(dir.as_ref(), session).unwrap();
        assert_eq!(saved.root.messages.len(), 1);
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
