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

use super::pasted::Pastes;
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

/// The action a key asked for, taken when the line editor returns; whether the line
/// being read is the prompt's (approvals take no actions); and, for a question answered by
/// one key, the keys that answer it and the one pressed.
#[derive(Default)]
struct Actions {
    asked: Mutex<Option<(Action, String)>>,
    at_prompt: std::sync::atomic::AtomicBool,
    answer_keys: Mutex<Vec<char>>,
    pressed: Mutex<Option<char>>,
    /// The text of a paste being read: its keys are taken here, not edited, and the paste
    /// is put in the line whole when it ends ([`super::pasted`]).
    paste: Mutex<Option<String>>,
    pastes: Pastes,
}

impl Actions {
    /// A key read inside a paste is the paste's text: `Some(Cmd::Noop)` once taken.
    fn pasted(&self, event: &Event) -> Option<Cmd> {
        let mut paste = locked(&self.paste);
        let text = paste.as_mut()?;
        match event.get(0) {
            Some(KeyEvent(KeyCode::Char(c), Modifiers::NONE | Modifiers::SHIFT)) => text.push(*c),
            Some(KeyEvent(KeyCode::Enter, _)) => text.push('\n'),
            Some(KeyEvent(KeyCode::Char('J'), Modifiers::CTRL)) => text.push('\n'),
            Some(KeyEvent(KeyCode::Tab, _)) => text.push('\t'),
            // Other control keys and sequences in pasted text are left out.
            _ => {}
        }
        Some(Cmd::Noop)
    }
}

/// The start and the end of a paste: its keys are gathered in between, and the paste goes
/// into the line as one insertion, a placeholder when it is large.
struct PasteKey {
    start: bool,
    actions: Arc<Actions>,
}

impl ConditionalEventHandler for PasteKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        let mut paste = locked(&self.actions.paste);
        if self.start {
            *paste = Some(String::new());
            return Some(Cmd::Noop);
        }
        let text = paste.take()?;
        Some(Cmd::Insert(1, self.actions.pastes.put(&text)))
    }
}

/// Alt+Enter and Ctrl+J: a new line in the text.
struct NewlineKey {
    actions: Arc<Actions>,
}

