//! The engine handle: one session, its conversations, and the serial task queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) use crate::sync::lock;

use coder_protocol::{
    AbortReason, ChatMessage, ConversationId, ConversationSummary, Event, EventMsg, HistoryEntry,
    InputItem, Mode, PermissionDecision, Preset, SessionId, TaskId,
};
use tokio::runtime::Handle;

use crate::config::Config;
use crate::conversation::{Conversation, ConversationSpec, history_entries};
use crate::documents::Documents;
use crate::error::{EngineError, ErrorKind};
use crate::events::{EventHub, EventReceiver};
use crate::mcp::{McpManager, ServerStatus};
use crate::model::{ActiveModel, ModelSettings, ToolSpec};
use crate::permissions::{MatrixRow, Permissions, describe};
use crate::prompt::PromptShapes;
use crate::sandbox::{SandboxEnforcement, SandboxPolicy};
use crate::scheduler::{Scheduler, TaskPlan, enqueue};
use crate::snapshot::{
    self, ConversationSnapshot, LiveConversations, Save, Saver, SessionSnapshot,
};
use crate::tools::{Tool, ToolRegistry};

/// One session of the engine. Cheap to clone; all clones drive the same session.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub config: Config,
    /// The session's model; conversations may name another of the same provider. `None`
    /// until a provider is configured: tasks cannot start then.
    pub model: Mutex<Option<Arc<ActiveModel>>>,
    pub tools: ToolRegistry,
    pub hub: EventHub,
    pub permissions: Permissions,
    /// The user's home directory, for the dangerous-command analysis.
    pub home: Option<std::path::PathBuf>,
    /// Where commands may write, when the kernel can confine them.
    pub sandbox: Option<Arc<SandboxPolicy>>,
    /// What the sandbox does not enforce on this machine (or that there is none), until
    /// the session's first task has said it, once.
    pub sandbox_warning: Mutex<Option<String>>,
    /// Configuration mistakes not reported yet: the first task reports them, when every
    /// front door is listening (events before a subscription are not kept).
    pub config_warnings: Mutex<Vec<String>>,
    pub runtime: Handle,
    pub scheduler: Scheduler,
    pub mcp: Arc<McpManager>,
    /// The editor's open files, when the session runs behind one; tasks take it when they
    /// start.
    pub documents: Mutex<Option<Arc<dyn Documents>>>,
    /// Saves the session snapshot.
    pub saver: Saver,
    /// The system prompt and tools conversations share.
    pub prompt_shapes: PromptShapes,
    conversations: Mutex<Conversations>,
}

/// Who opens a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opener {
    /// The engine API.
    Engine,
    /// A front door's `conversation/create`: the first one takes the root.
    FrontDoor,
    /// A conversation tool called in this conversation.
    Conversation(ConversationId),
}

struct Conversations {
    /// Names the snapshot; a resume takes over the resumed session's id.
    session_id: SessionId,
    root: ConversationId,
    /// Set once the root is spoken for: a front door's `conversation/create` took it, its
    /// mode was set, or a saved session was resumed into it. A create never replaces it then.
    root_taken: bool,
    table: HashMap<ConversationId, Arc<Mutex<Conversation>>>,
}

impl Engine {
    /// Creates a session with the built-in tools. Must be called inside a tokio runtime,
    /// whose handle the engine keeps for its tasks.
    pub fn new(config: Config) -> Result<Self, EngineError> {
        Self::with_tools(config, Vec::new())
    }

