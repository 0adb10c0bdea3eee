//! Starting as an editor starts the server: before anything is configured, with the model
//! settings in `initializationOptions`, and in the workspace the client names.

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::Client;

/// Writes `.coder/config.json` in `dir`.
fn configure(dir: &std::path::Path, config: Value) {
    std::fs::create_dir_all(dir.join(".coder")).unwrap();
    std::fs::write(dir.join(".coder/config.json"), config.to_string()).unwrap();
}

fn file_uri(path: &std::path::Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

#[tokio::test]
async fn without_a_provider_the_server_starts_and_send_says_what_to_set() {
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::spawn(workspace.path(), &[]);
    let init = client.initialize(json!({})).await;
    assert!(init["result"]["capabilities"].is_object(), "{init}");
    let root = client.root().await;
    let mut seen = Vec::new();
    let sent = client
        .request(
            "conversation/send",
            json!({"conversationId": root, "text": "hi"}),
            &mut seen,
        )
        .await;
    assert_eq!(sent["error"]["code"], -32001, "{sent}");
    let message = sent["error"]["message"].as_str().unwrap();
    for what in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "\"provider\" in .coder/config.json",
        "initializationOptions.provider/model/baseUrl/apiKey",
    ] {
        assert!(message.contains(what), "{what} missing from: {message}");
    }
    // The session goes on: a second send fails the same way, the list still answers.
    let again = client
        .request(
            "conversation/send",
            json!({"conversationId": root, "text": "hi"}),
            &mut seen,
        )
        .await;
    assert_eq!(again["error"]["code"], -32001, "{again}");
    assert!(seen.is_empty(), "no task ran: {seen:?}");
    client.stop().await;
}

