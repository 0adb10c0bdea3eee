//! One session: its services, its one mutable state, and the driver that runs its tasks.
//!
//! [`Session`] is what [`crate::Engine`] delegates to. It is split three ways:
//! - [`services`]: what is set up once (tools, MCP manager, event hub, permissions, sandbox
//!   policy, snapshot saver), and the configuration and workspace files, each swapped whole
//!   when it changes on disk;
//! - [`state`]: what does, behind one lock (conversations, the task queue and the running
//!   task's control, the model, the editor's documents, warnings not yet reported);
//! - [`driver`]: the only code that enqueues or stops work; it hands each task to
//!   [`task`], which prepares a [`crate::turn::TurnContext`] and runs the turn.
//!
//! # Lock order
//!
//! Locks are taken in this order, never the other way round:
//!
//! 0. the slot of a resumed conversation not read yet (`state.saved`), held while it is
//!    read on its first use, or while the snapshot writer copies it;
//! 1. the session state ([`state::State`]);
//! 2. one conversation's lock (`Arc<Mutex<Conversation>>` in the state's table);
//! 3. the leaf locks of services: the permissions' open requests, the saver's, the journal's, the prompt
//!    shapes', a task control's abort reason, the MCP manager's servers (read to build a
//!    conversation's view);
//! 4. the event hub (taken inside `emit`).
//!
//! The state lock is never held across an `.await`, nor while emitting an event (observers
//! may call back into the engine). Conversation locks are never held across an `.await`.

mod arguments;
mod calls;
mod command_notes;
mod completion;
mod conversations;
pub(crate) mod driver;
mod extensions;
mod files;
mod input;
mod live_config;
mod mcp_reload;
pub use mcp_reload::McpServerInfo;
mod reload;
mod replay;
mod rewind;
mod services;
mod shell;
mod slash;
mod state;
mod status;
mod task;

use std::sync::{Arc, Mutex, MutexGuard};

use coder_protocol::{ConversationId, EventMsg, InputItem, Mode};
use tokio::runtime::Handle;

use crate::config::Config;
use crate::conversation::{Conversation, ConversationSpec};
use crate::error::EngineError;
use crate::events::EventHub;
use crate::mcp::McpManager;
use crate::model::{ActiveModel, ModelSettings};
use crate::permissions::Permissions;
use crate::prompt::PromptShapes;
use crate::sandbox::{SandboxEnforcement, SandboxPolicy};
use crate::snapshot::Saver;
use crate::sync::lock;
use crate::tools::{Tool, ToolRegistry};

pub(crate) use conversations::Opener;
pub(crate) use driver::{Driver, TaskPlan};
pub use reload::FilesChanged;
pub use replay::Replay;
use services::Services;
use state::State;

/// One session of the engine.
pub(crate) struct Session {
    services: Services,
    state: Arc<Mutex<State>>,
    driver: Arc<Driver>,
    /// Held for the whole of [`Session::shutdown`]; `true` once it has run. A second caller
    /// waits here for the first to finish, then returns.
    ended: tokio::sync::Mutex<bool>,
    /// The workspace watcher and its reload loop; `None` when the platform's watcher could
    /// not start, or once the session ended.
    watching: Mutex<Option<reload::Watching>>,
    /// Told of every batch of changed paths ([`Session::on_files_changed`]).
    files_changed: Mutex<Vec<FilesChanged>>,
    /// MCP servers a file added or changed while the session ran, waiting for a person
    /// (`/mcp reload`).
    held_mcp: Mutex<Option<mcp_reload::HeldServers>>,
}

