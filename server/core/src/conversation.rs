//! A conversation: its history, its LLM context (seed 003), its mode and todos.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::error::EngineError;
use crate::mcp::McpView;
use crate::tool_selection::ToolSelection;

/// The largest base instructions file a conversation takes (`baseInstructionsFile`): a
/// system prompt, far below it; a larger file is refused without being read.
const MAX_BASE_INSTRUCTIONS_BYTES: u64 = 1 << 20;
use coder_protocol::{
    ArchivedSegment, Attachment, ChatMessage, ConversationId, HistoryAttachment, HistoryEntry,
    InputItem, Mode, Role, TodoItem, TokenUsage, ToolsPrefs,
};

/// What a new conversation should be. Fields left `None` take the defaults (engine API) or
/// the calling conversation's values (conversation tools).
#[derive(Debug, Clone, Default)]
pub struct ConversationSpec {
    pub base_instructions: Option<String>,
    /// Read relative to the workspace, and only inside it (as the file tools); exclusive
    /// with `base_instructions`.
    pub base_instructions_file: Option<PathBuf>,
    /// Becomes the first user message of the history.
    pub user_instructions: Option<String>,
    /// MCP tools (`server__tool`) the conversation may see; `None` sees all.
    pub mcp_allowlist: Option<Vec<String>>,
    /// Built-in tools: a flag left out is inherited (from the calling conversation for the
    /// conversation tools, else the session's defaults); `shell_mode` only narrows.
    pub tools_prefs: Option<ToolsPrefs>,
    /// Clamped to the session's mode when looser.
    pub mode: Option<Mode>,
    /// A model other than the session's, of the same provider.
    pub model: Option<String>,
}

/// What a front door's `conversation/create` asks for.
impl From<coder_protocol::methods::CreateParams> for ConversationSpec {
    fn from(params: coder_protocol::methods::CreateParams) -> Self {
        Self {
            base_instructions: params.base_instructions,
            base_instructions_file: params.base_instructions_file.map(Into::into),
            user_instructions: params.user_instructions,
            mcp_allowlist: params.mcp_allowlist,
            tools_prefs: params.tools_prefs,
            mode: params.mode,
            model: params.model,
        }
    }
}

/// What [`crate::Engine::set_context`] changes of a conversation's context (seed 003's
/// `SetConversationContext`). A field left `None` is kept; `Some(None)` goes back to the
/// default (the built-in prompt, every MCP tool).
#[derive(Debug, Clone, Default)]
pub struct ContextChange {
    pub base_instructions: Option<Option<String>>,
    /// Read as [`ConversationSpec::base_instructions_file`] is; exclusive with
    /// `base_instructions`.
    pub base_instructions_file: Option<PathBuf>,
    /// Recorded as a user message after what the history holds.
    pub user_instructions: Option<String>,
    pub mcp_allowlist: Option<Option<Vec<String>>>,
    /// Resolved as at creation by a front door: a key left out keeps the conversation's
    /// current choice, and `shell_mode` only narrows the session's shell.
    pub tools_prefs: Option<ToolsPrefs>,
    /// Build the MCP view again from the servers' tools as they are now.
    pub refresh_mcp_view: bool,
}

/// What a front door's `conversation/setContext` asks for (its conversation aside).
impl From<coder_protocol::methods::SetContextParams> for ContextChange {
    fn from(params: coder_protocol::methods::SetContextParams) -> Self {
        Self {
            base_instructions: params.base_instructions,
            base_instructions_file: params.base_instructions_file.map(Into::into),
            user_instructions: params.user_instructions,
            mcp_allowlist: params.mcp_allowlist,
            tools_prefs: params.tools_prefs,
            refresh_mcp_view: params.refresh_mcp_view,
        }
    }
}

impl ConversationSpec {
    /// Fills what is not given from a parent conversation's context.
    pub(crate) fn inherit(mut self, parent: &ConversationContext) -> Self {
        if self.base_instructions.is_none() && self.base_instructions_file.is_none() {
            self.base_instructions = parent.base_instructions.clone();
        }
        if self.mcp_allowlist.is_none() {
            self.mcp_allowlist = parent.mcp_view.allowlist().map(<[String]>::to_vec);
        }
        if self.model.is_none() {
            self.model = parent.model.clone();
        }
        self
    }

