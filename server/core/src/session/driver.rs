//! The driver (seed 000's serial scheduler): the only code that enqueues or stops work. At
//! most one task runs in a session; plans wait in a FIFO.
//!
//! Input goes at the back ([`Driver::enqueue`]). A task's [`TurnOutcome`] is applied when it
//! ends: a handoff puts the target's task and then the continuation of the original
//! conversation at the front, so they run before anything queued earlier. `state_changed`
//! events bracket each busy stretch: `running` before its first task, `idle` after its last.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use coder_protocol::{
    AbortReason, ConversationId, DropReason, EngineState, EventMsg, InputItem, Receipt, TaskId,
};
use futures::future::BoxFuture;
use tokio::runtime::Handle;

use super::state::State;
use crate::events::EventHub;
use crate::sync::lock;
use crate::turn::{Closure, Steer, TaskControl, TurnOutcome};

/// How long a session stays idle before its snapshot is written (see
/// [`Driver::save_when_quiet`]).
pub(crate) const QUIET: std::time::Duration = std::time::Duration::from_millis(500);

/// A task waiting in the session's queue.
#[derive(Debug, Clone)]
pub(crate) struct TaskPlan {
    pub task_id: TaskId,
    pub conversation_id: ConversationId,
    pub input: Vec<InputItem>,
    /// Replaces the conversation's base instructions for this task only.
    pub base_instructions_override: Option<String>,
    /// The model for this task only (a custom command's `model`).
    pub model_override: Option<String>,
    /// The pending tool call this task answers first (a continuation task).
    pub closure: Option<Closure>,
    /// How many interrupting conversation tools led to this task.
    pub depth: u32,
    /// The chain of work one user input started: set by [`TaskPlan::new`] for input, and
    /// inherited by the tasks a handoff queues, so the whole chain can be interrupted.
    pub chain: ChainId,
    /// How many handoffs its chain made before this task.
    pub handoffs: u32,
    /// The task compacts the conversation's history (asked for; no input, no turn).
    pub compact: Option<CompactPlan>,
    /// The task runs a person's `!command` (no model, no turn).
    pub shell: Option<String>,
    /// A person's input: its fate is told with `input_receipt` events (queued, started,
    /// dropped). Not for the tasks a handoff queues.
    pub receipts: bool,
}

/// A compaction a person asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompactPlan {
    /// What the summary should keep or focus on (`/compact <instructions>`).
    pub focus: Option<String>,
}

/// Names the chain of tasks one user input started (its handoffs' targets and
/// continuations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ChainId(u64);

impl ChainId {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl TaskPlan {
    pub fn new(conversation_id: ConversationId, input: Vec<InputItem>, depth: u32) -> Self {
        Self {
            task_id: TaskId::new(),
            conversation_id,
            input,
            base_instructions_override: None,
            model_override: None,
            closure: None,
            depth,
            chain: ChainId::new(),
            handoffs: 0,
            compact: None,
            shell: None,
            receipts: true,
        }
    }
}

/// An `input_receipt` for input `id` in `conversation`.
fn receipt(id: TaskId, receipt: Receipt, reason: Option<String>) -> EventMsg {
    EventMsg::InputReceipt {
        input_id: id,
        receipt,
        step: None,
        reason,
    }
}

/// Runs one task: the session's real runner prepares a turn and runs it; tests script one.
pub(crate) trait TaskRunner: Send + Sync + 'static {
    /// Runs `plan` to its end, emitting its events, and says how it ended.
    fn run(&self, plan: TaskPlan, control: TaskControl) -> BoxFuture<'static, TurnOutcome>;
    /// Called when the queue ran empty, before anything else runs: the turn's end is
    /// recorded (for `/undo`).
    fn turn_ended(&self) -> BoxFuture<'static, ()>;
    /// Called after each task (`idle` false) and once the session stayed idle for [`QUIET`]
    /// (`idle` true): the session saves its snapshot (after a task, only when one is due).
    /// A task that arrives during the save starts beside it.
    fn save(&self, conversation: ConversationId, idle: bool) -> BoxFuture<'static, ()>;
    /// Called for each queued plan the driver drops without running it (shutdown, a
    /// destroyed conversation): a continuation's pending tool call gets a result saying
    /// `why`, so the history stays a valid request.
    fn dropped(&self, plan: TaskPlan, why: &str);
}