    /// Creates a session with the built-in tools plus `extra` tools of the embedder.
    pub fn with_tools(config: Config, extra: Vec<Arc<dyn Tool>>) -> Result<Self, EngineError> {
        let runtime = Handle::try_current().map_err(|_| EngineError::no_runtime())?;
        let mut tools = ToolRegistry::builtin();
        tools.extend(extra);
        let tools = ToolRegistry::new(tools).map_err(EngineError::invalid_tools)?;
        let model = match ModelSettings::from_config(&config) {
            Some(settings) => Some(Arc::new(ActiveModel::new(settings, &config)?)),
            None => None,
        };
        let (sandbox, sandbox_warning) = sandbox_for(&config);
        let root = Conversation::new(ConversationSpec::default(), config.mode);
        let root_id = root.id;
        let hub = EventHub::default();
        let reporter_hub = hub.clone();
        let mcp = {
            let _guard = runtime.enter();
            McpManager::start(
                config.mcp_servers.clone(),
                &config.workspace,
                crate::process::ToolEnv::for_config(&config),
                Arc::new(move |message| {
                    reporter_hub.emit(root_id, None, EventMsg::Warning { message });
                }),
            )
        };
        let config_workspace = config.workspace.clone();
        let save_sessions = config.save_sessions;
        let permissions = Permissions::new(
            config.preset,
            config.permission_rules.clone(),
            config.auto_approve,
        );
        Ok(Self {
            inner: Arc::new(Inner {
                permissions,
                home: std::env::var_os("HOME").map(std::path::PathBuf::from),
                sandbox,
                sandbox_warning: Mutex::new(sandbox_warning),
                config_warnings: Mutex::new(config.warnings.clone()),
                config,
                model: Mutex::new(model),
                tools,
                hub,
                runtime,
                scheduler: Scheduler::default(),
                mcp,
                documents: Mutex::new(None),
                saver: Saver::new(&config_workspace, save_sessions),
                prompt_shapes: PromptShapes::default(),
                conversations: Mutex::new(Conversations {
                    session_id: SessionId::new(),
                    root: root_id,
                    root_taken: false,
                    table: HashMap::from([(root_id, Arc::new(Mutex::new(root)))]),
                }),
            }),
        })
    }

    /// The session's id; its snapshot is `.coder/sessions/<id>.json` in the workspace.
    pub fn session_id(&self) -> SessionId {
        lock(&self.inner.conversations).session_id
    }

    /// Where the session's snapshot is saved, unless saving is switched off
    /// (`"saveSessions": false`).
    pub fn snapshot_path(&self) -> Option<std::path::PathBuf> {
        self.inner.saver.path(self.session_id())
    }

    /// Takes up a saved session: its id, its conversations and their histories, modes,
    /// todos and token totals replace this session's. Only a session that has not been used
    /// yet (nothing sent, no conversation created) can resume; returns how many messages
    /// were loaded.
    pub fn resume(&self, session: SessionId) -> Result<usize, EngineError> {
        let fail = |kind, reason: String| EngineError::resume(session, kind, reason);
        let path = self.inner.saver.path(session).ok_or_else(|| {
            fail(
                ErrorKind::InvalidParams,
                "saving sessions is switched off".to_owned(),
            )
        })?;
        let saved =
            snapshot::read(&path).map_err(|err| EngineError::resume(session, err.kind(), err))?;
        let mut conversations = lock(&self.inner.conversations);
        if !self.inner.untouched(&conversations) {
            return Err(fail(
                ErrorKind::Busy,
                "this session is already in use".to_owned(),
            ));
        }
        // A snapshot is data, not configuration: a mode saved in it (or edited into it) never
        // raises a conversation above the session's, which trusted configuration set.
        let ceiling = self.inner.config.mode;
        let mut clamped = Vec::new();
        let mut restore = |saved: ConversationSnapshot| {
            let mut conversation = saved.restore();
            let mode = narrower(conversation.mode, ceiling);
            if mode != conversation.mode {
                clamped.push((conversation.id, conversation.mode));
                conversation.mode = mode;
            }
            conversation
        };
        let root = restore(saved.root);
        let mut loaded = root.history.len();
        conversations.session_id = saved.session_id;
        conversations.root = root.id;
        conversations.root_taken = true;
        conversations.table = HashMap::from([(root.id, Arc::new(Mutex::new(root)))]);
        for other in saved.conversations {
            let other = restore(other);
            loaded += other.history.len();
            conversations
                .table
                .insert(other.id, Arc::new(Mutex::new(other)));
        }
        drop(conversations);
        for (conversation, saved_mode) in clamped {
            self.inner.hub.emit(
                conversation,
                None,
                EventMsg::Warning {
                    message: format!(
                        "the saved session has mode {} for this conversation, looser than the session's {}; it uses {}",
                        saved_mode.as_str(),
                        ceiling.as_str(),
                        ceiling.as_str()
                    ),
                },
            );
        }
        Ok(loaded)
    }

