//! Cold start of OpenAI's `codex app-server`, the reference the `lsp` bench compares
//! `coder lsp` against.
//!
//! The Codex CLI is installed from the npm registry by `scripts/setup-codex.sh` (its Linux
//! x64 native binary, outside the repository). `codex app-server` speaks JSON-RPC over
//! stdio as newline-delimited JSON, without the `"jsonrpc": "2.0"` member:
//!
//! ```text
//! -> {"method":"initialize","id":0,"params":{"clientInfo":{"name":"coder-bench","version":"0.0.0"}}}
//! <- {"id":0,"result":{"userAgent":"coder-bench/0.169.0 (...)","codexHome":"...","platformFamily":"unix","platformOs":"linux"}}
//! ```
//!
//! It answers `initialize` without network access or an API key. On its first start in a
//! given `CODEX_HOME` it populates that directory (SQLite state, bundled skills), which
//! makes that start slower than the following ones.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The install script, relative to this crate (`server/cli`).
const SETUP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/setup-codex.sh");

/// How long `codex app-server` gets to exit after its stdin is closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Installs the Codex CLI if needed and returns the path of its native `codex` executable,
/// or `None` (with the reason on stderr) when it cannot be installed, for example without
/// access to the npm registry.
pub fn binary() -> Option<PathBuf> {
    crate::install::installed(SETUP, "codex")
}

/// Time from spawning `codex app-server` to receiving the result of its `initialize`
/// request, with `HOME` and `CODEX_HOME` set to `home` (a directory the caller owns).
/// The server and anything it started are gone when this returns.
pub fn cold_start(binary: &Path, home: &Path) -> Duration {
    let request = json!({
        "method": "initialize",
        "id": 0,
        "params": {"clientInfo": {"name": "coder-bench", "version": "0.0.0"}},
    });
    let started = Instant::now();
    let mut child = Command::new(binary)
        .arg("app-server")
        .current_dir(home)
        .env("HOME", home)
        .env("CODEX_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODEX_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        // Its own process group, so that helpers it starts in the background (a `git
        // ls-remote` of the plugin repository) can be ended with it.
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn codex app-server");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{request}").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let read = stdout.read_line(&mut line).unwrap();
        assert!(
            read > 0,
            "codex app-server exited before answering initialize"
        );
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == request["id"] && message.get("method").is_none() {
            assert!(
                message.get("result").is_some(),
                "codex app-server refused initialize: {message}"
            );
            break;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    stop(&mut child);
    elapsed
}

/// Waits for `child` to exit after its stdin was closed (killing it if it takes longer
/// than [`EXIT_GRACE`]), then kills whatever is left in its process group.
fn stop(child: &mut Child) {
    let deadline = Instant::now() + EXIT_GRACE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    // Fails harmlessly when the group is already empty.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