    /// Checks the spec and reads the base instructions file. Allowlist entries must be
    /// fully-qualified MCP tool names (`server__tool`); the older `server/tool` form is
    /// rewritten, and the returned note says so.
    pub(crate) fn resolve(
        mut self,
        workspace: &Path,
    ) -> Result<(Self, Option<String>), EngineError> {
        let mut note = None;
        if let Some(allowlist) = self.mcp_allowlist.take() {
            let normalised = crate::mcp::allowlist::normalise(allowlist)
                .map_err(|refusal| EngineError::invalid_params(refusal.to_string()))?;
            note = normalised.deprecation();
            self.mcp_allowlist = Some(normalised.names);
        }
        if let Some(file) = self.base_instructions_file.take() {
            if self.base_instructions.is_some() {
                return Err(EngineError::invalid_params(
                    "base instructions text and file are mutually exclusive; give one",
                ));
            }
            self.base_instructions = Some(read_base_instructions(workspace, &file)?);
        }
        Ok((self, note))
    }
}

/// Reads a base instructions file: inside the workspace only, UTF-8 text, at most
/// [`MAX_BASE_INSTRUCTIONS_BYTES`].
pub(crate) fn read_base_instructions(workspace: &Path, file: &Path) -> Result<String, EngineError> {
    // Confined like the file tools: the text becomes the system prompt and goes to the
    // provider, so `/etc/shadow`, `~/.ssh/id_rsa`, `../x` or a link out of the workspace
    // are refused, in every mode.
    let requested = file.to_string_lossy();
    let path = crate::tools::paths::resolve_existing(workspace, &requested).map_err(|err| {
        EngineError::invalid_params(format!("the base instructions file is refused: {err}"))
    })?;
    // Read through a handle on the workspace, so a link swapped in after the check cannot
    // lead the read out.
    let unreadable = |err: String| {
        EngineError::invalid_params(format!(
            "cannot read the base instructions file {}: {err}",
            file.display()
        ))
    };
    let bytes = crate::tools::beneath::WorkspaceDir::open(workspace)
        .and_then(|dir| {
            dir.read(&path, MAX_BASE_INSTRUCTIONS_BYTES)
                .map_err(|err| err.to_string())
        })
        .map_err(unreadable)?
        .ok_or_else(|| unreadable("it does not exist".to_owned()))?;
    String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8 text".to_owned()))
}

/// The LLM context a conversation owns (seed 003); the session keeps none.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConversationContext {
    /// Replace the built-in prompt; never in the history.
    pub base_instructions: Option<String>,
    /// The user instructions the conversation was given (at its creation, or changed
    /// since): the first user message of its history, and a later one for each change.
    pub user_instructions: Option<String>,
    /// The MCP tools it sees, narrowed by its allowlist.
    pub mcp_view: McpView,
    /// Its built-in tools, as resolved from its `tools_prefs`.
    pub tools: ToolSelection,
    /// The conversation's own model, when it is not the session's.
    pub model: Option<String>,
}

