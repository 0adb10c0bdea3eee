//! Files a repository ships, of a gigabyte each (git stores a file that repeats itself in
//! kilobytes, and a clone writes it out whole): coder's configuration, `.mcp.json`, rules
//! files and a base instructions file. `coder lsp` reads none of them past its bound, says
//! what it refused or cut, and serves a task with its memory where it would be without them.

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::{Client, events, status_kb};

/// A gigabyte, written as a sparse file: instant, and no disk.
const HOSTILE_BYTES: u64 = 1 << 30;

/// What the server may hold at its peak, all of it: far under any one of the files.
const PEAK_BOUND_KB: u64 = 150 * 1024;

fn plant(path: &std::path::Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(path).unwrap();
    file.set_len(HOSTILE_BYTES).unwrap();
}

#[tokio::test]
async fn files_of_a_gigabyte_in_the_workspace_are_refused_or_cut_and_cost_no_memory() {
    let server = MockModelServer::start(vec![MockResponse::text("Done.")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    for name in [
        ".coder/config.json",
        ".mcp.json",
        "AGENTS.md",
        ".coder/rules/big.md",
        "instructions.md",
    ] {
        plant(&ws.join(name));
    }
    let mut client = Client::start(ws, &server, "balanced");
    let pid = client.child.id().unwrap();
    // Coder's configuration and a trusted `.mcp.json` are refused by their size, as broken
    // ones are: `initialize` says so, and succeeds once the file is gone.
    let trusted = json!({"capabilities": {}, "initializationOptions": {"trustWorkspace": true}});
    for name in [".coder/config.json", ".mcp.json"] {
        let refused = client.initialize_with(trusted.clone()).await;
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("{name}: it is larger than 4 MiB")),
            "{refused}"
        );
        std::fs::remove_file(ws.join(name)).unwrap();
    }
    let init = client.initialize_with(trusted).await;
    assert!(init["result"].is_object(), "{init}");
    let root = client.root().await;
    let mut seen = Vec::new();
    let created = client
        .request(
            "conversation/create",
            json!({"baseInstructionsFile": "instructions.md"}),
            &mut seen,
        )
        .await;
    let refused = created["error"]["message"].as_str().unwrap_or_default();
    assert!(
        refused.contains("instructions.md: it is larger than 1 MiB"),
        "{created}"
    );
    client.send_text(&root, "Hello", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let warnings: Vec<&str> = events(&seen)
        .filter(|event| event["type"] == "warning")
        .filter_map(|event| event["message"].as_str())
        .collect();
    let said = |needle: &str| warnings.iter().any(|warning| warning.contains(needle));
    assert!(
        said("big.md cut to 32768 of its 1073741824 bytes"),
        "{warnings:#?}"
    );
    assert!(
        said("AGENTS.md cut to 32768 of its 1073741824 bytes"),
        "{warnings:#?}"
    );
    let peak = status_kb(pid, "VmHWM:");
    assert!(
        peak < PEAK_BOUND_KB,
        "coder lsp's resident memory peaked at {peak} kB"
    );
    client.stop().await;
}
