//! Events as people read them, for `coder exec` and the interactive terminal.
//!
//! Two streams: the root conversation's answer, and notes (thinking, one line per tool call
//! with its key argument, result and duration, diffs, warnings, todos, verification). `coder
//! exec` writes the answer to stdout and notes to stderr; the terminal writes both to
//! stdout. Text coder did not write itself (the model's, tools', files') is printed with its
//! control characters shown, not obeyed ([`coder_core::control_chars::neutralize`]), then
//! styled. On a colour terminal the answer is styled as Markdown while it streams, a tool
//! that runs longer than a moment gets a spinner with its elapsed time, and each task ends
//! with a closing line (how it ended, its time and tokens).
//!
//! The replies of conversations the model handed work to (`conv_create`, `conv_send`) are
//! shown among the notes under a `[conversation <id>]` label, so the answer stays the
//! root's.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use coder_core::control_chars::neutralize;
use coder_protocol::{
    AbortReason, ConversationId, Event, EventMsg, ModeChangeReason, Receipt, TodoStatus, ToolKind,
    VerificationStatus,
};

use crate::markdown::Markdown;
use unicode_width::UnicodeWidthStr;

const RESET: &str = "\x1b[0m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";

/// How long a tool runs before its spinner shows.
pub const SPINNER_AFTER: Duration = Duration::from_millis(300);
/// How often the spinner is redrawn.
pub const SPINNER_EVERY: Duration = Duration::from_millis(100);
/// How often, at most, the answer's block being written is drawn again as it streams.
const PREVIEW_EVERY: Duration = Duration::from_millis(40);
/// What each line of the model's thinking starts with.
const THINKING_BAR: &str = "┊ ";
/// The most lines of the answer's block being written shown below the output.
const PREVIEW_ROWS: usize = 12;
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The first lines of a command's output shown under its summary, as they come.
const OUTPUT_HEAD: usize = 40;
/// The last lines of a command's output shown when it ends (the model reads the end of a
/// long output; the person sees it too). The lines between are counted.
const OUTPUT_TAIL: usize = 40;

/// What the printer does beyond plain lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    /// Colours in the notes (they go to a terminal, `NO_COLOR` unset).
    pub color: bool,
    /// The answer rendered as Markdown (it goes to a terminal): wrapped to the width,
    /// blocks laid out, and styled when `answer_color`.
    pub markdown: bool,
    /// Colours in the answer (it goes to a terminal, `NO_COLOR` unset).
    pub answer_color: bool,
    /// A spinner on a running tool and a closing line per task (the notes go to a
    /// terminal).
    pub live: bool,
    /// Show a command's, a search's or an MCP tool's report under its summary (the
    /// terminal; `coder exec` keeps its notes to one line per call).
    pub command_output: bool,
    /// The answer written as it streams (a person watches it). Otherwise each reply is
    /// written once it is complete, as the history keeps it: a reply the provider's stream
    /// broke off and that was asked for again leaves nothing of its first attempt behind.
    pub stream_answer: bool,
    /// The key that interrupts a task, as the status line names it.
    pub interrupt_key: &'static str,
}

/// The events of one session, printed.
pub struct Human {
    answer: Box<dyn Write + Send>,
    notes: Box<dyn Write + Send>,
    style: Style,
    /// The answer's last byte was a newline.
    ended_line: bool,
    markdown: Markdown,
    /// When the live lines were last drawn: while an answer streams, its block being
    /// written is drawn again at most every [`PREVIEW_EVERY`].
    drawn: Instant,
    root: ConversationId,
    /// Running tool calls: their summary line and start.
    running: BTreeMap<String, (String, Instant)>,
    /// What each running call does, from its start.
    kinds: BTreeMap<String, ToolKind>,
    /// How many live lines (the status line, the line typed during a task) are on screen,
    /// below everything printed.
    live_lines: usize,
    spinner_frame: usize,
    /// The line the person is typing while a task runs, shown as a live line.
    typed: Option<String>,
    /// When something was last printed: the task's status line shows once the output has
    /// been quiet for a moment, so it does not flicker between a reply's lines.
    last_output: Instant,
    /// The root's task: when it started and the tokens it used so far.
    task: Option<(Instant, u64)>,
    /// The root conversation's context, as last reported: tokens and window.
    pub context: (u64, Option<u64>),
    /// The diff shown with the last permission request, and its call: the same diff is
    /// not shown again when that call completes.
    asked_diff: Option<(String, String)>,
    /// Commands whose output is shown as it streams, by call id.
    streaming: BTreeMap<String, Streaming>,
    /// The provider's request that will be sent again: when, and why.
    retry: Option<Retry>,
    /// Thinking or another conversation's reply being streamed apart from the answer.
    aside: Option<Aside>,
}

/// Text streamed apart from the answer, and its line not yet complete.
struct Aside {
    kind: Side,
    partial: String,
}

/// What an aside is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The model's thinking.
    Thinking,
    /// The reply of a conversation the model handed work to.
    Conversation(ConversationId),
}

impl Side {
    fn label(self) -> String {
        match self {
            Self::Thinking => "✻ thinking".to_owned(),
            Self::Conversation(id) => format!("[conversation {id}]"),
        }
    }

