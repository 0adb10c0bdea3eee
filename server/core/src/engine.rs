//! The engine's public facade: one [`Engine`] is one session. Each method delegates to
//! [`crate::session::Session`], where the conversations, the task driver and the turns live;
//! the facade decides nothing of its own.

use std::sync::Arc;

use coder_protocol::methods::DestroyResult;
use coder_protocol::{
    AbortReason, ChatMessage, ConversationId, ConversationSummary, Event, HistoryEntry, InputItem,
    Mode, PermissionDecision, Preset, SessionId, TaskId,
};

use crate::config::Config;
use crate::conversation::{ContextChange, ConversationSpec};
use crate::documents::Documents;
use crate::error::EngineError;
use crate::events::EventReceiver;
use crate::mcp::ServerStatus;
use crate::model::{ModelSettings, ToolSpec};
use crate::permissions::{MatrixRow, describe};
use crate::sandbox::SandboxEnforcement;
use crate::session::{Opener, Replay, Session};
use crate::snapshot::Save;
use crate::tools::Tool;

/// One session of the engine. Cheap to clone; all clones drive the same session.
#[derive(Clone)]
pub struct Engine {
    session: Arc<Session>,
}

impl Engine {
    /// Creates a session with the built-in tools. Must be called inside a tokio runtime,
    /// whose handle the engine keeps for its tasks.
    pub fn new(config: Config) -> Result<Self, EngineError> {
        Self::with_tools(config, Vec::new())
    }

    /// Creates a session with the built-in tools plus `extra` tools of the embedder.
    pub fn with_tools(config: Config, extra: Vec<Arc<dyn Tool>>) -> Result<Self, EngineError> {
        Ok(Self {
            session: Session::new(config, extra)?,
        })
    }

    /// The session's id; its snapshot is `.coder/sessions/<id>.json` in the workspace.
    pub fn session_id(&self) -> SessionId {
        self.session.session_id()
    }

    /// Where the session's snapshot is saved, unless saving is switched off
    /// (`"saveSessions": false`).
    pub fn snapshot_path(&self) -> Option<std::path::PathBuf> {
        self.session.snapshot_path()
    }

    /// The sessions saved in the workspace (`.coder/sessions/`), newest first, for a picker:
    /// id, when saved, model, conversation and message counts, and the first thing asked.
    /// Files that are not snapshots are left out.
    pub fn saved_sessions(&self) -> Vec<coder_protocol::methods::SessionInfo> {
        self.session.saved_sessions()
    }

    /// Deletes a saved session of the workspace (its snapshot and journal); `false` when
    /// there was none. The session running now is `busy`.
    pub fn delete_saved_session(&self, session: SessionId) -> Result<bool, EngineError> {
        self.session.delete_saved_session(session)
    }

    /// Deletes every saved session of the workspace but the one running; returns how many.
    pub fn delete_saved_sessions(&self) -> Result<usize, EngineError> {
        self.session.delete_saved_sessions()
    }

    /// Takes up a saved session: its id, its conversations and their histories, modes,
    /// todos and token totals replace this session's; returns how many messages were
    /// loaded. A session that was used is left on disk as it is (its snapshot, and its
    /// journal holding every change since) and can be taken up later;
    /// `/undo` starts over with the next turn.
    ///
    /// A resume that fails leaves this session as it was (usable, its own id, nothing of
    /// the file loaded) and says why by its kind: `busy` while a task runs or waits (or the
    /// last one is being saved), `invalid_params` for the session itself, `not_found` for
    /// an id with no snapshot, `invalid_params` for a file that is not a session snapshot
    /// (corrupt, or written by a newer coder), `io` for one that cannot be read, and
    /// `invalid_params` when saving sessions is switched off.
    pub fn resume(&self, session: SessionId) -> Result<usize, EngineError> {
        self.session.resume(session)
    }