impl ConditionalEventHandler for NewlineKey {
    fn handle(&self, event: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        Some(self.actions.pasted(event).unwrap_or(Cmd::Newline))
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A key that answers a question by itself: pressed on an empty line, it ends the line
/// (`y` without Enter). Any other key, or one pressed after text, edits as usual.
struct AnswerKey {
    actions: Arc<Actions>,
}

impl ConditionalEventHandler for AnswerKey {
    fn handle(&self, event: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if let Some(cmd) = self.actions.pasted(event) {
            return Some(cmd);
        }
        let Some(KeyEvent(KeyCode::Char(c), Modifiers::NONE | Modifiers::SHIFT)) = event.get(0)
        else {
            return None;
        };
        if !ctx.line().is_empty() {
            return None;
        }
        let c = c.to_ascii_lowercase();
        if !locked(&self.actions.answer_keys).contains(&c) {
            return None;
        }
        *locked(&self.actions.pressed) = Some(c);
        Some(Cmd::AcceptLine)
    }
}

/// A key bound to an action: it ends the line being edited, which the terminal gives back
/// once it has acted.
struct ActionKey {
    action: Action,
    actions: Arc<Actions>,
}

impl ConditionalEventHandler for ActionKey {
    fn handle(&self, event: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if let Some(cmd) = self.actions.pasted(event) {
            return Some(cmd);
        }
        if !self
            .actions
            .at_prompt
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return None;
        }
        *locked(&self.actions.asked) = Some((self.action, ctx.line().to_owned()));
        Some(Cmd::Interrupt)
    }
}

struct Ask {
    prompt: String,
    /// Text already typed (during the task that just ended), to go on editing.
    initial: String,
    /// Whether the line goes into the history (the prompt's do, approvals' do not).
    history: bool,
    /// Keys that answer by themselves, on an empty line.
    answer_keys: Vec<char>,
    reply: tokio::sync::oneshot::Sender<Answer>,
}

/// The line editor's thread.
pub struct Input {
    asks: mpsc::Sender<Ask>,
    pastes: Pastes,
}

impl Input {
    /// Starts the editor with the history at `history` (created when missing). Completion
    /// asks whichever engine `engine` holds when Tab is pressed (`/new` and `/resume` put
    /// another session's engine there).
    pub fn start(
        engine: Arc<Mutex<Engine>>,
        history: Option<PathBuf>,
        pastes: Pastes,
    ) -> anyhow::Result<Self> {
        let config = rustyline::Config::builder()
            .edit_mode(EditMode::Emacs)
            .completion_type(CompletionType::List)
            .auto_add_history(false)
            .max_history_size(5_000)?
            .build();
        let mut editor: Editor<Helper, DefaultHistory> = Editor::with_config(config)?;
        editor.set_helper(Some(Helper { engine }));
        let actions = Arc::new(Actions {
            pastes: pastes.clone(),
            ..Actions::default()
        });
        for key in [
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            KeyEvent::ctrl('J'),
        ] {
            editor.bind_sequence(
                key,
                EventHandler::Conditional(Box::new(NewlineKey {
                    actions: actions.clone(),
                })),
            );
        }
        editor.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(ClearOrInterrupt {
                actions: actions.clone(),
            })),
        );
        for (key, start) in [
            (KeyCode::BracketedPasteStart, true),
            (KeyCode::BracketedPasteEnd, false),
        ] {
            editor.bind_sequence(
                KeyEvent(key, Modifiers::NONE),
                EventHandler::Conditional(Box::new(PasteKey {
                    start,
                    actions: actions.clone(),
                })),
            );
        }
        editor.bind_sequence(
            Event::Any,
            EventHandler::Conditional(Box::new(AnswerKey {
                actions: actions.clone(),
            })),
        );
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
                    *locked(&actions.answer_keys) = ask.answer_keys;
                    *locked(&actions.pressed) = None;
                    *locked(&actions.paste) = None;
                    let read = editor.readline_with_initial(&ask.prompt, (&ask.initial, ""));
                    locked(&actions.answer_keys).clear();
                    let asked = locked(&actions.asked).take();
                    let pressed = locked(&actions.pressed).take();
                    let answer = match read {
                        Ok(_) if pressed.is_some() => {
                            Answer::Line(pressed.map(String::from).unwrap_or_default())
                        }
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
        Ok(Self { asks, pastes })
    }

    /// The large pastes shown as placeholders, shared with the line typed during a task.
    pub fn pastes(&self) -> Pastes {
        self.pastes.clone()
    }

    /// `line` with the large pastes it shows as placeholders put back whole.
    pub fn expand(&self, line: &str) -> String {
        self.pastes.expand(line)
    }

    /// Reads one line after `prompt`.
    pub async fn read(&self, prompt: String, history: bool) -> Answer {
        self.read_after(prompt, history, String::new()).await
    }

    /// Reads one line after `prompt`, starting with `initial` typed.
    pub async fn read_after(&self, prompt: String, history: bool, initial: String) -> Answer {
        self.ask(prompt, initial, history, Vec::new()).await
    }

    /// Reads an answer after `prompt`: one of `keys` pressed on an empty line is the whole
    /// answer (no Enter); anything else is a line as usual.
    pub async fn read_answer(&self, prompt: String, keys: Vec<char>) -> Answer {
        self.ask(prompt, String::new(), false, keys).await
    }

    async fn ask(
        &self,
        prompt: String,
        initial: String,
        history: bool,
        answer_keys: Vec<char>,
    ) -> Answer {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let ask = Ask {
            prompt,
            initial,
            history,
            answer_keys,
            reply,
        };
        if self.asks.send(ask).is_err() {
            return Answer::Eof;
        }
        answer.await.unwrap_or(Answer::Eof)
    }
}

/// Ctrl+C: clears the line being typed; at an empty line, interrupts.
struct ClearOrInterrupt {
    actions: Arc<Actions>,
}

impl ConditionalEventHandler for ClearOrInterrupt {
    fn handle(&self, event: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if let Some(cmd) = self.actions.pasted(event) {
            return Some(cmd);
        }
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