    /// What each of its lines starts with.
    fn bar(self) -> &'static str {
        match self {
            Self::Thinking => THINKING_BAR,
            Self::Conversation(_) => "",
        }
    }
}

/// A retry the status line counts down to.
struct Retry {
    at: Instant,
    reason: String,
    attempt: u32,
    max_retries: u32,
}

/// A command's output shown while it runs.
#[derive(Default)]
struct Streaming {
    /// The line naming the command was shown: its output is being shown as it comes.
    headed: bool,
    /// The end of the last delta, not yet a whole line.
    partial: String,
    shown: usize,
    /// The last lines past the head, shown when the command ends.
    tail: std::collections::VecDeque<String>,
    /// Lines past the head that left the tail: counted, not shown.
    hidden: usize,
}

impl Human {
    pub fn new(
        answer: Box<dyn Write + Send>,
        notes: Box<dyn Write + Send>,
        style: Style,
        root: ConversationId,
    ) -> Self {
        if style.markdown && style.answer_color {
            crate::markdown::warm_up();
        }
        Self {
            answer,
            notes,
            style,
            ended_line: true,
            markdown: Markdown::new(style.answer_color),
            drawn: Instant::now(),
            root,
            running: BTreeMap::new(),
            kinds: BTreeMap::new(),
            live_lines: 0,
            spinner_frame: 0,
            typed: None,
            last_output: Instant::now(),
            task: None,
            context: (0, None),
            asked_diff: None,
            streaming: BTreeMap::new(),
            retry: None,
            aside: None,
        }
    }

    /// The conversation whose reply is the answer (after `/new`, another one).
    pub fn set_root(&mut self, root: ConversationId) {
        self.root = root;
    }

    /// When the live lines should be drawn next: while a tool or the root's task runs, or a
    /// line is being typed.
    pub fn spinner_due(&self) -> Option<Instant> {
        if !self.style.live {
            return None;
        }
        let now = Instant::now();
        let Some(started) = self.running.values().map(|(_, at)| *at).min() else {
            return (self.task.is_some() || self.typed.is_some()).then(|| now + SPINNER_EVERY);
        };
        let first = started + SPINNER_AFTER;
        Some(if now < first {
            first
        } else {
            now + SPINNER_EVERY
        })
    }

    /// Draws the live lines again, after the output of commands that have now run long
    /// enough for it to be shown as it comes.
    pub fn tick(&mut self) -> std::io::Result<()> {
        let due: Vec<String> = self
            .streaming
            .iter()
            .filter(|(call, streaming)| {
                !streaming.headed
                    && self
                        .running
                        .get(*call)
                        .is_some_and(|(_, started)| started.elapsed() >= SPINNER_AFTER)
            })
            .map(|(call, _)| call.clone())
            .collect();
        for call in due {
            self.flush_output(&call)?;
        }
        self.spinner_frame = (self.spinner_frame + 1) % SPINNER.len();
        self.draw_live()
    }

    /// The line being typed while a task runs (`None` once it is sent or the task ends),
    /// shown at once.
    pub fn set_typed(&mut self, typed: Option<&str>) -> std::io::Result<()> {
        self.typed = typed.map(|typed| neutralize(typed).into_owned());
        if self.style.live {
            self.draw_live()?;
        }
        Ok(())
    }

