//! `coder`: the interactive terminal (seed 004). History scrolls in the terminal; there is
//! no full-screen view. Before each prompt, line one shows the context's size in tokens,
//! the model and the mode; line two is the prompt, with the working directory.
//!
//! What a person types goes to the engine as it is: `/name` and `!command` through
//! [`Engine::command`] (the core knows every command), anything else as input; `/new`,
//! `/resume <id>`, `/rewind` and `/fork` ask the engine for their parts ([`points`]). The
//! door only reads lines, prints events ([`crate::render`]) and asks for approvals and
//! confirmations.
//!
//! Ctrl+C interrupts the running task; at an empty prompt, a second Ctrl+C in a row exits,
//! as Ctrl+D does. SIGTERM and SIGHUP end the session (the task interrupted, the session
//! saved) and exit with 143 or 129.

mod attention;
mod completion;
mod dragged;
mod external_editor;
mod input;
mod keys;
mod pasted;
mod points;
mod recap;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use clap::Args;
use coder_core::control_chars::neutralize;
use coder_core::{Config, ConfigError, Door, DoorNames, Engine, Overrides, ProviderNeed};
use coder_protocol::{
    ConversationId, EngineState, Event, EventMsg, Mode, PermissionDecision, Preset,
};

use crate::render::{Human, Style, compact_number};
use input::{Action, Answer, Input};

#[derive(Args, Default)]
pub struct TerminalArgs {
    /// The model to use, overriding configuration.
    #[arg(short, long)]
    model: Option<String>,
    /// Run as if started in DIR: the workspace is its enclosing git repository, else DIR.
    #[arg(short = 'C', long = "cd")]
    cd: Option<PathBuf>,
    /// The mode to start in: plan, default, auto-edit or yolo.
    #[arg(long, value_parser = crate::exec::parse_mode)]
    mode: Option<Mode>,
    /// The permission preset: strict, balanced, auto-edit or yolo.
    #[arg(long, value_parser = crate::exec::parse_preset)]
    permissions: Option<Preset>,
    /// Take up the latest saved session of this workspace.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    continue_latest: bool,
    /// Take up a saved session by its id (or the start of it); without an id, list the
    /// saved sessions of this workspace.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    resume: Option<String>,
}

/// The terminal as the core knows it: it needs a model to be of use, completes `@` paths
/// and follows file changes for as long as it runs.
const DOOR: Door = Door {
    names: DoorNames {
        settings: "the command line",
        base_url: "the command line",
        how_to_trust: "start coder again and answer yes when it asks whether to trust the folder, or list it in \"trustedFolders\"",
    },
    provider: ProviderNeed::AtStart,
    completes_paths: true,
    watches_files: true,
    keeps_checkpoints: true,
};

