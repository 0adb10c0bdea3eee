//! A command cannot read coder's own environment (the provider key) through
//! `/proc/<coder>/environ`, with the sandbox off or on: coder makes itself undumpable at
//! startup. Run as an ordinary user, since root may read any process's environment.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use coder_testkit::MockModelServer;
use serde_json::json;

use super::sandbox::{coder_at, model_running, text, tool_result};

const KEY: &str = "sk-test-coder-own-key-4242";

/// What the command prints: who it runs as, then coder's environment.
const COMMAND: &str = "echo uid=$(id -u); cat /proc/$PPID/environ; echo; echo end";

/// Runs `coder exec --mode yolo` with `config` as the user-level configuration, as user
/// 65534 when the test runs as root (through `setpriv`, with a hard link to the binary
/// where that user can reach it); returns the command's result and coder's stderr.
async fn run_as_ordinary_user(config: serde_json::Value) -> (String, String) {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // coder's own temporary directory (the sandbox's) is made there, as that user.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.json"), config.to_string()).unwrap();
    // `/proc/self` belongs to the process's effective user.
    let is_root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let mut coder = PathBuf::from(env!("CARGO_BIN_EXE_coder"));
    let mut wrapper: Vec<&str> = Vec::new();
    if is_root {
        for dir in [workspace.path(), home.path(), tmp.path()] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let linked = bin.path().join("coder");
        if std::fs::hard_link(&coder, &linked).is_err() {
            std::fs::copy(&coder, &linked).unwrap();
        }
        coder = linked;
        wrapper = vec![
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ];
    }
    let server: MockModelServer = model_running(COMMAND).await;
    let out = coder_at(
        Path::new(&coder),
        &wrapper,
        workspace.path(),
        home.path(),
        &server,
        &["go"],
        &[
            ("OPENAI_API_KEY", KEY),
            ("CODER_LOG", "coder_core=info"),
            ("TMPDIR", tmp.path().to_str().unwrap()),
        ],
    )
    .await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    (tool_result(&server), stderr)
}

#[tokio::test]
async fn a_command_cannot_read_coders_environment_with_the_sandbox_off() {
    let (result, _) = run_as_ordinary_user(json!({"sandbox": {"enabled": false}})).await;
    assert!(
        result.contains("end\n"),
        "the command did not run: {result}"
    );
    assert!(!result.contains("uid=0\n"), "ran as root: {result}");
    assert!(!result.contains(KEY), "coder's key leaked: {result}");
    assert!(result.contains("Permission denied"), "{result}");
}

#[tokio::test]
async fn a_command_cannot_read_coders_environment_in_the_sandbox_which_still_works() {
    let (result, stderr) = run_as_ordinary_user(json!({})).await;
    assert!(
        result.contains("end\n"),
        "the command did not run: {result}"
    );
    assert!(!result.contains(KEY), "coder's key leaked: {result}");
    // Undumpable coder still sets up the namespaces of an ordinary user's commands.
    let line = stderr
        .lines()
        .find(|line| line.contains("sandbox: "))
        .unwrap_or_else(|| panic!("no sandbox line in {stderr}"));
    assert!(line.contains("read-only mount namespace"), "{line}");
    assert!(line.contains("locked by a user namespace"), "{line}");
}
