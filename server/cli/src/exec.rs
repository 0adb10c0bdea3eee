//! `coder exec`: one task, streamed to the terminal or as JSON lines.
//!
//! Human output: the assistant's text on stdout; thinking, one line per tool call, warnings
//! and errors on stderr. `--json`: every event as one JSON line on stdout.
//! Exit codes: 0 when the task completes, 1 on a provider or configuration error,
//! 130 when interrupted (Ctrl-C).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use coder_core::{Config, Engine};
use coder_protocol::{EngineState, Event, EventMsg};

use crate::summary::ToolLines;

#[derive(Args)]
pub struct ExecArgs {
    /// What to do. `-` reads the prompt from stdin.
    prompt: String,
    /// Print every event as one JSON line on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// The model to use, overriding configuration.
    #[arg(short, long)]
    model: Option<String>,
    /// The workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd")]
    cd: Option<PathBuf>,
    /// Model calls per task before stopping.
    #[arg(long)]
    max_steps: Option<u32>,
}

pub async fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let workspace = match args.cd {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("cannot open workspace {}", workspace.display()))?;
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the prompt from stdin")?;
        text
    } else {
        args.prompt
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty");
    }

    let mut config = Config::load(&workspace)?;
    if let Some(model) = args.model {
        config.model = model;
    }
    if let Some(steps) = args.max_steps {
        config.max_steps = steps;
    }
    let engine = Engine::new(config)?;
    let mut events = engine.subscribe();
    let conversation = engine.root_conversation();
    let task = engine.send(conversation, prompt)?;

    let mut printer: Box<dyn Printer> = if args.json {
        Box::new(JsonPrinter::new())
    } else {
        Box::new(TextPrinter::new())
    };
    let mut outcome = Outcome::Complete;
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = &mut ctrl_c, if !interrupted => {
                // The task ends at its next checkpoint; streams and tools stop at once.
                interrupted = true;
                engine.interrupt(conversation)?;
                continue;
            }
        };
        let Some(event) = event else { break };
        printer.print(&event)?;
        // Drain what is already waiting before flushing, so bursts cost one write.
        let mut done = is_idle(&event);
        note_outcome(&event, task, &mut outcome);
        while let Ok(event) = events.try_recv() {
            printer.print(&event)?;
            done |= is_idle(&event);
            note_outcome(&event, task, &mut outcome);
        }
        printer.flush()?;
        if done {
            break;
        }
    }
    printer.finish()?;
    Ok(match outcome {
        Outcome::Complete => ExitCode::SUCCESS,
        Outcome::Failed => ExitCode::FAILURE,
        Outcome::Interrupted => ExitCode::from(130),
    })
}

enum Outcome {
    Complete,
    Failed,
    Interrupted,
}

fn is_idle(event: &Event) -> bool {
    matches!(
        event.msg,
        EventMsg::StateChanged {
            state: EngineState::Idle
        }
    )
}

fn note_outcome(event: &Event, task: coder_protocol::TaskId, outcome: &mut Outcome) {
    if event.task_id != Some(task) {
        return;
    }
    match event.msg {
        EventMsg::Error { .. } => *outcome = Outcome::Failed,
        EventMsg::TurnAborted { .. } => *outcome = Outcome::Interrupted,
        _ => {}
    }
}

trait Printer {
    fn print(&mut self, event: &Event) -> std::io::Result<()>;
    fn flush(&mut self) -> std::io::Result<()>;
    fn finish(&mut self) -> std::io::Result<()>;
}

/// Every event as one JSON line.
struct JsonPrinter {
    out: std::io::BufWriter<std::io::Stdout>,
}

impl JsonPrinter {
    fn new() -> Self {
        Self {
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
        }
    }
}

impl Printer for JsonPrinter {
    fn print(&mut self, event: &Event) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, event)?;
        self.out.write_all(b"\n")
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Text for people: the reply on stdout, everything else on stderr.
struct TextPrinter {
    out: std::io::BufWriter<std::io::Stdout>,
    tools: ToolLines,
    /// The last byte written to stdout, to end the reply with a newline.
    ended_line: bool,
    dim: bool,
}

impl TextPrinter {
    fn new() -> Self {
        Self {
            out: std::io::BufWriter::new(std::io::stdout()),
            tools: ToolLines::default(),
            ended_line: true,
            dim: std::io::stderr().is_terminal(),
        }
    }

    fn note(&mut self, text: &str) -> std::io::Result<()> {
        self.out.flush()?;
        if !self.ended_line {
            self.out.write_all(b"\n")?;
            self.out.flush()?;
            self.ended_line = true;
        }
        let mut err = std::io::stderr().lock();
        if self.dim {
            writeln!(err, "\x1b[2m{text}\x1b[0m")
        } else {
            writeln!(err, "{text}")
        }
    }
}

impl Printer for TextPrinter {
    fn print(&mut self, event: &Event) -> std::io::Result<()> {
        match &event.msg {
            EventMsg::AgentMessageDelta { delta } => {
                self.out.write_all(delta.as_bytes())?;
                self.ended_line = delta.ends_with('\n');
            }
            EventMsg::AgentReasoningDelta { delta } => {
                self.out.flush()?;
                let mut err = std::io::stderr().lock();
                if self.dim {
                    write!(err, "\x1b[2m{delta}\x1b[0m")?;
                } else {
                    write!(err, "{delta}")?;
                }
            }
            EventMsg::AgentReasoning { .. } => std::io::stderr().write_all(b"\n")?,
            EventMsg::ToolCallStarted {
                call_id, arguments, ..
            } => self.tools.started(call_id, arguments),
            EventMsg::ToolCallCompleted {
                call_id,
                tool_name,
                output,
                duration_ms,
                diff,
            } => {
                let line = self
                    .tools
                    .completed(call_id, tool_name, output, *duration_ms);
                self.note(&line)?;
            }
            EventMsg::ToolCallFailed {
                call_id,
                tool_name,
                error,
                duration_ms,
            } => {
                let line = self.tools.failed(call_id, tool_name, error, *duration_ms);
                self.note(&line)?;
            }
            EventMsg::Warning { message } => self.note(&format!("warning: {message}"))?,
            EventMsg::Error { message } => self.note(&format!("error: {message}"))?,
            EventMsg::TurnAborted { .. } => self.note("interrupted")?,
            EventMsg::TaskStarted { .. }
            | EventMsg::AgentMessage { .. }
            | EventMsg::PermissionRequested { .. }
            | EventMsg::TokenCount { .. }
            | EventMsg::TaskComplete { .. }
            | EventMsg::StateChanged { .. } => {}
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if !self.ended_line {
            self.out.write_all(b"\n")?;
        }
        self.out.flush()
    }
}
