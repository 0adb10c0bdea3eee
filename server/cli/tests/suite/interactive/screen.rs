//! A `coder` process in a pseudo-terminal of its own, and what its screen shows.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coder_testkit::MockModelServer;

/// Rows and columns of the terminal: tall enough that a test's whole session stays on
/// screen.
const ROWS: u16 = 400;
const COLS: u16 = 100;

pub struct Screen {
    cols: u16,
    master: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
    child: Child,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// The environment every test's `coder` runs with: a private home, the mock model (named in
/// the home's user-level configuration, so `/model` can be tested as people use it).
pub fn env<'a>(home: &'a Path, server: &'a MockModelServer) -> Vec<(&'static str, String)> {
    vec![
        ("HOME", home.display().to_string()),
        ("OPENAI_BASE_URL", server.openai_base_url()),
        ("OPENAI_API_KEY", "test-key".to_owned()),
        ("TERM", "xterm-256color".to_owned()),
    ]
}

/// How a character is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellStyle {
    pub bold: bool,
    pub italic: bool,
    pub underline: bool,
    pub colored: bool,
}

impl Screen {
    /// Starts `coder args` in `dir` with `env` (and PATH), in a terminal of its own.
    pub fn start(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Self {
        Self::start_sized(dir, args, env, COLS)
    }

    /// [`Screen::start`] in a terminal `cols` columns wide.
    pub fn start_sized(dir: &Path, args: &[&str], env: &[(&str, String)], cols: u16) -> Self {
        let size = nix::pty::Winsize {
            ws_row: ROWS,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).unwrap();
        let slave = std::fs::File::from(pty.slave);
        let mut command = Command::new(env!("CARGO_BIN_EXE_coder"));
        command
            .args(args)
            .current_dir(dir)
            .env_clear()
            .envs(crate::suite::kept_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        #[allow(unsafe_code)]
        // SAFETY: between fork and exec only async-signal-safe calls: `setsid` and the
        // `ioctl` that makes the terminal on stdin the session's controlling terminal, so
        // Ctrl+C reaches the process as SIGINT.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                if nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        let master = std::fs::File::from(pty.master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut reading = master.try_clone().unwrap();
        let sink = output.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0; 8192];
            // Ends with EIO once the child and every holder of the other side are gone.
            while let Ok(n) = reading.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self {
            cols,
            master,
            output,
            child,
            reader: Some(reader),
        }
    }

    /// Types `keys` (`\r` is Enter, `\x03` Ctrl+C, `\x04` Ctrl+D, `\x1b\r` Alt+Enter).
    pub fn send(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Types `line` and Enter once the prompt is ready.
    pub fn line(&mut self, line: &str) {
        self.send(line);
        self.send("\r");
    }

    /// The raw bytes written so far.
    pub fn raw(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// What the terminal shows, every line trimmed, trailing empty lines dropped.
    pub fn text(&self) -> String {
        let bytes = self.output.lock().unwrap().clone();
        let nonzero = |n: u16| std::num::NonZeroU16::new(n).unwrap();
        let mut parser = vt100::Parser::new(nonzero(ROWS), nonzero(self.cols), 0);
        parser.process(&bytes);
        let contents = parser.screen().contents();
        let lines: Vec<&str> = contents.lines().map(str::trim_end).collect();
        lines.join("\n").trim_end().to_owned()
    }

    /// The colour of the first character of the first `needle` on the screen.
    pub fn color_of(&self, needle: &str) -> Option<vt100::Color> {
        self.cell_of(needle, |cell| cell.fgcolor())
    }

    /// `read` of the cell of the first character of the first `needle` on the screen.
    fn cell_of<T>(&self, needle: &str, read: impl Fn(&vt100::Cell) -> T) -> Option<T> {
        let bytes = self.output.lock().unwrap().clone();
        let nonzero = |n: u16| std::num::NonZeroU16::new(n).unwrap();
        let mut parser = vt100::Parser::new(nonzero(ROWS), nonzero(self.cols), 0);
        parser.process(&bytes);
        let screen = parser.screen();
        let (row, col) = screen
            .rows(0, self.cols)
            .enumerate()
            .find_map(|(row, line)| {
                let at = line.find(needle)?;
                Some((row, line[..at].chars().count()))
            })?;
        screen.cell(row as u16, col as u16).map(read)
    }

    /// How the first character of the first `needle` on the screen is drawn.
    pub fn style_of(&self, needle: &str) -> Option<CellStyle> {
        self.cell_of(needle, |cell| CellStyle {
            bold: cell.bold(),
            italic: cell.italic(),
            underline: cell.underline(),
            colored: cell.fgcolor() != vt100::Color::Default,
        })
    }

    /// Waits until the screen shows `needle` `count` times in all, up to 30 s.
    pub fn wait_for_count(&self, needle: &str, count: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = self.text();
            if text.matches(needle).count() >= count {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {needle:?} {count} times; it shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until what the screen shows passes `check`, up to 30 s.
    pub fn wait_until(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = self.text();
            if check(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {what}; the screen shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the screen shows `needle`.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_for_count(needle, 1)
    }

    /// Waits for the `count`th prompt in all: its status line (`… tokens · model · mode`,
    /// printed once per prompt, counted in the raw output so that lines scrolled away
    /// count too) and the prompt at the screen's last line.
    pub fn prompt(&self, count: usize) -> String {
        self.prompt_holding(count, "›")
    }

    /// Waits until the screen shows the `count`th prompt, its last line ending with `end`
    /// (what is typed at it), up to 30 s.
    pub fn prompt_holding(&self, count: usize, end: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            // `… tokens · model · mode`; a task's status line (`… tokens · esc to interrupt`)
            // is not a prompt's.
            let prompts = prompt_status().find_iter(&self.raw()).count();
            let text = self.text();
            if prompts >= count && text.lines().last().is_some_and(|l| l.ends_with(end)) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "prompt {count} never came ({prompts} so far); the screen shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process to exit (30 s at most) and returns its status.
    pub fn exit(mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("coder did not exit; the screen shows:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The reader ends once the child's side is closed; it is not waited for, since a
        // grandchild may still hold the terminal.
        drop(self.reader.take());
    }
}

/// The screen with what changes from run to run replaced: durations, token counts, the
/// workspace's path.
pub fn normalized(text: &str, workspace: &Path) -> String {
    let mut out = text.replace(&workspace.display().to_string(), "<workspace>");
    for (pattern, with) in [
        (r"\(\d+ ms\)", "(N ms)"),
        (r"\d+(\.\d+)?s\b", "N.Ns"),
        (r"Wall time: \S+", "Wall time: N"),
        // Token figures: the workspace's random temporary name is in every request, and
        // the tokenizer splits each such name into a different number of tokens.
        (r"(── .*· )\d+(\.\d)?k? tokens", "${1}N tokens"),
        (r"(?m)^\d+\.\dk / ", "N.Nk / "),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<time>"),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<id>",
        ),
    ] {
        out = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&out, with)
            .into_owned();
    }
    out
}

/// The status line printed before each prompt: `… tokens · model · mode`.
fn prompt_status() -> &'static regex::Regex {
    static STATUS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    STATUS.get_or_init(|| {
        regex::Regex::new(r" tokens · \S+ · (plan|default|auto-edit|yolo)").unwrap()
    })
}