pub async fn run(args: TerminalArgs) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "error: the interactive terminal needs a terminal on stdin and stdout; for one task without one, use `coder exec \"…\"`"
        );
        return Ok(ExitCode::from(2));
    }
    let start = match &args.cd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let overrides = |trust: Option<bool>| Overrides {
        model: args.model.clone(),
        mode: args.mode,
        preset: args.permissions,
        trust_workspace: trust,
        ..Overrides::default()
    };
    let mut config = load(&start, overrides(None))?;
    // Asked once, at the start: the workspace's own files asked for what only a trusted
    // folder gets.
    let mut trusted = None;
    if let Some(notice) = config.untrusted_notice("") {
        // The question says it, and the answer decides: the door's notice is not repeated.
        let asked = config.untrusted_notice(DOOR.names.how_to_trust);
        config
            .warnings
            .retain(|warning| Some(warning) != asked.as_ref());
        (config, trusted) = ask_trust(&start, config, &notice, overrides(Some(true))).await?;
    }
    for warning in std::mem::take(&mut config.warnings) {
        eprintln!("warning: {}", neutralize(&warning));
    }
    let history = history_path(&config.workspace);
    let attention = attention::Attention::new(config.notifications, config.notify_after_seconds);
    let mut engine = Engine::new(config)?;
    let current = Arc::new(Mutex::new(engine.clone()));
    let pastes = pasted::Pastes::default();
    let input = Input::start(current.clone(), history, pastes.clone())?;
    let color = crate::color::stdout_wants_color();
    let style = Style {
        color,
        markdown: std::io::IsTerminal::is_terminal(&std::io::stdout()),
        answer_color: color,
        live: true,
        command_output: true,
        stream_answer: true,
        interrupt_key: "esc",
    };
    let mut conversation = engine.root_conversation();
    let mut printer = Human::new(
        Box::new(std::io::stdout()),
        Box::new(std::io::stdout()),
        style,
        conversation,
    );
    let mut signals = Signals::listen()?;
    let mut events = engine.subscribe();
    let cwd = display_dir(&start);
    let mut interrupted_once = false;
    // What was typed during the last task and not sent: the next prompt starts with it.
    let mut typed_ahead = Leftover::default();
    printer.say(&format!(
        "coder {} · {} · /help for commands, Ctrl+D to exit",
        env!("CARGO_PKG_VERSION"),
        neutralize(&engine.model())
    ))?;
    if let Some(code) = take_up(&engine, &args, &mut printer)? {
        engine.shutdown().await;
        return Ok(code);
    }
    // A session taken up goes on in its own root conversation, with its context.
    conversation = engine.root_conversation();
    printer.set_root(conversation);
    printer.context.0 = engine.context_tokens(conversation).unwrap_or(0);
    let code = loop {
        let (tokens, window) = printer.context;
        let mode = engine.mode(conversation).unwrap_or_default();
        let context = match window {
            Some(window) => format!(
                "{} / {} tokens",
                compact_number(tokens),
                compact_number(window)
            ),
            None => format!("{} tokens", compact_number(tokens)),
        };
        let status = format!(
            "{context} · {} · {} · {} permissions",
            neutralize(&engine.model()),
            mode.as_str(),
            engine.preset().as_str()
        );
        printer.say(&if color {
            format!("\x1b[2m{status}\x1b[0m")
        } else {
            status
        })?;
        let prompt = format!("{cwd} › ");
        let line = match std::mem::take(&mut typed_ahead) {
            Leftover::Eof => break ExitCode::SUCCESS,
            // Sent as the last task ended: shown as if typed at this prompt.
            Leftover::Line(line) => {
                printer.say(&format!("{prompt}{}", neutralize(&line)))?;
                Answer::Line(line)
            }
            Leftover::Text(start) => tokio::select! {
                line = input.read_after(prompt, true, start) => line,
                stop = signals.ended() => break stop.exit_code(),
            },
        };
        let line = match line {
            Answer::Line(line) => line,
            Answer::Interrupted if interrupted_once => break ExitCode::SUCCESS,
            Answer::Interrupted => {
                interrupted_once = true;
                printer.say("(Ctrl+C again to exit, or Ctrl+D)")?;
                continue;
            }
            Answer::Eof => break ExitCode::SUCCESS,
            Answer::Action(action, line) => {
                interrupted_once = false;
                typed_ahead =
                    Leftover::Text(act(action, line, &engine, conversation, &mut printer)?);
                continue;
            }
        };
        interrupted_once = false;
        let line = input.expand(&input::joined(&line));
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/edit" {
            typed_ahead = Leftover::Text(act(
                Action::ExternalEditor,
                String::new(),
                &engine,
                conversation,
                &mut printer,
            )?);
            continue;
        }
        if let Some(command) = points::point_command(text) {
            match command {
                Ok(command) => {
                    points::run(&engine, conversation, command, &input, &mut printer).await?;
                }
                Err(usage) => printer.say(&format!("error: {usage}"))?,
            }
            printer.flush()?;
            continue;
        }
        if let Some(switch) = session_switch(text) {
            // `/new` and `/resume` take up another session: the engine is one session, so
            // the terminal starts a new engine and lets the old one save and end.
            // The mode goes on as the conversation's, not as the session's: the configured
            // mode stays the ceiling every switch is clamped to.
            let carry = Overrides {
                model: Some(engine.model()),
                ..overrides(trusted)
            };
            let mode = engine.mode(conversation).ok();
            if let Some(next) =
                switch_session(&engine, switch, &start, carry, mode, &mut printer).await?
            {
                engine.shutdown().await;
                engine = next;
                *current
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = engine.clone();
                events = engine.subscribe();
                conversation = engine.root_conversation();
                printer.set_root(conversation);
                // A resumed session shows the context it had stored; the window is the
                // model's, which the switch carried over.
                let stored = engine.context_tokens(conversation).unwrap_or(0);
                printer.context = (stored, printer.context.1);
            }
            printer.flush()?;
            continue;
        }
        let task = if text.starts_with('/') || text.starts_with('!') {
            match engine.command(conversation, text) {
                Ok(result) => {
                    if result.diff {
                        printer.show_diff(&result.text)?;
                    } else if !result.text.is_empty() && !text.starts_with('!') {
                        printer.say_wrapped(&neutralize(&result.text))?;
                    }
                    if let Some(next) = result.conversation_id {
                        conversation = next;
                        printer.set_root(next);
                        printer.context = (0, None);
                    }
                    // What the command changed (a mode, a warning) is said now, not with
                    // the next task.
                    while let Ok(event) = events.try_recv() {
                        printer.print(&event)?;
                    }
                    printer.flush()?;
                    result.task_id
                }
                Err(err) => {
                    printer.say(&format!("error: {}", neutralize(&err.to_string())))?;
                    None
                }
            }
        } else {
            // An image's path (dragged onto the terminal, or pasted) attaches the image.
            let mut problems = Vec::new();
            let images = dragged::images_in(&line, &start, &mut problems);
            for problem in problems {
                printer.say(&format!("not attached: {}", neutralize(&problem)))?;
            }
            let sent = match images {
                Some(items) => engine.send_items(conversation, items),
                None => engine.send(conversation, line.as_str()),
            };
            match sent {
                Ok(task) => Some(task),
                Err(err) => {
                    printer.say(&format!("error: {}", neutralize(&err.to_string())))?;
                    None
                }
            }
        };
        if task.is_some() {
            let (stop, typed) = follow(
                &engine,
                conversation,
                &mut events,
                &mut printer,
                &input,
                &mut signals,
                attention,
            )
            .await?;
            if let Some(stop) = stop {
                break stop.exit_code();
            }
            typed_ahead = typed;
        }
    };
    printer.finish()?;
    engine.shutdown().await;
    // A session that was saved can be taken up again: say how.
    if engine.snapshot_path().is_some_and(|path| path.is_file()) {
        printer.say(&format!(
            "resume this session with `coder --resume {}`",
            engine.session_id()
        ))?;
    }
    Ok(code)
}