    /// The points of `conversation`, oldest first: each input a person sent it that its
    /// history still holds (a compaction or a clear takes earlier ones away), by its place
    /// among the conversation's inputs (the same after a resume), with its first line.
    pub fn rewind_points(
        &self,
        conversation: ConversationId,
    ) -> Result<Vec<coder_protocol::methods::RewindPoint>, EngineError> {
        self.session.points(conversation)
    }

    /// Takes `conversation` back to before `point`: the files the engine's turns of that
    /// conversation changed since go back to what they held then (files changed since by
    /// the person, or by another conversation's later turns, are kept and named), the
    /// history is cut before that input and the snapshot written; the model's next
    /// request carries the history as it is left. With `dry_run`, says what it would do
    /// and changes nothing. Outside a git repository only the conversation goes back, and
    /// the answer says the files were not recorded. `busy` while a task runs or waits.
    pub async fn rewind(
        &self,
        conversation: ConversationId,
        point: usize,
        dry_run: bool,
    ) -> Result<coder_protocol::methods::RewindResult, EngineError> {
        self.session
            .rewind(conversation, point, dry_run, true)
            .await
    }

    /// [`Engine::rewind`] of the history alone: the conversation goes back to before
    /// `point` and every file stays as it is.
    pub async fn rewind_history(
        &self,
        conversation: ConversationId,
        point: usize,
        dry_run: bool,
    ) -> Result<coder_protocol::methods::RewindResult, EngineError> {
        self.session
            .rewind(conversation, point, dry_run, false)
            .await
    }

    /// Starts a new session from `point` of `conversation`: a new saved session (its own id
    /// and file) holds this one's conversations, that one cut before the point, and this
    /// engine goes on in it, as after [`Engine::resume`]. The session it leaves is saved
    /// first and stays on disk as it is; no file of the workspace is touched. `busy` while
    /// a task runs or waits; `invalid_params` when saving sessions is switched off.
    pub async fn fork(
        &self,
        conversation: ConversationId,
        point: usize,
    ) -> Result<coder_protocol::methods::ForkResult, EngineError> {
        self.session.fork(conversation, point).await
    }

    /// Whether the workspace's own files (`.coder/config.json`, `.mcp.json`) were applied
    /// whole; when not, they could only narrow the person's settings (see
    /// [`crate::Config::untrusted_notice`]).
    pub fn workspace_trusted(&self) -> bool {
        self.session.config().workspace_trusted
    }

    /// Records the workspace as a trusted folder in the user-level configuration file
    /// (`trustedFolders`), written atomically with the rest of the file kept. It applies from
    /// the next session: this one keeps the configuration it started with. Returns the
    /// folder recorded.
    pub fn trust_workspace(&self) -> Result<std::path::PathBuf, EngineError> {
        let config = self.session.config();
        let user_file = config.user_file.as_deref().ok_or_else(|| {
            EngineError::invalid_params(crate::trust::TrustError::NoUserFile.to_string())
        })?;
        crate::trust::trust_folder(user_file, &config.workspace)
            .map_err(|err| EngineError::io(err.to_string()))
    }

    /// Writes the session snapshot now (it is also written once the session has stayed idle
    /// a moment, and when it shuts down).
    pub async fn save(&self) -> Result<(), EngineError> {
        self.session.save(Save::Again).await
    }

    /// The permission rules a person recorded with "always" for this project (kept in their
    /// own state, applied by every door), oldest first.
    pub fn permission_rules(&self) -> Vec<coder_protocol::PermissionRule> {
        self.session.permission_rules()
    }

    /// Removes one recorded permission rule; whether there was one of that id.
    pub fn remove_permission_rule(&self, id: &str) -> Result<bool, EngineError> {
        self.session.remove_permission_rule(id)
    }

    /// The rules files the system prompt holds, as the session holds them (read again when
    /// they change on disk), in the order the prompt tells them (the nearest last).
    pub fn rules(&self) -> Vec<coder_protocol::methods::RuleInfo> {
        self.session.rules()
    }