/// One conversation of a session. The history is OpenAI Chat Completions messages and is
/// always a valid request: every assistant tool call has a matching tool result (except the
/// one call a queued continuation task is about to answer).
#[derive(Debug)]
pub(crate) struct Conversation {
    pub id: ConversationId,
    pub context: ConversationContext,
    /// Shared, so a running task and a save take it without copying it; changed in place
    /// when nothing else holds it.
    pub history: Arc<Vec<ChatMessage>>,
    /// The history as its requests wrote it, shared with a running task, which extends it;
    /// dropped whenever the history is rewritten rather than extended.
    pub wire: Arc<Mutex<crate::model::WireHistory>>,
    pub total_usage: TokenUsage,
    /// The size of the context as last measured (the last request and its reply).
    pub size: crate::tokens::ContextSize,
    /// What compactions replaced, one segment per compaction, oldest first.
    pub archive: Vec<ArchivedSegment>,
    /// The first history index the session journal has not written since it changed
    /// (the history's length when all of it is written).
    pub unjournaled_from: usize,
    /// How many archived segments the journal has written.
    pub archive_journaled: usize,
    /// Its tools, when they are described in the prompt (seed 002).
    pub prompted_tools: Option<crate::tool_prompt::PromptedTools>,
    pub last_active_at: SystemTime,
    pub mode: Mode,
    /// The mode the conversation had when it entered plan mode, which leaving plan mode
    /// through `exit_plan_mode` returns to; `None` when it was created in plan mode (it then
    /// returns to `default`).
    pub mode_before_plan: Option<Mode>,
    /// The plan reminder is due at the next input: set on each entry into plan mode,
    /// cleared when the reminder is recorded or plan mode is left.
    pub plan_reminder_due: bool,
    /// Shared with the `todo_write` tool while a task runs.
    pub todos: Arc<Mutex<Vec<TodoItem>>>,
    /// What its agent last saw of each file, shared with the file tools while a task runs.
    pub seen: Arc<crate::tools::seen::SeenFiles>,
    /// User instructions set since its last task (`set_context`), recorded as a user
    /// message at the start of its next one, before its input: a message now could fall
    /// between a running turn's tool call and its result.
    pub pending_instructions: Option<String>,
    /// What the person's built-in commands changed while a task of it ran or waited
    /// (`session/command_notes.rs`), recorded at the start of its next task, after the
    /// instructions and before its input, for the same reason.
    pub pending_notes: Vec<ChatMessage>,
    /// The system prompt and tools its last task sent besides its history (or, taken up
    /// from a saved session, those its snapshot held): for the session snapshot, whose
    /// every conversation must be a request that can be replayed, and for counting what a
    /// compaction leaves. `None` before it sent anything.
    pub prompt: Option<Arc<crate::prompt::PromptShape>>,
    /// Opened by another conversation's `conv_create`: a worker (seed 001's subagent). It
    /// reports no `token_count`; only the conversations a person or client opened do.
    pub worker: bool,
    /// The points the history holds (a person's inputs), oldest first: the places a rewind
    /// or a fork goes back to.
    pub points: Vec<InputPoint>,
    /// How many inputs of a person the conversation recorded: the next one's point.
    pub inputs_recorded: usize,
}

/// A person's input in a conversation's history: a point a rewind or a fork goes back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct InputPoint {
    /// Its place among the conversation's inputs, from 0: it names the point across resumes
    /// and compactions (after a cut, the next input takes the first place cut).
    pub point: usize,
    /// Where the input is in the history.
    pub at: usize,
}

impl Conversation {
    /// A conversation of `spec`, with the session's default tools (the session resolves the
    /// spec's `tools_prefs` when it opens one).
    pub fn new(spec: ConversationSpec, mode: Mode) -> Self {
        let history = spec
            .user_instructions
            .iter()
            .map(|text| ChatMessage::user(text.clone()))
            .collect::<Vec<_>>()
            .into();
        Self {
            id: ConversationId::new(),
            context: ConversationContext {
                base_instructions: spec.base_instructions,
                user_instructions: spec.user_instructions,
                mcp_view: McpView::new(spec.mcp_allowlist),
                tools: ToolSelection::default(),
                model: spec.model,
            },
            history,
            wire: Arc::default(),
            total_usage: TokenUsage::default(),
            size: Default::default(),
            archive: Vec::new(),
            unjournaled_from: 0,
            archive_journaled: 0,
            prompted_tools: None,
            last_active_at: SystemTime::now(),
            mode,
            mode_before_plan: None,
            plan_reminder_due: mode == Mode::Plan,
            todos: Arc::default(),
            seen: Arc::default(),
            pending_instructions: None,
            pending_notes: Vec::new(),
            prompt: None,
            worker: false,
            points: Vec::new(),
            inputs_recorded: 0,
        }
    }

