//! The driver's state machine, with a scripted task runner instead of a model.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coder_protocol::{
    AbortReason, ConversationId, DropReason, EngineState, EventMsg, InputItem, Mode, TaskId,
};
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use tokio::sync::Notify;

use super::{Driver, QUIET, TaskPlan, TaskRunner};
use crate::conversation::{Conversation, ConversationSpec};
use crate::events::{EventHub, EventReceiver};
use crate::session::state::State;
use crate::sync::lock;
use crate::turn::{Closure, Handoff, TaskControl, TurnOutcome};

/// What the fake runner saw of one task.
#[derive(Debug, Clone, PartialEq)]
struct Ran {
    conversation: ConversationId,
    input: String,
    depth: u32,
    /// The call a continuation answers.
    closes: Option<String>,
}

/// How the fake runner ends a task, chosen from its input text.
type Script = dyn Fn(&TaskPlan) -> Step + Send + Sync;

enum Step {
    Complete,
    /// Waits until the task is stopped, then ends as stopped.
    WaitForStop,
    /// Waits for the gate, then completes.
    WaitForGate,
    HandOver(ConversationId, &'static str),
}

struct FakeRunner {
    ran: Mutex<Vec<Ran>>,
    /// The plans dropped unrun: the call each would have closed, and why.
    dropped: Mutex<Vec<(Option<String>, String)>>,
    gate: Arc<Notify>,
    /// When set, each idle save waits for it.
    save_gate: Option<Arc<Notify>>,
    /// Idle saves finished.
    saves: Arc<Mutex<usize>>,
    script: Box<Script>,
}

impl TaskRunner for FakeRunner {
    fn run(&self, plan: TaskPlan, control: TaskControl) -> BoxFuture<'static, TurnOutcome> {
        let input = plan
            .input
            .iter()
            .map(|item| match item {
                InputItem::Text { text } => text.clone(),
                InputItem::Image { image_url } => image_url.clone(),
            })
            .collect::<Vec<_>>()
            .join(" ");
        lock(&self.ran).push(Ran {
            conversation: plan.conversation_id,
            input,
            depth: plan.depth,
            closes: plan.closure.as_ref().map(|closure| closure.call_id.clone()),
        });
        let step = (self.script)(&plan);
        let gate = self.gate.clone();
        Box::pin(async move {
            let completed = TurnOutcome::Completed {
                last_agent_message: None,
                step_limit: None,
            };
            match step {
                Step::Complete => completed,
                Step::WaitForGate => {
                    gate.notified().await;
                    completed
                }
                Step::WaitForStop => {
                    control.cancel.cancelled().await;
                    TurnOutcome::Aborted(control.reason())
                }
                Step::HandOver(target, text) => TurnOutcome::HandedOver(Handoff {
                    continuation: TaskId::new(),
                    target,
                    input: vec![InputItem::Text { text: text.into() }],
                    closure: Closure {
                        call_id: format!("call to {text}"),
                        tool_name: "conv_send".into(),
                        target,
                        first_user_message: None,
                        first_items_count: None,
                    },
                }),
            }
        })
    }

    fn turn_ended(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn save(&self, _conversation: ConversationId, idle: bool) -> BoxFuture<'static, ()> {
        let gate = self.save_gate.clone();
        let saves = self.saves.clone();
        Box::pin(async move {
            if idle && let Some(gate) = gate {
                gate.notified().await;
            }
            *lock(&saves) += usize::from(idle);
        })
    }

    fn dropped(&self, plan: TaskPlan, why: &str) {
        lock(&self.dropped).push((plan.closure.map(|closure| closure.call_id), why.to_owned()));
    }
}

struct Fixture {
    driver: Arc<Driver>,
    runner: Arc<FakeRunner>,
    events: EventReceiver,
    root: ConversationId,
}

fn fixture(script: impl Fn(&TaskPlan) -> Step + Send + Sync + 'static) -> Fixture {
    fixture_with(script, None)
}