    /// Calls `hook` with the paths of each batch of changes the session's watcher sees
    /// (rules, skills, commands, configuration, `.mcp.json` and the folders holding them;
    /// see `docs/architecture.md`, "Watching the workspace"), on the reload loop, before the
    /// session reloads them. It must be quick. An index of the workspace's files can drop
    /// what it knows of these paths here.
    pub fn on_files_changed(&self, hook: impl Fn(&[std::path::PathBuf]) + Send + Sync + 'static) {
        self.session.on_files_changed(Arc::new(hook));
    }

    /// The conversation every session starts with; it cannot be destroyed.
    pub fn root_conversation(&self) -> ConversationId {
        self.session.root()
    }

    /// Creates a conversation. Whatever `spec` leaves out takes the defaults (the built-in
    /// prompt, all tools, the session's mode); a mode looser than the session's is clamped,
    /// with a `warning`.
    pub fn create_conversation(
        &self,
        spec: ConversationSpec,
    ) -> Result<ConversationId, EngineError> {
        self.session.open_conversation(spec, Opener::Engine)
    }

    /// The front doors' `conversation/create`: as [`Engine::create_conversation`], except
    /// that the first conversation of a session not used yet (nothing sent, no other
    /// conversation) is the root itself, shaped by `spec`.
    pub fn conversation_create(
        &self,
        spec: ConversationSpec,
    ) -> Result<ConversationId, EngineError> {
        self.session.open_conversation(spec, Opener::FrontDoor)
    }

    /// Changes a conversation's context (seed 003's `SetConversationContext`): base and user
    /// instructions, MCP allowlist (checked as at creation), tool preferences (a tool the
    /// session disabled stays hidden, with a `warning`), or builds its MCP view again. Its
    /// history keeps its order: new user instructions become a user message after it, at
    /// once, or, while a task runs on the conversation (or a continuation waits to answer
    /// its call), at the start of its next task. A running task keeps the context it
    /// started with; the next one has the new one. Nothing changes when any part is
    /// refused.
    pub fn set_context(
        &self,
        conversation: ConversationId,
        change: ContextChange,
    ) -> Result<(), EngineError> {
        self.session.set_context(conversation, change)
    }

    /// The session's conversations, oldest first.
    pub fn list_conversations(&self) -> Vec<ConversationSummary> {
        self.session.list_conversations()
    }

    /// A conversation's messages without tool calls and outputs, the last `limit` of them.
    pub fn conversation_history(
        &self,
        conversation: ConversationId,
        limit: Option<usize>,
    ) -> Result<Vec<HistoryEntry>, EngineError> {
        self.session.history_entries(conversation, limit)
    }

    /// Destroys a conversation: a task running on it ends with
    /// `turn_aborted { reason: interrupted }`, its queued inputs are dropped. The root
    /// conversation cannot be destroyed.
    pub fn destroy_conversation(&self, conversation: ConversationId) -> Result<(), EngineError> {
        self.session.destroy_conversation(conversation)
    }

    /// The front doors' `conversation/destroy`: as [`Engine::destroy_conversation`], with
    /// the answer shaped for the wire. Every refusal of the engine (the root conversation,
    /// an unknown id) is `{ok: false, reason}`, never an error: a client asked for an
    /// outcome, and "it could not be destroyed" is one. Only a request the door cannot
    /// read (an id that is not a UUID) fails, in the door.
    pub fn conversation_destroy(&self, conversation: ConversationId) -> DestroyResult {
        match self.destroy_conversation(conversation) {
            Ok(()) => DestroyResult {
                ok: true,
                reason: None,
            },
            Err(err) => DestroyResult {
                ok: false,
                reason: Some(err.to_string()),
            },
        }
    }

    /// Every event from now on, in `seq` order, without loss.
    pub fn subscribe(&self) -> EventReceiver {
        self.session.hub().subscribe()
    }

