//! `bash`: runs a shell command in the workspace.
//!
//! The command runs in a session of its own (`setsid`), so it has no controlling terminal,
//! with stdin `/dev/null` and coder's environment minus its secrets
//! ([`crate::process::ToolEnv`]). Its output is captured with the tail kept when it is long,
//! and streamed while it runs when the context asks for it ([`super::live_output`]).
//! When the call ends (exit, timeout, interrupt or any early drop of the call), everything it
//! started is killed and reaped, background processes included
//! ([`crate::process::spawn_call`]), and its output pipes are closed. The call watches its
//! context's cancellation itself, so a caller that simply awaits it (a person's `!command`)
//! is interrupted like a turn that races the call against the token.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

use coder_protocol::OutputStream;

use super::live_output::LiveOutput;
use super::{Tool, ToolContext, ToolOutput};

const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes kept of each stream; beyond this the start is dropped and the tail kept.
const KEEP_BYTES: usize = 30_000;
/// After the command exits, how long to wait for children that still hold its output open.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// The shell tool's name.
pub const BASH: &str = "bash";

pub struct BashTool;

#[derive(Deserialize)]
struct Args {
    command: String,
    timeout_ms: Option<u64>,
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        BASH
    }

    fn description(&self) -> &str {
        "Run a bash command in the workspace root and return its exit code, stdout and \
         stderr. stdin is closed, so interactive programs fail; pass flags that avoid \
         prompts and pagers. Long output keeps its last 30,000 bytes. `timeout_ms` defaults \
         to 120000 (max 600000); on timeout the command and everything it started is killed. \
         Prefer `read`, `grep` and `glob` for looking at files."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line, run with `bash -c`."},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS},
            },
            "required": ["command"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Execute
    }

    fn command_line(&self, input: &Value) -> Option<String> {
        input["command"].as_str().map(str::to_owned)
    }

    fn is_read_only(&self) -> bool {
        false
    }

    /// A command that is only `apply_patch` and its here-document stands for an
    /// `apply_patch` call: `apply_patch` is no program on the machine, and coder applies the
    /// patch itself, with the tool's checks.
    fn stands_for(&self, input: &Value) -> Option<(&'static str, Value)> {
        let patch = super::patch_of_command(input["command"].as_str()?)?;
        Some((super::APPLY_PATCH, json!({"patch": patch})))
    }

    fn validate_input(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        if input["command"]
            .as_str()
            .is_some_and(|c| c.trim().is_empty())
        {
            return Err("the command is empty".to_owned());
        }
        Ok(())
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let timeout = Duration::from_millis(
            args.timeout_ms
                .unwrap_or(DEFAULT_TIMEOUT_MS)
                .min(MAX_TIMEOUT_MS),
        );
        run(&args.command, ctx, timeout).await
    }
}

/// The last `KEEP_BYTES` of a stream, and how much was dropped before them.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    dropped: usize,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= KEEP_BYTES {
            // The chunk holds the whole tail: keep its end, copy nothing else.
            self.dropped += self.bytes.len() + chunk.len() - KEEP_BYTES;
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&chunk[chunk.len() - KEEP_BYTES..]);
            return;
        }
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > 2 * KEEP_BYTES {
            let cut = self.bytes.len() - KEEP_BYTES;
            self.bytes.drain(..cut);
            self.dropped += cut;
        }
    }

    fn render(&self) -> String {
        let start = self.bytes.len().saturating_sub(KEEP_BYTES);
        let dropped = self.dropped + start;
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        if dropped == 0 {
            text.into_owned()
        } else {
            format!("[{dropped} earlier bytes cut; the last {KEEP_BYTES} follow]\n{text}")
        }
    }
}

/// Reads a stream into a [`Tail`] until it ends. The reader is aborted when the call ends,
/// so its end of the pipe is closed even if a process coder could not kill still holds the
/// other end.
struct Collector {
    tail: Arc<Mutex<Tail>>,
    reader: Option<JoinHandle<()>>,
}

impl Collector {
    /// Whether the stream is still open.
    fn open(&self) -> bool {
        self.reader
            .as_ref()
            .is_some_and(|reader| !reader.is_finished())
    }

    /// Stops reading and returns what was read.
    fn finish(mut self) -> String {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
        self.tail.lock().unwrap_or_else(|p| p.into_inner()).render()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
    }
}

/// Reads `stream` into a [`Tail`], and into `live` as it arrives.
fn collect(
    stream: Option<impl AsyncRead + Unpin + Send + 'static>,
    live: Option<(Arc<LiveOutput>, OutputStream)>,
) -> Collector {
    let tail = Arc::new(Mutex::new(Tail::default()));
    let mut reader = None;
    if let Some(mut stream) = stream {
        let sink = tail.clone();
        reader = Some(tokio::spawn(async move {
            // As large as a pipe's usual capacity: a command that prints a lot is read in
            // as few wake-ups as it can be.
            let mut buf = vec![0; 64 * 1024];
            while let Ok(n) = stream.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Some((live, which)) = &live {
                    live.push(*which, &buf[..n]);
                }
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(&buf[..n]);
            }
        }));
    }
    Collector { tail, reader }
}

