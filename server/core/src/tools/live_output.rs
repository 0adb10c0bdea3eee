//! What a running command prints, streamed as it prints it (`tool_call_output_delta`), and
//! the progress an MCP tool's server reports, one line per report.
//!
//! A command's output is read in chunks of whatever size the pipe gives; [`LiveOutput`]
//! turns them into deltas a client can show as a live terminal:
//! - Whole lines: a delta ends where the command ended a line (`\n` or `\r`, which progress
//!   bars use), so a secret is never cut in two and redacted in neither half. A line longer
//!   than [`LONG_LINE`] is sent in pieces, holding back the longest secret's length.
//! - Redacted as the result is: every secret value coder withholds from commands.
//! - Bounded: past [`LIVE_OUTPUT_CAP`] bytes per call, one last delta says the rest is not
//!   streamed. The call's result is unchanged (it keeps the tail of the output).
//! - Ordered: once [`LiveOutput::finish`] returns nothing more is sent, so every delta comes
//!   before the call's end.

use std::sync::{Arc, Mutex};

use coder_protocol::OutputStream;

use crate::process::ToolEnv;
use crate::sync::lock;

/// Where a call's deltas go: the session's events, for the call the context names.
#[derive(Clone)]
pub struct OutputSink(Arc<dyn Fn(OutputStream, String) + Send + Sync>);

impl OutputSink {
    pub fn new(send: impl Fn(OutputStream, String) + Send + Sync + 'static) -> Self {
        Self(Arc::new(send))
    }
}

impl std::fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSink")
    }
}

/// The most a call streams; past it one last delta says the rest is not streamed (the
/// call's result keeps the tail of its output, as always).
pub const LIVE_OUTPUT_CAP: usize = 4 << 20;

/// A line without an end is sent in pieces once it holds this many bytes.
const LONG_LINE: usize = 8 * 1024;

/// The deltas of one call.
pub struct LiveOutput {
    sink: OutputSink,
    env: Arc<ToolEnv>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// What was read of each stream and not sent yet: an unfinished line.
    waiting: [Vec<u8>; 3],
    sent: usize,
    capped: bool,
    finished: bool,
}

impl LiveOutput {
    pub fn new(sink: OutputSink, env: Arc<ToolEnv>) -> Arc<Self> {
        Arc::new(Self {
            sink,
            env,
            state: Mutex::new(State::default()),
        })
    }

    /// Takes what `stream` gave; sends its whole lines.
    pub fn push(&self, stream: OutputStream, bytes: &[u8]) {
        let mut state = lock(&self.state);
        if state.finished || state.capped {
            return;
        }
        let waiting = &mut state.waiting[index(stream)];
        waiting.extend_from_slice(bytes);
        let ready = match waiting.iter().rposition(|&b| b == b'\n' || b == b'\r') {
            Some(end) => end + 1,
            None if waiting.len() >= LONG_LINE => {
                char_boundary(waiting, waiting.len() - self.env.longest_secret())
            }
            None => 0,
        };
        if ready > 0 {
            let text: Vec<u8> = waiting.drain(..ready).collect();
            self.send(&mut state, stream, &text);
        }
    }

    /// Sends what is left of each stream; nothing is sent after it returns.
    pub fn finish(&self) {
        let mut state = lock(&self.state);
        if state.finished {
            return;
        }
        for stream in [
            OutputStream::Stdout,
            OutputStream::Stderr,
            OutputStream::Progress,
        ] {
            let text = std::mem::take(&mut state.waiting[index(stream)]);
            if !text.is_empty() && !state.capped {
                self.send(&mut state, stream, &text);
            }
        }
        state.finished = true;
    }

    /// Sends `text` within the cap; the delta that reaches the cap says so. Runs under the
    /// state's lock, so deltas keep the order they were read in.
    fn send(&self, state: &mut State, stream: OutputStream, text: &[u8]) {
        let room = LIVE_OUTPUT_CAP.saturating_sub(state.sent);
        let (text, capped) = if text.len() > room {
            (&text[..char_boundary(text, room)], true)
        } else {
            (text, false)
        };
        state.sent += text.len();
        let mut delta = self.env.redact(String::from_utf8_lossy(text).into_owned());
        if capped {
            state.capped = true;
            if !delta.is_empty() && !delta.ends_with('\n') {
                delta.push('\n');
            }
            let rest = match stream {
                OutputStream::Stdout | OutputStream::Stderr => {
                    "the command runs on, and its result keeps the end of its output"
                }
                OutputStream::Progress => "the tool runs on",
            };
            delta.push_str(&format!(
                "[live output stops after {} MiB; {rest}]\n",
                LIVE_OUTPUT_CAP >> 20
            ));
        }
        if !delta.is_empty() {
            (self.sink.0)(stream, delta);
        }
    }
}