    /// Records a person's input (with the reminders that follow it) as the next point.
    pub fn record_input(&mut self, messages: impl IntoIterator<Item = ChatMessage>) -> usize {
        let point = self.inputs_recorded;
        self.points.push(InputPoint {
            point,
            at: self.history.len(),
        });
        self.inputs_recorded += 1;
        self.record(messages);
        point
    }

    /// Where point `point` is in the history; `None` when the history does not hold it
    /// (never recorded, or gone with a compaction or a clear).
    pub fn point_at(&self, point: usize) -> Option<usize> {
        self.points
            .iter()
            .find(|input| input.point == point)
            .map(|input| input.at)
    }

    /// Cuts the history before its message `at` (a point): that message and every one
    /// after it go, and so do the points among them; the next input takes the first
    /// point cut. Returns how many messages went.
    pub fn cut_before(&mut self, at: usize) -> usize {
        let len = self.history.len();
        if at >= len {
            return 0;
        }
        Arc::make_mut(&mut self.history).truncate(at);
        self.inputs_recorded = cut_points(&mut self.points, at).unwrap_or(self.inputs_recorded);
        crate::sync::lock(&self.wire).clear();
        self.size = crate::tokens::ContextSize::default();
        self.unjournaled_from = self.unjournaled_from.min(at);
        self.last_active_at = SystemTime::now();
        len - at
    }

    /// Switches to `mode` and returns the mode it had, keeping the plan-mode bookkeeping:
    /// entering plan mode remembers the mode left and makes the plan reminder due; leaving it
    /// drops both.
    pub fn switch_mode(&mut self, mode: Mode) -> Mode {
        let previous = self.mode;
        if mode == Mode::Plan && previous != Mode::Plan {
            self.mode_before_plan = Some(previous);
            self.plan_reminder_due = true;
        } else if mode != Mode::Plan {
            self.mode_before_plan = None;
            self.plan_reminder_due = false;
        }
        self.mode = mode;
        previous
    }

    /// The mode leaving plan mode returns to.
    pub fn mode_after_plan(&self) -> Mode {
        self.mode_before_plan
            .filter(|mode| *mode != Mode::Plan)
            .unwrap_or(Mode::Default)
    }

    pub fn record(&mut self, messages: impl IntoIterator<Item = ChatMessage>) {
        self.unjournaled_from = self.unjournaled_from.min(self.history.len());
        Arc::make_mut(&mut self.history).extend(messages);
        self.last_active_at = SystemTime::now();
    }

    /// Appends `text` to the content of the last message.
    pub fn append_to_last(&mut self, text: &str) {
        let last = self.history.len().saturating_sub(1);
        if let Some(message) = Arc::make_mut(&mut self.history).last_mut() {
            message
                .content
                .get_or_insert_with(String::new)
                .push_str(text);
            crate::sync::lock(&self.wire).clear();
            self.unjournaled_from = self.unjournaled_from.min(last);
            self.last_active_at = SystemTime::now();
        }
    }

    /// Starts a new batch of the conversation's context (seed 002's clear): every message
    /// of the history leaves the context and `opening` is what the new batch starts with.
    /// One operation for each way a context starts over: `/clear` (nothing), a compaction
    /// (the summary, then the turns kept) and a plan approved with a cleared context (the
    /// plan). Returns how many messages left.
    ///
    /// The system messages stay: the system prompt is never part of the history (each
    /// task builds it), and neither is the description of the initial tools when tools are
    /// described in the prompt ([`crate::tool_prompt::request_lead`] opens every
    /// request with it), so every batch holds both, once. Tools announced later are
    /// ordinary messages and go with the batch they were in. The size is measured again
    /// at the next request.
    /// The history's points go with it (see [`Conversation::compacted_to`] for a
    /// compaction, which keeps the latest turns and their points).
    pub fn start_batch(&mut self, opening: Vec<ChatMessage>) -> usize {
        self.points.clear();
        let left = std::mem::replace(&mut self.history, Arc::new(opening)).len();
        crate::sync::lock(&self.wire).clear();
        self.size = crate::tokens::ContextSize::default();
        self.unjournaled_from = 0;
        self.last_active_at = SystemTime::now();
        left
    }

