//! `coder exec`: one task, streamed to the terminal or as JSON lines.
//!
//! Human output: the assistant's text on stdout; thinking, one line per tool call, warnings
//! and errors on stderr. Text coder did not write itself (the model's, tools', files') is
//! printed with its control characters shown, not obeyed
//! ([`coder_core::control_chars::neutralize`]), then coloured. `--json`: every event as one
//! JSON line on stdout (JSON escapes every control character).
//! Exit codes: see [`EXIT_CODES`] (also printed by `coder exec --help`).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use coder_core::control_chars::neutralize;
use coder_core::event_json::EventJson;
use coder_core::{
    Config, ConfigError, Door, DoorNames, Engine, ErrorKind, Overrides, ProviderNeed,
};
use coder_protocol::{
    ConversationId, EngineState, Event, EventMsg, InputItem, Mode, PermissionDecision, Preset,
    TaskEnd, ToolKind,
};

use crate::render::{Human, Style};
use crate::signals::Stop;

/// What each exit code of `coder exec` means, for `--help` and the README.
pub const EXIT_CODES: &str = "\
Exit codes:
  0    the task completed
  1    a provider or configuration error (the reason is on stderr)
  2    a usage error: bad arguments, an empty or oversized prompt
  3    the step limit (--max-steps, maxSteps) stopped the task before it was done
  101  an internal error (a bug in coder) stopped the run; the message on stderr says where
  129  ended by SIGHUP (the terminal closed); the task is interrupted and the session saved
  130  interrupted with Ctrl-C (SIGINT); a second Ctrl-C (or SIGTERM) exits at once, without
       waiting for the session to end (commands and MCP servers are killed, nothing more is saved)
  141  stdout was closed (for example `coder exec ... | head -1`); the task is interrupted
  143  ended by SIGTERM; the task is interrupted and the session saved";

/// The exit code when stdout closes: what a shell reports for a process ended by SIGPIPE.
const STDOUT_CLOSED: u8 = 141;

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
    /// Run as if started in DIR: the workspace is its enclosing git repository, else DIR.
    #[arg(short = 'C', long = "cd")]
    cd: Option<PathBuf>,
    /// Model calls per task before stopping (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_steps: Option<u32>,
    /// The mode: plan, default, auto-edit or yolo.
    #[arg(long, value_parser = parse_mode)]
    mode: Option<Mode>,
    /// The permission preset: strict, balanced, auto-edit or yolo.
    #[arg(long, value_parser = parse_preset)]
    permissions: Option<Preset>,
    /// Approve every permission request without asking (dangerous commands are still
    /// refused: they need a person).
    #[arg(long)]
    auto_approve: bool,
    /// Trust this folder for this run: its own .coder/config.json and .mcp.json apply whole
    /// (MCP servers, provider endpoint, looser modes). Without it, and unless the user-level
    /// config lists the folder in "trustedFolders", they may only narrow your settings.
    /// Nothing is recorded.
    #[arg(long)]
    trust: bool,
}

pub(crate) fn parse_mode(text: &str) -> Result<Mode, String> {
    Mode::ALL
        .into_iter()
        .find(|mode| mode.as_str() == text)
        .ok_or_else(|| format!("unknown mode `{text}`; one of plan, default, auto-edit, yolo"))
}

pub(crate) fn parse_preset(text: &str) -> Result<Preset, String> {
    Preset::ALL
        .into_iter()
        .find(|preset| preset.as_str() == text)
        .ok_or_else(|| format!("unknown preset `{text}`; one of strict, balanced, auto-edit, yolo"))
}

/// `coder exec` as the core knows it: it runs a task at once, so it needs a model to start.
const DOOR: Door = Door {
    names: DoorNames {
        settings: "the command line",
        base_url: "the command line",
        how_to_trust: "run with --trust to apply them",
    },
    provider: ProviderNeed::AtStart,
    completes_paths: false,
    watches_files: false,
    keeps_checkpoints: false,
};

impl ExecArgs {
    /// The flags that set configuration, as the core's overrides.
    fn overrides(&self) -> Overrides {
        Overrides {
            model: self.model.clone(),
            max_steps: self.max_steps,
            mode: self.mode,
            preset: self.permissions,
            // Without the flag, the configuration decides.
            auto_approve: self.auto_approve.then_some(true),
            trust_workspace: self.trust.then_some(true),
            ..Overrides::default()
        }
    }
}

