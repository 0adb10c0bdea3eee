//! MCP servers end with the session whenever it closes: `coder lsp` shut down right after
//! `initialize`, while its servers are being spawned, leaves none running.

use std::path::Path;
use std::time::Duration;

use coder_testkit::MockModelServer;
use serde_json::json;

use super::Client;

/// Whether process `pid` still runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(state != 'Z')
        })
        .unwrap_or(false)
}

/// A `.mcp.json` with three servers that write their process id, then never answer (and
/// never read their stdin, so nothing but coder ends them).
fn write_silent_servers(ws: &Path) {
    let servers: serde_json::Map<String, serde_json::Value> = (0..3)
        .map(|n| {
            let pid_file = ws.join(format!("server-{n}.pid"));
            let server = json!({
                "command": "sh",
                "args": ["-c", format!("echo $$ > '{}'; exec sleep 60", pid_file.display())],
            });
            (format!("s{n}"), server)
        })
        .collect();
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
}

#[tokio::test]
async fn a_session_closed_right_after_initialize_leaves_no_mcp_server_running() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let mut spawned = 0;
    for attempt in 0..30 {
        let workspace = tempfile::tempdir().unwrap();
        let ws = workspace.path();
        write_silent_servers(ws);
        let client = Client::trusted(ws, &server, "balanced").await;
        // From at once to 58 ms later: before, while and after the servers are spawned.
        tokio::time::sleep(Duration::from_millis(attempt * 2)).await;
        if attempt % 2 == 0 {
            client.stop().await;
        } else {
            // The editor went away: its end of the pipe closes, with no `shutdown`.
            let Client {
                mut child, stdin, ..
            } = client;
            drop(stdin);
            let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
                .await
                .expect("coder lsp did not exit when its input ended")
                .unwrap();
            assert!(status.success(), "{status:?}");
        }
        for n in 0..3 {
            let Ok(pid) = std::fs::read_to_string(ws.join(format!("server-{n}.pid"))) else {
                // Shut down before this server was spawned: nothing ran.
                continue;
            };
            let pid: u32 = pid.trim().parse().unwrap();
            spawned += 1;
            // A server that was ended is gone at once; a bounded wait for its reaping.
            let mut left = running(pid);
            for _ in 0..100 {
                if !left {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                left = running(pid);
            }
            if left {
                let _ = std::process::Command::new("kill")
                    .arg(pid.to_string())
                    .status();
            }
            assert!(
                !left,
                "attempt {attempt}: server {n} (pid {pid}) was left running"
            );
        }
    }
    // The shutdown raced the servers' start: some were spawned before it.
    assert!(spawned > 0, "no server was spawned in any attempt");
    eprintln!("spawned {spawned}");
}
