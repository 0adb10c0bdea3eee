//! The terminal's line editor: one thread owns it (rustyline reads the terminal in raw mode
//! while a line is edited), and the async side asks it for lines, the prompt's and the
//! approvals' alike, so two readers never race for the same keys.
//!
//! Keys: Enter sends; Alt+Enter (or Ctrl+J, or `\` at the end of a line) inserts a newline; Ctrl+C clears a line being
//! typed and, at an empty prompt, is reported as [`Answer::Interrupted`]; Ctrl+D at an
//! empty prompt is [`Answer::Eof`]; Tab completes `/` commands, their arguments and `@`
//! paths; Up and Down walk the history, which is saved per workspace as each line is
//! entered. At the prompt, Shift+Tab and Ctrl+G end the line as an [`Answer::Action`] (the
//! next mode, the person's editor) and the terminal gives the line back to edit.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};

use coder_core::Engine;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, CompletionType, ConditionalEventHandler, Context, EditMode, Editor, Event, EventContext,
    EventHandler, KeyCode, KeyEvent, Modifiers, Movement, RepeatCount,
};

/// What reading a line gave.
#[derive(Debug)]
pub enum Answer {
    Line(String),
    /// Ctrl+C at an empty line.
    Interrupted,
    /// Ctrl+D at an empty line, or the terminal is gone.
    Eof,
    /// A key asked the terminal to act (at the prompt only), with the line as it was.
    Action(Action, String),
}

/// What a key at the prompt asks the terminal to do before the line is edited again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Shift+Tab: switch the conversation to the next mode.
    CycleMode,
    /// Ctrl+G: edit the line in `$VISUAL` or `$EDITOR`.
    ExternalEditor,
}

/// The action a key asked for, taken when the line editor returns; and whether the line
/// being read is the prompt's (approvals take no actions).
#[derive(Default)]
struct Actions {
    asked: Mutex<Option<(Action, String)>>,
    at_prompt: std::sync::atomic::AtomicBool,
}

/// A key bound to an action: it ends the line being edited, which the terminal gives back
/// once it has acted.
struct ActionKey {
    action: Action,
    actions: Arc<Actions>,
}

impl ConditionalEventHandler for ActionKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if !self
            .actions
            .at_prompt
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return None;
        }
        *self
            .actions
            .asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((self.action, ctx.line().to_owned()));
        Some(Cmd::Interrupt)
    }
}

struct Ask {
    prompt: String,
    /// Text already typed (during the task that just ended), to go on editing.
    initial: String,
    /// Whether the line goes into the history (the prompt's do, approvals' do not).
    history: bool,
    reply: tokio::sync::oneshot::Sender<Answer>,
}

/// The line editor's thread.
pub struct Input {
    asks: mpsc::Sender<Ask>,
}

impl Input {
    /// Starts the editor with the history at `history` (created when missing). Completion
    /// asks whichever engine `engine` holds when Tab is pressed (`/new` and `/resume` put
    /// another session's engine there).
    pub fn start(engine: Arc<Mutex<Engine>>, history: Option<PathBuf>) -> anyhow::Result<Self> {
        let config = rustyline::Config::builder()
            .edit_mode(EditMode::Emacs)
            .completion_type(CompletionType::List)
            .auto_add_history(false)
            .max_history_size(5_000)?
            .build();
        let mut editor: Editor<Helper, DefaultHistory> = Editor::with_config(config)?;
        editor.set_helper(Some(Helper { engine }));
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        editor.bind_sequence(KeyEvent::ctrl('J'), EventHandler::Simple(Cmd::Newline));
        editor.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(ClearOrInterrupt)),
        );
        let actions = Arc::new(Actions::default());
        for (key, action) in [
            (
                KeyEvent(KeyCode::BackTab, Modifiers::NONE),
                Action::CycleMode,
            ),
            (KeyEvent::ctrl('G'), Action::ExternalEditor),
        ] {
            editor.bind_sequence(
                key,
                EventHandler::Conditional(Box::new(ActionKey {
                    action,
                    actions: actions.clone(),
                })),
            );
        }
        if let Some(path) = &history {
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            // A missing file is a first session; an unreadable one starts empty.
            let _ = editor.load_history(path);
        }
        let (asks, receiver) = mpsc::channel::<Ask>();
        std::thread::Builder::new()
            .name("coder-input".to_owned())
            .spawn(move || {
                for ask in receiver {
                    // Only the prompt's lines go into the history; they alone take actions.
                    actions
                        .at_prompt
                        .store(ask.history, std::sync::atomic::Ordering::SeqCst);
                    let read = editor.readline_with_initial(&ask.prompt, (&ask.initial, ""));
                    let asked = actions
                        .asked
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .take();
                    let answer = match read {
                        Ok(line) => {
                            if ask.history && !line.trim().is_empty() {
                                let _ = editor.add_history_entry(line.as_str());
                                if let Some(path) = &history {
                                    let _ = editor.append_history(path);
                                }
                            }
                            Answer::Line(line)
                        }
                        Err(ReadlineError::Interrupted) => match asked {
                            Some((action, line)) => Answer::Action(action, line),
                            None => Answer::Interrupted,
                        },
                        Err(_) => Answer::Eof,
                    };
                    let _ = ask.reply.send(answer);
                }
            })?;
        Ok(Self { asks })
    }

    /// Reads one line after `prompt`.
    pub async fn read(&self, prompt: String, history: bool) -> Answer {
        self.read_after(prompt, history, String::new()).await
    }

    /// Reads one line after `prompt`, starting with `initial` typed.
    pub async fn read_after(&self, prompt: String, history: bool, initial: String) -> Answer {
        let (reply, answer) = tokio::sync::oneshot::channel();
        if self
            .asks
            .send(Ask {
                prompt,
                initial,
                history,
                reply,
            })
            .is_err()
        {
            return Answer::Eof;
        }
        answer.await.unwrap_or(Answer::Eof)
    }
}

/// Ctrl+C: clears the line being typed; at an empty line, interrupts.
struct ClearOrInterrupt;

impl ConditionalEventHandler for ClearOrInterrupt {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        Some(if ctx.line().is_empty() {
            Cmd::Interrupt
        } else {
            Cmd::Kill(Movement::WholeBuffer)
        })
    }
}

/// Completes `/` commands, their arguments and `@` paths (`terminal/completion.rs`).
struct Helper {
    engine: Arc<Mutex<Engine>>,
}

impl Helper {
    fn engine(&self) -> Engine {
        self.engine
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(super::completion::complete(&self.engine(), line, pos))
    }
}

impl Hinter for Helper {
    type Hint = String;
}

impl Highlighter for Helper {}

/// A line ending in `\` goes on to the next line instead of being sent.
impl Validator for Helper {
    fn validate(
        &self,
        ctx: &mut rustyline::validate::ValidationContext<'_>,
    ) -> rustyline::Result<rustyline::validate::ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            rustyline::validate::ValidationResult::Incomplete
        } else {
            rustyline::validate::ValidationResult::Valid(None)
        })
    }
}

/// The text a person entered, without the `\` that continued its lines.
pub fn joined(line: &str) -> String {
    line.replace("\\\n", "\n")
}

impl rustyline::Helper for Helper {}
