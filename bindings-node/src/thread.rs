//! Each engine runs on a thread of its own, on a current-thread tokio runtime: the model
//! stream, the engine's tasks and the event forwarder share that thread, so a streamed delta
//! reaches the forwarder without waking another thread, and the forwarder naturally batches
//! what one read of the stream produced. (On napi's multi-thread runtime every event crossed
//! threads.) Blocking work still goes to tokio's blocking pool.

use std::sync::Mutex;

use napi::{Error, Result};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

pub struct EngineThread {
    handle: Handle,
    stop: Mutex<Option<oneshot::Sender<()>>>,
}

impl EngineThread {
    pub fn start() -> Result<Self> {
        let (ready, handle) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("coder-engine".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = ready.send(Err(err.to_string()));
                        return;
                    }
                };
                let _ = ready.send(Ok(runtime.handle().clone()));
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // Whatever still runs (nothing after dispose) is dropped, not waited for.
                runtime.shutdown_background();
            })
            .map_err(|err| Error::from_reason(format!("cannot start the engine thread: {err}")))?;
        let handle = handle
            .recv()
            .map_err(|_| Error::from_reason("the engine thread did not start"))?
            .map_err(|err| Error::from_reason(format!("cannot start the engine runtime: {err}")))?;
        Ok(Self {
            handle,
            stop: Mutex::new(Some(stop)),
        })
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Ends the thread; tasks still on it are dropped.
    pub fn stop(&self) {
        let stop = self.stop.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(stop) = stop {
            let _ = stop.send(());
        }
    }
}

impl Drop for EngineThread {
    fn drop(&mut self) {
        self.stop();
    }
}