    /// Whether the workspace's own files (`.coder/config.json`, `.mcp.json`) were applied
    /// whole; when not, they could only narrow the person's settings (see
    /// [`crate::Config::untrusted_notice`]).
    pub fn workspace_trusted(&self) -> bool {
        self.inner.config.workspace_trusted
    }

    /// Records the workspace as a trusted folder in the user-level configuration file
    /// (`trustedFolders`), written atomically with the rest of the file kept. It applies from
    /// the next session: this one keeps the configuration it started with. Returns the
    /// folder recorded.
    pub fn trust_workspace(&self) -> Result<std::path::PathBuf, EngineError> {
        let user_file = self.inner.config.user_file.as_deref().ok_or_else(|| {
            EngineError::invalid_params(crate::trust::TrustError::NoUserFile.to_string())
        })?;
        crate::trust::trust_folder(user_file, &self.inner.config.workspace)
            .map_err(|err| EngineError::io(err.to_string()))
    }

    /// Writes the session snapshot now (it is also written when the session goes idle and
    /// when it shuts down).
    pub async fn save(&self) -> Result<(), EngineError> {
        self.inner.save(Save::Again).await
    }

    /// The conversation every session starts with; it cannot be destroyed.
    pub fn root_conversation(&self) -> ConversationId {
        lock(&self.inner.conversations).root
    }

    /// Creates a conversation. Whatever `spec` leaves out takes the defaults (the built-in
    /// prompt, all tools, the session's mode); a mode looser than the session's is clamped,
    /// with a `warning`.
    pub fn create_conversation(
        &self,
        spec: ConversationSpec,
    ) -> Result<ConversationId, EngineError> {
        self.inner.open_conversation(spec, Opener::Engine)
    }

    /// The front doors' `conversation/create`: as [`Engine::create_conversation`], except
    /// that the first conversation of a session not used yet (nothing sent, no other
    /// conversation) is the root itself, shaped by `spec`.
    pub fn conversation_create(
        &self,
        spec: ConversationSpec,
    ) -> Result<ConversationId, EngineError> {
        self.inner.open_conversation(spec, Opener::FrontDoor)
    }

    /// The session's conversations, oldest first.
    pub fn list_conversations(&self) -> Vec<ConversationSummary> {
        self.inner.list_conversations()
    }

    /// A conversation's messages without tool calls and outputs, the last `limit` of them.
    pub fn conversation_history(
        &self,
        conversation: ConversationId,
        limit: Option<usize>,
    ) -> Result<Vec<HistoryEntry>, EngineError> {
        let conv = self.inner.conversation(conversation)?;
        let entries = history_entries(&lock(&conv).history, limit);
        Ok(entries)
    }

    /// Destroys a conversation: a task running on it ends with
    /// `turn_aborted { reason: interrupted }`, its queued inputs are dropped. The root
    /// conversation cannot be destroyed.
    pub fn destroy_conversation(&self, conversation: ConversationId) -> Result<(), EngineError> {
        self.inner.destroy_conversation(conversation)
    }

    /// Every event from now on, in `seq` order, without loss.
    pub fn subscribe(&self) -> EventReceiver {
        self.inner.hub.subscribe()
    }

    /// Calls `observer` for every event, on the thread that emits it, before the engine goes
    /// on. It must be quick; it may call back into the engine (for example to interrupt).
    pub fn on_event(&self, observer: impl Fn(&Event) + Send + Sync + 'static) {
        self.inner.hub.observe(Arc::new(observer));
    }

    /// Queues `text` as input to `conversation` and returns the new task's id at once.
    /// The task starts when every task queued before it has ended.
    pub fn send(
        &self,
        conversation: ConversationId,
        text: impl Into<String>,
    ) -> Result<TaskId, EngineError> {
        self.send_items(conversation, vec![InputItem::Text { text: text.into() }])
    }