    /// The live lines below the output: the longest-running tool with its time, else the
    /// task's status once the output is quiet; then the line being typed. Drawn only at
    /// the start of a line (a reply's line being written is left to end first); each is cut
    /// to the terminal's width, so none ever wraps.
    fn draw_live(&mut self) -> std::io::Result<()> {
        let frame = SPINNER[self.spinner_frame];
        let (on, off) = self.colors(CYAN);
        let (dim, undim) = (self.dim_on(), self.dim_off());
        let width = live_width();
        let mut lines = Vec::new();
        let tool = self.running.values().min_by_key(|(_, at)| *at).cloned();
        let tool = tool.filter(|(_, at)| at.elapsed() >= SPINNER_AFTER);
        // An answer's line written as it streams (not as Markdown) ends before a live line;
        // the block being written and an aside's line are live lines themselves.
        if tool.is_some() && !self.ended_line {
            self.end_answer_line()?;
        }
        let rows = live_rows().saturating_sub(4).clamp(1, PREVIEW_ROWS);
        let preview = self.markdown.preview(width, rows);
        if let Some(aside) = self
            .aside
            .as_ref()
            .filter(|aside| !aside.partial.is_empty())
        {
            let bar = aside.kind.bar();
            lines.push(Live {
                head: (bar.to_owned(), format!("{dim}{bar}")),
                body: aside.partial.clone(),
                keep_end: true,
                tail: (String::new(), undim.to_owned()),
            });
        }
        if let Some((line, started)) = tool {
            let elapsed = started.elapsed().as_secs_f64();
            lines.push(Live {
                head: (format!("{frame} "), format!("{on}{frame}{off} ")),
                body: line,
                keep_end: false,
                tail: (
                    format!(" {elapsed:.1}s"),
                    format!(" {dim}{elapsed:.1}s{undim}"),
                ),
            });
        } else if let Some((started, tokens)) = self.task
            && self.ended_line
            && (!preview.is_empty() || self.last_output.elapsed() >= SPINNER_AFTER)
        {
            let mut status = format!("working {}", seconds(started.elapsed()));
            if tokens > 0 {
                status.push_str(&format!(" · {} tokens", compact_number(tokens)));
            }
            if let Some(retry) = &self.retry {
                let left = retry.at.saturating_duration_since(Instant::now());
                status.push_str(&format!(
                    " · retry {} of {} in {}s: {}",
                    retry.attempt,
                    retry.max_retries,
                    left.as_secs_f64().ceil(),
                    first_line(&retry.reason)
                ));
            }
            // How to interrupt stays when the line is cut.
            let interrupt = format!(" · {} to interrupt", self.style.interrupt_key);
            lines.push(Live {
                head: (format!("{frame} "), format!("{on}{frame}{off} {dim}")),
                body: status,
                keep_end: false,
                tail: (interrupt.clone(), format!("{interrupt}{undim}")),
            });
        }
        if let Some(typed) = &self.typed
            && self.ended_line
        {
            let hint = "  (enter: to the model now · tab: after this task)";
            let room = live_width().saturating_sub(typed.width() + 3);
            let hint = if hint.width() <= room { hint } else { "" };
            lines.push(Live {
                head: ("› ".to_owned(), format!("{on}›{off} ")),
                body: typed.clone(),
                keep_end: true,
                tail: (format!("▏{hint}"), format!("▏{dim}{hint}{undim}")),
            });
        }
        if lines.is_empty() && preview.is_empty() && self.live_lines == 0 {
            return Ok(());
        }
        self.drawn = Instant::now();
        let mut out = String::new();
        self.clear_live_into(&mut out);
        let count = preview.len() + lines.len();
        for (at, line) in preview.iter().enumerate() {
            if at > 0 {
                out.push_str("\r\n");
            }
            out.push_str("\r\x1b[K");
            out.push_str(line);
        }
        for (at, line) in lines.iter().enumerate() {
            if at + preview.len() > 0 {
                out.push_str("\r\n");
            }
            out.push_str("\r\x1b[K");
            line.write_into(width, &mut out);
        }
        self.live_lines = count;
        self.notes.write_all(out.as_bytes())?;
        self.notes.flush()
    }

    fn colors(&self, color: &'static str) -> (&'static str, &'static str) {
        if self.style.color {
            (color, RESET)
        } else {
            ("", "")
        }
    }

