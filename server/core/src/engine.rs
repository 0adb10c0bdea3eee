//! The engine handle: one session, its conversations, and the serial task queue.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use coder_protocol::{
    ChatMessage, ConversationId, EngineState, Event, EventMsg, Mode, PermissionDecision, Preset,
    TaskId,
};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::conversation::Conversation;
use crate::events::{EventHub, EventReceiver};
use crate::model::{ModelClient, ToolSpec};
use crate::permissions::{MatrixRow, Permissions, describe};
use crate::sandbox::{self, SandboxPolicy};
use crate::task::{TaskPlan, run_task};
use crate::tools::{Tool, ToolRegistry};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the engine must be created inside a tokio runtime")]
    NoRuntime,
    #[error("no conversation with id {0}")]
    UnknownConversation(ConversationId),
    #[error("invalid tool set: {0}")]
    Tools(String),
    #[error("{0}")]
    Model(String),
    #[error("no open permission request with id {0}")]
    UnknownPermissionRequest(String),
}

/// One session of the engine. Cheap to clone; all clones drive the same session.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub config: Config,
    pub model: ModelClient,
    pub tools: ToolRegistry,
    pub hub: EventHub,
    pub permissions: Permissions,
    /// The user's home directory, for the dangerous-command analysis.
    pub home: Option<std::path::PathBuf>,
    /// Where commands may write, when the kernel can confine them.
    pub sandbox: Option<Arc<SandboxPolicy>>,
    /// Set until the session has said, once, that commands run unconfined.
    pub sandbox_warning: std::sync::atomic::AtomicBool,
    /// The private temporary directory of confined commands, removed with the session.
    _temp_dir: Option<tempfile::TempDir>,
    runtime: Handle,
    state: Mutex<State>,
}

struct State {
    root: ConversationId,
    conversations: HashMap<ConversationId, Arc<Mutex<Conversation>>>,
    queue: VecDeque<TaskPlan>,
    running: Option<Running>,
    /// A driver task is alive (it may be between two tasks).
    driving: bool,
    /// The conversation and task that ran last, for the `idle` event.
    last_task: Option<(ConversationId, TaskId)>,
}

struct Running {
    task_id: TaskId,
    conversation_id: ConversationId,
    cancel: CancellationToken,
}

impl Engine {
    /// Creates a session with the built-in tools. Must be called inside a tokio runtime,
    /// whose handle the engine keeps for its tasks.
    pub fn new(config: Config) -> Result<Self, EngineError> {
        Self::with_tools(config, Vec::new())
    }

