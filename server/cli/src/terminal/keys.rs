//! Keys typed while a task runs. The line editor owns the terminal only while it reads a
//! line; during a task this reader does. The terminal stops echoing and stops waiting for
//! Enter, so nothing typed lands in the task's output; Ctrl+C still raises SIGINT. Each key
//! goes to the terminal's loop, which shows the line being typed below the output and
//! sends it on Enter. Stopping the reader gives the terminal back as it was.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

/// A key, as the line typed during a task uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Key {
    Char(char),
    /// Enter: send the line to the running task.
    Enter,
    /// Tab: queue the line behind the running task.
    Tab,
    Backspace,
    /// Ctrl+U: clear the line.
    Clear,
    /// Ctrl+D: the end of input (at an empty prompt, leave).
    Eof,
    /// The terminal's window gained (`true`) or lost the focus (focus reporting, which
    /// [`Keys`] turns on while it reads).
    Focus(bool),
    /// Esc alone (not the start of a key's sequence): interrupt.
    Esc,
    /// Text pasted (bracketed paste, which [`Keys`] turns on while it reads), whole.
    Paste(String),
}

/// What a terminal sends around pasted text.
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";
/// The most of one paste kept; the rest is dropped.
const PASTE_MAX: usize = 8 << 20;

/// How long a lone Esc waits for the rest of a sequence (an arrow key sends `ESC [ A`).
const ESC_WAIT: Duration = Duration::from_millis(40);

/// Turns bytes into keys: UTF-8 text, the control keys above, a bracketed paste as one
/// key; other escape sequences (arrows, function keys, Alt+key) are read whole and dropped.
#[derive(Default)]
pub(super) struct Decoder {
    pending: Vec<u8>,
    /// The text of a paste being read, up to [`PASTE_MAX`] bytes.
    paste: Option<Vec<u8>>,
}

impl Decoder {
    /// The keys `bytes` complete, in order.
    pub fn push(&mut self, bytes: &[u8], keys: &mut Vec<Key>) {
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            if let Some(paste) = &mut self.paste {
                let rest = &self.pending[at..];
                if let Some(end) = find(rest, PASTE_END) {
                    keep(paste, &rest[..end]);
                    keys.push(Key::Paste(String::from_utf8_lossy(paste).into_owned()));
                    self.paste = None;
                    at += end + PASTE_END.len();
                    continue;
                }
                // All but what may be the start of the end marker is the paste's.
                let held = (1..PASTE_END.len())
                    .rev()
                    .find(|&n| rest.ends_with(&PASTE_END[..n]))
                    .unwrap_or(0);
                keep(paste, &rest[..rest.len() - held]);
                at = self.pending.len() - held;
                break;
            }
            if at >= self.pending.len() {
                break;
            }
            match self.key_at(at) {
                Step::Key(key, len) => {
                    keys.extend(key);
                    at += len;
                }
                Step::PasteStart(len) => {
                    self.paste = Some(Vec::new());
                    at += len;
                }
                Step::Incomplete => break,
            }
        }
        self.pending.drain(..at);
    }

    /// Whether an Esc waits for what follows it (not inside a paste, whose end marker
    /// comes when it comes).
    pub fn waiting_esc(&self) -> bool {
        self.paste.is_none() && self.pending.first() == Some(&0x1b)
    }

    /// Nothing followed the Esc in time: it was the Esc key, and what came with it is read
    /// as keys.
    pub fn lone_esc(&mut self, keys: &mut Vec<Key>) {
        if self.waiting_esc() {
            self.pending.remove(0);
            keys.push(Key::Esc);
            let rest = std::mem::take(&mut self.pending);
            self.push(&rest, keys);
        }
    }

    fn key_at(&self, at: usize) -> Step {
        let bytes = &self.pending[at..];
        let key = match bytes[0] {
            b'\r' | b'\n' => Key::Enter,
            b'\t' => Key::Tab,
            0x7f | 0x08 => Key::Backspace,
            0x15 => Key::Clear,
            0x04 => Key::Eof,
            0x1b => return escape(bytes),
            byte if byte < 0x20 => return Step::Key(None, 1),
            _ => return text(bytes),
        };
        Step::Key(Some(key), 1)
    }
}

enum Step {
    /// A key (or nothing, for a sequence dropped) and the bytes it took.
    Key(Option<Key>, usize),
    /// The start of a paste, and the bytes it took.
    PasteStart(usize),
    Incomplete,
}

