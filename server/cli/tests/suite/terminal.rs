//! What reaches a person's terminal, or a pipe standing in for one.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

/// The server's log on stderr carries no ANSI escape when stderr is a pipe (with or without
/// `NO_COLOR`): a malformed frame makes `coder lsp` log a warning.
#[tokio::test]
async fn the_log_through_a_pipe_has_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    for no_color in ["", "1"] {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_coder"))
            .args(["lsp", "--stdio"])
            .current_dir(dir.path())
            .env_clear()
            .envs(crate::suite::kept_env())
            .env("HOME", dir.path())
            .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
            .env("NO_COLOR", no_color)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"Content-Length: 5\r\n\r\n{nope")
            .await
            .unwrap();
        drop(stdin);
        let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("coder lsp did not end when its input closed")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("WARN"), "no warning logged: {stderr}");
        assert!(!out.stderr.contains(&0x1b), "colour codes in: {stderr:?}");
    }
}