    /// Queues input items (text and images) to `conversation`; see [`Engine::send`].
    pub fn send_items(
        &self,
        conversation: ConversationId,
        items: Vec<InputItem>,
    ) -> Result<TaskId, EngineError> {
        self.inner.conversation(conversation)?;
        self.inner.check_prompt_size(&items)?;
        self.inner.require_model()?;
        let plan = TaskPlan::new(conversation, items, 0);
        let task_id = plan.task_id;
        enqueue(&self.inner, vec![plan]);
        Ok(task_id)
    }

    /// Queues input with base instructions for this one task only (a per-turn override, as
    /// compaction uses); the conversation's own instructions are left as they are.
    pub fn send_with_instructions(
        &self,
        conversation: ConversationId,
        items: Vec<InputItem>,
        base_instructions: String,
    ) -> Result<TaskId, EngineError> {
        self.inner.conversation(conversation)?;
        self.inner.check_prompt_size(&items)?;
        self.inner.require_model()?;
        let mut plan = TaskPlan::new(conversation, items, 0);
        plan.base_instructions_override = Some(base_instructions);
        let task_id = plan.task_id;
        enqueue(&self.inner, vec![plan]);
        Ok(task_id)
    }

    /// Interrupts the task running on `conversation`, if any. It ends at its next checkpoint
    /// with `turn_aborted { reason: interrupted }`. Returns whether a task was running.
    pub fn interrupt(&self, conversation: ConversationId) -> Result<bool, EngineError> {
        self.inner.conversation(conversation)?;
        Ok(self
            .inner
            .scheduler
            .stop(conversation, AbortReason::Interrupted))
    }

    /// The conversation's history as OpenAI Chat Completions messages.
    pub fn history(&self, conversation: ConversationId) -> Result<Vec<ChatMessage>, EngineError> {
        let conv = self.inner.conversation(conversation)?;
        let history = lock(&conv).history.clone();
        Ok(history)
    }

