//! The serial scheduler (seed 000): at most one task runs in a session; plans wait in a FIFO.
//!
//! `enqueue` adds plans at the back. `abort_current_and_enqueue` ends the running task with
//! `turn_aborted { reason: replaced }` and puts its plans at the front, so an interrupting
//! conversation tool runs its target task next and then the continuation of the original
//! conversation, before anything queued earlier.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use coder_protocol::{AbortReason, ConversationId, EngineState, EventMsg, InputItem, TaskId};
use tokio_util::sync::CancellationToken;

use crate::engine::{Inner, lock};
use crate::task::run_task;

/// A task waiting in the session's queue.
#[derive(Debug, Clone)]
pub(crate) struct TaskPlan {
    pub task_id: TaskId,
    pub conversation_id: ConversationId,
    pub input: Vec<InputItem>,
    /// Replaces the conversation's base instructions for this task only.
    pub base_instructions_override: Option<String>,
    /// The pending tool call this task answers first (a continuation task).
    pub closure: Option<Closure>,
    /// How many interrupting conversation tools led to this task.
    pub depth: u32,
}

impl TaskPlan {
    pub fn new(conversation_id: ConversationId, input: Vec<InputItem>, depth: u32) -> Self {
        Self {
            task_id: TaskId::new(),
            conversation_id,
            input,
            base_instructions_override: None,
            closure: None,
            depth,
        }
    }
}

/// The tool call a continuation task closes, and where its answer comes from.
#[derive(Debug, Clone)]
pub(crate) struct Closure {
    pub call_id: String,
    pub tool_name: String,
    /// The conversation whose last assistant message is the tool's return value.
    pub target: ConversationId,
    /// `conv_create` also reports the first input it gave.
    pub first_user_message: Option<String>,
    pub first_items_count: Option<usize>,
}

/// How a running task is stopped, and why.
#[derive(Debug, Clone)]
pub(crate) struct TaskControl {
    pub cancel: CancellationToken,
    reason: Arc<Mutex<AbortReason>>,
    pub depth: u32,
}

impl TaskControl {
    fn new(depth: u32) -> Self {
        Self {
            cancel: CancellationToken::new(),
            reason: Arc::new(Mutex::new(AbortReason::Interrupted)),
            depth,
        }
    }

    fn stop(&self, reason: AbortReason) {
        *lock(&self.reason) = reason;
        self.cancel.cancel();
    }

    pub fn reason(&self) -> AbortReason {
        *lock(&self.reason)
    }
}

struct Running {
    task_id: TaskId,
    conversation_id: ConversationId,
    control: TaskControl,
}

#[derive(Default)]
pub(crate) struct Scheduler {
    state: Mutex<QueueState>,
    /// Counts finished tasks, for those who wait for the running one to end.
    finished: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct QueueState {
    queue: VecDeque<TaskPlan>,
    running: Option<Running>,
    /// A driver is alive (it may be between two tasks).
    driving: bool,
    last_task: Option<(ConversationId, TaskId)>,
}

impl Scheduler {
    /// Adds plans at the back; returns whether a driver must be started.
    fn push(&self, plans: Vec<TaskPlan>, front: bool) -> bool {
        let mut state = lock(&self.state);
        if front {
            for plan in plans.into_iter().rev() {
                state.queue.push_front(plan);
            }
        } else {
            state.queue.extend(plans);
        }
        !std::mem::replace(&mut state.driving, true)
    }

    /// Stops the task running on `conversation` with `reason`; returns whether one ran.
    pub fn stop(&self, conversation: ConversationId, reason: AbortReason) -> bool {
        let state = lock(&self.state);
        match &state.running {
            Some(running) if running.conversation_id == conversation => {
                running.control.stop(reason);
                true
            }
            _ => false,
        }
    }

    /// Drops every queued plan of `conversation` and of continuations waiting on it.
    pub fn forget(&self, conversation: ConversationId) {
        lock(&self.state)
            .queue
            .retain(|plan| plan.conversation_id != conversation);
    }

    pub fn running(&self) -> Option<(ConversationId, TaskId)> {
        let state = lock(&self.state);
        state
            .running
            .as_ref()
            .map(|running| (running.conversation_id, running.task_id))
    }

    pub fn pending(&self) -> usize {
        lock(&self.state).queue.len()
    }

    /// Drops every queued plan.
    pub fn clear(&self) {
        lock(&self.state).queue.clear();
    }

    /// Waits until no task runs (at most a few seconds: a stopped task ends at its next
    /// checkpoint, which is quick).
    pub async fn until_stopped(&self) {
        let mut finished = self.finished.subscribe();
        let wait = async {
            while self.running().is_some() {
                if finished.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), wait).await;
    }
}

/// Queues `plans` after everything already waiting.
pub(crate) fn enqueue(inner: &Arc<Inner>, plans: Vec<TaskPlan>) {
    if inner.scheduler.push(plans, false) {
        inner.runtime.spawn(drive(inner.clone()));
    }
}

/// Ends the running task with `turn_aborted { reason: replaced }` and queues `plans` first.
pub(crate) fn abort_current_and_enqueue(inner: &Arc<Inner>, plans: Vec<TaskPlan>) {
    {
        let state = lock(&inner.scheduler.state);
        if let Some(running) = &state.running {
            running.control.stop(AbortReason::Replaced);
        }
    }
    if inner.scheduler.push(plans, true) {
        inner.runtime.spawn(drive(inner.clone()));
    }
}

/// Runs queued tasks one at a time until the queue is empty, then reports idle.
///
/// `state_changed` events bracket the run: `running` before the first task, `idle` after the
/// last. The driver only gives up `driving` after it has reported idle and found the queue
/// still empty, so a `running` of a new driver never precedes the `idle` of an old one.
async fn drive(inner: Arc<Inner>) {
    let mut reported_running = false;
    loop {
        let next = {
            let mut state = lock(&inner.scheduler.state);
            let next = state.queue.pop_front().map(|plan| {
                let control = TaskControl::new(plan.depth);
                state.running = Some(Running {
                    task_id: plan.task_id,
                    conversation_id: plan.conversation_id,
                    control: control.clone(),
                });
                (plan, control)
            });
            if next.is_none() {
                state.running = None;
                if !reported_running {
                    state.driving = false;
                    return;
                }
            }
            next
        };
        match next {
            Some((plan, control)) => {
                if !reported_running {
                    reported_running = true;
                    let state = EngineState::Running;
                    inner.hub.emit(
                        plan.conversation_id,
                        Some(plan.task_id),
                        EventMsg::StateChanged { state },
                    );
                }
                let ids = (plan.conversation_id, plan.task_id);
                run_task(&inner, plan, control).await;
                {
                    let mut state = lock(&inner.scheduler.state);
                    state.last_task = Some(ids);
                    state.running = None;
                }
                inner.scheduler.finished.send_modify(|count| *count += 1);
                inner.save_if_due(ids.0, false).await;
            }
            None => {
                reported_running = false;
                let last = lock(&inner.scheduler.state).last_task;
                if let Some((conversation_id, _)) = last {
                    // Saved before `idle`, so a client that sees it finds the file current.
                    inner.save_if_due(conversation_id, true).await;
                }
                if let Some((conversation_id, task_id)) = last {
                    let state = EngineState::Idle;
                    inner.hub.emit(
                        conversation_id,
                        Some(task_id),
                        EventMsg::StateChanged { state },
                    );
                }
            }
        }
    }
}