/// Prints where the session taken up had got to.
fn show_recap(engine: &Engine, printer: &mut Human) -> std::io::Result<()> {
    let recap = recap::recap(engine, engine.root_conversation());
    if recap.is_empty() {
        return Ok(());
    }
    printer.say_wrapped(&recap)
}

/// `--continue` and `--resume [id]`: takes up the saved session asked for in the session
/// just started (nothing was sent in it), or lists the saved sessions. Returns the exit
/// code when coder should stop there: an id that names no session, or more than one.
fn take_up(
    engine: &Engine,
    args: &TerminalArgs,
    printer: &mut Human,
) -> anyhow::Result<Option<ExitCode>> {
    let id = match (&args.resume, args.continue_latest) {
        (Some(id), _) if !id.trim().is_empty() => id.trim().to_owned(),
        (Some(_), _) => {
            let listing = engine.command(engine.root_conversation(), "/resume")?;
            printer.say_wrapped(&neutralize(&listing.text))?;
            return Ok(None);
        }
        (None, true) => match engine.saved_sessions().first() {
            Some(latest) => latest.session_id.to_string(),
            None => {
                printer.say("no saved session in this workspace: a new one starts")?;
                return Ok(None);
            }
        },
        (None, false) => return Ok(None),
    };
    match engine.command(engine.root_conversation(), &format!("/resume {id}")) {
        Ok(result) => {
            printer.say_wrapped(&neutralize(&result.text))?;
            show_recap(engine, printer)?;
            Ok(None)
        }
        Err(err) => {
            printer.say(&format!("error: {}", neutralize(&err.to_string())))?;
            Ok(Some(ExitCode::from(2)))
        }
    }
}