/// A fixture whose idle saves each wait for `save_gate`, when given.
fn fixture_with(
    script: impl Fn(&TaskPlan) -> Step + Send + Sync + 'static,
    save_gate: Option<Arc<Notify>>,
) -> Fixture {
    let root = Conversation::new(ConversationSpec::default(), Mode::Default);
    let root_id = root.id;
    let state = Arc::new(Mutex::new(State::new(root)));
    let hub = EventHub::default();
    let events = hub.subscribe();
    let runner = Arc::new(FakeRunner {
        ran: Mutex::new(Vec::new()),
        dropped: Mutex::new(Vec::new()),
        gate: Arc::new(Notify::new()),
        save_gate,
        saves: Arc::default(),
        script: Box::new(script),
    });
    let driver = Arc::new(Driver::new(
        state,
        hub,
        tokio::runtime::Handle::current(),
        runner.clone(),
    ));
    Fixture {
        driver,
        runner,
        events,
        root: root_id,
    }
}

fn plan(conversation: ConversationId, text: &str) -> TaskPlan {
    TaskPlan::new(conversation, vec![InputItem::Text { text: text.into() }], 0)
}

fn text_of(plan: &TaskPlan) -> String {
    match plan.input.first() {
        Some(InputItem::Text { text }) => text.clone(),
        _ => String::new(),
    }
}

impl Fixture {
    /// The `state_changed` events until the session is idle again.
    async fn until_idle(&mut self) -> Vec<EngineState> {
        let mut states = Vec::new();
        let wait = async {
            while let Some(event) = self.events.recv().await {
                if let EventMsg::StateChanged { state } = event.msg {
                    states.push(state);
                    if state == EngineState::Idle {
                        break;
                    }
                }
            }
        };
        // A guard against a hang, not a measurement.
        tokio::time::timeout(std::time::Duration::from_secs(30), wait)
            .await
            .expect("the driver went idle");
        states
    }

    /// The `task_dropped` events until the session is idle again.
    async fn dropped_until_idle(&mut self) -> Vec<(TaskId, DropReason)> {
        let mut dropped = Vec::new();
        let wait = async {
            while let Some(event) = self.events.recv().await {
                match event.msg {
                    EventMsg::TaskDropped { reason } => {
                        dropped.extend(event.task_id.map(|task| (task, reason)));
                    }
                    EventMsg::StateChanged {
                        state: EngineState::Idle,
                    } => break,
                    _ => {}
                }
            }
        };
        // A guard against a hang, not a measurement.
        tokio::time::timeout(std::time::Duration::from_secs(30), wait)
            .await
            .expect("the driver went idle");
        dropped
    }

    fn ran(&self) -> Vec<Ran> {
        lock(&self.runner.ran).clone()
    }

    async fn until_running(&self, conversation: ConversationId) -> TaskId {
        loop {
            if let Some((running, task)) = self.driver.running()
                && running == conversation
            {
                return task;
            }
            tokio::task::yield_now().await;
        }
    }
}

fn ran(conversation: ConversationId, input: &str, depth: u32, closes: Option<&str>) -> Ran {
    Ran {
        conversation,
        input: input.into(),
        depth,
        closes: closes.map(Into::into),
    }
}

#[tokio::test]
async fn plans_run_one_at_a_time_in_the_order_queued() {
    let mut f = fixture(|plan| match text_of(plan).as_str() {
        "first" => Step::WaitForGate,
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "first")]);
    f.until_running(root).await;
    f.driver
        .enqueue(vec![plan(root, "second"), plan(root, "third")]);
    assert_eq!(f.driver.pending(), 2, "the later plans wait");
    f.runner.gate.notify_one();
    let states = f.until_idle().await;
    assert_eq!(states, [EngineState::Running, EngineState::Idle]);
    assert_eq!(
        f.ran(),
        [
            ran(root, "first", 0, None),
            ran(root, "second", 0, None),
            ran(root, "third", 0, None)
        ]
    );
    assert_eq!(f.driver.running(), None);
}

