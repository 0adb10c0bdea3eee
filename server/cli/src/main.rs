//! `coder`: the command line front door.
//!
//! `coder` alone is the interactive terminal (`terminal/`); `coder exec "prompt"` runs one
//! task in the current directory and prints its progress; `coder lsp` serves editors.
//! Logs go to stderr (`CODER_LOG=debug`), never to stdout, coloured only on a terminal and
//! never when `NO_COLOR` is set.

mod approval;
mod color;
mod exec;
mod hardening;
mod markdown;
mod memory;
mod render;
mod signals;
mod terminal;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "coder",
    version,
    about = "An engine for AI coding agents. Without a command: the interactive terminal.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    terminal: terminal::TerminalArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run one task non-interactively and exit.
    #[command(after_help = exec::EXIT_CODES)]
    Exec(exec::ExecArgs),
    /// Serve the LSP-style JSON-RPC protocol on stdio, for editors.
    Lsp {
        /// Accepted for compatibility with editor clients; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
    },
}

/// `coder lsp`: one session for the editor on the other end of stdio. The workspace and
/// configuration are settled at `initialize`, from what the client sends. SIGINT, SIGTERM
/// and SIGHUP end the session as the client's `exit` does (the running task interrupted,
/// its tool processes killed, the session saved) and exit with 130, 143 or 129.
async fn lsp() -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let mut stop = signals::listen()?.stop;
    let mut signal = None;
    coder_lsp::serve_stdio_until(&cwd, async {
        signal = Some(signals::stopped(&mut stop).await);
    })
    .await;
    Ok(signal.map_or(ExitCode::SUCCESS, signals::Stop::exit_code))
}

/// The exit code of a run that a bug stopped (a panic), as Rust's own for a panicking
/// program.
const INTERNAL_ERROR: u8 = 101;

fn main() -> ExitCode {
    // First of all, before the key is read: other processes of the same user, the commands
    // coder runs included, may not read coder's memory or environment.
    let undumpable = hardening::make_undumpable();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(color::stderr_wants_color())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CODER_LOG")
                // The file watcher's crate warns about its own bookkeeping (a watch on a
                // folder already gone), which says nothing a person can act on.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,notify=off")),
        )
        .init();
    if let Err(err) = undumpable {
        tracing::warn!(
            "cannot make coder undumpable: {err}; processes of the same user can read its environment and memory"
        );
    }
    // Processes a tool call starts and that leave its session (a double fork with
    // `setsid`) come back to coder when their parent exits, so they end with the call.
    if let Err(err) = coder_core::process::become_subreaper() {
        tracing::warn!(
            "cannot become a child subreaper: {err}; a command's processes that leave its session may outlive it"
        );
    }
    if let Some(Command::Lsp { .. }) = cli.command {
        // A long-lived server meets messages of any size.
        memory::return_large_blocks();
    }
    // `exec` runs on one thread: it is I/O bound, and keeping the engine and the printer on
    // the same thread saves a thread wake-up per streamed event (see docs/benchmarks.md).
    // `lsp` handles requests while tasks run, so it gets worker threads, and a task woken
    // by another waits in the run queue, where an idle worker takes it, not in the waking
    // worker's one-task slot until that worker's task yields: the stdout writer then
    // frames a reply's events while the engine reads the next chunk (see
    // docs/benchmarks.md; the option needs `--cfg tokio_unstable`, .cargo/config.toml).
    let runtime = match &cli.command {
        // A task that panics (a bug) ends the run, rather than the runtime going on without
        // it and what waits for it waiting forever: the process exits with 101 (below). A
        // panic a task catches itself (a library's `catch_unwind`) is not one. `coder lsp`
        // keeps serving: one conversation's bug is not the session's end. The option needs
        // `--cfg tokio_unstable` (.cargo/config.toml); a build without it goes on after a
        // task's panic, as tokio does by default.
        Some(Command::Exec(_)) | None => {
            let mut builder = tokio::runtime::Builder::new_current_thread();
            #[cfg(tokio_unstable)]
            builder.unhandled_panic(tokio::runtime::UnhandledPanic::ShutdownRuntime);
            builder
        }
        Some(Command::Lsp { .. }) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            #[cfg(tokio_unstable)]
            builder.disable_lifo_slot();
            builder
        }
    }
    .enable_all()
    .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(async {
            match cli.command {
                Some(Command::Exec(args)) => exec::run(args).await,
                Some(Command::Lsp { stdio: _ }) => lsp().await,
                None => terminal::run(cli.terminal).await,
            }
        })
    }));
    // A read of stdin may still be parked on a blocking thread (the client kept stdin open
    // after `exit`); do not wait for it.
    runtime.shutdown_background();
    let Ok(result) = result else {
        // The panic's message is on stderr already, from the panic hook.
        eprintln!(
            "error: coder stopped on an internal error (a bug); the message above says where"
        );
        return ExitCode::from(INTERNAL_ERROR);
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            // The error may quote a hostile file (a workspace's configuration).
            let err = format!("{err:#}");
            eprintln!("error: {}", coder_core::control_chars::neutralize(&err));
            ExitCode::FAILURE
        }
    }
}
