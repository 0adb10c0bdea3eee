//! The signals that end `coder exec` and `coder lsp`: SIGINT (Ctrl-C), SIGTERM (`kill`, a
//! service manager, an editor stopping its server) and SIGHUP (the terminal closed). Each
//! one ends the session the same way: the running task is interrupted, its tool processes
//! are killed, the session is saved and the sandbox's temporary directory removed; the
//! exit code then says which signal it was (128 + its number, as a shell reports it).

use std::process::ExitCode;

/// A signal that asks coder to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
    Hangup,
}

impl Stop {
    /// 128 + the signal's number: 130, 143, 129.
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
            Stop::Hangup => 129,
        })
    }
}

/// The signals coder listens for, as they come.
pub struct Signals {
    /// The first signal.
    pub stop: tokio::sync::watch::Receiver<Option<Stop>>,
    /// `true` once a second SIGINT or SIGTERM came after the first signal: the person does
    /// not want to wait for the session to end (see [`exit_when_forced`]).
    pub again: tokio::sync::watch::Receiver<bool>,
}

/// Listens for the signals from now on (the default action, dying at once, is replaced):
/// reports the first one on `stop`, and a second SIGINT or SIGTERM on `again`.
pub fn listen() -> std::io::Result<Signals> {
    let (sender, receiver) = tokio::sync::watch::channel(None);
    let (again_sender, again) = tokio::sync::watch::channel(false);
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let mut hangup = signal(SignalKind::hangup())?;
        tokio::spawn(async move {
            let stop = tokio::select! {
                _ = interrupt.recv() => Stop::Interrupt,
                _ = terminate.recv() => Stop::Terminate,
                _ = hangup.recv() => Stop::Hangup,
            };
            sender.send_replace(Some(stop));
            // The session is ending already: a second SIGINT or SIGTERM says not to wait
            // for it; SIGHUP again changes nothing.
            loop {
                tokio::select! {
                    _ = interrupt.recv() => break,
                    _ = terminate.recv() => break,
                    _ = hangup.recv() => {}
                }
            }
            again_sender.send_replace(true);
            // Taken and ignored from now on: the process is exiting.
            loop {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                    _ = hangup.recv() => {}
                }
            }
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            sender.send_replace(Some(Stop::Interrupt));
        }
        if tokio::signal::ctrl_c().await.is_ok() {
            again_sender.send_replace(true);
        }
    });
    Ok(Signals {
        stop: receiver,
        again,
    })
}

/// The exit code of a forced exit: what a shell reports for Ctrl-C.
pub const FORCED_EXIT: i32 = 130;

/// Exits the process with 130 as soon as a second SIGINT or SIGTERM comes, after a
/// best-effort synchronous cleanup ([`coder_core::Engine::shutdown_now`]: the running
/// task's commands and the MCP servers killed, saving stopped, the temporary directory
/// removed), whatever the session's orderly shutdown is waiting for (an MCP server that
/// ignores SIGTERM, a slow save). Runs on the runtime as a task of its own.
pub async fn exit_when_forced(
    mut again: tokio::sync::watch::Receiver<bool>,
    engine: coder_core::Engine,
) {
    if again.wait_for(|forced| *forced).await.is_err() {
        // The listener is gone: no second signal will come.
        return;
    }
    engine.shutdown_now();
    eprintln!("error: interrupted again; exiting without waiting for the session to end");
    std::process::exit(FORCED_EXIT);
}

/// Waits until a signal came.
pub async fn stopped(receiver: &mut tokio::sync::watch::Receiver<Option<Stop>>) -> Stop {
    match receiver.wait_for(Option::is_some).await {
        Ok(stop) => (*stop).unwrap_or(Stop::Interrupt),
        // The listener is gone: no signal will come.
        Err(_) => std::future::pending().await,
    }
}