struct Running {
    task_id: TaskId,
    conversation_id: ConversationId,
    chain: ChainId,
    handoffs: u32,
    control: TaskControl,
}

/// The driver's part of the session state.
#[derive(Default)]
pub(crate) struct Queue {
    plans: VecDeque<TaskPlan>,
    running: Option<Running>,
    /// A drive loop is alive (it may be between two tasks).
    driving: bool,
    last_task: Option<(ConversationId, TaskId)>,
    /// The loop has said `idle` and has nothing left to do but end.
    idle_said: bool,
}

impl Queue {
    /// No task runs and none waits.
    pub fn is_empty(&self) -> bool {
        self.running.is_none() && self.plans.is_empty()
    }

    /// Whether a task runs on `conversation`, or a continuation waits to answer its pending
    /// tool call: its history must not take a message from outside now (it would fall
    /// between a call and its result, or before the reply being streamed).
    pub fn holds_history_of(&self, conversation: ConversationId) -> bool {
        self.running
            .as_ref()
            .is_some_and(|running| running.conversation_id == conversation)
            || self
                .plans
                .iter()
                .any(|plan| plan.conversation_id == conversation && plan.closure.is_some())
    }

    /// Nothing runs, waits, or is being wound up: the loop has ended, or it has said `idle`
    /// (a client that saw `idle` finds the session at rest).
    pub fn at_rest(&self) -> bool {
        self.is_empty() && (!self.driving || self.idle_said)
    }

    /// Whether `conversation` waits for a continuation: it handed its turn over (it is an
    /// ancestor in the running chain) and its pending tool call is not answered yet.
    pub fn awaits_continuation(&self, conversation: ConversationId) -> bool {
        self.plans
            .iter()
            .any(|plan| plan.conversation_id == conversation && plan.closure.is_some())
    }

    /// A task of `conversation` runs, or it waits for a continuation: its history is in
    /// use.
    pub fn holds(&self, conversation: ConversationId) -> bool {
        self.running
            .as_ref()
            .is_some_and(|running| running.conversation_id == conversation)
            || self.awaits_continuation(conversation)
    }
}

/// Starts tasks one at a time and applies their outcomes.
pub(crate) struct Driver {
    state: Arc<Mutex<State>>,
    hub: EventHub,
    runtime: Handle,
    runner: Arc<dyn TaskRunner>,
    /// Counts finished tasks, for those who wait for the running one to end.
    finished: tokio::sync::watch::Sender<u64>,
}