    /// Every event from `from_seq` on, for a client that reconnects or attaches late: what
    /// it missed, then, from the receiver, every later event, in `seq` order, taken under
    /// the lock that numbers events (no gap, no event twice). What it missed comes from the
    /// engine's buffer of recent events (the last 100,000, at most about 64 MiB), or, when
    /// `from_seq` is older than the oldest kept, as a snapshot of the session. A `from_seq`
    /// past the next event's is `invalid_params`. `seq` never starts again within one
    /// engine: after a resume it goes on, and the events from before it are no longer kept.
    pub fn subscribe_from(&self, from_seq: u64) -> Result<(Replay, EventReceiver), EngineError> {
        match self.session.replay(from_seq, true)? {
            (replay, Some(receiver)) => Ok((replay, receiver)),
            (_, None) => Err(EngineError::internal("the event hub gave no receiver")),
        }
    }

    /// What [`Engine::subscribe_from`] replays, for a client that already has the live
    /// stream (a front door's own subscriber): the events from `from_seq` up to
    /// [`Replay::next_seq`], or a snapshot.
    pub fn replay_from(&self, from_seq: u64) -> Result<Replay, EngineError> {
        Ok(self.session.replay(from_seq, false)?.0)
    }

    /// Calls `observer` for every event, on the thread that emits it, before the engine goes
    /// on. It must be quick; it may call back into the engine (for example to interrupt).
    pub fn on_event(&self, observer: impl Fn(&Event) + Send + Sync + 'static) {
        self.session.hub().observe(Arc::new(observer));
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
        self.session.send(conversation, items, None)
    }

    /// Steers input into the task running on `conversation`: its model gets it at the next
    /// checkpoint (after the current tool calls), without the task ending, and an
    /// `input_receipt` says `steered` with the step. When no task runs there (or it ends
    /// first), the input is queued as [`Engine::send_items`] queues it, under the same id.
    /// Returns the input's id and whether a task of the conversation was running.
    pub fn steer(
        &self,
        conversation: ConversationId,
        items: Vec<InputItem>,
    ) -> Result<(TaskId, bool), EngineError> {
        self.session.steer(conversation, items)
    }

    /// Withdraws input no model has read yet: queued behind the running task (it ends with
    /// `task_dropped`), or waiting to be steered. Its `input_receipt` says `dropped`.
    /// Returns whether there was such input.
    pub fn withdraw_input(&self, input: TaskId) -> bool {
        self.session.withdraw_input(input)
    }

    /// Takes what a person typed into `conversation`, as seed 001's `processUserInput`
    /// does: a built-in `/command` runs (see [`Engine::command`]); anything else, a custom
    /// command included, is queued as [`Engine::send_items`] queues it. The result holds
    /// the command's text for people (empty for plain input) and the task it started.
    pub fn input(
        &self,
        conversation: ConversationId,
        items: Vec<InputItem>,
    ) -> Result<coder_protocol::methods::CommandResult, EngineError> {
        self.session.input(conversation, items)
    }

    /// Queues input with base instructions for this one task only (a per-turn override, as
    /// compaction uses); the conversation's own instructions are left as they are.
    pub fn send_with_instructions(
        &self,
        conversation: ConversationId,
        items: Vec<InputItem>,
        base_instructions: String,
    ) -> Result<TaskId, EngineError> {
        self.session
            .send(conversation, items, Some(base_instructions))
    }

    /// Runs a slash command in `conversation` (seed 004 section 4): `/help`, `/model`,
    /// `/permissions`, `/mode` (and `/plan`, `/default`, `/auto-edit`, `/yolo`), `/tools`,
    /// `/skills`, `/todos`, `/new`, `/resume`, `/compact`, `/diff`, or a custom command,
    /// which becomes the conversation's input. Returns the text for people and the task or
    /// conversation it started; an unknown command is an error and reaches no model.
    pub fn command(
        &self,
        conversation: ConversationId,
        command: &str,
    ) -> Result<coder_protocol::methods::CommandResult, EngineError> {
        self.session.command(conversation, command)
    }