/// Loads the configuration, printing what a missing provider's error needs.
fn load(start: &Path, overrides: Overrides) -> anyhow::Result<Config> {
    match Config::for_door(&DOOR, None, start, overrides) {
        Ok(config) => Ok(config),
        Err(ConfigError::NoProvider { warnings }) => {
            for warning in &warnings {
                eprintln!("warning: {}", neutralize(warning));
            }
            Err(ConfigError::NoProvider { warnings }.into())
        }
        Err(err) => Err(err.into()),
    }
}

/// What `/new` or `/resume <id>` asks of the terminal.
#[derive(Clone, Copy)]
enum Switch<'a> {
    New,
    Resume(&'a str),
}

/// Whether `text` is `/new` or `/resume <id>` (a bare `/resume` lists the saved sessions,
/// which the core answers).
fn session_switch(text: &str) -> Option<Switch<'_>> {
    let (name, args) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let args = args.trim();
    match name {
        "/new" if args.is_empty() => Some(Switch::New),
        "/resume" if !args.is_empty() => Some(Switch::Resume(args)),
        _ => None,
    }
}

/// Starts the engine of another session: a fresh one for `/new`, one that took up the
/// saved session for `/resume`. The configuration is read again (a `/model` written since
/// applies), with the model the person has now (`carry`); the root conversation takes the
/// person's `mode`, clamped to the configured one as any switch. On failure the current
/// session goes on and the error is printed; returns the new engine when there is one.
async fn switch_session(
    engine: &Engine,
    switch: Switch<'_>,
    start: &Path,
    carry: Overrides,
    mode: Option<Mode>,
    printer: &mut Human,
) -> anyhow::Result<Option<Engine>> {
    if let Switch::Resume(id) = switch
        && let [only] = engine
            .saved_sessions()
            .iter()
            .filter(|saved| saved.session_id.to_string().starts_with(id))
            .collect::<Vec<_>>()
            .as_slice()
        && only.session_id == engine.session_id()
    {
        printer.say(&format!("{} is this session", engine.session_id()))?;
        return Ok(None);
    }
    let started = load(start, carry).and_then(|mut config| {
        for warning in std::mem::take(&mut config.warnings) {
            printer.say(&format!("warning: {}", neutralize(&warning)))?;
        }
        Ok(Engine::new(config)?)
    });
    let next = match started {
        Ok(next) => next,
        Err(err) => {
            printer.say(&format!("error: {}", neutralize(&format!("{err:#}"))))?;
            return Ok(None);
        }
    };
    let said = match switch {
        Switch::New => Ok(format!("new session {}", next.session_id())),
        Switch::Resume(id) => next
            .command(next.root_conversation(), &format!("/resume {id}"))
            .map(|result| result.text),
    };
    let said = said.and_then(|text| match mode {
        Some(mode) => next.set_mode(next.root_conversation(), mode).map(|()| text),
        None => Ok(text),
    });
    match said {
        Ok(text) => {
            printer.say(&neutralize(&text))?;
            if matches!(switch, Switch::Resume(_)) {
                show_recap(&next, printer)?;
            }
            Ok(Some(next))
        }
        Err(err) => {
            printer.say(&format!("error: {}", neutralize(&err.to_string())))?;
            next.shutdown().await;
            Ok(None)
        }
    }
}

