//! The engine handle: one session, its conversations, and the serial task queue.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use coder_protocol::{ChatMessage, ConversationId, EngineState, Event, EventMsg, TaskId};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::conversation::Conversation;
use crate::events::{EventHub, EventReceiver};
use crate::model::{ModelClient, ToolSpec};
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
        let root = Conversation::new();
        let root_id = root.id;
        Ok(Self {
            inner: Arc::new(Inner {
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