#[tokio::test]
async fn a_handoff_runs_the_target_then_the_continuation_before_queued_input() {
    let other = coder_protocol::ConversationId::new();
    let mut f = fixture(move |plan| match text_of(plan).as_str() {
        "delegate" => Step::HandOver(other, "do it"),
        "blocked" => Step::WaitForGate,
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "blocked")]);
    f.until_running(root).await;
    f.driver
        .enqueue(vec![plan(root, "delegate"), plan(root, "later input")]);
    f.runner.gate.notify_one();
    f.until_idle().await;
    assert_eq!(
        f.ran(),
        [
            ran(root, "blocked", 0, None),
            ran(root, "delegate", 0, None),
            ran(other, "do it", 1, None),
            ran(root, "", 0, Some("call to do it")),
            ran(root, "later input", 0, None),
        ]
    );
}

#[tokio::test]
async fn stopping_reaches_only_the_running_conversation() {
    let mut f = fixture(|_| Step::WaitForStop);
    let root = f.root;
    let other = coder_protocol::ConversationId::new();
    f.driver.enqueue(vec![plan(root, "work")]);
    f.until_running(root).await;
    assert!(!f.driver.stop(other, AbortReason::Interrupted));
    assert!(f.driver.stop(root, AbortReason::Interrupted));
    f.until_idle().await;
    assert_eq!(f.ran(), [ran(root, "work", 0, None)]);
}

#[tokio::test]
async fn forget_drops_the_queued_plans_of_one_conversation() {
    let other = coder_protocol::ConversationId::new();
    let mut f = fixture(|plan| match text_of(plan).as_str() {
        "blocked" => Step::WaitForGate,
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "blocked")]);
    f.until_running(root).await;
    let gone = plan(other, "gone");
    let gone_task = gone.task_id;
    f.driver.enqueue(vec![gone, plan(root, "kept")]);
    f.driver.forget(other);
    f.runner.gate.notify_one();
    // The dropped task still ends, with one event, so a client waiting for it is not left
    // waiting.
    assert_eq!(
        f.dropped_until_idle().await,
        [(gone_task, DropReason::ConversationDestroyed)]
    );
    assert_eq!(
        f.ran(),
        [ran(root, "blocked", 0, None), ran(root, "kept", 0, None)]
    );
}

#[tokio::test]
async fn stop_all_interrupts_the_running_task_and_drops_the_queue() {
    let mut f = fixture(|_| Step::WaitForStop);
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "running")]);
    f.until_running(root).await;
    f.driver.enqueue(vec![plan(root, "queued")]);
    assert!(f.driver.stop_all());
    f.until_idle().await;
    assert_eq!(f.ran(), [ran(root, "running", 0, None)]);
    assert_eq!(f.driver.pending(), 0);
    assert!(!f.driver.stop_all(), "nothing runs any more");
}

#[tokio::test]
async fn each_handoff_goes_one_level_deeper_and_its_continuation_stays() {
    let a = coder_protocol::ConversationId::new();
    let b = coder_protocol::ConversationId::new();
    let mut f = fixture(move |plan| match text_of(plan).as_str() {
        "start" => Step::HandOver(a, "to a"),
        "to a" => Step::HandOver(b, "to b"),
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "start")]);
    f.until_idle().await;
    assert_eq!(
        f.ran(),
        [
            ran(root, "start", 0, None),
            ran(a, "to a", 1, None),
            ran(b, "to b", 2, None),
            ran(a, "", 1, Some("call to to b")),
            ran(root, "", 0, Some("call to to a")),
        ]
    );
}

#[tokio::test]
async fn stop_all_during_a_handoff_hands_the_dropped_continuation_back_to_close_its_call() {
    let other = coder_protocol::ConversationId::new();
    let mut f = fixture(move |plan| match text_of(plan).as_str() {
        "delegate" => Step::HandOver(other, "do it"),
        _ => Step::WaitForStop,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "delegate")]);
    f.until_running(other).await;
    assert!(f.driver.stop_all());
    f.until_idle().await;
    assert_eq!(
        f.ran(),
        [ran(root, "delegate", 0, None), ran(other, "do it", 1, None)]
    );
    assert_eq!(
        lock(&f.runner.dropped).clone(),
        [(
            Some("call to do it".to_owned()),
            "the session ended before this call finished".to_owned()
        )]
    );
}

