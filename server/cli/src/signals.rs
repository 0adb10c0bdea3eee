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

/// Listens for the signals from now on (the default action, dying at once, is replaced), and
/// reports the first one on the returned channel.
pub fn listen() -> std::io::Result<tokio::sync::watch::Receiver<Option<Stop>>> {
    let (sender, receiver) = tokio::sync::watch::channel(None);
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
            // Later signals are taken and ignored: the session is ending already.
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
    });
    Ok(receiver)
}

/// Waits until a signal came.
pub async fn stopped(receiver: &mut tokio::sync::watch::Receiver<Option<Stop>>) -> Stop {
    match receiver.wait_for(Option::is_some).await {
        Ok(stop) => (*stop).unwrap_or(Stop::Interrupt),
        // The listener is gone: no signal will come.
        Err(_) => std::future::pending().await,
    }
}