/// Where `needle` starts in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Adds `bytes` to a paste, up to [`PASTE_MAX`].
fn keep(paste: &mut Vec<u8>, bytes: &[u8]) {
    let room = PASTE_MAX.saturating_sub(paste.len());
    paste.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// The longest escape sequence waited for; a longer run without its final byte is not one.
const SEQUENCE_MAX: usize = 32;

/// `ESC [ … final` and `ESC O x` are dropped whole; `ESC x` (Alt+x) too.
fn escape(bytes: &[u8]) -> Step {
    match bytes.get(1) {
        None => Step::Incomplete,
        Some(b'[') => match bytes[2..].iter().position(|b| (0x40..=0x7e).contains(b)) {
            Some(0) if bytes[2] == b'I' => Step::Key(Some(Key::Focus(true)), 3),
            Some(0) if bytes[2] == b'O' => Step::Key(Some(Key::Focus(false)), 3),
            Some(_) if bytes.starts_with(PASTE_START) => Step::PasteStart(PASTE_START.len()),
            Some(end) => Step::Key(None, end + 3),
            // No key's sequence is this long: the rest is read as keys.
            None if bytes.len() > SEQUENCE_MAX => Step::Key(None, 2),
            None => Step::Incomplete,
        },
        Some(b'O') if bytes.len() < 3 => Step::Incomplete,
        Some(b'O') => Step::Key(None, 3),
        Some(_) => Step::Key(None, 2),
    }
}

/// One UTF-8 character; an invalid byte is dropped.
fn text(bytes: &[u8]) -> Step {
    let len = match bytes[0] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        0x80..=0xff => return Step::Key(None, 1),
        _ => 1,
    };
    let Some(encoded) = bytes.get(..len) else {
        return Step::Incomplete;
    };
    match std::str::from_utf8(encoded)
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) => Step::Key(Some(Key::Char(c)), len),
        None => Step::Key(None, 1),
    }
}

/// The reader while it runs.
pub(super) struct Keys {
    bytes: mpsc::UnboundedReceiver<Vec<u8>>,
    decoder: Decoder,
    ready: std::collections::VecDeque<Key>,
    /// When an Esc waiting for the rest of a sequence is taken as the Esc key.
    esc_until: Option<tokio::time::Instant>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    saved: Option<nix::sys::termios::Termios>,
}

impl Keys {
    /// Takes the keys of stdin, a terminal; `None` when it cannot (the keys then stay with
    /// the terminal, echoed as before).
    pub fn start() -> Option<Self> {
        use nix::sys::termios::{self, LocalFlags, SetArg};
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(&stdin).ok()?;
        let mut quiet = saved.clone();
        quiet
            .local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO);
        termios::tcsetattr(&stdin, SetArg::TCSANOW, &quiet).ok()?;
        reports(true);
        let (sender, bytes) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("coder-keys".to_owned())
            .spawn(move || read_keys(&sender, &stopped));
        let Ok(thread) = thread else {
            let _ = termios::tcsetattr(&stdin, SetArg::TCSANOW, &saved);
            return None;
        };
        Some(Self {
            bytes,
            decoder: Decoder::default(),
            ready: std::collections::VecDeque::new(),
            esc_until: None,
            stop,
            thread: Some(thread),
            saved: Some(saved),
        })
    }

    /// The next key; `None` once the terminal is gone.
    pub async fn next(&mut self) -> Option<Key> {
        loop {
            if let Some(key) = self.ready.pop_front() {
                return Some(key);
            }
            let mut keys = Vec::new();
            let bytes = if self.decoder.waiting_esc() {
                // The wait is kept across calls: the caller's `select!` drops this future
                // whenever something else comes first.
                let until = *self
                    .esc_until
                    .get_or_insert_with(|| tokio::time::Instant::now() + ESC_WAIT);
                match tokio::time::timeout_at(until, self.bytes.recv()).await {
                    Ok(bytes) => bytes,
                    Err(_) => {
                        self.esc_until = None;
                        self.decoder.lone_esc(&mut keys);
                        self.ready.extend(keys);
                        continue;
                    }
                }
            } else {
                self.bytes.recv().await
            };
            self.esc_until = None;
            self.decoder.push(&bytes?, &mut keys);
            self.ready.extend(keys);
        }
    }

    /// Gives the terminal back as it was; the keys read but not yet taken.
    pub fn stop(mut self) -> Vec<Key> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.restore();
        let mut keys: Vec<Key> = self.ready.drain(..).collect();
        while let Ok(bytes) = self.bytes.try_recv() {
            self.decoder.push(&bytes, &mut keys);
        }
        keys
    }

    fn restore(&mut self) {
        if let Some(saved) = self.saved.take() {
            reports(false);
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                &saved,
            );
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.restore();
    }
}