#[tokio::test]
async fn stop_all_between_tasks_still_drops_the_queue() {
    let mut f = fixture(|plan| match text_of(plan).as_str() {
        "blocked" => Step::WaitForGate,
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "blocked")]);
    f.until_running(root).await;
    f.driver.enqueue(vec![plan(root, "queued")]);
    // Taken off the queue the way a stop between two tasks finds it.
    f.driver.forget(root);
    assert_eq!(
        lock(&f.runner.dropped).len(),
        1,
        "forget reports what it drops"
    );
    f.runner.gate.notify_one();
    f.until_idle().await;
    assert_eq!(f.ran(), [ran(root, "blocked", 0, None)]);
}

#[tokio::test]
async fn the_conversations_that_handed_over_await_their_continuation_until_it_runs() {
    let a = coder_protocol::ConversationId::new();
    let b = coder_protocol::ConversationId::new();
    let mut f = fixture(move |plan| match text_of(plan).as_str() {
        "start" => Step::HandOver(a, "to a"),
        "to a" => Step::HandOver(b, "to b"),
        "to b" => Step::WaitForGate,
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "start")]);
    f.until_running(b).await;
    assert!(f.driver.awaits_continuation(root), "the root waits");
    assert!(f.driver.awaits_continuation(a), "so does the middle one");
    assert!(!f.driver.awaits_continuation(b), "the running one does not");
    f.runner.gate.notify_one();
    f.until_idle().await;
    assert!(!f.driver.awaits_continuation(root));
    assert!(!f.driver.awaits_continuation(a));
}

#[tokio::test]
async fn interrupting_the_chain_stops_the_target_and_drops_only_its_continuations() {
    let a = coder_protocol::ConversationId::new();
    let b = coder_protocol::ConversationId::new();
    let mut f = fixture(move |plan| match text_of(plan).as_str() {
        "start" => Step::HandOver(a, "to a"),
        "to a" => Step::HandOver(b, "to b"),
        "to b" => Step::WaitForStop,
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "start")]);
    f.until_running(b).await;
    f.driver.enqueue(vec![plan(root, "next input")]);
    assert!(f.driver.interrupt_chain());
    f.until_idle().await;
    assert_eq!(
        f.ran(),
        [
            ran(root, "start", 0, None),
            ran(a, "to a", 1, None),
            ran(b, "to b", 2, None),
            ran(root, "next input", 0, None),
        ],
        "the continuations are gone; later input still runs"
    );
    let why = "interrupted by the user before this call finished".to_owned();
    assert_eq!(
        lock(&f.runner.dropped).clone(),
        [
            (Some("call to to b".to_owned()), why.clone()),
            (Some("call to to a".to_owned()), why),
        ]
    );
    assert!(!f.driver.interrupt_chain(), "nothing runs any more");
}

#[tokio::test]
async fn a_chain_counts_its_handoffs_and_new_input_starts_from_none() {
    let a = coder_protocol::ConversationId::new();
    let mut f = fixture(
        move |plan| match (text_of(plan).as_str(), plan.closure.as_ref()) {
            ("start", _) => Step::HandOver(a, "to a"),
            // The continuation hands over again, once.
            ("", Some(closure)) if closure.call_id == "call to to a" => Step::HandOver(a, "again"),
            ("again" | "next", _) => Step::WaitForGate,
            _ => Step::Complete,
        },
    );
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "start")]);
    f.until_running(a).await;
    // "again" runs: the second handoff of the chain.
    while f.driver.chain_handoffs() != 2 {
        tokio::task::yield_now().await;
    }
    f.driver.enqueue(vec![plan(root, "next")]);
    f.runner.gate.notify_one();
    f.until_running(root).await;
    while lock(&f.runner.ran).last().map(|r| r.input.clone()) != Some("next".into()) {
        tokio::task::yield_now().await;
    }
    assert_eq!(f.driver.chain_handoffs(), 0, "new input is a new chain");
    f.runner.gate.notify_one();
    f.until_idle().await;
}