    /// The tools offered to the model, sorted by name.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.inner.tools.specs().to_vec()
    }

    /// Each MCP server's status, by name.
    /// What the OS sandbox enforces for this session's commands; `None` when commands run
    /// unconfined (`sandbox.enabled: false`, or nothing on this kernel confines them).
    pub fn sandbox_enforcement(&self) -> Option<SandboxEnforcement> {
        self.inner
            .sandbox
            .as_ref()
            .map(|policy| policy.enforcement().clone())
    }

    pub fn mcp_status(&self) -> std::collections::BTreeMap<String, ServerStatus> {
        self.inner.mcp.statuses()
    }

    /// Waits until every MCP server has started or failed.
    pub async fn mcp_ready(&self) {
        self.inner.mcp.settled().await;
    }

    /// Rebuilds a conversation's MCP tool view at its next task (after servers changed).
    pub fn refresh_mcp_view(&self, conversation: ConversationId) -> Result<(), EngineError> {
        let conv = self.inner.conversation(conversation)?;
        lock(&conv).mcp_view = None;
        Ok(())
    }

    /// Ends the session: interrupts the running task, drops queued ones, saves the snapshot
    /// a last time (nothing is saved after it), shuts the MCP servers down, waiting until
    /// their processes are gone, and removes the session's private temporary directory.
    pub async fn shutdown(&self) {
        if let Some((conversation, _)) = self.inner.scheduler.running() {
            self.inner.scheduler.clear();
            self.inner
                .scheduler
                .stop(conversation, AbortReason::Interrupted);
            // The task records its interruption on its way out; the snapshot should hold it.
            self.inner.scheduler.until_stopped().await;
        }
        if let Err(err) = self.inner.save(Save::Last).await {
            tracing::warn!("{err}");
        }
        self.inner.mcp.shutdown().await;
        // The process may exit without dropping the session: remove its temporary directory
        // now.
        if let Some(sandbox) = &self.inner.sandbox {
            sandbox.remove_temp_dir();
        }
    }

    /// What [`Engine::shutdown`] can do without waiting, for a caller that cannot await (a
    /// `Drop`, a test guard, a finalizer): interrupts the running task and drops queued
    /// ones, stops saving (a write in flight finishes first; no snapshot is written after),
    /// and removes the session's private temporary directory. It does not wait for the task
    /// to record its interruption nor for MCP servers to exit. Call it before removing the
    /// workspace, so no late snapshot lands in it.
    pub fn shutdown_now(&self) {
        if let Some((conversation, _)) = self.inner.scheduler.running() {
            self.inner.scheduler.clear();
            self.inner
                .scheduler
                .stop(conversation, AbortReason::Interrupted);
        }
        self.inner.saver.close();
        if let Some(sandbox) = &self.inner.sandbox {
            sandbox.remove_temp_dir();
        }
    }

    /// Answers a `permission_requested` event.
    pub fn respond_permission(
        &self,
        request_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), EngineError> {
        if self.inner.permissions.respond(request_id, decision) {
            Ok(())
        } else {
            Err(EngineError::unknown_permission_request(request_id))
        }
    }

    /// Denies every open permission request, for a front door whose person went away.
    pub fn deny_pending_permissions(&self) {
        self.inner.permissions.deny_all();
    }

    /// Switches the mode of a conversation; it applies from the next tool call.
    pub fn set_mode(&self, conversation: ConversationId, mode: Mode) -> Result<(), EngineError> {
        let conv = self.inner.conversation(conversation)?;
        lock(&conv).mode = mode;
        let mut conversations = lock(&self.inner.conversations);
        if conversations.root == conversation {
            conversations.root_taken = true;
        }
        Ok(())
    }

    pub fn mode(&self, conversation: ConversationId) -> Result<Mode, EngineError> {
        let conv = self.inner.conversation(conversation)?;
        let mode = lock(&conv).mode;
        Ok(mode)
    }

    /// Puts the editor's open files over the disk for the file tools: `read` and `grep` see
    /// their text, and `write`, `edit` and `apply_patch` hand changes to them to the editor.
    /// Tasks that start afterwards use it; a running task keeps what it started with.
    pub fn set_documents(&self, documents: Arc<dyn Documents>) {
        *lock(&self.inner.documents) = Some(documents);
    }

    /// Switches the session's permission preset.
    pub fn set_preset(&self, preset: Preset) {
        *lock(&self.inner.permissions.preset) = preset;
    }

    /// The permission matrix in force for a conversation, for people to read.
    pub fn permission_matrix(
        &self,
        conversation: ConversationId,
    ) -> Result<Vec<MatrixRow>, EngineError> {
        let mode = self.mode(conversation)?;
        Ok(describe(
            mode,
            self.inner.permissions.preset(),
            &self.inner.permissions.rules,
        ))
    }

    /// The conversation and task running now, if any.
    pub fn running_task(&self) -> Option<(ConversationId, TaskId)> {
        self.inner.scheduler.running()
    }

    /// How many tasks wait in the queue.
    pub fn queued_tasks(&self) -> usize {
        self.inner.scheduler.pending()
    }

    /// The model this session talks to (the configured name when no provider is set).
    pub fn model(&self) -> String {
        self.inner.model_name()
    }

    /// The session's model and provider settings; `None` until a provider is configured.
    pub fn model_settings(&self) -> Option<ModelSettings> {
        lock(&self.inner.model)
            .as_ref()
            .map(|model| model.settings.clone())
    }

    /// Switches the session's model (and provider): tasks that start afterwards use it;
    /// conversations created with a model of their own keep it.
    pub fn set_model(&self, settings: ModelSettings) -> Result<(), EngineError> {
        let active = ActiveModel::new(settings, &self.inner.config)?;
        *lock(&self.inner.model) = Some(Arc::new(active));
        Ok(())
    }
}

impl Inner {
    /// The session as a snapshot: the root conversation and the others, oldest first. The
    /// others are serialized from the live conversations when the snapshot is written.
    fn snapshot(&self) -> (u64, SessionSnapshot<LiveConversations>) {
        let model = self.model_name();
        let conversations = lock(&self.conversations);
        let ticket = self.saver.ticket();
        let mut others: Vec<_> = conversations
            .table
            .iter()
            .filter(|(id, _)| **id != conversations.root)
            .collect();
        others.sort_by_key(|(id, _)| **id);
        let root = conversations
            .table
            .get(&conversations.root)
            .map(|root| ConversationSnapshot::of(&lock(root), &model));
        let root = root.unwrap_or_else(|| {
            let empty = Conversation::new(ConversationSpec::default(), self.config.mode);
            ConversationSnapshot::of(&empty, &model)
        });
        let others = LiveConversations {
            model,
            conversations: others
                .into_iter()
                .map(|(_, conversation)| conversation.clone())
                .collect(),
        };
        let snapshot = snapshot::snapshot(conversations.session_id, root, others);
        (ticket, snapshot)
    }