    /// A compaction's new batch: `history` ends with the last `kept` messages of the
    /// history as it is, whose points stay (at their new places); the others' go.
    pub fn compacted_to(&mut self, history: Vec<ChatMessage>, kept: usize) -> usize {
        let old = self.history.len();
        let mut points = std::mem::take(&mut self.points);
        let lead = history.len().saturating_sub(kept);
        let left = self.start_batch(history);
        if kept <= old {
            let cut = old - kept;
            points.retain(|input| input.at >= cut);
            for input in &mut points {
                input.at = input.at - cut + lead;
            }
            self.points = points;
        }
        left
    }

    /// The text of the last assistant message that has text.
    pub fn last_assistant_text(&self) -> Option<String> {
        self.history
            .iter()
            .rev()
            .find(|m| {
                m.role == Role::Assistant && m.content.as_ref().is_some_and(|t| !t.is_empty())
            })
            .and_then(|m| m.content.clone())
    }
}

/// Takes the points at or after history index `at` out of `points`; the first one taken,
/// if any.
pub(crate) fn cut_points(points: &mut Vec<InputPoint>, at: usize) -> Option<usize> {
    let first = points
        .iter()
        .filter(|input| input.at >= at)
        .map(|input| input.point)
        .min();
    points.retain(|input| input.at < at);
    first
}

/// The result given to a tool call that has none when a saved session is taken up: the
/// session ended (a crash, a kill) between the call and its answer.
pub(crate) const UNFINISHED_CALL_RESULT: &str =
    "the session ended before this call finished; it has no result";

/// The result a session snapshot gives a tool call still running when it was written (a
/// long command, a handoff whose target still works): the file is a replayable request
/// whenever it is written (seed 004 section 10). The conversation itself is not changed; its
/// real result follows in the journal, and a resume takes the written one out first
/// (`ConversationSnapshot::running_calls`).
pub(crate) const RUNNING_CALL_RESULT: &str =
    "this call was still running when the session was saved; its result is not in this snapshot";

/// Gives every assistant tool call without a result one saying `why` (placed after the
/// results its message has), so the history is a valid request again. Returns the ids of
/// the calls it closed.
pub(crate) fn close_unanswered_calls(history: &mut Vec<ChatMessage>, why: &str) -> Vec<String> {
    let mut closed = Vec::new();
    let mut index = 0;
    while index < history.len() {
        if history[index].role != Role::Assistant || history[index].tool_calls.is_empty() {
            index += 1;
            continue;
        }
        let calls = history[index].tool_calls.clone();
        let mut end = index + 1;
        while end < history.len() && history[end].role == Role::Tool {
            end += 1;
        }
        let answered: Vec<&str> = history[index + 1..end]
            .iter()
            .filter_map(|message| message.tool_call_id.as_deref())
            .collect();
        let missing: Vec<ChatMessage> = calls
            .iter()
            .filter(|call| !answered.contains(&call.id.as_str()))
            .map(|call| ChatMessage::tool_result(&call.id, &call.function.name, why))
            .collect();
        closed.extend(
            missing
                .iter()
                .filter_map(|result| result.tool_call_id.clone()),
        );
        let added = missing.len();
        history.splice(end..end, missing);
        index = end + added;
    }
    closed
}