/// Asks whether to trust the workspace; on yes, records it in the user-level configuration
/// and loads the configuration again, trusted. Returns the configuration and, when the
/// person said yes, `Some(true)` for the sessions `/new` and `/resume` start later.
async fn ask_trust(
    start: &Path,
    config: Config,
    notice: &str,
    trusted: Overrides,
) -> anyhow::Result<(Config, Option<bool>)> {
    let notice = neutralize(notice);
    let notice = notice.trim_end_matches(|c: char| c == ';' || c.is_whitespace());
    println!("{notice}.");
    // What a yes would start, and where requests would go, before the person answers.
    if let Ok(would) = load(start, trusted.clone()) {
        let lines = config.what_trust_would_apply(&would);
        if !lines.is_empty() {
            println!("Trusted, it would start or use:");
            for line in lines {
                println!("  {line}");
            }
        }
    }
    print!(
        "Trust this folder? Its .coder/config.json and .mcp.json then apply whole (MCP servers, provider endpoint, looser modes). [y/N] "
    );
    std::io::Write::flush(&mut std::io::stdout())?;
    let answer = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await
    .ok()
    .and_then(Result::ok)
    .unwrap_or_default();
    if !matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
        println!(
            "Not trusted: its files only narrow your settings. To trust it later, answer yes at the next start or list it in \"trustedFolders\"."
        );
        return Ok((config, None));
    }
    let Some(user_file) = config.user_file.clone() else {
        println!(
            "Cannot record the folder: no user-level configuration file (set HOME or CODER_HOME)."
        );
        return Ok((config, None));
    };
    match coder_core::trust::trust_folder(&user_file, &config.workspace) {
        Ok(folder) => println!(
            "Trusted {} (recorded in {}).",
            folder.display(),
            user_file.display()
        ),
        Err(err) => {
            println!("Cannot record the folder: {err}");
            return Ok((config, None));
        }
    }
    Ok((load(start, trusted)?, Some(true)))
}

/// Does what a key at the prompt asked, and returns the line to go on editing: Shift+Tab
/// switches to the next mode as `/mode` does; Ctrl+G edits the line in the person's editor.
fn act(
    action: Action,
    line: String,
    engine: &Engine,
    conversation: ConversationId,
    printer: &mut Human,
) -> anyhow::Result<String> {
    match action {
        Action::CycleMode => {
            let next = engine.next_mode(conversation)?;
            match engine.command(conversation, &format!("/mode {}", next.as_str())) {
                Ok(result) => printer.say_wrapped(&neutralize(&result.text))?,
                Err(err) => printer.say(&format!("error: {}", neutralize(&err.to_string())))?,
            }
            Ok(line)
        }
        Action::ExternalEditor => match external_editor::edit(&line) {
            Ok(edited) => Ok(edited),
            Err(err) => {
                printer.say(&format!("error: {}", neutralize(&err.to_string())))?;
                Ok(line)
            }
        },
    }
}

/// Prints the task's events until the session is idle again, answering approvals, and takes
/// what the person types meanwhile ([`Typing`]). Returns the signal that ends the session,
/// if one came, and what was typed but not sent.
async fn follow(
    engine: &Engine,
    conversation: ConversationId,
    events: &mut coder_core::EventReceiver,
    printer: &mut Human,
    input: &Input,
    signals: &mut Signals,
    attention: attention::Attention,
) -> anyhow::Result<(Option<crate::signals::Stop>, Leftover)> {
    let started = std::time::Instant::now();
    let mut typing = Typing::start(input.pastes());
    let stop = loop {
        let spinner = printer.spinner_due();
        let event = tokio::select! {
            event = events.recv() => event,
            () = crate::exec::sleep_until(spinner), if spinner.is_some() => {
                printer.tick()?;
                continue;
            }
            key = typing.next() => {
                typing.key(key, engine, conversation, printer)?;
                continue;
            }
            signal = signals.next() => {
                engine.interrupt_session();
                match signal {
                    Some(stop) => break Some(stop),
                    None => continue,
                }
            }
        };
        let Some(event) = event else {
            break None;
        };
        printer.print(&event)?;
        if event.conversation_id == conversation
            && matches!(
                event.msg,
                EventMsg::TaskComplete { .. } | EventMsg::TurnAborted { .. }
            )
        {
            // The closing line is out: Ctrl+D from here on is pressed at what reads as the
            // prompt.
            typing.closed = true;
        }
        if let EventMsg::PermissionRequested { .. } = &event.msg {
            printer.flush()?;
            attention.approval(typing.focused, printer)?;
            // The line editor asks: the keys are its own until the answer.
            typing.pause(engine, conversation, printer)?;
            approve(engine, &event, input, printer).await?;
            typing.resume(printer)?;
        }
        if matches!(
            event.msg,
            EventMsg::StateChanged {
                state: EngineState::Idle
            }
        ) {
            break None;
        }
        if events.is_empty() {
            printer.flush()?;
        }
    };
    if stop.is_none() {
        attention.task_ended(started, typing.focused, printer)?;
    }
    let typed = typing.stop(printer)?;
    printer.flush()?;
    Ok((stop, typed))
}