impl Driver {
    pub fn new(
        state: Arc<Mutex<State>>,
        hub: EventHub,
        runtime: Handle,
        runner: Arc<dyn TaskRunner>,
    ) -> Self {
        Self {
            state,
            hub,
            runtime,
            runner,
            finished: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Runs `work` on the session's runtime.
    pub fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        self.runtime.spawn(work);
    }

    /// Queues `plans` after everything already waiting.
    pub fn enqueue(self: &Arc<Self>, plans: Vec<TaskPlan>) {
        self.push(plans, false);
    }

    fn push(self: &Arc<Self>, plans: Vec<TaskPlan>, front: bool) {
        // Input that waits behind other work is told it is queued, before it can start: a
        // `queued` never follows the `started` of the same input.
        let busy = {
            let state = lock(&self.state);
            state.queue.running.is_some() || !state.queue.plans.is_empty()
        };
        if busy {
            for plan in plans.iter().filter(|plan| plan.receipts) {
                self.hub.emit(
                    plan.conversation_id,
                    Some(plan.task_id),
                    receipt(plan.task_id, Receipt::Queued, None),
                );
            }
        }
        let start = {
            let mut state = lock(&self.state);
            let queue = &mut state.queue;
            if front {
                for plan in plans.into_iter().rev() {
                    queue.plans.push_front(plan);
                }
            } else {
                queue.plans.extend(plans);
            }
            !std::mem::replace(&mut queue.driving, true)
        };
        if start {
            self.runtime.spawn(self.clone().drive());
        }
    }

    /// Stops the task running on `conversation` with `reason`; returns whether one ran.
    pub fn stop(&self, conversation: ConversationId, reason: AbortReason) -> bool {
        let state = lock(&self.state);
        match &state.queue.running {
            Some(running) if running.conversation_id == conversation => {
                running.control.stop(reason);
                true
            }
            _ => false,
        }
    }

    /// Interrupts the session's work: stops the running task, whatever conversation it is
    /// on, and drops the queued plans of its chain (the handoffs' continuations, whose calls
    /// get a result saying so). Input queued by later user input stays. Between two tasks,
    /// the chain of the next one is dropped. Returns whether there was work to stop.
    pub fn interrupt_chain(&self) -> bool {
        let dropped = {
            let mut state = lock(&self.state);
            let queue = &mut state.queue;
            let chain = match (&queue.running, queue.plans.front()) {
                (Some(running), _) => {
                    running.control.stop(AbortReason::Interrupted);
                    running.chain
                }
                (None, Some(next)) => next.chain,
                (None, None) => return false,
            };
            let (dropped, kept) = std::mem::take(&mut queue.plans)
                .into_iter()
                .partition(|plan| plan.chain == chain);
            queue.plans = kept;
            dropped
        };
        self.drop_plans(dropped, DropReason::Interrupted);
        true
    }

    /// Gives `steer` to the task running on `conversation`, for its next checkpoint; gives
    /// it back when none runs there or the task takes no more.
    pub fn steer(&self, conversation: ConversationId, steer: Steer) -> Result<(), Steer> {
        let state = lock(&self.state);
        match &state.queue.running {
            Some(running) if running.conversation_id == conversation => {
                running.control.offer_steer(steer)
            }
            _ => Err(steer),
        }
    }

    /// Withdraws a person's input `id` that has not reached a model yet: queued as a task
    /// (it ends with `task_dropped`) or waiting to be steered into the running one. Returns
    /// whether there was such input.
    pub fn withdraw(&self, id: TaskId) -> bool {
        let (dropped, steered) = {
            let mut state = lock(&self.state);
            let queue = &mut state.queue;
            let at = queue
                .plans
                .iter()
                .position(|plan| plan.task_id == id && plan.receipts && plan.closure.is_none());
            let dropped = at.and_then(|at| queue.plans.remove(at));
            let steered = match (&dropped, &queue.running) {
                (None, Some(running)) => running
                    .control
                    .withdraw_steer(id)
                    .then_some(running.conversation_id),
                _ => None,
            };
            (dropped, steered)
        };
        if let Some(conversation) = steered {
            let reason = Some(drop_reason(DropReason::Withdrawn).to_owned());
            self.hub
                .emit(conversation, None, receipt(id, Receipt::Dropped, reason));
            return true;
        }
        let withdrawn = dropped.is_some();
        self.drop_plans(dropped, DropReason::Withdrawn);
        withdrawn
    }

    /// Drops every queued plan of `conversation`.
    pub fn forget(&self, conversation: ConversationId) {
        let dropped = {
            let mut state = lock(&self.state);
            let (dropped, kept) = std::mem::take(&mut state.queue.plans)
                .into_iter()
                .partition(|plan| plan.conversation_id == conversation);
            state.queue.plans = kept;
            dropped
        };
        self.drop_plans(dropped, DropReason::ConversationDestroyed);
    }

    /// Drops every queued plan and interrupts the running task, for shutdown; returns whether
    /// a task was running.
    pub fn stop_all(&self) -> bool {
        let (dropped, was_running) = {
            let mut state = lock(&self.state);
            let was_running = match &state.queue.running {
                Some(running) => {
                    running.control.stop(AbortReason::Interrupted);
                    true
                }
                None => false,
            };
            (std::mem::take(&mut state.queue.plans), was_running)
        };
        self.drop_plans(dropped, DropReason::SessionEnded);
        was_running
    }

    /// Hands plans taken off the queue to the runner, then ends each of their tasks with
    /// `task_dropped` (outside the state lock): every task id `send` returned ends with one
    /// event, run or not.
    fn drop_plans(&self, plans: impl IntoIterator<Item = TaskPlan>, reason: DropReason) {
        let why = match reason {
            DropReason::Interrupted => "interrupted by the user before this call finished",
            DropReason::ConversationDestroyed => {
                "the conversation was destroyed before this call finished"
            }
            DropReason::SessionEnded => "the session ended before this call finished",
            DropReason::Withdrawn => "withdrawn by the user before this call finished",
        };
        for plan in plans {
            let (conversation, task) = (plan.conversation_id, plan.task_id);
            let receipts = plan.receipts;
            self.runner.dropped(plan, why);
            self.hub
                .emit(conversation, Some(task), EventMsg::TaskDropped { reason });
            if receipts {
                let reason = Some(drop_reason(reason).to_owned());
                self.hub.emit(
                    conversation,
                    Some(task),
                    receipt(task, Receipt::Dropped, reason),
                );
            }
        }
    }

    /// The conversation and task running now, if any.
    pub fn running(&self) -> Option<(ConversationId, TaskId)> {
        lock(&self.state)
            .queue
            .running
            .as_ref()
            .map(|running| (running.conversation_id, running.task_id))
    }

    /// Whether `conversation` waits for a continuation ([`Queue::awaits_continuation`]).
    pub fn awaits_continuation(&self, conversation: ConversationId) -> bool {
        lock(&self.state).queue.awaits_continuation(conversation)
    }

    /// How many handoffs the running task's chain made before it (0 when none runs).
    pub fn chain_handoffs(&self) -> u32 {
        lock(&self.state)
            .queue
            .running
            .as_ref()
            .map_or(0, |running| running.handoffs)
    }

    /// How many plans wait.
    pub fn pending(&self) -> usize {
        lock(&self.state).queue.plans.len()
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

    /// Takes the next plan and marks it running, or ends the loop's stretch: `None` when the
    /// queue is empty. `reported_running` says whether this stretch said `running`; when it
    /// did not, the loop ends here (`driving` is given up under the same lock).
    fn next(&self, reported_running: bool) -> Next {
        let mut state = lock(&self.state);
        let queue = &mut state.queue;
        match queue.plans.pop_front() {
            Some(plan) => {
                queue.idle_said = false;
                let control = TaskControl::new(plan.depth);
                queue.running = Some(Running {
                    task_id: plan.task_id,
                    conversation_id: plan.conversation_id,
                    chain: plan.chain,
                    handoffs: plan.handoffs,
                    control: control.clone(),
                });
                Next::Run(Box::new(plan), control)
            }
            None if reported_running => {
                queue.running = None;
                Next::Idle(queue.last_task)
            }
            None => {
                queue.running = None;
                queue.driving = false;
                queue.idle_said = false;
                Next::Stop
            }
        }
    }

    /// Runs queued tasks one at a time until the queue is empty, then reports idle.
    ///
    /// The loop only gives up `driving` after it has reported idle and found the queue
    /// still empty, so a `running` of a new loop never precedes the `idle` of an old one.
    async fn drive(self: Arc<Self>) {
        let mut reported_running = false;
        loop {
            match self.next(reported_running) {
                Next::Run(plan, control) => {
                    if !reported_running {
                        reported_running = true;
                        let state = EngineState::Running;
                        self.hub.emit(
                            plan.conversation_id,
                            Some(plan.task_id),
                            EventMsg::StateChanged { state },
                        );
                    }
                    if plan.receipts {
                        self.hub.emit(
                            plan.conversation_id,
                            Some(plan.task_id),
                            receipt(plan.task_id, Receipt::Started, None),
                        );
                    }
                    let ids = (plan.conversation_id, plan.task_id);
                    let chain = (plan.depth, plan.chain, plan.handoffs);
                    let outcome = self.runner.run(*plan, control.clone()).await;
                    {
                        let mut state = lock(&self.state);
                        state.queue.last_task = Some(ids);
                        state.queue.running = None;
                    }
                    // Input steered too late for the task's last checkpoint runs next, as
                    // its own task.
                    let unsteered: Vec<TaskPlan> = control
                        .close_steers()
                        .into_iter()
                        .map(|steer| {
                            let mut plan = TaskPlan::new(ids.0, steer.input, 0);
                            plan.task_id = steer.id;
                            plan
                        })
                        .collect();
                    if !unsteered.is_empty() {
                        self.push(unsteered, true);
                    }
                    self.apply(ids.0, chain, outcome);
                    self.finished.send_modify(|count| *count += 1);
                    self.runner.save(ids.0, false).await;
                }
                Next::Idle(last) => {
                    reported_running = false;
                    if let Some((conversation_id, task_id)) = last {
                        self.runner.turn_ended().await;
                        lock(&self.state).queue.idle_said = true;
                        let state = EngineState::Idle;
                        self.hub.emit(
                            conversation_id,
                            Some(task_id),
                            EventMsg::StateChanged { state },
                        );
                        self.save_when_quiet(conversation_id);
                    }
                }
                Next::Stop => return,
            }
        }
    }

    /// Saves the session once it has stayed idle for [`QUIET`]; a task that runs meanwhile
    /// leaves the save to its own idle. The journal already holds every change, so the
    /// snapshot is written once per quiet stretch, not after every task of a burst.
    fn save_when_quiet(self: &Arc<Self>, conversation: ConversationId) {
        let finished = *self.finished.borrow();
        // Held weakly while it waits: a session that ends meanwhile is not kept alive by it
        // (its shutdown wrote the last snapshot).
        let driver = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(QUIET).await;
            let Some(driver) = driver.upgrade() else {
                return;
            };
            let quiet =
                *driver.finished.borrow() == finished && lock(&driver.state).queue.is_empty();
            if quiet {
                driver.runner.save(conversation, true).await;
            }
        });
    }