/// Turns the terminal's focus reports (`ESC [ I`, `ESC [ O`) and bracketed paste on or
/// off; terminals that do not know them ignore the request.
fn reports(on: bool) {
    use std::io::Write;
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(if on {
        b"\x1b[?1004h\x1b[?2004h"
    } else {
        b"\x1b[?1004l\x1b[?2004l"
    });
    let _ = stdout.flush();
}

/// The reader's thread: stdin in pieces as they come, until `stop` (checked at least every
/// 50 ms) or the end of stdin.
fn read_keys(sender: &mpsc::UnboundedSender<Vec<u8>>, stop: &AtomicBool) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::io::Read;
    use std::os::fd::AsFd;
    // Read the fd itself, not through `Stdin`'s buffer, which would keep bytes from the line
    // editor afterwards.
    let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return;
    };
    let mut raw = std::fs::File::from(fd);
    let mut buffer = [0u8; 1024];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [PollFd::new(raw.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(50u8)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match raw.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if sender.send(buffer[..n].to_vec()).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut decoder = Decoder::default();
        let mut keys = Vec::new();
        for byte in bytes {
            decoder.push(&[*byte], &mut keys);
        }
        decoder.lone_esc(&mut keys);
        keys
    }

    #[test]
    fn text_and_control_keys_are_read_and_sequences_dropped() {
        assert_eq!(
            keys("hé\x1b[A\x1bOB\x1b[20~x\r\t\x7f\x15".as_bytes()),
            [
                Key::Char('h'),
                Key::Char('é'),
                Key::Char('x'),
                Key::Enter,
                Key::Tab,
                Key::Backspace,
                Key::Clear
            ]
        );
        assert_eq!(keys(b"a\x1b"), [Key::Char('a'), Key::Esc]);
        assert_eq!(
            keys(b"\x1b[O\x04\x1b[I"),
            [Key::Focus(false), Key::Eof, Key::Focus(true)]
        );
        assert_eq!(keys(b"\x01\xff b"), [Key::Char(' '), Key::Char('b')]);
    }

    #[test]
    fn a_paste_is_one_key_whatever_it_holds_and_however_it_arrives() {
        let pasted = "one\r\ntwo\x1b[A\x1b[201 é\x03";
        let bytes = format!("a\x1b[200~{pasted}\x1b[201~b");
        let expected = [
            Key::Char('a'),
            Key::Paste(pasted.to_owned()),
            Key::Char('b'),
        ];
        assert_eq!(keys(bytes.as_bytes()), expected);
        let mut decoder = Decoder::default();
        let mut read = Vec::new();
        decoder.push(bytes.as_bytes(), &mut read);
        assert_eq!(read, expected);
        // An Esc in a paste does not wait to be the Esc key.
        let mut decoder = Decoder::default();
        let mut read = Vec::new();
        decoder.push(b"\x1b[200~x\x1b", &mut read);
        assert!(!decoder.waiting_esc());
        decoder.lone_esc(&mut read);
        decoder.push(b"[201~", &mut read);
        assert_eq!(read, [Key::Paste("x".to_owned())]);
    }

    /// Whatever bytes arrive, in whatever pieces: no panic, and what waits for more stays
    /// within one sequence's length.
    #[test]
    fn seeded_garbage_decodes_without_growing_what_waits() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let mut decoder = Decoder::default();
            let mut keys = Vec::new();
            for _ in 0..50 {
                let len = (next() % 64) as usize;
                // Paste marks among the garbage: a paste opened and never closed, or
                // closed without being opened, keeps what waits bounded too.
                let bytes: Vec<u8> = (0..len)
                    .flat_map(|_| match next() % 8 {
                        0 => vec![0x1b],
                        1 => vec![b'['],
                        2 if next() % 4 == 0 => PASTE_START.to_vec(),
                        3 if next() % 4 == 0 => PASTE_END.to_vec(),
                        _ => vec![next() as u8],
                    })
                    .collect();
                decoder.push(&bytes, &mut keys);
                assert!(
                    decoder.pending.len() <= SEQUENCE_MAX + 4,
                    "{:?}",
                    decoder.pending
                );
            }
            decoder.lone_esc(&mut keys);
        }
        // An unterminated sequence longer than any key's is read as keys.
        let mut long = b"\x1b[".to_vec();
        long.extend(std::iter::repeat_n(b'1', 40));
        assert_eq!(keys(&long).len(), 40);
    }
}