    /// Queues a task that compacts `conversation`'s history now (seed 001): the model
    /// summarises its older part, which is archived; `compacted` and `token_count` report
    /// it. Returns the task's id; the task waits for the tasks queued before it.
    pub fn compact(&self, conversation: ConversationId) -> Result<TaskId, EngineError> {
        self.session.compact(conversation, None)
    }

    /// What compactions of `conversation` replaced, one segment per compaction, oldest
    /// first: nothing a compaction removes from the history is lost.
    pub fn archive(
        &self,
        conversation: ConversationId,
    ) -> Result<Vec<coder_protocol::ArchivedSegment>, EngineError> {
        self.session.archive(conversation)
    }

    /// Interrupts the task running on `conversation`, if any. It ends at its next checkpoint
    /// with `turn_aborted { reason: interrupted }`. Returns whether a task was running.
    pub fn interrupt(&self, conversation: ConversationId) -> Result<bool, EngineError> {
        self.session.conversation(conversation)?;
        Ok(self
            .session
            .driver()
            .stop(conversation, AbortReason::Interrupted))
    }

    /// Interrupts the session's work, whatever conversation it is on: the running task ends
    /// with `turn_aborted { reason: interrupted }`, and the continuations its user input's
    /// handoffs queued are dropped (each pending `conv_create`/`conv_send` call gets a
    /// result saying it was interrupted). Input queued since stays queued. Returns whether a
    /// task was running.
    pub fn interrupt_session(&self) -> bool {
        self.session.driver().interrupt_chain()
    }

    /// The conversation's history as OpenAI Chat Completions messages.
    pub fn history(&self, conversation: ConversationId) -> Result<Vec<ChatMessage>, EngineError> {
        self.session.history(conversation)
    }

