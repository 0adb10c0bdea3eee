//! Engine events to JavaScript: one task takes them from the engine's receiver and hands
//! what is ready to the listener as one JSON array (parsed once on the JavaScript side), and
//! waits until JavaScript has taken that batch before handing over the next. Meanwhile it
//! keeps taking events, so a fast stream costs a few calls into JavaScript instead of one
//! per delta.
//!
//! While JavaScript is behind, consecutive text (or thinking) deltas of one conversation's
//! task are merged into one delta carrying their joined text and the `seq` of the last of
//! them: no text is lost, `seq` still increases strictly but may skip the numbers merged
//! away, and what waits for JavaScript is bounded by the number of distinct events, not by
//! the length of the stream. A listener that keeps up gets every delta as the engine
//! emitted it.

use coder_core::{Engine, EventReceiver};
use coder_protocol::{Event, EventMsg};
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Result, Status};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A batch is handed over once it holds this much, even if more is ready.
const BATCH_BYTES: usize = 1 << 20;

/// Roughly what an event's envelope adds to a batch (two ids, `seq`, `type`).
const ENVELOPE_BYTES: usize = 160;

/// The listener: called with a JSON array string; weak, so it never keeps Node alive.
type Listener = ThreadsafeFunction<String, (), String, Status, false, true>;

pub struct Forwarder {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Forwarder {
    /// Starts forwarding on `runtime` (the process's runtime).
    pub fn start(
        engine: &Engine,
        on_events: Function<String, ()>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self> {
        Self::start_with(engine.subscribe(), None, on_events, runtime)
    }

    /// Starts forwarding `events` on `runtime`, after handing `first` over as a batch of
    /// its own (what a listener attaching from a `seq` missed: the `session/subscribe`
    /// result as JSON, never merged with what follows).
    pub fn start_with(
        events: EventReceiver,
        first: Option<String>,
        on_events: Function<String, ()>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self> {
        let listener: Listener = on_events
            .build_threadsafe_function()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = runtime.spawn(async move {
            if let Some(first) = first
                && listener.call_async_catch(first).await.is_err()
            {
                return;
            }
            forward(events, listener, stopped).await;
        });
        Ok(Self { stop, task })
    }

    /// Delivers what is still queued, then ends.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }

    /// Ends at once, delivering nothing more.
    pub fn abort(self) {
        self.task.abort();
    }
}

async fn forward(mut events: EventReceiver, listener: Listener, stop: CancellationToken) {
    let mut pending = Pending::default();
    let mut open = true;
    loop {
        if pending.is_empty() {
            let first = tokio::select! {
                biased;
                event = events.recv() => event,
                () = stop.cancelled() => events.try_recv().ok(),
            };
            let Some(first) = first else {
                return;
            };
            pending.add(first);
        }
        while pending.bytes < BATCH_BYTES {
            let Ok(event) = events.try_recv() else {
                break;
            };
            pending.add(event);
        }
        let call = listener.call_async_catch(pending.take_json());
        let mut call = std::pin::pin!(call);
        // While JavaScript works through that batch, the next one gathers here (merged), so
        // a listener that falls behind holds one event per distinct event, not per delta.
        loop {
            tokio::select! {
                biased;
                // The SDK's listener never throws (it reports listeners' errors on its own),
                // so an error here means Node is going away and nobody is listening any more.
                taken = &mut call => match taken {
                    Ok(()) => break,
                    Err(_) => return,
                },
                event = events.recv(), if open => match event {
                    Some(event) => pending.add(event),
                    None => open = false,
                },
            }
        }
        if !open && pending.is_empty() {
            return;
        }
    }
}

/// The events gathered for the next batch, consecutive deltas merged.
#[derive(Default)]
struct Pending {
    events: Vec<Event>,
    /// The deltas' text held, a rough measure of the batch's size.
    bytes: usize,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Adds `event`; a text or thinking delta that follows one of the same kind, conversation
    /// and task is appended to it instead, which then carries the later `seq`.
    fn add(&mut self, event: Event) {
        if let Some(last) = self.events.last_mut()
            && last.absorb(&event)
        {
            if let EventMsg::AgentMessageDelta { delta } | EventMsg::AgentReasoningDelta { delta } =
                &event.msg
            {
                self.bytes += delta.len();
            }
            return;
        }
        self.bytes += ENVELOPE_BYTES;
        if let EventMsg::AgentMessageDelta { delta } | EventMsg::AgentReasoningDelta { delta } =
            &event.msg
        {
            self.bytes += delta.len();
        }
        self.events.push(event);
    }

    /// The gathered events as one JSON array; empties the batch.
    fn take_json(&mut self) -> String {
        let mut batch = String::with_capacity(self.bytes + 2);
        batch.push('[');
        for (i, event) in self.events.drain(..).enumerate() {
            if i > 0 {
                batch.push(',');
            }
            push(&mut batch, &event);
        }
        batch.push(']');
        self.bytes = 0;
        batch
    }
}

fn push(batch: &mut String, event: &Event) {
    match serde_json::to_string(event) {
        Ok(json) => batch.push_str(&json),
        Err(err) => {
            batch.push_str(&serde_json::json!({"serializationError": err.to_string()}).to_string())
        }
    }
}