    fn dim_on(&self) -> &'static str {
        if self.style.color { DIM } else { "" }
    }

    fn dim_off(&self) -> &'static str {
        if self.style.color { RESET } else { "" }
    }

    /// Takes the live lines off the screen: the cursor is left at the start of the first,
    /// where the output goes on.
    fn clear_spinner(&mut self) -> std::io::Result<()> {
        self.last_output = Instant::now();
        if self.live_lines == 0 {
            return Ok(());
        }
        let mut out = String::new();
        self.clear_live_into(&mut out);
        self.notes.write_all(out.as_bytes())
    }

    fn clear_live_into(&mut self, out: &mut String) {
        if self.live_lines > 0 {
            out.push_str("\r\x1b[K");
            for _ in 1..std::mem::take(&mut self.live_lines) {
                out.push_str("\x1b[A\x1b[K");
            }
        }
    }

    /// Text streamed apart from the answer (thinking, another conversation's reply): its
    /// label first, then each line after its bar, dim; the line not yet complete is a live
    /// line, so the status line never writes over it.
    fn aside_delta(&mut self, kind: Side, delta: &str) -> std::io::Result<()> {
        if self.aside.as_ref().is_some_and(|aside| aside.kind != kind) {
            self.end_aside()?;
        }
        if self.aside.is_none() {
            self.end_answer_line()?;
            self.clear_spinner()?;
            let (on, off) = (self.dim_on(), self.dim_off());
            writeln!(self.notes, "{on}{}{off}", kind.label())?;
            self.aside = Some(Aside {
                kind,
                partial: String::new(),
            });
        }
        let Some(aside) = self.aside.as_mut() else {
            return Ok(());
        };
        aside.partial.push_str(&neutralize(delta));
        if let Some(end) = aside.partial.rfind('\n') {
            let whole: String = aside.partial.drain(..=end).collect();
            self.aside_lines(kind, &whole)?;
        }
        if self.style.live && self.drawn.elapsed() >= PREVIEW_EVERY {
            self.draw_live()?;
        }
        Ok(())
    }

    /// Writes whole lines of an aside, wrapped under its bar.
    fn aside_lines(&mut self, kind: Side, text: &str) -> std::io::Result<()> {
        self.clear_spinner()?;
        let (on, off) = (self.dim_on(), self.dim_off());
        let bar = kind.bar();
        let mut out = String::new();
        for line in text.lines() {
            for wrapped in crate::markdown::wrap(line, live_width(), bar, bar) {
                out.push_str(&format!("{on}{}{off}\n", wrapped.trim_end()));
            }
        }
        self.notes.write_all(out.as_bytes())
    }

    /// The aside ended (or the answer or a tool began): its last line is written; thinking
    /// is set apart from what follows by an empty line.
    fn end_aside(&mut self) -> std::io::Result<()> {
        let Some(aside) = self.aside.take() else {
            return Ok(());
        };
        if !aside.partial.trim().is_empty() {
            self.aside_lines(aside.kind, &aside.partial)?;
        }
        self.clear_spinner()?;
        if aside.kind == Side::Thinking {
            self.notes.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Before a note: the answer is flushed and its line ended, the spinner cleared.
    fn end_answer_line(&mut self) -> std::io::Result<()> {
        self.end_aside()?;
        let mut rest = String::new();
        self.markdown.finish(live_width(), &mut rest);
        if !rest.is_empty() {
            self.clear_spinner()?;
        }
        self.answer.write_all(rest.as_bytes())?;
        self.answer.flush()?;
        if !self.ended_line {
            self.answer.write_all(b"\n")?;
            self.answer.flush()?;
            self.ended_line = true;
        }
        Ok(())
    }

    /// Writes `text` as a line of notes in `color` (dim when none), its control characters
    /// neutralised.
    fn note_in(&mut self, color: Option<&'static str>, text: &str) -> std::io::Result<()> {
        let text = neutralize(text);
        self.end_answer_line()?;
        self.clear_spinner()?;
        if self.style.color {
            writeln!(self.notes, "{}{text}{RESET}", color.unwrap_or(DIM))
        } else {
            writeln!(self.notes, "{text}")
        }
    }

    fn note(&mut self, text: &str) -> std::io::Result<()> {
        self.note_in(None, text)
    }

    /// Writes streamed text among the notes (thinking, another conversation's reply), dim.
    fn notes_dimmed(&mut self, text: &str) -> std::io::Result<()> {
        let text = neutralize(text);
        self.answer.flush()?;
        self.clear_spinner()?;
        let (on, off) = (self.dim_on(), self.dim_off());
        write!(self.notes, "{on}{text}{off}")
    }

    fn answer_delta(&mut self, delta: &str) -> std::io::Result<()> {
        self.end_aside()?;
        self.clear_spinner()?;
        let text = neutralize(delta);
        if self.style.markdown {
            let mut complete = String::new();
            self.markdown.push(&text, live_width(), &mut complete);
            if !complete.is_empty() {
                self.answer.write_all(complete.as_bytes())?;
                self.answer.flush()?;
            }
            // What is written always ends a line: the rest is the live preview.
            self.ended_line = true;
            if self.style.live && (!complete.is_empty() || self.drawn.elapsed() >= PREVIEW_EVERY) {
                self.draw_live()?;
            }
            return Ok(());
        } else {
            self.answer.write_all(text.as_bytes())?;
        }
        if !delta.is_empty() {
            self.ended_line = delta.ends_with('\n');
        }
        Ok(())
    }

    /// A diff, its lines coloured on a colour terminal.
    fn diff(&mut self, diff: &str) -> std::io::Result<()> {
        if !self.style.color {
            return self.note(diff.trim_end());
        }
        self.end_answer_line()?;
        self.clear_spinner()?;
        for line in neutralize(diff.trim_end()).lines() {
            let color = if line.starts_with("+++") || line.starts_with("---") {
                BOLD
            } else if line.starts_with('+') {
                GREEN
            } else if line.starts_with('-') {
                RED
            } else if line.starts_with("@@") {
                CYAN
            } else {
                DIM
            };
            writeln!(self.notes, "{color}{line}{RESET}")?;
        }
        Ok(())
    }

    /// A tool's report under its summary line, at most [`OUTPUT_LINES`] lines: for `bash`,
    /// what the command printed (after its `Wall time` line).
    fn command_output(&mut self, report: &str) -> std::io::Result<()> {
        let body = report
            .split_once("Wall time: ")
            .and_then(|(_, rest)| rest.split_once('\n'))
            .map_or(report, |(_, body)| body);
        let body = body.strip_prefix("Output:\n").unwrap_or(body);
        let lines: Vec<&str> = body.trim_end().lines().collect();
        if lines.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        let mut line = |line: &str| {
            text.push_str("  │ ");
            text.push_str(line);
            text.push('\n');
        };
        if lines.len() <= OUTPUT_HEAD + OUTPUT_TAIL {
            lines.iter().for_each(|l| line(l));
        } else {
            lines[..OUTPUT_HEAD].iter().for_each(|l| line(l));
            line(&skipped(lines.len() - OUTPUT_HEAD - OUTPUT_TAIL));
            lines[lines.len() - OUTPUT_TAIL..]
                .iter()
                .for_each(|l| line(l));
        }
        self.note(text.trim_end())
    }

    /// What a running command printed, under a line naming it: its first [`OUTPUT_HEAD`]
    /// lines as they come once the command has run for [`SPINNER_AFTER`] (a quick command's
    /// output is shown under its summary, as before), its last [`OUTPUT_TAIL`] when it ends.
    fn output_delta(&mut self, call_id: &str, delta: &str) -> std::io::Result<()> {
        let streaming = self.streaming.entry(call_id.to_owned()).or_default();
        streaming
            .partial
            .push_str(&delta.replace("\r\n", "\n").replace('\r', "\n"));
        let long_enough = self
            .running
            .get(call_id)
            .is_some_and(|(_, started)| started.elapsed() >= SPINNER_AFTER);
        if streaming.headed || long_enough {
            self.flush_output(call_id)?;
        }
        Ok(())
    }

    /// Shows the whole lines a running command printed so far, under a line naming it.
    fn flush_output(&mut self, call_id: &str) -> std::io::Result<()> {
        let Some(streaming) = self.streaming.get_mut(call_id) else {
            return Ok(());
        };
        let Some(end) = streaming.partial.rfind('\n') else {
            return Ok(());
        };
        let whole: String = streaming.partial.drain(..=end).collect();
        if !std::mem::replace(&mut streaming.headed, true) {
            let line = self
                .running
                .get(call_id)
                .map_or("", |(line, _)| line.as_str());
            let header = format!("▸ {line}");
            self.note(&header)?;
        }
        self.output_lines(call_id, &whole)
    }

    /// Shows `text`'s lines under the command while fewer than [`OUTPUT_HEAD`] were shown;
    /// keeps the others' last [`OUTPUT_TAIL`] for the end, and counts the rest.
    fn output_lines(&mut self, call_id: &str, text: &str) -> std::io::Result<()> {
        let Some(streaming) = self.streaming.get_mut(call_id) else {
            return Ok(());
        };
        let mut shown = String::new();
        for line in text.lines() {
            if streaming.shown < OUTPUT_HEAD {
                streaming.shown += 1;
                shown.push_str("  │ ");
                shown.push_str(line);
                shown.push('\n');
            } else {
                streaming.tail.push_back(line.to_owned());
                if streaming.tail.len() > OUTPUT_TAIL {
                    streaming.tail.pop_front();
                    streaming.hidden += 1;
                }
            }
        }
        if shown.is_empty() {
            return Ok(());
        }
        self.note(shown.trim_end())
    }

    /// Ends a command's streamed output: its last line, how many lines were not shown,
    /// and its last lines. With `cut_short` (the call failed or was interrupted), what it
    /// printed is shown even if it ran too briefly to be streamed. Returns whether the
    /// call's output was shown here.
    fn end_output(&mut self, call_id: &str, cut_short: bool) -> std::io::Result<bool> {
        let Some(streaming) = self.streaming.get_mut(call_id) else {
            return Ok(false);
        };
        let shows_partial = cut_short && !streaming.partial.trim().is_empty();
        if !streaming.headed && !shows_partial {
            self.streaming.remove(call_id);
            return Ok(false);
        }
        if !streaming.partial.is_empty() && !streaming.partial.ends_with('\n') {
            streaming.partial.push('\n');
        }
        self.flush_output(call_id)?;
        let Some(streaming) = self.streaming.remove(call_id) else {
            return Ok(true);
        };
        let mut text = String::new();
        if streaming.hidden > 0 {
            text.push_str("  │ ");
            text.push_str(&skipped(streaming.hidden));
            text.push('\n');
        }
        for line in &streaming.tail {
            text.push_str("  │ ");
            text.push_str(line);
            text.push('\n');
        }
        if !text.is_empty() {
            self.note(text.trim_end())?;
        }
        Ok(true)
    }

    /// The closing line of the root's task.
    fn closing(&mut self, how: &str, color: Option<&'static str>) -> std::io::Result<()> {
        let Some((started, tokens)) = self.task.take() else {
            return Ok(());
        };
        if !self.style.live {
            return Ok(());
        }
        let mut line = format!("── {how} · {}", seconds(started.elapsed()));
        if tokens > 0 {
            line.push_str(&format!(" · {} tokens", compact_number(tokens)));
        }
        self.note_in(color, &line)
    }

    /// Prints one event.
    pub fn print(&mut self, event: &Event) -> std::io::Result<()> {
        let root = event.conversation_id == self.root;
        if !matches!(event.msg, EventMsg::Retrying { .. }) {
            self.retry = None;
        }
        match &event.msg {
            EventMsg::AgentMessageDelta { delta } if !root => {
                self.aside_delta(Side::Conversation(event.conversation_id), delta)?;
            }
            EventMsg::AgentMessageDelta { delta } if self.style.stream_answer => {
                self.answer_delta(delta)?;
            }
            EventMsg::AgentMessageDelta { .. } => {}
            // Not streamed: each reply as the history keeps it, a finished one (or a plan
            // that became the answer) by its message, an interrupted one by what arrived.
            EventMsg::AgentMessage { message } if root && !self.style.stream_answer => {
                self.answer_delta(message)?;
            }
            EventMsg::ReplyComplete {
                text,
                interrupted: true,
                ..
            } if root && !self.style.stream_answer => {
                self.answer_delta(text)?;
            }
            EventMsg::AgentReasoningDelta { delta } => self.aside_delta(Side::Thinking, delta)?,
            EventMsg::AgentReasoning { .. } => self.end_aside()?,
            EventMsg::TaskStarted { .. } if root => {
                self.task = Some((Instant::now(), 0));
            }
            EventMsg::ToolCallStarted {
                call_id,
                kind,
                title,
                ..
            } => {
                self.kinds.insert(call_id.clone(), *kind);
                let line = neutralize(title).into_owned();
                self.running.insert(call_id.clone(), (line, Instant::now()));
            }
            EventMsg::ToolCallOutputDelta { call_id, delta, .. } if self.style.command_output => {
                self.output_delta(call_id, delta)?;
            }
            EventMsg::ToolCallCompleted {
                call_id,
                tool_name,
                summary,
                duration_ms,
                diff,
                output,
            } => {
                let streamed = self.end_output(call_id, false)?;
                self.running.remove(call_id);
                let kind = self.kinds.remove(call_id);
                self.note(&format!("• {tool_name} {summary} ({duration_ms} ms)"))?;
                let shown = self.asked_diff.take();
                let shown = shown
                    .as_ref()
                    .is_some_and(|(call, asked)| call == call_id && Some(asked) == diff.as_ref());
                if let Some(diff) = diff.as_ref().filter(|_| !shown) {
                    self.diff(diff)?;
                } else if self.style.command_output && !streamed && kind.is_some_and(shows_output) {
                    self.command_output(output)?;
                }
            }
            EventMsg::ToolCallFailed {
                call_id,
                tool_name,
                summary,
                duration_ms,
                ..
            } => {
                self.end_output(call_id, true)?;
                self.running.remove(call_id);
                self.kinds.remove(call_id);
                self.note_in(
                    Some(RED),
                    &format!("✗ {tool_name} {summary} ({duration_ms} ms)"),
                )?;
            }
            EventMsg::InputReceipt {
                receipt: Receipt::Steered,
                step,
                ..
            } => self.note(&format!(
                "↳ your message went to the model with its request {}",
                step.unwrap_or_default()
            ))?,
            EventMsg::InputReceipt {
                receipt: Receipt::Dropped,
                reason,
                ..
            } => self.note_in(
                Some(YELLOW),
                &format!(
                    "your message was dropped: {}",
                    reason.as_deref().unwrap_or("no reason given")
                ),
            )?,
            EventMsg::InputReceipt { .. } => {}
            EventMsg::PermissionWithdrawn { reason, .. } => self.note_in(
                Some(YELLOW),
                &format!("the request was withdrawn: {reason}"),
            )?,
            EventMsg::Warning { message } => {
                self.note_in(Some(YELLOW), &format!("warning: {message}"))?
            }
            EventMsg::Retrying {
                message,
                reason,
                attempt,
                max_retries,
                delay_ms,
            } => {
                self.note_in(Some(YELLOW), &format!("warning: {message}"))?;
                self.retry = Some(Retry {
                    at: Instant::now() + Duration::from_millis(*delay_ms),
                    reason: neutralize(reason).into_owned(),
                    attempt: *attempt,
                    max_retries: *max_retries,
                });
                // The countdown shows at once, not after the quiet moment.
                self.last_output = Instant::now()
                    .checked_sub(SPINNER_AFTER)
                    .unwrap_or_else(Instant::now);
                if self.style.live {
                    self.draw_live()?;
                }
            }
            EventMsg::WorkspaceReloaded { what, paths } => {
                self.note(&format!("reloaded {}: {}", what.as_str(), paths.join(", ")))?
            }
            EventMsg::McpServerStatus {
                server,
                state,
                error,
                ..
            } => self.note(&format!(
                "MCP server {server}: {}{}",
                state.as_str(),
                error
                    .as_ref()
                    .map_or(String::new(), |error| format!(" ({error})"))
            ))?,
            EventMsg::Error { message, .. } => {
                self.note_in(Some(RED), &format!("error: {message}"))?
            }
            EventMsg::Verification {
                status, message, ..
            } => {
                let color = match status {
                    VerificationStatus::Passed => GREEN,
                    VerificationStatus::Retrying | VerificationStatus::NotRun => YELLOW,
                    VerificationStatus::Failed | VerificationStatus::Environment => RED,
                };
                self.note_in(Some(color), message)?
            }
            EventMsg::Compacted {
                trigger,
                token_before,
                token_compact,
                archived_messages,
                summary,
                ..
            } => {
                self.note(&format!(
                    "compacted the conversation: {token_before} -> {token_compact} tokens ({archived_messages} messages summarised and archived)"
                ))?;
                // Asked for (`/compact`): the summary is shown, as seed 004 section 4 says.
                if *trigger == coder_protocol::CompactTrigger::Manual {
                    self.notes_dimmed(&format!("{}\n", summary.trim_end()))?;
                }
            }
            EventMsg::TokenCount {
                last,
                context_tokens,
                context_window,
                ..
            } if root => {
                if let Some((_, tokens)) = &mut self.task {
                    *tokens += last.total_tokens;
                }
                self.context = (*context_tokens, *context_window);
            }
            // `/clear` says so in its answer; the context it left is empty.
            EventMsg::ContextCleared { .. } if root => self.context.0 = 0,
            // A handoff: the conversation's turn goes on after the other one's reply, and
            // the person is told where the work went (seed 000).
            EventMsg::TurnAborted {
                reason: AbortReason::Replaced,
                replaced_by,
                ..
            } => {
                self.end_aside()?;
                if let Some(replacement) = replaced_by {
                    self.note(&format!(
                        "the current task was replaced by {}; running conversation {}, then continuing",
                        replacement.tool_name, replacement.conversation_id
                    ))?;
                }
            }
            EventMsg::TurnAborted { .. } => {
                self.end_aside()?;
                self.running.clear();
                self.note("interrupted")?;
                if root {
                    self.closing("interrupted", Some(YELLOW))?;
                }
            }
            EventMsg::TaskComplete {
                step_limit, error, ..
            } => {
                self.end_aside()?;
                self.running.clear();
                if root {
                    match (step_limit, error) {
                        (Some(limit), _) => self.closing(
                            &format!("stopped at the step limit ({limit} model calls)"),
                            Some(YELLOW),
                        )?,
                        (None, Some(_)) => self.closing("failed", Some(RED))?,
                        (None, None) => self.closing("done", None)?,
                    }
                }
            }
            EventMsg::FileReference { references } => {
                for reference in references {
                    self.note(&reference_line(reference))?;
                }
            }
            EventMsg::TodoUpdated { todos } => {
                let mut list = String::from("todos:");
                for todo in todos {
                    let mark = match todo.status {
                        TodoStatus::Completed => "[x]",
                        TodoStatus::InProgress => "[>]",
                        TodoStatus::Pending => "[ ]",
                    };
                    list.push_str(&format!("\n  {mark} {}", todo.content));
                }
                self.note(&list)?;
            }
            EventMsg::PermissionRequested {
                command,
                diff,
                plan,
                question: Some(question),
                ..
            } if command.is_none() && diff.is_none() && plan.is_none() => {
                // The model's question, and what each of its choices means; the options
                // the question reads are the choices, by number.
                let mut text = format!(
                    "question from the model · {}\n  {}",
                    question.header, question.question
                );
                for (at, choice) in question.choices.iter().enumerate() {
                    text.push_str(&format!("\n  {}. {}", at + 1, choice.label));
                    if !choice.description.is_empty() {
                        text.push_str(&format!(" — {}", choice.description));
                    }
                }
                if question.multi_select {
                    text.push_str("\n  (several may be picked: answer `o` and name them)");
                }
                self.note_in(Some(YELLOW), &neutralize(&text))?;
            }
            EventMsg::PermissionRequested {
                call_id,
                summary,
                command,
                diff,
                plan,
                ..
            } => {
                // What would run, whole: every line of the command (or of a plan to
                // approve), marked so that no line of it can pass for coder's own, and the
                // diff of a change.
                let mut text = format!("permission needed: {}", first_line(summary));
                if let Some(command) = command.as_deref().or(plan.as_deref()) {
                    for line in command.lines() {
                        text.push_str("\n  │ ");
                        text.push_str(line);
                    }
                }
                self.note_in(Some(YELLOW), &text)?;
                if let Some(diff) = diff {
                    self.diff(diff)?;
                    self.asked_diff = Some((call_id.clone(), diff.clone()));
                }
            }
            // A person's own switch (`/mode`, `/plan`, ...) is said by the command's answer.
            EventMsg::ModeChanged {
                reason: ModeChangeReason::SetMode,
                ..
            } => {}
            EventMsg::ModeChanged {
                mode,
                previous,
                reason,
            } => self.note(&format!(
                "mode: {} -> {} ({})",
                previous.as_str(),
                mode.as_str(),
                match reason {
                    ModeChangeReason::ExitPlanMode => "plan approved",
                    ModeChangeReason::SetMode => "switched",
                    ModeChangeReason::CallerMode =>
                        "narrowed to the mode of the conversation that sent it work",
                }
            ))?,
            EventMsg::TaskStarted { .. }
            | EventMsg::TokenCount { .. }
            | EventMsg::ContextCleared { .. }
            | EventMsg::AgentMessage { .. }
            | EventMsg::ToolCallsRequested { .. }
            | EventMsg::ReplyComplete { .. }
            | EventMsg::TaskDropped { .. }
            | EventMsg::ToolCallOutputDelta { .. }
            | EventMsg::StateChanged { .. } => {}
        }
        Ok(())
    }

    /// Writes a control sequence of coder's own to the terminal (a bell, a notification).
    pub fn control(&mut self, sequence: &str) -> std::io::Result<()> {
        self.notes.write_all(sequence.as_bytes())?;
        self.notes.flush()
    }

    /// A diff a command shows (`/diff full`), coloured as a tool's diff is.
    pub fn show_diff(&mut self, diff: &str) -> std::io::Result<()> {
        self.diff(diff)?;
        self.notes.flush()
    }

    /// Writes a line of coder's own among the notes (a command's text, a question).
    pub fn say(&mut self, text: &str) -> std::io::Result<()> {
        self.end_answer_line()?;
        self.clear_spinner()?;
        writeln!(self.notes, "{text}")?;
        self.notes.flush()
    }

    /// Writes a command's text, each line word-wrapped to the terminal's width: a line's
    /// continuation is indented as far as its text (`  name    description` goes on under
    /// the description).
    pub fn say_wrapped(&mut self, text: &str) -> std::io::Result<()> {
        let width = live_width();
        let mut out = String::with_capacity(text.len());
        for line in text.lines() {
            if line.trim().is_empty() {
                out.push('\n');
                continue;
            }
            let indent = " ".repeat(hanging_indent(line).min(width / 2));
            let lead = &line[..line.len() - line.trim_start().len()];
            for wrapped in crate::markdown::wrap(line.trim_start(), width, lead, &indent) {
                out.push_str(&wrapped);
                out.push('\n');
            }
        }
        self.say(out.trim_end_matches('\n'))
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.answer.flush()?;
        self.notes.flush()
    }

    /// Ends the output: the answer's last line, the spinner's.
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.end_answer_line()?;
        self.clear_spinner()?;
        self.notes.flush()
    }
}