impl Session {
    /// Creates a session with the built-in tools plus `extra`. Must be called inside a tokio
    /// runtime, whose handle the session keeps for its tasks.
    pub fn new(config: Config, extra: Vec<Arc<dyn Tool>>) -> Result<Arc<Self>, EngineError> {
        let runtime = Handle::try_current().map_err(|_| EngineError::no_runtime())?;
        let (files, file_warnings) = files::WorkspaceFiles::load(&config);
        let walks_paths = config.walks_paths_at_start();
        let watches_files = config.watches_files();
        let files: Arc<files::SharedFiles> = Arc::new(Mutex::new(Arc::new(files)));
        let mut tools = ToolRegistry::builtin_with_user_folder(extensions::user_folder(&config));
        // The `skill` tool reads the session's skills, as `skill/list` does.
        let skills = files.clone();
        let cached: crate::tools::CachedSkills = Arc::new(move || {
            let files = lock(&skills).clone();
            (files.skills.clone(), files.skill_problems.clone())
        });
        for tool in &mut tools {
            if tool.name() == crate::tools::SKILL {
                *tool = Arc::new(crate::tools::SkillTool::cached(cached.clone()));
            }
        }
        tools.extend(extra);
        let tools =
            ToolRegistry::new(tools).map_err(|err| EngineError::invalid_tools(err.message()))?;
        let model = match ModelSettings::from_config(&config) {
            Some(settings) => Some(Arc::new(ActiveModel::new(settings, &config)?)),
            None => None,
        };
        let (sandbox, sandbox_warning) = sandbox_for(&config);
        let mut root = Conversation::new(ConversationSpec::default(), config.mode);
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
        root.context.mcp_view.rebuild(&mcp);
        let permissions = Permissions::new(
            config.preset,
            config.permission_rules.clone(),
            config.auto_approve,
            config
                .user_file
                .as_deref()
                .and_then(|file| crate::permissions::LastingRules::new(file, &config.workspace)),
        );
        let mut state = State::new(root);
        state.model = model;
        state.sandbox_warning = sandbox_warning;
        state.config_warnings = config.warnings.clone();
        state.config_warnings.extend(file_warnings);
        let state = Arc::new(Mutex::new(state));
        let paths = Arc::new(crate::completion::PathIndex::new(config.workspace.clone()));
        let saver = Saver::new(&config.workspace, config.save_sessions);
        let journal =
            crate::journal::Journal::new(saver.folder().cloned(), lock(&state).session_id, root_id);
        journal.set_model(&config.model);
        let checkpoints = Arc::new(if config.keeps_checkpoints() {
            crate::undo::Checkpoints::new(&config.workspace)
        } else {
            crate::undo::Checkpoints::unkept(&config.workspace)
        });
        let services = Services {
            saver,
            journal,
            checkpoints,
            home: std::env::var_os("HOME").map(std::path::PathBuf::from),
            config: Mutex::new(Arc::new(config)),
            tools: Arc::new(tools),
            hub: hub.clone(),
            permissions: Arc::new(permissions),
            mcp,
            sandbox,
            prompt_shapes: PromptShapes::default(),
            files,
            paths,
        };
        let watcher_runtime = runtime.clone();
        let session = Arc::new_cyclic(|session| {
            let runner = Arc::new(task::SessionRunner::new(session.clone()));
            let driver = Driver::new(state.clone(), hub, runtime, runner);
            Self {
                services,
                state,
                driver: Arc::new(driver),
                ended: tokio::sync::Mutex::new(false),
                watching: Mutex::new(None),
                files_changed: Mutex::new(Vec::new()),
                held_mcp: Mutex::new(None),
            }
        });
        if watches_files {
            session.start_watching(&watcher_runtime);
        }
        if walks_paths {
            session.start_path_index();
        }
        Ok(session)
    }

    /// The session state, locked (see the lock order above).
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The configuration as it applies now: read again when a file changes
    /// (`session/live_config.rs`); a task takes it once, when it starts.
    pub fn config(&self) -> Arc<Config> {
        lock(&self.services.config).clone()
    }

    /// Hides `names` (built-in tools) from the tasks that start from now on, in every
    /// conversation, in place of what the configuration hid. A later reload of a
    /// configuration file that changes `tools.disabled` replaces it again.
    pub fn set_disabled_tools(&self, names: Vec<String>) {
        let mut config = lock(&self.services.config);
        let mut next = (**config).clone();
        next.disabled_tools = names;
        *config = Arc::new(next);
    }

    pub fn hub(&self) -> &EventHub {
        &self.services.hub
    }

    pub fn driver(&self) -> &Arc<Driver> {
        &self.driver
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.services.tools
    }

    pub fn permissions(&self) -> &Permissions {
        &self.services.permissions
    }

    pub fn mcp(&self) -> &McpManager {
        &self.services.mcp
    }

    pub fn mcp_usage(&self) -> crate::mcp::McpUsage {
        McpManager::usage(&self.services.mcp)
    }

    /// What the OS sandbox enforces for this session's commands; `None` when commands run
    /// unconfined.
    pub fn sandbox_enforcement(&self) -> Option<SandboxEnforcement> {
        self.services
            .sandbox
            .as_ref()
            .map(|policy| policy.enforcement().clone())
    }

    /// Removes the session's private temporary directory.
    pub fn remove_temp_dir(&self) {
        if let Some(sandbox) = &self.services.sandbox {
            sandbox.remove_temp_dir();
        }
        self.services.checkpoints.close();
    }

    /// Stops saving at once (see [`Saver::close`]).
    pub fn close_saver(&self) {
        self.services.saver.close();
    }

    pub fn set_documents(&self, documents: Arc<dyn crate::Documents>) {
        self.state().documents = Some(documents);
    }

    /// The session's model name: the active model's, else the configured one.
    pub fn model_name(&self) -> String {
        self.state().model.as_ref().map_or_else(
            || self.config().model.clone(),
            |model| model.settings.model.clone(),
        )
    }

