//! One tokio runtime for every engine of the process, and for the addon's promises: napi's
//! runtime, built here with two worker threads and at most 16 blocking threads, so a
//! process holding a thousand engines holds the same threads as one holding one. (Each
//! engine used to run on a thread of its own with a current-thread runtime: 1,000 engines
//! held 1,258 threads.) An engine's tasks end with it ([`crate::NativeEngine`]'s `dispose`,
//! or its drop), not with the runtime.
//!
//! Two workers: an idle engine costs no thread at all, and a busy one is I/O bound; a task
//! woken by another on a worker runs next on that worker (tokio's LIFO slot), so the model
//! stream, the engine and the event forwarder of one engine still mostly share a thread, as
//! they did on an engine's own thread (see `docs/benchmarks.md`).

use tokio::runtime::Handle;

/// The runtime's worker threads.
const WORKERS: usize = 2;
/// The most threads the runtime starts for blocking work (file reads, searches, process
/// waits); more waits in a queue.
const MOST_BLOCKING_THREADS: usize = 16;

/// Hands napi the runtime it is to use, before any environment uses one. Without it (the
/// runtime cannot be built) napi builds its default one, and engines share that.
#[napi_derive::module_init]
fn init() {
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .max_blocking_threads(MOST_BLOCKING_THREADS)
        .thread_name("coder-engine")
        .enable_all()
        .build();
    if let Ok(runtime) = built {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
}

/// The process's runtime.
pub fn handle() -> Handle {
    napi::bindgen_prelude::within_runtime_if_available(Handle::current)
}

/// How many tasks the runtime holds now (0 once every engine is disposed and no promise is
/// pending besides the caller's own).
pub fn alive_tasks() -> usize {
    handle().metrics().num_alive_tasks()
}