/// What the person types while a task runs: the line shows below the output; Enter sends
/// it to the running task (the engine gives it to the model at the next step, or runs it
/// after the task when there is none), Tab queues it behind the task, Esc interrupts. A
/// `/command` or `!command` typed then runs as at the prompt.
struct Typing {
    keys: Option<keys::Keys>,
    line: String,
    /// A large paste shows in the line as a placeholder, and is sent whole.
    pastes: pasted::Pastes,
    /// Whether the terminal's window has the focus, as far as it reported.
    focused: bool,
    /// Whether the task's closing line is printed (the session may still be busy a moment).
    closed: bool,
    /// Ctrl+D pressed at an empty line after the closing line: the session ends.
    leave: bool,
}

impl Typing {
    fn start(pastes: pasted::Pastes) -> Self {
        Self {
            keys: keys::Keys::start(),
            line: String::new(),
            pastes,
            closed: false,
            leave: false,
            focused: true,
        }
    }

    /// The next key; never, without a reader.
    async fn next(&mut self) -> Option<keys::Key> {
        match &mut self.keys {
            Some(keys) => keys.next().await,
            None => std::future::pending().await,
        }
    }

    fn key(
        &mut self,
        key: Option<keys::Key>,
        engine: &Engine,
        conversation: ConversationId,
        printer: &mut Human,
    ) -> std::io::Result<()> {
        use keys::Key;
        match key {
            // The terminal is gone: stop reading it.
            None => {
                self.keys = None;
                return Ok(());
            }
            Some(key @ (Key::Char(_) | Key::Backspace | Key::Clear | Key::Paste(_))) => {
                self.edit(key);
            }
            // Leaving is for the prompt, once the task is over.
            Some(Key::Eof) => {
                self.leave |= self.closed && self.line.is_empty();
                return Ok(());
            }
            Some(Key::Focus(focused)) => {
                self.focused = focused;
                return Ok(());
            }
            Some(Key::Esc) => {
                engine.interrupt_session();
                return Ok(());
            }
            Some(key @ (Key::Enter | Key::Tab)) => {
                let text = std::mem::take(&mut self.line);
                printer.set_typed(None)?;
                let (shown, text) = (text.trim(), self.pastes.expand(text.trim()));
                return send_typed(engine, conversation, shown, &text, key == Key::Tab, printer);
            }
        }
        printer.set_typed((!self.line.is_empty()).then_some(self.line.as_str()))
    }

    /// Gives the keys to the line editor (a permission question). Keys read but not yet
    /// taken count as typed before it: Enter sends the line, Esc interrupts; what is typed
    /// stays the line, shown again once the question is answered.
    fn pause(
        &mut self,
        engine: &Engine,
        conversation: ConversationId,
        printer: &mut Human,
    ) -> std::io::Result<()> {
        if let Some(keys) = self.keys.take() {
            for key in keys.stop() {
                self.key(Some(key), engine, conversation, printer)?;
            }
        }
        printer.set_typed(None)
    }