    /// Writes the session snapshot, when saving is on.
    pub(crate) async fn save(&self, save: Save) -> Result<(), EngineError> {
        if self
            .saver
            .path(lock(&self.conversations).session_id)
            .is_none()
        {
            return Ok(());
        }
        let (ticket, snapshot) = self.snapshot();
        self.saver.write(ticket, snapshot, save).await
    }

    /// Saves after a task when the last save is old enough, and reports a failure as a
    /// warning of that conversation.
    pub(crate) async fn save_if_due(&self, conversation: ConversationId, force: bool) {
        if !force && !self.saver.due() {
            return;
        }
        if let Err(err) = self.save(Save::Again).await {
            let message = err.to_string();
            self.hub
                .emit(conversation, None, EventMsg::Warning { message });
        }
    }

    /// The session's model name: the active model's, else the configured one.
    fn model_name(&self) -> String {
        lock(&self.model).as_ref().map_or_else(
            || self.config.model.clone(),
            |model| model.settings.model.clone(),
        )
    }

    /// The session's model, or [`EngineError::NoProvider`].
    pub(crate) fn require_model(&self) -> Result<Arc<ActiveModel>, EngineError> {
        lock(&self.model)
            .clone()
            .ok_or_else(EngineError::no_provider)
    }

    pub(crate) fn conversation(
        &self,
        id: ConversationId,
    ) -> Result<Arc<Mutex<Conversation>>, EngineError> {
        lock(&self.conversations)
            .table
            .get(&id)
            .cloned()
            .ok_or_else(|| EngineError::unknown_conversation(id))
    }

    /// Refuses an input whose text items together exceed `maxPromptBytes`.
    pub(crate) fn check_prompt_size(&self, items: &[InputItem]) -> Result<(), EngineError> {
        let size = items
            .iter()
            .map(|item| match item {
                InputItem::Text { text } => text.len(),
                InputItem::Image { .. } => 0,
            })
            .sum();
        let limit = self.config.max_prompt_bytes;
        if size > limit {
            return Err(EngineError::prompt_too_large(size, limit));
        }
        Ok(())
    }

    pub(crate) fn is_root(&self, id: ConversationId) -> bool {
        lock(&self.conversations).root == id
    }

    /// Whether the session is as it started: the root conversation alone, not taken,
    /// nothing sent.
    fn untouched(&self, conversations: &Conversations) -> bool {
        !conversations.root_taken
            && conversations.table.len() == 1
            && self.scheduler.running().is_none()
            && self.scheduler.pending() == 0
            && conversations
                .table
                .values()
                .all(|conversation| lock(conversation).history.is_empty())
    }

    /// Opens a conversation from `spec`; opened by a conversation tool, what `spec` leaves
    /// out is inherited from the calling conversation, otherwise from the defaults.
    pub(crate) fn open_conversation(
        &self,
        spec: ConversationSpec,
        opener: Opener,
    ) -> Result<ConversationId, EngineError> {
        let ceiling = self.config.mode;
        let (spec, inherited_mode) = match opener {
            Opener::Conversation(parent) => {
                let parent = self.conversation(parent)?;
                let parent = lock(&parent);
                (spec.inherit(&parent.context), parent.mode)
            }
            Opener::Engine | Opener::FrontDoor => (spec, ceiling),
        };
        let (spec, notes) = spec.resolve(&self.config.workspace)?;
        let spec_wants_no_sandbox = spec.sandbox == Some(false);
        self.check_allowlist(spec.mcp_allowlist.as_deref())?;
        let wanted = spec.mode.unwrap_or(inherited_mode);
        let mode = narrower(wanted, ceiling);
        let mut conversation = Conversation::new(spec, mode);
        let mut conversations = lock(&self.conversations);
        if opener == Opener::FrontDoor && self.untouched(&conversations) {
            // The first conversation a front door creates is the root, shaped by its spec.
            conversation.id = conversations.root;
            conversations.root_taken = true;
        }
        let id = conversation.id;
        let limit = self.config.max_conversations;
        if !conversations.table.contains_key(&id) && conversations.table.len() >= limit {
            return Err(EngineError::too_many_conversations(limit));
        }
        conversations
            .table
            .insert(id, Arc::new(Mutex::new(conversation)));
        drop(conversations);
        for message in notes {
            self.hub.emit(id, None, EventMsg::Warning { message });
        }
        if spec_wants_no_sandbox && self.sandbox.is_some() {
            self.hub.emit(
                id,
                None,
                EventMsg::Warning {
                    message: "a conversation cannot turn off the session's sandbox; its commands stay confined"
                        .to_owned(),
                },
            );
        }
        if mode != wanted {
            self.hub.emit(
                id,
                None,
                EventMsg::Warning {
                    message: format!(
                        "mode {} is looser than the session's {}; the conversation uses {}",
                        wanted.as_str(),
                        ceiling.as_str(),
                        mode.as_str()
                    ),
                },
            );
        }
        Ok(id)
    }