pub async fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let overrides = args.overrides();
    let start = match args.cd {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    // The start directory (`-C` means "as if started in"): the enclosing repository is the
    // workspace, and the start directory is named in the system prompt.
    // Configuration mistakes and what an untrusted workspace asked for and did not get go
    // to stderr before anything runs (also when no provider is configured: they may be
    // why), and not again as events.
    let print_warnings = |warnings: &mut Vec<String>| {
        for warning in std::mem::take(warnings) {
            // Warnings quote the configuration files, which a repository may have shipped.
            eprintln!("warning: {}", neutralize(&warning));
        }
    };
    let mut config = match Config::for_door(&DOOR, None, &start, overrides) {
        Ok(config) => config,
        Err(ConfigError::NoProvider { mut warnings }) => {
            print_warnings(&mut warnings);
            return Err(ConfigError::NoProvider { warnings }.into());
        }
        Err(err) => return Err(err.into()),
    };
    print_warnings(&mut config.warnings);
    let prompt = if args.prompt == "-" {
        // Read no more than the limit allows: an endless stdin is refused, not buffered.
        let limit = config.max_prompt_bytes;
        let mut text = String::new();
        std::io::stdin()
            .take(limit as u64 + 1)
            .read_to_string(&mut text)
            .context("cannot read the prompt from stdin")?;
        if text.len() > limit {
            return Ok(usage_error(&format!(
                "the prompt on stdin is over the limit of {limit} bytes (maxPromptBytes)"
            )));
        }
        text
    } else {
        args.prompt
    };
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let signals = crate::signals::listen().context("cannot listen for signals")?;
    let mut stop = signals.stop;
    let engine = Engine::new(config)?;
    // The tests' way to a bug in one of a started session's tasks (debug builds only).
    #[cfg(debug_assertions)]
    if std::env::var_os("CODER_TEST_PANIC").is_some() {
        tokio::spawn(async { panic!("CODER_TEST_PANIC is set") });
    }
    // A second Ctrl-C exits at once, whatever the session's end is waiting for.
    tokio::spawn(crate::signals::exit_when_forced(
        signals.again,
        engine.clone(),
    ));
    let mut events = engine.subscribe();
    let conversation = engine.root_conversation();
    // The engine checks the input (empty, too large, an unknown command); a refusal is a
    // usage error. A built-in `/command` runs as at the terminal's prompt.
    let typed = vec![InputItem::Text { text: prompt }];
    let started = match engine.input(conversation, typed) {
        Ok(started) => started,
        Err(err) => {
            engine.shutdown().await;
            return match err.kind() {
                ErrorKind::InvalidParams | ErrorKind::LimitExceeded => {
                    Ok(usage_error(&err.to_string()))
                }
                _ => Err(err.into()),
            };
        }
    };
    if started.task_id.is_none() {
        // A command that answered at once (`/help`, `/tools`, `/mode plan`): its text is
        // the output.
        print_command_text(&started.text, args.json);
        engine.shutdown().await;
        return Ok(ExitCode::SUCCESS);
    }
    if !started.text.is_empty() {
        eprintln!("{}", neutralize(&started.text));
    }

    let printer: Box<dyn Printer> = if args.json {
        Box::new(JsonPrinter::new())
    } else {
        let style = Style {
            color: crate::color::stderr_wants_color(),
            markdown: std::io::IsTerminal::is_terminal(&std::io::stdout()),
            answer_color: crate::color::stdout_wants_color(),
            // The spinner and the closing line need a terminal, not colour.
            live: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            command_output: false,
            // Piped or written to a file, stdout holds exactly what the history keeps.
            stream_answer: std::io::IsTerminal::is_terminal(&std::io::stdout()),
            interrupt_key: "ctrl+c",
        };
        Box::new(Human::new(
            Box::new(std::io::BufWriter::new(std::io::stdout())),
            Box::new(std::io::stderr()),
            style,
            conversation,
        ))
    };
    let mut sink = Sink {
        printer,
        closed: false,
        stop: stop.clone(),
    };
    let mut outcome = Outcome::Complete;
    let mut stopped = None;
    loop {
        let spinner = sink.printer.spinner_due();
        let event = tokio::select! {
            event = events.recv() => event,
            () = sleep_until(spinner), if spinner.is_some() => {
                sink.write(&engine, |printer| printer.tick())?;
                continue;
            }
            signal = crate::signals::stopped(&mut stop), if stopped.is_none() => {
                // The task ends at its next checkpoint; streams and tools stop at once.
                stopped = Some(signal);
                // The session's work, whatever conversation a handoff moved it to; the
                // continuations waiting for it are dropped with their calls closed.
                engine.interrupt_session();
                continue;
            }
        };
        let Some(event) = event else { break };
        sink.write(&engine, |printer| printer.print(&event))?;
        answer_permission(&engine, &event, interactive, &stop).await?;
        // Drain what is already waiting before flushing, so bursts cost one write. A
        // stream that is still reading hands over its events in small batches: letting it
        // run once more before writing joins them into one write (the buffer writes itself
        // out when full), and the write comes as soon as the stream waits for the network.
        let mut done = is_idle(&event);
        note_outcome(&event, conversation, &mut outcome);
        loop {
            while let Ok(event) = events.try_recv() {
                sink.write(&engine, |printer| printer.print(&event))?;
                answer_permission(&engine, &event, interactive, &stop).await?;
                done |= is_idle(&event);
                note_outcome(&event, conversation, &mut outcome);
            }
            if done {
                break;
            }
            tokio::task::yield_now().await;
            if events.is_empty() {
                break;
            }
        }
        sink.write(&engine, |printer| printer.flush())?;
        if done {
            break;
        }
    }
    sink.write(&engine, |printer| printer.finish())?;
    // Saves the last snapshot, reaps MCP servers, removes the sandbox's temporary directory.
    engine.shutdown().await;
    // A signal that came while a permission was asked for, or as the task ended, counts too.
    if let Some(signal) = stopped.or(*stop.borrow()) {
        return Ok(signal.exit_code());
    }
    if sink.closed {
        return Ok(ExitCode::from(STDOUT_CLOSED));
    }
    Ok(match outcome {
        Outcome::Complete => ExitCode::SUCCESS,
        Outcome::Failed => ExitCode::FAILURE,
        Outcome::StepLimit(limit) => {
            if args.json {
                // In text mode the engine's warning said it on stderr already.
                eprintln!(
                    "error: stopped after {limit} model calls, the step limit (--max-steps), before the task was done"
                );
            }
            ExitCode::from(3)
        }
        Outcome::Interrupted => Stop::Interrupt.exit_code(),
    })
}