    pub fn model_settings(&self) -> Option<ModelSettings> {
        self.state()
            .model
            .as_ref()
            .map(|model| model.settings.clone())
    }

    /// Switches the session's model: tasks that start afterwards use it.
    pub fn set_model(&self, settings: ModelSettings) -> Result<(), EngineError> {
        let active = ActiveModel::new(settings, &self.config())?;
        self.state().model = Some(Arc::new(active));
        Ok(())
    }

    /// The session's model, or a `no_provider` error.
    pub fn require_model(&self) -> Result<Arc<ActiveModel>, EngineError> {
        self.state()
            .model
            .clone()
            .ok_or_else(EngineError::no_provider)
    }

    /// Queues input for `conversation`, with base instructions for this task only when
    /// given, after checking it can run. The input rule, the same for every door: it must
    /// hold an image or some text that is not only whitespace, its text must fit in
    /// `maxPromptBytes`, and its images must fit in the image limits (see
    /// [`crate::conversation::MAX_IMAGE_BYTES`]).
    pub fn send(
        &self,
        conversation: ConversationId,
        items: Vec<InputItem>,
        base_instructions: Option<String>,
    ) -> Result<coder_protocol::TaskId, EngineError> {
        let held = self.conversation(conversation)?;
        check_not_empty(&items)?;
        let (items, model) = self.expand_command(items)?;
        let held = crate::conversation::image_bytes_of(&lock(&held).history);
        self.check_input(&items, held)?;
        self.require_model()?;
        let mut plan = TaskPlan::new(conversation, items, 0);
        plan.base_instructions_override = base_instructions;
        plan.model_override = model;
        let task_id = plan.task_id;
        self.driver.enqueue(vec![plan]);
        Ok(task_id)
    }

    /// Steers `items` into the task running on `conversation`: the model gets them at the
    /// task's next checkpoint (after its current tool calls), and an `input_receipt` says
    /// `steered`. When no task runs there, or it ends before that checkpoint, the input is
    /// queued as [`Session::send`] queues it, under the same id. Returns the input's id and
    /// whether a task of the conversation was running.
    pub fn steer(
        self: &Arc<Self>,
        conversation: ConversationId,
        items: Vec<InputItem>,
    ) -> Result<(coder_protocol::TaskId, bool), EngineError> {
        let held = self.conversation(conversation)?;
        check_not_empty(&items)?;
        let held = crate::conversation::image_bytes_of(&lock(&held).history);
        self.check_input(&items, held)?;
        self.require_model()?;
        let plan = TaskPlan::new(conversation, items, 0);
        let id = plan.task_id;
        let running = self
            .driver
            .running()
            .is_some_and(|(running, _)| running == conversation);
        if !running {
            self.driver.enqueue(vec![plan]);
            return Ok((id, false));
        }
        let session = self.clone();
        self.driver.spawn(async move {
            let messages = session.steer_messages(&plan.input).await;
            let steer = crate::turn::Steer {
                id,
                input: plan.input.clone(),
                messages,
            };
            if session.driver.steer(conversation, steer).is_err() {
                session.driver.enqueue(vec![plan]);
            }
        });
        Ok((id, true))
    }

    /// Withdraws input `id` that no model has read yet (queued, or waiting to be steered);
    /// whether there was such input.
    pub fn withdraw_input(&self, id: coder_protocol::TaskId) -> bool {
        self.driver.withdraw(id)
    }

    /// Changes a conversation and writes the change to the session journal, synced,
    /// before returning; a journal that cannot be written is reported once, as a warning.
    pub(crate) fn change<R>(
        &self,
        conversation: &Mutex<Conversation>,
        change: impl FnOnce(&mut Conversation) -> R,
    ) -> R {
        let (result, id) = {
            let mut conversation = lock(conversation);
            let result = change(&mut conversation);
            self.services.journal.persist(&mut conversation);
            (result, conversation.id)
        };
        self.warn_if_unjournaled(id);
        result
    }

    /// As [`Session::change`], for a change that may find nothing to do: `change` returns
    /// `None` then, and nothing is written to the journal.
    pub(crate) fn change_if<R>(
        &self,
        conversation: &Mutex<Conversation>,
        change: impl FnOnce(&mut Conversation) -> Option<R>,
    ) -> Option<R> {
        let (result, id) = {
            let mut conversation = lock(conversation);
            let result = change(&mut conversation)?;
            self.services.journal.persist(&mut conversation);
            (result, conversation.id)
        };
        self.warn_if_unjournaled(id);
        Some(result)
    }

    /// Reports, as a warning of conversation `id`, a journal that could not be written.
    fn warn_if_unjournaled(&self, id: ConversationId) {
        if let Some(message) = self.services.journal.take_warning() {
            self.services
                .hub
                .emit(id, None, EventMsg::Warning { message });
        }
    }