    /// Once the MCP servers settled, an allowlist may only name tools they offer.
    fn check_allowlist(&self, allowlist: Option<&[String]>) -> Result<(), EngineError> {
        let Some(allowlist) = allowlist else {
            return Ok(());
        };
        if !*self.mcp.is_settled() {
            return Ok(());
        }
        let (_, problems) = crate::mcp::view(&self.mcp, Some(allowlist));
        match problems
            .into_iter()
            .find(|p| p.starts_with("no MCP server offers"))
        {
            Some(problem) => Err(EngineError::invalid_params(problem)),
            None => Ok(()),
        }
    }

    pub(crate) fn list_conversations(&self) -> Vec<ConversationSummary> {
        let conversations = lock(&self.conversations);
        let mut list: Vec<ConversationSummary> = conversations
            .table
            .values()
            .map(|conv| {
                let conv = lock(conv);
                ConversationSummary {
                    id: conv.id,
                    message_count: conv.history.len(),
                    last_active_at: humantime::format_rfc3339_millis(conv.last_active_at)
                        .to_string(),
                    is_root: conv.id == conversations.root,
                }
            })
            .collect();
        list.sort_by_key(|summary| summary.id);
        list
    }

    pub(crate) fn destroy_conversation(&self, id: ConversationId) -> Result<(), EngineError> {
        if self.is_root(id) {
            return Err(EngineError::root_conversation());
        }
        if lock(&self.conversations).table.remove(&id).is_none() {
            return Err(EngineError::unknown_conversation(id));
        }
        self.scheduler.forget(id);
        self.scheduler.stop(id, AbortReason::Interrupted);
        Ok(())
    }
}

/// The stricter of two modes: conversations may narrow the session's mode, never widen it.
fn narrower(wanted: Mode, ceiling: Mode) -> Mode {
    let rank = |mode: Mode| Mode::ALL.iter().position(|m| *m == mode).unwrap_or(0);
    if rank(wanted) > rank(ceiling) {
        ceiling
    } else {
        wanted
    }
}

/// The sandbox policy of a session: the workspace, configured roots and a private temporary
/// directory (made at the first confined command), and the `warning` its first task gives:
/// what this machine does not enforce, or that nothing confines commands.
fn sandbox_for(config: &Config) -> (Option<Arc<SandboxPolicy>>, Option<String>) {
    if !config.sandbox {
        return (None, None);
    }
    let enforcement = SandboxEnforcement::detect(config.sandbox_network);
    if !enforcement.is_enforced() {
        return (
            None,
            Some(
                "no OS sandbox is available on this system: commands run without write \
                 confinement (file tools still refuse paths outside the workspace)"
                    .to_owned(),
            ),
        );
    }
    tracing::info!("sandbox: {}", enforcement.summary());
    let warning = enforcement.warning();
    let policy = SandboxPolicy::new(
        &config.workspace,
        &config.writable_roots,
        config.sandbox_network,
        enforcement,
    );
    (Some(Arc::new(policy)), warning)
}