    /// Creates a session with the built-in tools plus `extra` tools of the embedder.
    pub fn with_tools(config: Config, extra: Vec<Arc<dyn Tool>>) -> Result<Self, EngineError> {
        let runtime = Handle::try_current().map_err(|_| EngineError::NoRuntime)?;
        let mut tools = ToolRegistry::builtin();
        tools.extend(extra);
        let tools = ToolRegistry::new(tools).map_err(EngineError::Tools)?;
        let model = ModelClient::new(&config.provider, config.retry, config.stream_idle_timeout)
            .map_err(EngineError::Model)?;
        let (sandbox, temp_dir, sandbox_missing) = sandbox_for(&config);
        let root = Conversation::new(config.mode);
        let root_id = root.id;
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
                sandbox_warning: std::sync::atomic::AtomicBool::new(sandbox_missing),
                _temp_dir: temp_dir,
                config,
                model,
                tools,
                hub: EventHub::default(),
                runtime,
                state: Mutex::new(State {
                    root: root_id,
                    conversations: HashMap::from([(root_id, Arc::new(Mutex::new(root)))]),
                    queue: VecDeque::new(),
                    running: None,
                    driving: false,
                    last_task: None,
                }),
            }),
        })
    }

    /// The conversation every session starts with; it cannot be destroyed.
    pub fn root_conversation(&self) -> ConversationId {
        self.inner.lock_state().root
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
        let plan = TaskPlan {
            task_id: TaskId::new(),
            conversation_id: conversation,
            input: text.into(),
        };
        let task_id = plan.task_id;
        let start_driver = {
            let mut state = self.inner.lock_state();
            if !state.conversations.contains_key(&conversation) {
                return Err(EngineError::UnknownConversation(conversation));
            }
            state.queue.push_back(plan);
            !std::mem::replace(&mut state.driving, true)
        };
        if start_driver {
            let inner = self.inner.clone();
            self.inner.runtime.spawn(drive(inner));
        }
        Ok(task_id)
    }

    /// Interrupts the task running on `conversation`, if any. It ends at its next checkpoint
    /// with `turn_aborted { reason: interrupted }`. Returns whether a task was running.
    pub fn interrupt(&self, conversation: ConversationId) -> Result<bool, EngineError> {
        let state = self.inner.lock_state();
        if !state.conversations.contains_key(&conversation) {
            return Err(EngineError::UnknownConversation(conversation));
        }
        match &state.running {
            Some(running) if running.conversation_id == conversation => {
                running.cancel.cancel();
                Ok(true)
            }
            _ => Ok(false),
        }
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

    /// Answers a `permission_requested` event.
    pub fn respond_permission(
        &self,
        request_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), EngineError> {
        if self.inner.permissions.respond(request_id, decision) {
            Ok(())
        } else {
            Err(EngineError::UnknownPermissionRequest(request_id.to_owned()))
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
        Ok(())
    }

    pub fn mode(&self, conversation: ConversationId) -> Result<Mode, EngineError> {
        let conv = self.inner.conversation(conversation)?;
        let mode = lock(&conv).mode;
        Ok(mode)
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
        let state = self.inner.lock_state();
        state
            .running
            .as_ref()
            .map(|running| (running.conversation_id, running.task_id))
    }

    /// The model this session talks to.
    pub fn model(&self) -> &str {
        &self.inner.config.model
    }
}

impl Inner {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub(crate) fn conversation(
        &self,
        id: ConversationId,
    ) -> Result<Arc<Mutex<Conversation>>, EngineError> {
        self.lock_state()
            .conversations
            .get(&id)
            .cloned()
            .ok_or(EngineError::UnknownConversation(id))
    }
}

/// The sandbox policy of a session: the workspace, configured roots and a fresh private
/// temporary directory. The flag says the sandbox was wanted but is not available.
fn sandbox_for(config: &Config) -> (Option<Arc<SandboxPolicy>>, Option<tempfile::TempDir>, bool) {
    if !config.sandbox {
        return (None, None, false);
    }
    if !sandbox::available() {
        return (None, None, true);
    }
    let Ok(temp) = tempfile::Builder::new().prefix("coder-").tempdir() else {
        return (None, None, true);
    };
    let mut writable_roots = vec![config.workspace.clone()];
    writable_roots.extend(config.writable_roots.iter().cloned());
    let policy = SandboxPolicy {
        writable_roots,
        temp_dir: temp.path().to_path_buf(),
    };
    (Some(Arc::new(policy)), Some(temp), false)
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs queued tasks one at a time until the queue is empty, then reports idle.
///
/// `state_changed` events bracket the run: `running` before the first task, `idle` after the
/// last. The driver only gives up `driving` after it has reported idle and found the queue
/// still empty, so a `running` of a new driver never precedes the `idle` of an old one.
async fn drive(inner: Arc<Inner>) {
    let mut state_running = false;
    loop {
        let next = {
            let mut state = inner.lock_state();
            let next = state.queue.pop_front().map(|plan| {
                let cancel = CancellationToken::new();
                state.running = Some(Running {
                    task_id: plan.task_id,
                    conversation_id: plan.conversation_id,
                    cancel: cancel.clone(),
                });
                (plan, cancel)
            });
            if next.is_none() {
                state.running = None;
                if !state_running {
                    state.driving = false;
                    return;
                }
            }
            next
        };
        match next {
            Some((plan, cancel)) => {
                if !state_running {
                    state_running = true;
                    emit_state(&inner, &plan, EngineState::Running);
                }
                let ids = (plan.conversation_id, plan.task_id);
                run_task(&inner, plan, cancel).await;
                inner.lock_state().last_task = Some(ids);
            }
            None => {
                state_running = false;
                let last = inner.lock_state().last_task;
                if let Some((conversation_id, task_id)) = last {
                    inner.hub.emit(
                        conversation_id,
                        Some(task_id),
                        EventMsg::StateChanged {
                            state: EngineState::Idle,
                        },
                    );
                }
            }
        }
    }
}

fn emit_state(inner: &Inner, plan: &TaskPlan, state: EngineState) {
    inner.hub.emit(
        plan.conversation_id,
        Some(plan.task_id),
        EventMsg::StateChanged { state },
    );
}
