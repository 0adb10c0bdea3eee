//! An idle `coder lsp` does not wake up: an editor keeps its server running all day, and a
//! thread that ticks costs a laptop's battery. Counted as the context switches of every
//! thread of the process over two seconds (Linux's `/proc`), after a task has run so the
//! session, its watcher and its saver all exist.

use std::time::Duration;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::{Client, event_types};

/// The context switches of every thread of process `pid` so far, by thread name.
pub(super) fn switches(pid: u32) -> Vec<(String, u64)> {
    let mut all = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return all;
    };
    for task in tasks.flatten() {
        let path = task.path();
        let (Ok(name), Ok(status)) = (
            std::fs::read_to_string(path.join("comm")),
            std::fs::read_to_string(path.join("status")),
        ) else {
            continue;
        };
        let count: u64 = status
            .lines()
            .filter(|line| line.contains("ctxt_switches:"))
            .filter_map(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        all.push((
            format!("{} ({})", name.trim(), task.file_name().display()),
            count,
        ));
    }
    all
}

/// The wake-ups of every thread of process `pid` over the next two seconds, by thread
/// (a thread that ended meanwhile is not counted).
pub(super) async fn wake_ups_over_two_seconds(pid: u32) -> Vec<(String, u64)> {
    let before = switches(pid);
    tokio::time::sleep(Duration::from_secs(2)).await;
    switches(pid)
        .into_iter()
        .map(|(thread, count)| {
            let earlier = before
                .iter()
                .find(|(t, _)| *t == thread)
                .map_or(0, |(_, c)| *c);
            (thread, count.saturating_sub(earlier))
        })
        .filter(|(_, count)| *count > 0)
        .collect()
}

#[tokio::test]
async fn an_idle_server_does_not_wake_up() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let server = MockModelServer::start(vec![MockResponse::text("done")])
        .await
        .unwrap();
    let mut client = Client::start(&workspace, &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    let root = client.root().await;
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    // The snapshot is written once the session stayed idle for 500 ms; then nothing is due.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let woke = wake_ups_over_two_seconds(client.child.id().unwrap()).await;
    let total: u64 = woke.iter().map(|(_, count)| count).sum();
    // A blocking thread retiring after its keep-alive may wake once; a ticking thread
    // wakes dozens of times in two seconds.
    assert!(
        total <= 4,
        "an idle coder lsp woke {total} times in 2 s: {woke:?}"
    );
    assert!(!event_types(&seen).iter().any(|t| t == "error"), "{seen:?}");
    client.stop().await;
}