/// Where a line's continuation starts: for a line laid out in columns (`  name
/// description`), where its last column starts; else, for an indented line (an entry of a
/// list), two columns past its indent, so that it does not read as an entry of its own; a
/// paragraph goes on at the margin.
fn hanging_indent(line: &str) -> usize {
    let lead = line.len() - line.trim_start().len();
    match line[lead..].find("  ") {
        Some(gap) => {
            let after = &line[lead + gap..];
            lead + gap + (after.len() - after.trim_start().len())
        }
        None if lead > 0 => lead + 2,
        None => 0,
    }
}

/// The line that stands for output lines not shown.
fn skipped(lines: usize) -> String {
    format!(
        "… {lines} line{} not shown …",
        if lines == 1 { "" } else { "s" }
    )
}

/// `1.2s`, or `2m 5s` past a minute.
/// The columns a live line may fill: one less than the terminal's width, so that writing
/// its last column never wraps; 80 when the width is unknown.
pub fn live_width() -> usize {
    terminal_size::terminal_size()
        .map_or(80, |(terminal_size::Width(width), _)| usize::from(width))
        .saturating_sub(1)
        .max(10)
}

/// The terminal's height; 24 when it is unknown.
fn live_rows() -> usize {
    terminal_size::terminal_size().map_or(24, |(_, terminal_size::Height(rows))| usize::from(rows))
}

