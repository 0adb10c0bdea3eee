//! `coder`: the command line front door.
//!
//! `coder exec "prompt"` runs one task in the current directory and prints its progress.
//! Logs go to stderr (`CODER_LOG=debug`), never to stdout.

mod exec;
mod summary;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "coder", version, about = "An engine for AI coding agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one task non-interactively and exit.
    Exec(exec::ExecArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CODER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    // One thread: `exec` is I/O bound, and keeping the engine and the printer on the same
    // thread saves a thread wake-up per streamed event (see docs/benchmarks.md).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Exec(args) => exec::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