    /// The tools offered to the model, sorted by name.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.session.tools().specs().to_vec()
    }

    /// The slash commands a person can type: the built-in ones, then the custom ones
    /// (`.coder/commands/<name>.md` of the workspace, then of the user-level folder; the
    /// workspace's wins a name), read from disk now.
    pub fn commands(&self) -> Vec<coder_protocol::methods::CommandInfo> {
        self.session.commands()
    }

    /// The skills the model is told about, as found when the session started.
    pub fn skills(&self) -> Vec<coder_protocol::methods::SkillInfo> {
        self.session.skills()
    }

    /// The choices for built-in `/command`'s argument that start with `typed`, in the order
    /// a completion menu shows them: the modes for `/mode`, the presets for `/permissions`,
    /// the models for `/model` (the one in use first), the workspace's other saved sessions
    /// for `/resume` (newest first); none for a command without choices.
    pub fn complete_argument(&self, command: &str, typed: &str) -> Vec<crate::ArgumentChoice> {
        self.session.complete_argument(command, typed)
    }

    /// Workspace paths matching `query`, what a person typed after `@`, best first, at most
    /// `limit` (clamped to 1..=1000), for a completion menu (see [`crate::completion`] for
    /// the rules). Never fails: a query that matches nothing, or that names something
    /// outside the workspace, gets no matches.
    pub fn complete_paths(
        &self,
        query: &str,
        limit: usize,
    ) -> Vec<coder_protocol::methods::PathMatch> {
        self.session.complete_paths(query, limit)
    }

    /// What the OS sandbox enforces for this session's commands; `None` when commands run
    /// unconfined (`sandbox.enabled: false`, or nothing on this kernel confines them).
    pub fn sandbox_enforcement(&self) -> Option<SandboxEnforcement> {
        self.session.sandbox_enforcement()
    }

    /// Each MCP server's status, by name.
    pub fn mcp_status(&self) -> std::collections::BTreeMap<String, ServerStatus> {
        self.session.mcp().statuses()
    }

    /// Waits until every MCP server has started or failed.
    pub async fn mcp_ready(&self) {
        self.session.mcp().settled().await;
    }

    /// What holds the MCP servers now: the MCP tools of the conversations' views and of
    /// running tasks, and the calls under way (for checks that closed conversations leave
    /// nothing behind).
    pub fn mcp_usage(&self) -> crate::mcp::McpUsage {
        self.session.mcp_usage()
    }

    /// Builds a conversation's MCP tool view again now, from the servers' tools as they
    /// are; its next task offers them.
    pub fn refresh_mcp_view(&self, conversation: ConversationId) -> Result<(), EngineError> {
        self.session.refresh_mcp_view(conversation)
    }

    /// Ends the session; the one way every door ends it. In order: open permission requests
    /// are denied (the model reads that the session ended), the running task is
    /// interrupted, queued tasks are dropped (a pending `conv_create`/`conv_send` call gets a
    /// result saying so), the snapshot is saved a last time (nothing is saved after it), the
    /// MCP servers are shut down, waiting until their processes are gone, and the session's
    /// private temporary directory is removed. Calling it again, or concurrently, is safe:
    /// the later call waits until the first has finished.
    pub async fn shutdown(&self) {
        self.session.shutdown().await;
    }

    /// What [`Engine::shutdown`] can do without waiting, for a caller that cannot await (a
    /// `Drop`, a test guard, a finalizer) or will not (a second Ctrl-C: the process exits
    /// right after): denies open permission requests, interrupts the running task and
    /// drops queued ones, kills the running task's command processes at once (and, in a
    /// child subreaper, the processes that escaped their call), stops saving (a write in
    /// flight finishes first; no snapshot is written after), kills the MCP server
    /// processes (SIGKILL, no graceful stop) and removes the session's private temporary
    /// directory. It does not wait for the task to record its interruption. Call it before
    /// removing the workspace, so no late snapshot lands in it.
    pub fn shutdown_now(&self) {
        self.session.shutdown_now();
    }

    /// Answers a `permission_requested` event.
    pub fn respond_permission(
        &self,
        request_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), EngineError> {
        if self.session.permissions().respond(request_id, decision) {
            Ok(())
        } else {
            Err(EngineError::unknown_permission_request(request_id))
        }
    }

    /// Withdraws a `permission_requested` event for a front door with nobody to ask (`coder
    /// exec` without a terminal): the call is not run and the model reads `reason`. A plan of
    /// `exit_plan_mode` withdrawn so is not approved, and becomes the task's answer.
    pub fn withdraw_permission(&self, request_id: &str, reason: &str) -> Result<(), EngineError> {
        if self.session.permissions().withdraw(request_id, reason) {
            Ok(())
        } else {
            Err(EngineError::unknown_permission_request(request_id))
        }
    }

    /// Denies every open permission request, for a front door whose person went away while
    /// the session goes on ([`Engine::shutdown`] denies them itself).
    pub fn deny_pending_permissions(&self) {
        self.session.permissions().deny_all();
    }

    /// Switches the mode of a conversation, narrowed to the session's configured mode with a
    /// `warning` (as `/mode` is); it applies from the next tool call.
    pub fn set_mode(&self, conversation: ConversationId, mode: Mode) -> Result<(), EngineError> {
        self.session.set_mode(conversation, mode)
    }

    /// The mode a key that cycles the modes switches `conversation` to (default, auto-edit,
    /// yolo, plan, within the configured mode).
    pub fn next_mode(&self, conversation: ConversationId) -> Result<Mode, EngineError> {
        self.session.next_mode(conversation)
    }

    /// The conversation's context as last measured, in tokens: what its last request held,
    /// as stored in the snapshot for a resumed session; 0 before the first turn.
    pub fn context_tokens(&self, conversation: ConversationId) -> Result<u64, EngineError> {
        self.session.context_tokens(conversation)
    }

    /// The conversation's mode.
    pub fn mode(&self, conversation: ConversationId) -> Result<Mode, EngineError> {
        self.session.mode(conversation)
    }

    /// Puts the editor's open files over the disk for the file tools: `read` and `grep` see
    /// their text, and `write`, `edit` and `apply_patch` hand changes to them to the editor.
    /// Tasks that start afterwards use it; a running task keeps what it started with.
    pub fn set_documents(&self, documents: Arc<dyn Documents>) {
        self.session.set_documents(documents);
    }

    /// The session's permission preset.
    pub fn preset(&self) -> Preset {
        self.session.permissions().preset()
    }

    /// Switches the session's permission preset.
    pub fn set_preset(&self, preset: Preset) {
        self.session.permissions().set_preset(preset);
    }

    /// The permission matrix in force for a conversation, for people to read.
    pub fn permission_matrix(
        &self,
        conversation: ConversationId,
    ) -> Result<Vec<MatrixRow>, EngineError> {
        let mode = self.mode(conversation)?;
        let permissions = self.session.permissions();
        Ok(describe(mode, permissions.preset(), &permissions.rules()))
    }

    /// The conversation and task running now, if any.
    pub fn running_task(&self) -> Option<(ConversationId, TaskId)> {
        self.session.driver().running()
    }

    /// How many tasks wait in the queue.
    pub fn queued_tasks(&self) -> usize {
        self.session.driver().pending()
    }

    /// The model this session talks to (the configured name when no provider is set).
    pub fn model(&self) -> String {
        self.session.model_name()
    }

    /// The session's model and provider settings; `None` until a provider is configured.
    pub fn model_settings(&self) -> Option<ModelSettings> {
        self.session.model_settings()
    }

    /// Switches the session's model (and provider): tasks that start afterwards use it;
    /// conversations created with a model of their own keep it.
    pub fn set_model(&self, settings: ModelSettings) -> Result<(), EngineError> {
        self.session.set_model(settings)
    }

    /// Sets the session's MCP servers, by name, as the embedding program's choice (it
    /// applies at once, unlike a change a file made): servers not named stop, new or
    /// changed ones start, and `mcp_server_status` events follow. Each conversation's
    /// next task sees the tools as they are then.
    pub fn set_mcp_servers(
        &self,
        servers: std::collections::BTreeMap<String, coder_protocol::options::McpServerOptions>,
    ) {
        let servers = servers
            .into_iter()
            .map(|(name, options)| (name, options.into()))
            .collect();
        self.session.set_mcp_servers(servers);
    }

    /// Stops an MCP server and starts it again; `false` when there is no such server.
    pub fn restart_mcp_server(&self, name: &str) -> bool {
        self.session.restart_mcp_server(name)
    }

    /// The configured MCP servers, with their state and, once ready, their tools.
    pub fn mcp_servers(&self) -> Vec<crate::session::McpServerInfo> {
        self.session.mcp_servers()
    }

    /// Hides built-in tools from the tasks that start from now on (the names of
    /// `tools.disabled`); an empty list offers every tool the configuration allows again.
    pub fn set_disabled_tools(&self, names: Vec<String>) {
        self.session.set_disabled_tools(names);
    }

    /// The built-in tools and whether the tasks that start now are offered each (not the
    /// ones the configuration or [`Engine::set_disabled_tools`] hid), in name order.
    pub fn builtin_tools(&self) -> Vec<crate::tools::BuiltinTool> {
        let config = self.session.config();
        crate::tools::ToolRegistry::builtin()
            .iter()
            .map(|tool| crate::tools::BuiltinTool {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                offered: !config
                    .disabled_tools
                    .iter()
                    .any(|hidden| hidden == tool.name()),
            })
            .collect()
    }
}
