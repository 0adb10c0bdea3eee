//! Engine events to JavaScript: one task takes them from the engine's receiver and hands
//! whatever is ready to the listener as one JSON array, and waits until JavaScript has taken
//! that batch before building the next. While JavaScript is busy, events gather into the
//! next batch, so a fast stream of deltas costs a few calls into JavaScript instead of one
//! per delta; `seq` order holds.

use coder_core::{Engine, EventReceiver};
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Result, Status};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A batch is handed over once it holds this much, even if more is ready.
const BATCH_BYTES: usize = 1 << 20;

/// The listener: called with a JSON array string; weak, so it never keeps Node alive.
type Listener = ThreadsafeFunction<String, (), String, Status, false, true>;

pub struct Forwarder {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Forwarder {
    /// Starts forwarding on `runtime` (the engine's thread).
    pub fn start(
        engine: &Engine,
        on_events: Function<String, ()>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self> {
        let listener: Listener = on_events
            .build_threadsafe_function()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        let events = engine.subscribe();
        let stop = CancellationToken::new();
        let task = runtime.spawn(forward(events, listener, stop.clone()));
        Ok(Self { stop, task })
    }

    /// Delivers what is still queued, then ends.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

async fn forward(mut events: EventReceiver, listener: Listener, stop: CancellationToken) {
    let mut batch = String::new();
    loop {
        let first = tokio::select! {
            biased;
            event = events.recv() => event,
            () = stop.cancelled() => events.try_recv().ok(),
        };
        let Some(first) = first else {
            return;
        };
        batch.clear();
        batch.push('[');
        push(&mut batch, &first);
        while batch.len() < BATCH_BYTES {
            let Ok(event) = events.try_recv() else {
                break;
            };
            batch.push(',');
            push(&mut batch, &event);
        }
        batch.push(']');
        // The SDK's listener never throws (it reports listeners' errors on its own), so an
        // error here means Node is going away and nobody is listening any more.
        if listener
            .call_async_catch(std::mem::take(&mut batch))
            .await
            .is_err()
        {
            return;
        }
    }
}

fn push(batch: &mut String, event: &coder_protocol::Event) {
    match serde_json::to_string(event) {
        Ok(json) => batch.push_str(&json),
        Err(err) => {
            batch.push_str(&serde_json::json!({"serializationError": err.to_string()}).to_string())
        }
    }
}