    /// A key that changes the line; the others are left out.
    fn edit(&mut self, key: keys::Key) {
        match key {
            keys::Key::Char(c) => self.line.push(c),
            keys::Key::Backspace => {
                self.line.pop();
            }
            keys::Key::Clear => self.line.clear(),
            keys::Key::Paste(text) => self.line.push_str(&self.pastes.put(&text)),
            _ => {}
        }
    }

    fn resume(&mut self, printer: &mut Human) -> std::io::Result<()> {
        self.keys = keys::Keys::start();
        printer.set_typed((!self.line.is_empty()).then_some(self.line.as_str()))
    }

    /// The task is over: the keys go back to the line editor with what was typed. Keys
    /// read as the task ended count as typed at the prompt: Enter sends the line, Ctrl+D on
    /// an empty line leaves.
    fn stop(mut self, printer: &mut Human) -> std::io::Result<Leftover> {
        printer.set_typed(None)?;
        if self.leave {
            return Ok(Leftover::Eof);
        }
        let Some(keys) = self.keys.take() else {
            return Ok(Leftover::Text(self.line));
        };
        for key in keys.stop() {
            match key {
                keys::Key::Enter | keys::Key::Tab => return Ok(Leftover::Line(self.line)),
                keys::Key::Eof if self.line.is_empty() => return Ok(Leftover::Eof),
                key => self.edit(key),
            }
        }
        Ok(Leftover::Text(self.line))
    }
}

/// What was typed during a task and not sent, for the prompt after it.
enum Leftover {
    /// The start of the next line.
    Text(String),
    /// A whole line, Enter pressed as the task ended: it is sent.
    Line(String),
    /// Ctrl+D pressed as the task ended: the session ends.
    Eof,
}

impl Default for Leftover {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

/// Sends a line typed during a task: to the task now (`queue` false) or after it. `shown`
/// is the line as typed (a large paste as its placeholder), `text` what is sent.
fn send_typed(
    engine: &Engine,
    conversation: ConversationId,
    shown: &str,
    text: &str,
    queue: bool,
    printer: &mut Human,
) -> std::io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    printer.say(&format!("› {}", neutralize(shown)))?;
    let sent = if text.starts_with('/') || text.starts_with('!') {
        engine.command(conversation, text).map(|result| {
            if !result.text.is_empty() && !text.starts_with('!') {
                Some(result.text)
            } else {
                None
            }
        })
    } else if queue {
        engine
            .send(conversation, text)
            .map(|_| Some("queued: it runs after this task".to_owned()))
    } else {
        engine
            .steer(
                conversation,
                vec![coder_protocol::InputItem::Text {
                    text: text.to_owned(),
                }],
            )
            .map(|_| None)
    };
    match sent {
        Ok(Some(said)) => printer.say(&neutralize(&said)),
        Ok(None) => Ok(()),
        Err(err) => printer.say(&format!("error: {}", neutralize(&err.to_string()))),
    }
}