#[tokio::test]
async fn initialization_options_carry_the_model_settings_over_files_and_environment() {
    let server = MockModelServer::start(vec![MockResponse::text("configured by the editor")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    configure(
        workspace.path(),
        json!({"provider": "anthropic", "model": "file-model"}),
    );
    let mut client = Client::spawn(
        workspace.path(),
        &[
            ("ANTHROPIC_API_KEY", "env-key"),
            ("CODER_MODEL", "env-model"),
        ],
    );
    let init = client
        .initialize_with(json!({"capabilities": {}, "initializationOptions": {
            "provider": "openai",
            "model": "editor-model",
            "baseUrl": server.openai_base_url(),
            "apiKey": "editor-key",
        }}))
        .await;
    assert!(init["result"].is_object(), "{init}");
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["model"], "editor-model");
    assert_eq!(requests[0].headers["authorization"], "Bearer editor-key");
    client.stop().await;
}

#[tokio::test]
async fn a_base_url_that_is_not_http_fails_initialize_at_once_and_a_retry_may_fix_it() {
    let server = MockModelServer::start(vec![MockResponse::text("fixed")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::spawn(workspace.path(), &[]);
    let bad = client
        .initialize_with(json!({"capabilities": {},
            "initializationOptions": {"baseUrl": "127.0.0.1:9/v1"}}))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(
        bad["error"]["message"],
        "the base URL `127.0.0.1:9/v1` (from initializationOptions.baseUrl) must start with http:// or https://"
    );
    // A URL the HTTP client cannot parse is refused the same way, not retried per task.
    let unparsable = client
        .initialize_with(json!({"capabilities": {},
            "initializationOptions": {"baseUrl": "http://exa mple.com/v1"}}))
        .await;
    assert_eq!(unparsable["error"]["code"], -32602, "{unparsable}");
    assert_eq!(
        unparsable["error"]["message"],
        "the base URL `http://exa mple.com/v1` (from initializationOptions.baseUrl) is not a valid URL: invalid international domain name"
    );
    let good = client
        .initialize_with(json!({"capabilities": {},
            "initializationOptions": {"baseUrl": server.openai_base_url()}}))
        .await;
    assert!(good["result"].is_object(), "{good}");
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;

    // From the environment: the message names the variable.
    let mut client = Client::spawn(workspace.path(), &[("OPENAI_BASE_URL", "localhost:8080")]);
    let bad = client.initialize(json!({})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("(from OPENAI_BASE_URL)"),
        "{bad}"
    );
}

#[tokio::test]
async fn the_workspace_is_the_clients_root_else_the_enclosing_git_root() {
    let server = MockModelServer::start(vec![MockResponse::text("a"), MockResponse::text("b")])
        .await
        .unwrap();
    let base_url = server.openai_base_url();
    let env = [("OPENAI_BASE_URL", base_url.as_str())];
    // The server starts in `elsewhere`; the client names `project`.
    let elsewhere = tempfile::tempdir().unwrap();
    configure(elsewhere.path(), json!({"model": "model-of-elsewhere"}));
    let project = tempfile::tempdir().unwrap();
    configure(project.path(), json!({"model": "model-of-project"}));
    let mut client = Client::spawn(elsewhere.path(), &env);
    let init = client
        .initialize_with(json!({"capabilities": {}, "rootUri": file_uri(project.path())}))
        .await;
    assert!(init["result"].is_object(), "{init}");
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
    assert_eq!(server.requests()[0].body["model"], "model-of-project");
    assert!(project.path().join(".coder/sessions").is_dir());
    assert!(!elsewhere.path().join(".coder/sessions").exists());

    // No root from the client: the git root enclosing the server's directory.
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    configure(repo.path(), json!({"model": "model-of-the-repo"}));
    let sub = repo.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let mut client = Client::spawn(&sub, &env);
    client.initialize(json!({})).await;
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
    let requests = server.requests();
    assert_eq!(requests[1].body["model"], "model-of-the-repo");
    // As for `coder exec`, the start directory is named to the model.
    let system = requests[1].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("started coder in src/deep"), "{system}");
}

/// A folder the client names is the workspace as given, even inside a repository; one
/// that does not exist fails `initialize` with a message naming it.
#[tokio::test]
async fn a_named_folder_inside_a_repository_is_the_workspace_as_given() {
    let server = MockModelServer::start(vec![MockResponse::text("a")])
        .await
        .unwrap();
    let base_url = server.openai_base_url();
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    configure(repo.path(), json!({"model": "model-of-the-repo"}));
    let package = repo.path().join("packages/app");
    configure(&package, json!({"model": "model-of-the-package"}));
    let mut client = Client::spawn(repo.path(), &[("OPENAI_BASE_URL", &base_url)]);
    let missing = format!("{}/missing", file_uri(repo.path()));
    let bad = client
        .initialize_with(json!({"capabilities": {}, "rootUri": missing}))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(
        bad["error"]["message"],
        format!(
            "cannot open the folder {}/missing: No such file or directory (os error 2)",
            repo.path().canonicalize().unwrap().display()
        )
    );
    let init = client
        .initialize_with(json!({"capabilities": {}, "rootUri": file_uri(&package)}))
        .await;
    assert!(init["result"].is_object(), "{init}");
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "model-of-the-package");
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("started coder in"), "{system}");
    assert!(package.join(".coder/sessions").is_dir());
    assert!(!repo.path().join(".coder/sessions").exists());
}

#[tokio::test]
async fn the_first_workspace_folder_names_the_workspace_without_a_root_uri() {
    let server = MockModelServer::start(vec![MockResponse::text("a")])
        .await
        .unwrap();
    let base_url = server.openai_base_url();
    let elsewhere = tempfile::tempdir().unwrap();
    let first = tempfile::tempdir().unwrap();
    configure(first.path(), json!({"model": "model-of-the-first-folder"}));
    let second = tempfile::tempdir().unwrap();
    let mut client = Client::spawn(elsewhere.path(), &[("OPENAI_BASE_URL", &base_url)]);
    let init = client
        .initialize_with(json!({"capabilities": {}, "workspaceFolders": [
            {"uri": file_uri(first.path()), "name": "first"},
            {"uri": file_uri(second.path()), "name": "second"},
        ]}))
        .await;
    assert!(init["result"].is_object(), "{init}");
    let root = client.root().await;
    let mut seen = Vec::new();
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
    assert_eq!(
        server.requests()[0].body["model"],
        "model-of-the-first-folder"
    );
}