/// The text of input items (images left out), as `task_started` carries it; `None` when
/// there is no text.
pub(crate) fn input_text(items: &[InputItem]) -> Option<String> {
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|item| match item {
            InputItem::Text { text } => Some(text.as_str()),
            InputItem::Image { .. } => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// A user message from input items: texts joined by blank lines, images attached (by
/// their bytes or their `http(s)` URL). Every door checks the images first
/// ([`check_images`]); an image URL that is neither is kept as text naming it, so nothing
/// of the input is lost.
pub(crate) fn user_message(items: &[InputItem]) -> Option<ChatMessage> {
    let mut texts = Vec::new();
    let mut attachments = Vec::new();
    for item in items {
        match item {
            InputItem::Text { text } => texts.push(text.clone()),
            InputItem::Image { image_url } => match image_of_url(image_url) {
                Ok(attachment) => attachments.push(attachment),
                Err(_) => texts.push(format!("[image: {image_url}]")),
            },
        }
    }
    if texts.is_empty() && attachments.is_empty() {
        return None;
    }
    let mut message = ChatMessage::user(texts.join("\n\n"));
    message.attachments = attachments;
    Some(message)
}

/// The most bytes of one image an input may attach (decoded from its `data:` URL): the
/// providers take images of a few MiB (Anthropic 5 MB, OpenAI 20 MB) and the image is sent
/// again with every request of the conversation. An image by URL holds no bytes here: the
/// provider fetches it and applies its own limits.
pub(crate) const MAX_IMAGE_BYTES: u64 = 10 << 20;

/// The most bytes of images a conversation's history may hold, the input's included.
pub(crate) const MAX_CONVERSATION_IMAGE_BYTES: u64 = 20 << 20;

/// The bytes `data`, base64, decodes to.
fn decoded_len(data: &str) -> u64 {
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() as u64 / 4 * 3 + (data.len() as u64 % 4) * 3 / 4).saturating_sub(padding as u64)
}

/// The bytes coder holds of an image: none for an image by URL.
fn held_bytes(image: &Attachment) -> u64 {
    match image {
        Attachment::Inline { data, .. } => decoded_len(data),
        Attachment::Url { .. } => 0,
    }
}

/// The bytes of the images `history` holds (the user's and those tools returned).
pub(crate) fn image_bytes_of(history: &[ChatMessage]) -> u64 {
    history
        .iter()
        .flat_map(|message| &message.attachments)
        .map(held_bytes)
        .sum()
}

/// Refuses input with an image that is neither a `data:` URL of base64 bytes nor an
/// `http(s)` URL, or whose `data:` images exceed [`MAX_IMAGE_BYTES`] each, or, with the
/// `held` bytes of images of the conversation, [`MAX_CONVERSATION_IMAGE_BYTES`]: nothing
/// of the input is recorded, so it can be sent again with smaller images. Images by URL
/// count for no bytes: coder never fetches them.
pub(crate) fn check_images(items: &[InputItem], held: u64) -> Result<(), EngineError> {
    let mut added = 0u64;
    let images = items.iter().filter_map(|item| match item {
        InputItem::Image { image_url } => Some(image_of_url(image_url)),
        InputItem::Text { .. } => None,
    });
    for (index, image) in images.enumerate() {
        let image = image.map_err(|why| {
            EngineError::invalid_params(format!(
                "image {} of the input {why}; nothing was sent",
                index + 1
            ))
        })?;
        let size = held_bytes(&image);
        if size > MAX_IMAGE_BYTES {
            return Err(EngineError::new(
                crate::error::ErrorKind::LimitExceeded,
                format!(
                    "image {} of the input is {size} bytes, over the limit of {} an image; \
                     nothing was sent: send it again with a smaller image",
                    index + 1,
                    crate::bounded::size(MAX_IMAGE_BYTES)
                ),
            ));
        }
        added += size;
    }
    if added > 0 && held + added > MAX_CONVERSATION_IMAGE_BYTES {
        return Err(EngineError::new(
            crate::error::ErrorKind::LimitExceeded,
            format!(
                "the input's images ({added} bytes) and those the conversation holds \
                 ({held} bytes) exceed the limit of {} of images a conversation; nothing was \
                 sent: send it without images, with smaller ones, or in a new conversation",
                crate::bounded::size(MAX_CONVERSATION_IMAGE_BYTES)
            ),
        ));
    }
    Ok(())
}

/// The image an input item's `image_url` names: the bytes of a `data:<media type>;base64,`
/// URL, or an `http(s)` URL as given (the provider fetches it). The error completes
/// "image N of the input ...".
pub(crate) fn image_of_url(url: &str) -> Result<Attachment, String> {
    if let Some(rest) = url.strip_prefix("data:") {
        return match rest.split_once(";base64,") {
            Some((media_type, data)) if !media_type.is_empty() => Ok(Attachment::Inline {
                media_type: media_type.to_owned(),
                data: data.to_owned(),
            }),
            _ => Err("is a `data:` URL without a media type and base64 bytes \
                      (`data:image/png;base64,...`)"
                .to_owned()),
        };
    }
    let parsed = reqwest::Url::parse(url);
    match parsed {
        Ok(parsed)
            if matches!(parsed.scheme(), "http" | "https")
                && parsed.host_str().is_some_and(|host| !host.is_empty()) =>
        {
            Ok(Attachment::Url {
                url: url.to_owned(),
            })
        }
        _ => {
            // The URL is named, cut short: it may be anything, of any length.
            let mut shown: String = url.chars().take(80).collect();
            if shown.len() < url.len() {
                shown.push('…');
            }
            Err(format!(
                "is neither a `data:` URL nor an `http(s)` URL: `{shown}`"
            ))
        }
    }
}

/// Messages only (seed 000, `conv.history`): what the person or the caller said and what
/// the agent answered, `user` or `assistant`, with their images, the last `limit` of them.
/// No tool calls or outputs, and no context the engine added after an input (a
/// `<system-reminder>`: `@` attachments, the todo reminder), which nobody said. Images that
/// tool calls returned (a `read` of a picture) are attachments of the assistant message that
/// made the calls: what its tools showed the agent.
pub(crate) fn history_entries(history: &[ChatMessage], limit: Option<usize>) -> Vec<HistoryEntry> {
    let attachments = |message: &ChatMessage| -> Vec<HistoryAttachment> {
        message
            .attachments
            .iter()
            .map(|image| HistoryAttachment {
                kind: "image".to_owned(),
                image_url: image.url(),
            })
            .collect()
    };
    let mut entries: Vec<HistoryEntry> = Vec::new();
    // The entry of the last assistant message, which the tool results after it answer.
    let mut caller: Option<usize> = None;
    for message in history {
        let text = message.content.clone().filter(|text| !text.is_empty());
        match message.role {
            Role::User => {
                caller = None;
                let reminder = text
                    .as_deref()
                    .is_some_and(|text| text.starts_with(crate::reminders::OPEN));
                if !reminder {
                    entries.push(HistoryEntry {
                        role: "user".to_owned(),
                        text,
                        attachments: attachments(message),
                    });
                }
            }
            Role::Assistant => {
                caller = Some(entries.len());
                entries.push(HistoryEntry {
                    role: "assistant".to_owned(),
                    text,
                    attachments: attachments(message),
                });
            }
            Role::Tool if !message.attachments.is_empty() => {
                let index = *caller.get_or_insert_with(|| {
                    entries.push(HistoryEntry {
                        role: "assistant".to_owned(),
                        text: None,
                        attachments: Vec::new(),
                    });
                    entries.len() - 1
                });
                entries[index].attachments.extend(attachments(message));
            }
            Role::Tool | Role::System => {}
        }
    }
    // An assistant message of tool calls alone, whose tools returned no image, says nothing.
    entries.retain(|entry| entry.text.is_some() || !entry.attachments.is_empty());
    let skip = limit.map_or(0, |limit| entries.len().saturating_sub(limit));
    entries.into_iter().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use coder_protocol::ToolCall;
    use pretty_assertions::assert_eq;

    use super::*;

    fn calls(ids: &[&str]) -> ChatMessage {
        let calls = ids
            .iter()
            .map(|id| ToolCall::function((*id).to_owned(), "conv_send".into(), "{}".into()))
            .collect();
        ChatMessage::assistant(String::new(), String::new(), calls)
    }

    fn shape(history: &[ChatMessage]) -> Vec<String> {
        history
            .iter()
            .map(|m| match (&m.role, &m.tool_call_id) {
                (Role::Tool, Some(id)) => {
                    format!("result {id}: {}", m.content.clone().unwrap_or_default())
                }
                (Role::Assistant, _) if !m.tool_calls.is_empty() => {
                    let ids: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
                    format!("calls {}", ids.join(","))
                }
                (role, _) => format!("{role:?} {}", m.content.clone().unwrap_or_default()),
            })
            .collect()
    }

    /// Seed 000: a conversation is active whenever its history is written, whichever way.
    #[test]
    fn every_change_of_the_history_refreshes_last_active_at() {
        let mut conversation = Conversation::new(ConversationSpec::default(), Mode::Default);
        type Change = fn(&mut Conversation);
        let changes: [(&str, Change); 3] = [
            ("record", |c| c.record([ChatMessage::user("hi")])),
            ("append_to_last", |c| c.append_to_last(" there")),
            ("start_batch", |c| {
                c.start_batch(vec![ChatMessage::user("summary")]);
            }),
        ];
        for (name, change) in changes {
            conversation.last_active_at = SystemTime::UNIX_EPOCH;
            change(&mut conversation);
            assert!(
                conversation.last_active_at > SystemTime::UNIX_EPOCH,
                "{name} left last_active_at as it was"
            );
        }
    }

    /// Points are a person's inputs, numbered over the conversation's life: a compaction
    /// keeps those of the turns it keeps (at their new places), a cut takes those after it.
    #[test]
    fn points_follow_the_history_through_a_compaction_and_a_cut() {
        let mut conversation = Conversation::new(ConversationSpec::default(), Mode::Default);
        for turn in 0..3 {
            conversation.record([ChatMessage::user("instructions, not a point")]);
            let point = conversation.record_input([ChatMessage::user(format!("ask {turn}"))]);
            assert_eq!(point, turn);
            conversation.record([ChatMessage::assistant(
                format!("answer {turn}"),
                String::new(),
                Vec::new(),
            )]);
        }
        let points = |c: &Conversation| -> Vec<(usize, usize)> {
            c.points
                .iter()
                .map(|input| (input.point, input.at))
                .collect()
        };
        assert_eq!(points(&conversation), [(0, 1), (1, 4), (2, 7)]);
        // The summary, then the last two turns kept whole.
        let mut compacted = vec![ChatMessage::user("summary")];
        compacted.extend_from_slice(&conversation.history[3..]);
        conversation.compacted_to(compacted, 6);
        assert_eq!(points(&conversation), [(1, 2), (2, 5)]);
        assert_eq!(conversation.history[2].content.as_deref(), Some("ask 1"));
        assert_eq!(conversation.point_at(0), None);
        assert_eq!(conversation.cut_before(5), 2);
        assert_eq!(points(&conversation), [(1, 2)]);
        assert_eq!(conversation.history.len(), 5);
        // The next input takes the place of the first one cut.
        assert_eq!(conversation.record_input([ChatMessage::user("again")]), 2);
        conversation.start_batch(Vec::new());
        assert!(conversation.points.is_empty());
    }

    #[test]
    fn unanswered_calls_get_a_result_after_the_ones_they_have() {
        let mut history = vec![
            ChatMessage::user("go"),
            calls(&["a", "b"]),
            ChatMessage::tool_result("a", "conv_send", "done"),
            ChatMessage::user("later"),
            calls(&["c"]),
        ];
        assert_eq!(
            close_unanswered_calls(&mut history, UNFINISHED_CALL_RESULT),
            ["b", "c"]
        );
        let unfinished = UNFINISHED_CALL_RESULT;
        assert_eq!(
            shape(&history),
            [
                "User go".to_owned(),
                "calls a,b".to_owned(),
                "result a: done".to_owned(),
                format!("result b: {unfinished}"),
                "User later".to_owned(),
                "calls c".to_owned(),
                format!("result c: {unfinished}"),
            ]
        );
        assert_eq!(
            close_unanswered_calls(&mut history, UNFINISHED_CALL_RESULT),
            Vec::<String>::new(),
            "a valid history stays"
        );
    }
}