/// Asks the person about a permission request until they name one of its options: its key
/// alone answers (no Enter), a word or id then Enter too. An option that takes a message
/// (`n`: tell the model why) asks for it next; Enter alone sends none. Ctrl+C or Ctrl+D
/// denies and interrupts the task. An answer that names no option is followed by the keys
/// there are.
async fn approve(
    engine: &Engine,
    event: &Event,
    input: &Input,
    printer: &mut Human,
) -> anyhow::Result<()> {
    let EventMsg::PermissionRequested {
        request_id,
        options,
        question,
        ..
    } = &event.msg
    else {
        return Ok(());
    };
    // What an option that takes a message asks for: the person's own answer to a question,
    // else why (for the model).
    let ask_message = if question.is_some() {
        "  your answer (Enter to give none) "
    } else {
        "  why? (Enter to give no reason) "
    };
    // The task is interrupted first, so that nothing the answer lets go on (the next
    // question of the same call) runs.
    let interrupted = || {
        engine.interrupt_session();
        let _ = engine.respond_permission(
            request_id,
            PermissionDecision::Deny {
                message: Some("the user interrupted".to_owned()),
            },
        );
    };
    let prompt = crate::approval::prompt(options, true);
    let keys = crate::approval::answer_keys(options);
    let mut decision = loop {
        match input.read_answer(prompt.clone(), keys.clone()).await {
            Answer::Line(line) => {
                if let Some(decision) = crate::approval::chosen(options, &line) {
                    break decision;
                }
                printer.say(&crate::approval::hint(options))?;
                printer.flush()?;
            }
            // Keys act at the prompt only: asked again.
            Answer::Action(..) => {}
            Answer::Interrupted | Answer::Eof => {
                interrupted();
                return Ok(());
            }
        }
    };
    if let Some(option) = crate::approval::wants_message(options, &decision) {
        printer.say(&format!("→ {}", neutralize(&option.label)))?;
        printer.flush()?;
        let message = match input.read(ask_message.to_owned(), false).await {
            Answer::Line(line) => input.expand(line.trim()),
            Answer::Action(..) => String::new(),
            Answer::Interrupted | Answer::Eof => {
                interrupted();
                return Ok(());
            }
        };
        if let PermissionDecision::Option { message: slot, .. } = &mut decision {
            *slot = (!message.is_empty()).then_some(message);
        }
    } else if let PermissionDecision::Option { option_id, .. } = &decision
        && let Some(option) = options.iter().find(|o| &o.option_id == option_id)
    {
        printer.say(&format!("→ {}", neutralize(&option.label)))?;
    }
    // The request may have ended while the person was asked (the mode or preset changed, the
    // task was interrupted): the `permission_withdrawn` printed next says so.
    let _ = engine.respond_permission(request_id, decision);
    Ok(())
}

/// The signals while the terminal runs: SIGINT interrupts the task (at the prompt, the
/// line editor sees Ctrl+C as a key instead); SIGTERM and SIGHUP end the session.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal: `None` for SIGINT, else the one that ends the session.
    async fn next(&mut self) -> Option<crate::signals::Stop> {
        tokio::select! {
            _ = self.interrupt.recv() => None,
            _ = self.terminate.recv() => Some(crate::signals::Stop::Terminate),
            _ = self.hangup.recv() => Some(crate::signals::Stop::Hangup),
        }
    }

    async fn ended(&mut self) -> crate::signals::Stop {
        tokio::select! {
            _ = self.terminate.recv() => crate::signals::Stop::Terminate,
            _ = self.hangup.recv() => crate::signals::Stop::Hangup,
        }
    }
}

/// The working directory as the prompt shows it: under the home directory as `~/…`.
fn display_dir(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from)
        && let Ok(rest) = dir.strip_prefix(&home)
    {
        return if rest.as_os_str().is_empty() {
            "~".to_owned()
        } else {
            format!("~/{}", rest.display())
        };
    }
    neutralize(&dir.display().to_string()).into_owned()
}

/// Where the input history of `workspace` is kept: `$CODER_HOME/history/`, else
/// `$XDG_STATE_HOME/coder/history/`, else `~/.local/state/coder/history/`, one file per
/// workspace named after it and a hash of its path (outside the repository, so it never
/// dirties `git status` and a repository cannot ship one).
fn history_path(workspace: &Path) -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let dir = match var("CODER_HOME") {
        Some(home) => PathBuf::from(home).join("history"),
        None => var("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".local/state")))?
            .join("coder/history"),
    };
    let name: String = workspace
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    Some(dir.join(format!(
        "{name}-{:016x}",
        fnv1a(workspace.as_os_str().as_encoded_bytes())
    )))
}

/// FNV-1a, 64 bits: a stable name for a path, the same on every run.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_workspace_has_its_own_stable_history_file() {
        let a = history_path(Path::new("/work/a b")).unwrap();
        assert_eq!(a, history_path(Path::new("/work/a b")).unwrap());
        assert_ne!(a, history_path(Path::new("/other/a b")).unwrap());
        assert!(
            a.file_name().unwrap().to_str().unwrap().starts_with("a_b-"),
            "{a:?}"
        );
    }
}
