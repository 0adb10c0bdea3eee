//! The `coder-mock-model` program, as a test in another language would use it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_binary_serves_a_script_file_takes_more_and_reports_requests() {
    let (_dir, script) = script_file(
        &json!([{"kind": "stream", "chunks": [{"type": "text", "text": "from file"}]}]),
    );
    let (base, _child) = start(&["--script".as_ref(), script.as_os_str()]);
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");

    let client = reqwest::Client::new();
    let ask = || async {
        client
            .post(format!("{base}/v1/chat/completions"))
            .json(&json!({"model": "m", "stream": true, "messages": []}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let body = ask().await;
    assert!(body.contains("\"content\":\"from file\""), "{body}");
    assert!(body.ends_with("data: [DONE]\n\n"));

    let pushed = client
        .post(format!("{base}/_mock/script"))
        .json(&json!([{"kind": "status", "status": 503}]))
        .send()
        .await
        .unwrap();
    assert_eq!(pushed.status(), 204);
    let status = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 503);

    let requests: Vec<Value> = client
        .get(format!("{base}/_mock/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["body"]["model"], "m");
    assert_eq!(requests[0]["streamFinished"], true);
    assert_eq!(requests[1]["path"], "/v1/chat/completions");
}

/// `script` as a script file, in a directory removed when the first value is dropped.
fn script_file(script: &Value) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    (dir, path)
}

/// Starts the program with `args`; its base URL and the child (killed when dropped).
fn start(args: &[&std::ffi::OsStr]) -> (String, Killed) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_coder-mock-model"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (first.trim().to_owned(), Killed(child))
}

/// `--plain`, as the Node addon's bench uses it: the script's rendered replies in order,
/// byte for byte, one per request on a kept-alive connection.
#[tokio::test]
async fn plain_serves_the_scripts_rendered_replies_in_order() {
    let bodies = ["data: {\"a\":1}\n\ndata: [DONE]\n\n", "data: {\"b\":2}\n\n"];
    let (_dir, script) = script_file(&json!(
        bodies.map(|body| json!({"kind": "rendered", "format": "openai", "body": body}))
    ));
    let (base, _child) = start(&["--plain".as_ref(), "--script".as_ref(), script.as_os_str()]);
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let client = reqwest::Client::new();
    for body in bodies {
        let reply = client
            .post(format!("{base}/v1/chat/completions"))
            .json(&json!({"model": "m", "stream": true, "messages": []}))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        assert_eq!(reply.text().await.unwrap(), body);
    }
}

/// `--plain` with a reply it cannot serve written at once says which, and exits.
#[test]
fn plain_refuses_a_script_that_is_not_rendered() {
    let (_dir, script) =
        script_file(&json!([{"kind": "stream", "chunks": [{"type": "text", "text": "x"}]}]));
    let out = Command::new(env!("CARGO_BIN_EXE_coder-mock-model"))
        .args(["--plain", "--script"])
        .arg(&script)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--plain serves rendered replies only; reply 0 is not one"),
        "{stderr}"
    );
}
