//! Calling the person back (`notifications`, off unless set): when a task that ran a while
//! ends, or an approval waits, while the terminal's window is not focused, the terminal
//! rings its bell or shows a desktop notification (OSC 9, with the bell for terminals that
//! do not show one). The words are coder's own, never text from the model or a tool.

use std::time::{Duration, Instant};

use coder_core::config::Notifications;

use crate::render::Human;

/// How and when to call the person.
#[derive(Debug, Clone, Copy)]
pub struct Attention {
    how: Notifications,
    after: Duration,
}

impl Attention {
    pub fn new(how: Notifications, after_seconds: u64) -> Self {
        Self {
            how,
            after: Duration::from_secs(after_seconds),
        }
    }

    /// An approval waits.
    pub fn approval(&self, focused: bool, printer: &mut Human) -> std::io::Result<()> {
        self.call(focused, "coder is waiting for an approval", printer)
    }

    /// A task that started at `started` ended.
    pub fn task_ended(
        &self,
        started: Instant,
        focused: bool,
        printer: &mut Human,
    ) -> std::io::Result<()> {
        if started.elapsed() < self.after {
            return Ok(());
        }
        self.call(focused, "coder finished the task", printer)
    }

    fn call(&self, focused: bool, message: &str, printer: &mut Human) -> std::io::Result<()> {
        if focused {
            return Ok(());
        }
        match self.how {
            Notifications::Off => Ok(()),
            Notifications::Bell => printer.control("\x07"),
            Notifications::Desktop => printer.control(&format!("\x1b]9;{message}\x1b\\\x07")),
        }
    }
}