    /// Queues a task that compacts `conversation`'s history; the summary keeps or stresses
    /// `focus` when a person gave it.
    pub fn compact(
        &self,
        conversation: ConversationId,
        focus: Option<String>,
    ) -> Result<coder_protocol::TaskId, EngineError> {
        self.conversation(conversation)?;
        self.require_model()?;
        let mut plan = TaskPlan::new(conversation, Vec::new(), 0);
        plan.compact = Some(driver::CompactPlan { focus });
        let task_id = plan.task_id;
        self.driver.enqueue(vec![plan]);
        Ok(task_id)
    }

    /// What compactions of `conversation` replaced, oldest first.
    pub fn archive(
        &self,
        conversation: ConversationId,
    ) -> Result<Vec<coder_protocol::ArchivedSegment>, EngineError> {
        let conversation = self.conversation(conversation)?;
        Ok(lock(&conversation).archive.clone())
    }

    /// The input rule's bounds, for a conversation whose history holds `held` bytes of
    /// images: the text items together fit in `maxPromptBytes`, and the images in the image
    /// limits ([`crate::conversation::check_images`]). The same for a person's input and for
    /// what a conversation tool sends.
    pub(super) fn check_input(&self, items: &[InputItem], held: u64) -> Result<(), EngineError> {
        let size = items
            .iter()
            .map(|item| match item {
                InputItem::Text { text } => text.len(),
                // The bytes of a `data:` image are bounded by the image limits; a URL goes
                // with every request as it is.
                InputItem::Image { image_url } if image_url.starts_with("data:") => 0,
                InputItem::Image { image_url } => image_url.len(),
            })
            .sum();
        let limit = self.config().max_prompt_bytes;
        if size > limit {
            return Err(EngineError::prompt_too_large(size, limit));
        }
        crate::conversation::check_images(items, held)
    }

    /// Ends the session, in this order: every open permission request is denied (the model
    /// reads that the session ended), the running task is interrupted, queued ones are
    /// dropped (a pending handoff call gets a result saying so), the snapshot is saved a last
    /// time, the watcher and a walk of the path index are stopped, the MCP servers are shut
    /// down (their processes waited for) and the private temporary directory is removed.
    /// Idempotent: a later or concurrent call waits until the first has finished, then
    /// returns.
    pub async fn shutdown(&self) {
        let mut ended = self.ended.lock().await;
        if std::mem::replace(&mut *ended, true) {
            return;
        }
        // Denied first, so the task records the denial as the call's result before it sees
        // the interruption.
        self.services
            .permissions
            .withdraw_all(crate::permissions::SESSION_ENDED);
        if self.driver.stop_all() {
            // The task records its interruption on its way out; the snapshot should hold it.
            self.driver.until_stopped().await;
        }
        if let Err(err) = self.save(crate::snapshot::Save::Last).await {
            tracing::warn!("{err}");
        }
        self.stop_watching();
        self.stop_path_index().await;
        self.services.mcp.shutdown().await;
        // The process may exit without dropping the session: remove its temporary directory
        // now.
        self.remove_temp_dir();
    }

    /// What [`Session::shutdown`] can do without waiting: the running task is cancelled and
    /// its commands killed at once (their futures may never run again), saving stops, MCP
    /// server processes are killed, the temporary directory is removed.
    pub fn shutdown_now(&self) {
        self.services
            .permissions
            .withdraw_all(crate::permissions::SESSION_ENDED);
        self.driver.stop_all();
        crate::process::end_cancelled_calls();
        self.close_saver();
        self.stop_watching();
        self.stop_path_index_now();
        self.services.mcp.kill_now();
        self.remove_temp_dir();
    }
}

/// Refuses an input with no image and no text but whitespace.
fn check_not_empty(items: &[InputItem]) -> Result<(), EngineError> {
    let something = items.iter().any(|item| match item {
        InputItem::Text { text } => !text.trim().is_empty(),
        InputItem::Image { .. } => true,
    });
    if something {
        Ok(())
    } else {
        Err(EngineError::empty_input())
    }
}

/// A mode's place from the strictest (`plan`) to the loosest (`yolo`).
fn rank(mode: Mode) -> usize {
    Mode::ALL.iter().position(|m| *m == mode).unwrap_or(0)
}

/// The stricter of two modes: conversations may narrow the session's mode, never widen it.
fn narrower(wanted: Mode, ceiling: Mode) -> Mode {
    if rank(wanted) > rank(ceiling) {
        ceiling
    } else {
        wanted
    }
}

/// The looser of two modes.
fn looser(one: Mode, other: Mode) -> Mode {
    if rank(one) >= rank(other) { one } else { other }
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