/// A live line: a head and a tail that are always shown (plain, styled), and a body cut
/// to what room they leave, at its end or, with `keep_end`, at its start.
struct Live {
    head: (String, String),
    body: String,
    keep_end: bool,
    tail: (String, String),
}

impl Live {
    fn write_into(&self, width: usize, out: &mut String) {
        let room = width.saturating_sub(self.head.0.width() + self.tail.0.width());
        let body = if self.body.width() <= room {
            self.body.clone()
        } else if self.keep_end {
            let reversed: String = self.body.chars().rev().collect();
            crate::markdown::cut(&reversed, room)
                .chars()
                .rev()
                .collect()
        } else {
            crate::markdown::cut(&self.body, room)
        };
        out.push_str(&self.head.1);
        out.push_str(&body);
        out.push_str(&self.tail.1);
    }
}

fn seconds(elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m {}s", elapsed.as_secs() / 60, elapsed.as_secs() % 60)
    }
}

/// `950`, `12.3k`, `1.2M`.
pub fn compact_number(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// The first line of `text`, with `…` when there is more.
fn first_line(text: &str) -> String {
    match text.split_once('\n') {
        Some((first, _)) => format!("{first}…"),
        None => text.to_owned(),
    }
}

/// One `@` reference as people see it: what was attached, or why nothing was.
fn reference_line(reference: &coder_protocol::FileReference) -> String {
    use coder_protocol::FileReferenceKind;
    let path = &reference.path;
    let what = match (reference.kind, reference.lines, &reference.error) {
        (FileReferenceKind::Refused, _, error) => {
            return format!("@{path}: not attached: {}", error.as_deref().unwrap_or(""));
        }
        (FileReferenceKind::File, Some(lines), _) => {
            format!("lines {}-{}", lines.start, lines.end)
        }
        (FileReferenceKind::File, None, _) => "empty file".to_owned(),
        (FileReferenceKind::Directory, _, _) => "directory listing".to_owned(),
        (FileReferenceKind::Image, _, _) => "image".to_owned(),
    };
    let cut = if reference.truncated { ", cut" } else { "" };
    format!("@{path}: attached {what}{cut}")
}

/// The calls whose report the terminal shows whole under their summary line, by what they
/// do: what a command printed, what a search found, what an MCP or conversation tool
/// returned. A file `read` or an edit shows its summary (and an edit its diff) only.
fn shows_output(kind: ToolKind) -> bool {
    matches!(kind, ToolKind::Execute | ToolKind::Search | ToolKind::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_times_are_short() {
        assert_eq!(compact_number(950), "950");
        assert_eq!(compact_number(12_345), "12.3k");
        assert_eq!(compact_number(1_234_567), "1.2M");
        assert_eq!(seconds(Duration::from_millis(1234)), "1.2s");
        assert_eq!(seconds(Duration::from_secs(125)), "2m 5s");
    }
}