/// Writes a command's answer on stdout: as it is, or as one JSON line of type
/// `command_result` with `--json`.
fn print_command_text(text: &str, json: bool) {
    if json {
        let line = serde_json::json!({"type": "command_result", "text": text});
        println!("{line}");
    } else {
        println!("{}", neutralize(text));
    }
}

/// Sleeps until `at` (never, without one).
pub(crate) async fn sleep_until(at: Option<std::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Reports a usage error the way clap does: one line on stderr, exit code 2.
fn usage_error(reason: &str) -> ExitCode {
    eprintln!("error: {reason}");
    ExitCode::from(2)
}

/// Where events are printed, until stdout closes: then the task is interrupted and the
/// rest of its events are dropped, so `coder exec ... | head -1` ends quietly. After
/// SIGHUP the terminal is gone: a failed write ends the printing the same way, so the
/// session is still saved.
struct Sink {
    printer: Box<dyn Printer>,
    closed: bool,
    stop: tokio::sync::watch::Receiver<Option<Stop>>,
}

impl Sink {
    fn write(
        &mut self,
        engine: &Engine,
        write: impl FnOnce(&mut dyn Printer) -> std::io::Result<()>,
    ) -> anyhow::Result<()> {
        if self.closed {
            return Ok(());
        }
        match write(self.printer.as_mut()) {
            Ok(()) => Ok(()),
            Err(err)
                if err.kind() == std::io::ErrorKind::BrokenPipe
                    || *self.stop.borrow() == Some(Stop::Hangup) =>
            {
                self.closed = true;
                engine.interrupt_session();
                Ok(())
            }
            Err(err) => Err(err.into()),
        }
    }
}

/// Answers a permission request: from the terminal when there is one, otherwise with a
/// denial that tells the model why. A signal while the person is asked denies it (the task
/// is ending); so does a terminal that cannot be read any more.
async fn answer_permission(
    engine: &Engine,
    event: &Event,
    interactive: bool,
    stop: &tokio::sync::watch::Receiver<Option<Stop>>,
) -> anyhow::Result<()> {
    let EventMsg::PermissionRequested {
        request_id,
        kind,
        summary,
        human_required,
        options,
        question,
        ..
    } = &event.msg
    else {
        return Ok(());
    };
    if question.is_some() && !interactive {
        // Nobody to answer: the model decides, and is told why it was not asked.
        engine.withdraw_permission(
            request_id,
            "coder exec has no terminal to ask the user this question.",
        )?;
        return Ok(());
    }
    let plan = *kind == ToolKind::SwitchMode;
    if plan && !interactive {
        // Nobody to approve the plan: it is not carried out, and is the task's answer.
        engine.withdraw_permission(
            request_id,
            "coder exec has no terminal to ask the user whether to carry out this plan; it \
             was not approved and plan mode stays on. The plan is this task's answer.",
        )?;
        return Ok(());
    }
    let decision = if interactive {
        // The request, with the whole command, plan or diff, was printed just before. An
        // answer that names no option denies.
        let line = read_answer(crate::approval::prompt(options, false), stop).await;
        crate::approval::chosen(options, &line)
            .unwrap_or(PermissionDecision::Deny { message: None })
    } else if !human_required {
        PermissionDecision::Deny {
            message: Some(
                "coder exec has no terminal to ask for approval; the user can rerun with \
                 --auto-approve or a more permissive --mode"
                    .to_owned(),
            ),
        }
    } else {
        // Only a person may allow this call (a dangerous command, a protected file): no
        // flag would, so say why instead of suggesting one.
        PermissionDecision::Deny {
            message: Some(format!(
                "coder exec has no terminal to ask for approval, and only a person may allow \
                 this call ({summary}); no mode or --auto-approve allows it"
            )),
        }
    };
    // The request may have ended while the person was asked (the task was interrupted):
    // the `permission_withdrawn` printed next says so.
    let _ = engine.respond_permission(request_id, decision);
    Ok(())
}

/// Asks `prompt` on the terminal and returns the answer, trimmed and lowercased; empty when
/// a signal came first or the terminal cannot be read.
async fn read_answer(prompt: String, stop: &tokio::sync::watch::Receiver<Option<Stop>>) -> String {
    let read = tokio::task::spawn_blocking(move || {
        eprint!("{prompt}");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    });
    let mut stop = stop.clone();
    let line = tokio::select! {
        line = read => line.ok().and_then(Result::ok).unwrap_or_default(),
        // The blocked read is left behind; the runtime does not wait for it at exit.
        _ = crate::signals::stopped(&mut stop) => String::new(),
    };
    line.trim().to_owned()
}

enum Outcome {
    Complete,
    Failed,
    /// The task reached the step limit (in model calls) before it was done.
    StepLimit(u32),
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

/// Follows how the root conversation's work ends: the last of its tasks to end says how the
/// run went. A task of it that hands over to another conversation is not the end (its
/// continuation comes later on the same conversation); other conversations' tasks only feed
/// that continuation.
fn note_outcome(event: &Event, root: ConversationId, outcome: &mut Outcome) {
    if event.conversation_id != root {
        return;
    }
    *outcome = match event.msg.task_end() {
        None | Some(TaskEnd::HandedOver(_)) => return,
        Some(TaskEnd::Completed) => Outcome::Complete,
        Some(TaskEnd::StepLimit(limit)) => Outcome::StepLimit(limit),
        Some(TaskEnd::Failed(_)) => Outcome::Failed,
        Some(TaskEnd::Interrupted | TaskEnd::Dropped(_)) => Outcome::Interrupted,
    };
}

trait Printer {
    fn print(&mut self, event: &Event) -> std::io::Result<()>;
    fn flush(&mut self) -> std::io::Result<()>;
    fn finish(&mut self) -> std::io::Result<()>;
    /// When a running tool's spinner should be drawn next (a terminal only).
    fn spinner_due(&self) -> Option<std::time::Instant> {
        None
    }
    fn tick(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every event as one JSON line.
struct JsonPrinter {
    out: std::io::BufWriter<std::io::Stdout>,
    /// Writes the stream's events (deltas, a reply's whole text) without serde: a reply's
    /// events share their ids, formatted once per task, and long texts escape fast.
    json: EventJson,
}

impl JsonPrinter {
    fn new() -> Self {
        Self {
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            json: EventJson::default(),
        }
    }
}

impl Printer for JsonPrinter {
    fn print(&mut self, event: &Event) -> std::io::Result<()> {
        // Streamed deltas are most of the lines, and a reply's end carries its whole text
        // three times: written straight, the same bytes serde writes for them.
        if !self.json.write(&mut self.out, event)? {
            serde_json::to_writer(&mut self.out, event)?;
        }
        self.out.write_all(b"\n")
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Printer for Human {
    fn print(&mut self, event: &Event) -> std::io::Result<()> {
        Human::print(self, event)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Human::flush(self)
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Human::finish(self)
    }

    fn spinner_due(&self) -> Option<std::time::Instant> {
        Human::spinner_due(self)
    }

    fn tick(&mut self) -> std::io::Result<()> {
        Human::tick(self)
    }
}
