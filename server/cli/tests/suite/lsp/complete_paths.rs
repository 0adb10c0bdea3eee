//! `workspace/completePaths`: `@` completion through `coder lsp`.

use coder_testkit::MockModelServer;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::Client;

#[tokio::test]
async fn completes_workspace_paths_fuzzily_and_answers_hostile_queries_with_nothing_outside() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    for file in [
        "server/core/src/lib.rs",
        "server/core/src/main.rs",
        "build/out.rs",
    ] {
        std::fs::create_dir_all(ws.join(file).parent().unwrap()).unwrap();
        std::fs::write(ws.join(file), "").unwrap();
    }
    std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    let mut client = Client::start(ws, &server, "balanced");
    let init = client.initialize(json!({})).await;
    let methods = &init["result"]["capabilities"]["experimental"]["coder"]["methods"];
    assert!(
        methods
            .as_array()
            .unwrap()
            .contains(&json!("workspace/completePaths"))
    );
    let mut seen = Vec::new();

    let answer = client
        .request(
            "workspace/completePaths",
            json!({"query": "src/lib", "limit": 1}),
            &mut seen,
        )
        .await;
    assert_eq!(
        answer["result"],
        json!({"matches": [{"path": "server/core/src/lib.rs", "kind": "file",
                            "indices": [12, 13, 14, 15, 16, 17, 18]}]})
    );
    let narrowed = client
        .request(
            "workspace/completePaths",
            json!({"query": "server/core/"}),
            &mut seen,
        )
        .await;
    assert_eq!(
        narrowed["result"],
        json!({"matches": [{"path": "server/core/src/", "kind": "dir", "indices": []}]})
    );
    // The ignored folder is not offered; hostile queries get answers, never errors.
    let long = "../".repeat(400_000);
    for query in ["out.rs", "../../etc/passwd", "/etc/passwd", long.as_str()] {
        let answer = client
            .request(
                "workspace/completePaths",
                json!({"query": query}),
                &mut seen,
            )
            .await;
        assert_eq!(answer["result"], json!({"matches": []}), "{query:.40}");
    }
    // NULs are dropped: an empty query lists the top of the workspace (hidden files left out).
    let top = client
        .request(
            "workspace/completePaths",
            json!({"query": "\u{0}"}),
            &mut seen,
        )
        .await;
    assert_eq!(
        top["result"],
        json!({"matches": [{"path": "server/", "kind": "dir", "indices": []}]})
    );
    client.stop().await;
}