    /// Applies how a task of `conversation` ended: `depth` handoffs deep, in `chain`, after
    /// `handoffs` of its chain.
    fn apply(
        self: &Arc<Self>,
        conversation: ConversationId,
        (depth, chain, handoffs): (u32, ChainId, u32),
        outcome: TurnOutcome,
    ) {
        match outcome {
            TurnOutcome::HandedOver(handoff) => {
                let mut target = TaskPlan::new(handoff.target, handoff.input, depth + 1);
                target.chain = chain;
                target.handoffs = handoffs + 1;
                target.receipts = false;
                let mut continuation = TaskPlan::new(conversation, Vec::new(), depth);
                continuation.receipts = false;
                continuation.task_id = handoff.continuation;
                continuation.chain = chain;
                continuation.handoffs = handoffs + 1;
                continuation.closure = Some(handoff.closure);
                self.push(vec![target, continuation], true);
            }
            TurnOutcome::Failed { error, .. } => {
                tracing::debug!(
                    "a task of {conversation} failed ({}): {error}",
                    error.kind()
                );
            }
            TurnOutcome::Completed { .. } | TurnOutcome::Aborted(_) => {}
        }
    }
}

/// Why an input was dropped, in words, for its `input_receipt`.
fn drop_reason(reason: DropReason) -> &'static str {
    match reason {
        DropReason::Interrupted => "the task it waited behind was interrupted",
        DropReason::ConversationDestroyed => "its conversation was destroyed",
        DropReason::SessionEnded => "the session ended",
        DropReason::Withdrawn => "withdrawn",
    }
}

enum Next {
    Run(Box<TaskPlan>, TaskControl),
    Idle(Option<(ConversationId, TaskId)>),
    Stop,
}

#[cfg(test)]
mod tests;