fn index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
        OutputStream::Progress => 2,
    }
}

/// The largest cut at or before `at` that does not split a UTF-8 character, nor leave an
/// unfinished one at the end of what is cut.
fn char_boundary(bytes: &[u8], at: usize) -> usize {
    let continues = |b: u8| b & 0b1100_0000 == 0b1000_0000;
    let mut at = at.min(bytes.len());
    // A character has at most three continuation bytes.
    for _ in 0..3 {
        if at == 0 || at == bytes.len() || !continues(bytes[at]) {
            break;
        }
        at -= 1;
    }
    // The last character before the cut may still be waiting for its continuation bytes.
    if let Some(start) = (at.saturating_sub(3)..at)
        .rev()
        .find(|&i| !continues(bytes[i]))
    {
        let length = match bytes[start] {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        if start + length > at {
            at = start;
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    type Seen = Arc<Mutex<Vec<(OutputStream, String)>>>;

    fn recorder(env: ToolEnv) -> (Arc<LiveOutput>, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let live = LiveOutput::new(
            OutputSink::new(move |stream, delta| lock(&sink).push((stream, delta))),
            Arc::new(env),
        );
        (live, seen)
    }

    fn plain() -> ToolEnv {
        ToolEnv::new(Vec::new(), Vec::new())
    }

    #[test]
    fn whole_lines_go_out_as_they_end_and_the_rest_at_the_finish() {
        let (live, seen) = recorder(plain());
        live.push(OutputStream::Stdout, b"one\ntw");
        live.push(OutputStream::Stderr, b"oops\n");
        live.push(OutputStream::Stdout, b"o\rthree");
        live.finish();
        live.push(OutputStream::Stdout, b"late\n");
        assert_eq!(
            *lock(&seen),
            vec![
                (OutputStream::Stdout, "one\n".to_owned()),
                (OutputStream::Stderr, "oops\n".to_owned()),
                (OutputStream::Stdout, "two\r".to_owned()),
                (OutputStream::Stdout, "three".to_owned()),
            ]
        );
    }

    #[test]
    fn a_secret_cut_between_reads_is_redacted_whole() {
        let secret = "sk-live-0123456789abcdef";
        let (live, seen) = recorder(ToolEnv::new(Vec::new(), vec![secret.to_owned()]));
        live.push(OutputStream::Stdout, b"key=sk-live-01234");
        live.push(OutputStream::Stdout, b"56789abcdef\n");
        // A long line is sent in pieces that hold back a secret's length.
        let long = format!("{}{secret}", "x".repeat(LONG_LINE));
        for piece in long.as_bytes().chunks(1000) {
            live.push(OutputStream::Stdout, piece);
        }
        live.finish();
        let joined: String = lock(&seen).iter().map(|(_, d)| d.as_str()).collect();
        assert!(!joined.contains("0123456789"), "{joined}");
        assert_eq!(joined.matches("[redacted]").count(), 2, "{joined}");
    }

    #[test]
    fn a_character_cut_between_reads_arrives_whole() {
        let (live, seen) = recorder(plain());
        let text = "é".repeat(LONG_LINE);
        for piece in text.as_bytes().chunks(777) {
            live.push(OutputStream::Stdout, piece);
        }
        live.finish();
        let joined: String = lock(&seen).iter().map(|(_, d)| d.as_str()).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn past_the_cap_one_last_delta_says_the_rest_is_not_streamed() {
        let (live, seen) = recorder(plain());
        let line = format!("{}\n", "y".repeat(1023));
        for _ in 0..(LIVE_OUTPUT_CAP / 1024 + 100) {
            live.push(OutputStream::Stdout, line.as_bytes());
        }
        live.finish();
        let seen = lock(&seen);
        let sent: usize = seen.iter().map(|(_, d)| d.len()).sum();
        assert!(sent < LIVE_OUTPUT_CAP + 200, "{sent}");
        let last = &seen.last().unwrap().1;
        assert!(
            last.ends_with("its result keeps the end of its output]\n"),
            "{last}"
        );
    }
}