async fn run(command: &str, ctx: &ToolContext, timeout: Duration) -> Result<ToolOutput, String> {
    let started = Instant::now();
    let mut command_line = tokio::process::Command::new("bash");
    command_line
        .arg("-c")
        .arg(command)
        .current_dir(&ctx.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    ctx.env.apply(&mut command_line);
    command_line
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
    new_session(&mut command_line);
    let audit = match &ctx.sandbox {
        Some(policy) => Some(policy.audit().await),
        None => None,
    };
    let (mut child, mut session) = crate::process::spawn_call(&ctx.cancel, || {
        crate::sandbox::spawn(command_line, ctx.sandbox.clone(), audit.as_ref())
    })
    .map_err(|err| format!("cannot start bash: {err}"))?;
    let live = ctx
        .live_output
        .clone()
        .map(|sink| LiveOutput::new(sink, ctx.env.clone()));
    let live_as = |which| live.clone().map(|live| (live, which));
    let stdout = collect(child.stdout.take(), live_as(OutputStream::Stdout));
    let stderr = collect(child.stderr.take(), live_as(OutputStream::Stderr));
    // The call's cancellation ends the command as a timeout does: a caller that awaits the
    // call without racing the token (a person's `!command`) is interrupted all the same.
    let ended = tokio::select! {
        status = child.wait() => Ended::Exited(status.map_err(|err| format!("waiting for bash failed: {err}"))?),
        () = tokio::time::sleep(timeout) => Ended::TimedOut,
        () = ctx.cancel.cancelled() => Ended::Interrupted,
    };
    let exited = matches!(ended, Ended::Exited(_));
    if exited {
        // Give background children a moment to finish writing, without waiting on them.
        let deadline = Instant::now() + DRAIN_GRACE;
        while Instant::now() < deadline && (stdout.open() || stderr.open()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Nothing the command started outlives the call.
    session.end();
    if !exited {
        let _ = child.wait().await;
    }
    // What the killed processes wrote last is in the pipes; the readers take it at once.
    let deadline = Instant::now() + Duration::from_millis(100);
    while Instant::now() < deadline && (stdout.open() || stderr.open()) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (out, err) = (stdout.finish(), stderr.finish());
    if let Some(live) = &live {
        live.finish();
    }
    let mut report = match ended {
        Ended::Exited(status) => match status.code() {
            Some(code) => format!("Exit code: {code}\n"),
            None => "Exit code: none (killed by a signal)\n".to_owned(),
        },
        Ended::TimedOut => format!(
            "Timed out after {:.1}s; the command and everything it started were killed.\n",
            timeout.as_secs_f64()
        ),
        Ended::Interrupted => {
            "Interrupted; the command and all it started were killed.\n".to_owned()
        }
    };
    report.push_str(&format!(
        "Wall time: {:.1}s\n",
        started.elapsed().as_secs_f64()
    ));
    if !out.is_empty() {
        report.push_str(&format!("Output:\n{out}"));
        if !out.ends_with('\n') {
            report.push('\n');
        }
    }
    if !err.is_empty() {
        report.push_str(&format!("Stderr:\n{err}"));
    }
    if let Some(audit) = audit
        && let Some(note) = audit.check().await
    {
        report.push_str(&note);
    }
    if !exited {
        return Err(report);
    }
    Ok(ToolOutput::text(report))
}

/// How a command's wait ended.
enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
    /// The call was cancelled (the task interrupted).
    Interrupted,
}

/// Starts the command in a new session: it has no controlling terminal (it cannot open
/// `/dev/tty` nor push input into the person's terminal with `TIOCSTI`), and its session id
/// names everything it starts.
fn new_session(command: &mut tokio::process::Command) {
    #[allow(unsafe_code)]
    // SAFETY: the hook runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: `setsid` is one, and the hook touches no memory
    // of the parent.
    unsafe {
        command.pre_exec(|| {
            nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::new(dir)
    }

    #[tokio::test]
    async fn reports_exit_code_stdout_and_stderr_from_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            "pwd; echo oops >&2; exit 3",
            &ctx(dir.path()),
            Duration::from_secs(10),
        )
        .await
        .unwrap()
        .content;
        assert!(out.starts_with("Exit code: 3\n"), "{out}");
        let root = dir.path().canonicalize().unwrap();
        assert!(
            out.contains(&format!("Output:\n{}\n", root.display())),
            "{out}"
        );
        assert!(out.ends_with("Stderr:\noops\n"), "{out}");
    }

    #[tokio::test]
    async fn long_output_keeps_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let out = run("seq 1 100000", &ctx(dir.path()), Duration::from_secs(10))
            .await
            .unwrap()
            .content;
        assert!(out.contains("earlier bytes cut"), "{}", &out[..200]);
        assert!(out.ends_with("99999\n100000\n"));
        assert!(out.len() < KEEP_BYTES + 500);
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let started = Instant::now();
        let err = run(&command, &ctx(dir.path()), Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(err.starts_with("Timed out after 0.2s"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "a background child outlived the timeout");
    }

    /// A call awaited to its end (no caller racing the token) ends once its task is
    /// cancelled: the command and what it started are killed, and the result says so.
    #[tokio::test]
    async fn a_cancelled_call_kills_the_process_group_and_says_it_was_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!(
            "echo started; (sleep 1; touch {}) & sleep 30; echo finished",
            marker.display()
        );
        let context = ctx(dir.path());
        let cancel = context.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        });
        let started = Instant::now();
        let err = run(&command, &context, Duration::from_secs(60))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(20), "{err}");
        assert!(err.starts_with("Interrupted;"), "{err}");
        assert!(err.contains("Output:\nstarted\n"), "{err}");
        assert!(!err.contains("finished"), "{err}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(
            !marker.exists(),
            "a background child outlived the interrupt"
        );
    }

    #[tokio::test]
    async fn dropping_the_call_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("sleep 1; touch {}", marker.display());
        let context = ctx(dir.path());
        let call = run(&command, &context, Duration::from_secs(30));
        assert!(
            tokio::time::timeout(Duration::from_millis(200), call)
                .await
                .is_err()
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "the command outlived its cancelled call");
    }
}