#[tokio::test]
async fn interrupting_the_chain_between_two_tasks_drops_the_next_ones() {
    let a = coder_protocol::ConversationId::new();
    let mut f = fixture(move |plan| match text_of(plan).as_str() {
        "blocked" => Step::WaitForGate,
        _ => Step::Complete,
    });
    let root = f.root;
    f.driver.enqueue(vec![plan(root, "blocked")]);
    f.until_running(root).await;
    // What the queue holds right after a handoff was applied: no task runs yet.
    let mut target = plan(a, "target");
    let mut continuation = plan(root, "");
    continuation.chain = target.chain;
    continuation.closure = Some(Closure {
        call_id: "c1".into(),
        tool_name: "conv_create".into(),
        target: a,
        first_user_message: None,
        first_items_count: None,
    });
    target.depth = 1;
    let later = plan(root, "later");
    {
        let mut state = lock(&f.driver.state);
        state.queue.running = None;
        state.queue.plans.extend([target, continuation, later]);
    }
    assert!(f.driver.interrupt_chain());
    assert_eq!(f.driver.pending(), 1, "only the later input stays");
    assert_eq!(lock(&f.runner.dropped).len(), 2);
    f.runner.gate.notify_one();
    f.until_idle().await;
    assert_eq!(
        f.ran(),
        [ran(root, "blocked", 0, None), ran(root, "later", 0, None)]
    );
}

/// Waits (bounded) until `done` holds.
async fn until(done: impl Fn() -> bool) {
    let wait = async {
        while !done() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    };
    // A guard against a hang, not a measurement.
    tokio::time::timeout(std::time::Duration::from_secs(30), wait)
        .await
        .expect("the condition came true");
}

#[tokio::test(start_paused = true)]
async fn the_snapshot_is_saved_once_the_session_stayed_idle_and_once_for_a_burst() {
    let mut f = fixture(|_| Step::Complete);
    let runner = f.runner.clone();
    let saves = || *lock(&runner.saves);
    f.driver.enqueue(vec![plan(f.root, "one")]);
    assert_eq!(
        f.until_idle().await,
        [EngineState::Running, EngineState::Idle]
    );
    // `idle` does not wait for the disk.
    assert_eq!(saves(), 0);
    // A task within the quiet stretch: the first save is left to the second idle.
    tokio::time::sleep(QUIET / 2).await;
    f.driver.enqueue(vec![plan(f.root, "two")]);
    assert_eq!(
        f.until_idle().await,
        [EngineState::Running, EngineState::Idle]
    );
    tokio::time::sleep(QUIET / 2 + Duration::from_millis(10)).await;
    assert_eq!(saves(), 0, "saved while a burst went on");
    tokio::time::sleep(QUIET).await;
    assert_eq!(saves(), 1);
    // Nothing more happens, nothing more is written.
    tokio::time::sleep(QUIET * 4).await;
    assert_eq!(saves(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_task_sent_during_the_save_starts_at_once() {
    let save_gate = Arc::new(Notify::new());
    let mut f = fixture_with(|_| Step::Complete, Some(save_gate.clone()));
    f.driver.enqueue(vec![plan(f.root, "one")]);
    f.until_idle().await;
    // The save has started and is held.
    tokio::time::sleep(QUIET + Duration::from_millis(10)).await;
    f.driver.enqueue(vec![plan(f.root, "two")]);
    assert_eq!(
        f.until_idle().await,
        [EngineState::Running, EngineState::Idle]
    );
    assert_eq!(f.ran().len(), 2);
    assert_eq!(*lock(&f.runner.saves), 0);
    save_gate.notify_one();
    until(|| *lock(&f.runner.saves) == 1).await;
}
