//! The threads every engine of the process runs on: a fixed number of engine threads
//! ([`ENGINE_THREADS`]), each with a current-thread tokio runtime, engines spread over them
//! in turn; and napi's runtime for the promise-returning exports, with one worker. A
//! process holding a thousand engines holds the same threads as one holding one (each
//! engine used to have a thread of its own: 1,000 engines held 1,258 threads). An engine's
//! tasks end with it ([`crate::NativeEngine`]'s `dispose`, or its drop), not with its thread.
//!
//! One engine's tasks all run on its engine thread, as they did on a thread of its own: the
//! model stream, the engine and the event forwarder never wake each other across threads,
//! and the forwarder batches what one read of the stream produced. One multi-thread runtime
//! for every engine (tried first) cost a reply of 20,000 deltas about half as much again
//! (`docs/benchmarks.md`): its tasks woke each other across its workers.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;

/// The engine threads.
const ENGINE_THREADS: usize = 2;
/// The most threads each engine thread's runtime starts for blocking work (file reads,
/// searches, process waits); more waits in a queue.
const MOST_BLOCKING_THREADS: usize = 8;
/// The same for napi's runtime, whose promises only wait for the engines.
const MOST_PROMISE_BLOCKING_THREADS: usize = 2;

/// The engine threads' runtimes, and which one the next engine gets.
struct EngineThreads {
    runtimes: Vec<Handle>,
    next: AtomicUsize,
}

static ENGINES: OnceLock<Result<EngineThreads, String>> = OnceLock::new();

/// Hands napi the runtime its promises run on (one worker), before any environment uses
/// one. Without it (the runtime cannot be built) napi builds its default one.
#[napi_derive::module_init]
fn init() {
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(MOST_PROMISE_BLOCKING_THREADS)
        .thread_name("coder-promise")
        .enable_all()
        .build();
    if let Ok(runtime) = built {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
}

/// The runtime of the engine thread the next engine runs on (the threads start with the
/// first engine).
pub fn next() -> Result<Handle, String> {
    let threads = ENGINES.get_or_init(start).as_ref().map_err(Clone::clone)?;
    let turn = threads.next.fetch_add(1, Ordering::Relaxed);
    threads
        .runtimes
        .get(turn % threads.runtimes.len())
        .cloned()
        .ok_or_else(|| "no engine thread".to_owned())
}

/// How many tasks the engine threads hold now (0 once every engine is disposed).
pub fn alive_tasks() -> usize {
    match ENGINES.get() {
        Some(Ok(threads)) => threads
            .runtimes
            .iter()
            .map(|runtime| runtime.metrics().num_alive_tasks())
            .sum(),
        _ => 0,
    }
}

/// Starts the engine threads; they run as long as the process.
fn start() -> Result<EngineThreads, String> {
    let runtimes = (0..ENGINE_THREADS)
        .map(|_| start_thread())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EngineThreads {
        runtimes,
        next: AtomicUsize::new(0),
    })
}

fn start_thread() -> Result<Handle, String> {
    let (ready, handle) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("coder-engine".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .max_blocking_threads(MOST_BLOCKING_THREADS)
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    let _ = ready.send(Err(format!("cannot start the engine runtime: {err}")));
                    return;
                }
            };
            let _ = ready.send(Ok(runtime.handle().clone()));
            runtime.block_on(std::future::pending::<()>());
        })
        .map_err(|err| format!("cannot start an engine thread: {err}"))?;
    handle
        .recv()
        .map_err(|_| "the engine thread did not start".to_owned())?
}
