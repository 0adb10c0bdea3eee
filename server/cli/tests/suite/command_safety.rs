//! What a command may do without asking, seen through the real `coder` binary: commands that
//! look read-only but run programs or write, reads outside the workspace, and "allow always"
//! stretched over a compound command.

use std::path::Path;

use coder_testkit::{MockModelServer, MockResponse};
use serde_json::{Value, json};

use super::exec::{as_refs, coder, openai_env, text};
use super::lsp::{Client, event_types};

const OUTSIDE_SECRET: &str = "TOP-SECRET-OUTSIDE-42";

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({ "command": command }))
}

fn executable(path: &Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every request body the model received, as one string.
fn everything_sent(server: &MockModelServer) -> String {
    server
        .requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect()
}

/// `coder exec` in the default mode, with no terminal and no auto-approval: a command the
/// policy asks about is denied, so whatever it would have done must not have happened.
#[tokio::test]
async fn commands_that_run_programs_write_or_read_outside_are_not_run_without_asking() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let secret = outside.path().join("id_rsa");
    std::fs::write(&secret, format!("{OUTSIDE_SECRET}\n")).unwrap();
    let numbers: String = (1..=300).map(|n| format!("{n}\n")).collect();
    std::fs::write(ws.join("in.txt"), numbers).unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\n").unwrap();
    executable(
        &ws.join("compress.sh"),
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran-compress\"\nexec cat\n",
    );
    // A bare repository shipped in the workspace whose config runs a program on `git status`.
    let evil = ws.join("evil.git");
    for dir in ["objects", "refs/heads"] {
        std::fs::create_dir_all(evil.join(dir)).unwrap();
    }
    std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    executable(
        &ws.join("fsmonitor.sh"),
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran-fsmonitor\"\n",
    );
    std::fs::write(
        evil.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = {}\n",
            ws.join("fsmonitor.sh").display()
        ),
    )
    .unwrap();

    let commands = [
        "sort -S 1K --compress-prog=./compress.sh in.txt | tail -n 1",
        "sed --i 's/alpha/beta/' notes.txt",
        "sort --out=sorted.txt notes.txt",
        "git --git-dir=evil.git status",
        &format!("cat {}", secret.display()),
        &format!("cd {} && head -n 1 id_rsa", outside.path().display()),
        "head -c 4000 /proc/self/environ",
        // A group's redirection belongs to none of its read-only commands.
        &format!("{{ cat; }} < {}", secret.display()),
    ];
    let mut script: Vec<MockResponse> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| bash(&format!("c{index}"), command))
        .collect();
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let env = openai_env(&server);
    let out = coder(ws, &["look around"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    assert!(
        !ws.join("ran-compress").exists(),
        "sort ran its compress program"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "alpha\n",
        "sed --i edited the file"
    );
    assert!(!ws.join("sorted.txt").exists(), "sort --out wrote a file");
    assert!(!ws.join("ran-fsmonitor").exists(), "git ran core.fsmonitor");
    let sent = everything_sent(&server);
    assert!(!sent.contains(OUTSIDE_SECRET), "a file outside was read");
    assert!(!sent.contains("sk-test-secret"), "the environment was read");
    assert_eq!(
        stderr.matches("permission needed: ").count(),
        commands.len(),
        "{stderr}"
    );
}

/// Bash evaluates the words of `-eq`, `-v`, `printf -v`, `$(( ))` and the like as arithmetic,
/// where an array subscript in a quoted word runs its `$(...)`: such lines are asked about
/// (and denied without a terminal), so the file outside never reaches the model, while an
/// ordinary test with literal numbers runs unasked.
#[tokio::test]
async fn arithmetic_subscripts_that_run_commands_are_asked_about() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let secret = outside.path().join("id_rsa");
    std::fs::write(&secret, format!("{OUTSIDE_SECRET}\n")).unwrap();
    let leak = format!("x[$(cat {} >&2)]", secret.display());
    // A shipped file whose content is evaluated when its number is compared.
    std::fs::write(ws.join("count.txt"), format!("{leak}\n")).unwrap();
    let hostile = [
        format!("[[ '{leak}' -eq 0 ]]"),
        format!("[[ -v '{leak}' ]]"),
        format!("test -v '{leak}'"),
        format!("[ -v '{leak}' ]"),
        format!("printf -v '{leak}' %s y"),
        format!("echo $(( '{leak}' ))"),
        format!("echo $[ '{leak}' ]"),
        format!("ls && [[ 1 -lt '{leak}' ]]"),
        format!("true '{leak}'; [[ _ -eq 0 ]]"),
        "[[ $(cat count.txt) -gt 3 ]]".to_owned(),
    ];
    let mut script: Vec<MockResponse> = hostile
        .iter()
        .enumerate()
        .map(|(index, command)| bash(&format!("c{index}"), command))
        .collect();
    script.push(bash("ordinary", "[[ 2 -gt 1 ]] && echo ORDINARY-RAN"));
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let env = openai_env(&server);
    let out = coder(ws, &["compare numbers"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    let sent = everything_sent(&server);
    assert!(
        !sent.contains(OUTSIDE_SECRET),
        "a file outside was read: {stderr}"
    );
    assert!(
        sent.contains("ORDINARY-RAN"),
        "the ordinary test was not run"
    );
    assert_eq!(
        stderr.matches("permission needed: ").count(),
        hostile.len(),
        "{stderr}"
    );
}

/// `coder lsp`: after the editor answers "allow always" to `cargo test`, a later
/// `cargo test && touch marker` asks again, while `cargo test` piped into `tail` does not.
#[tokio::test]
async fn allow_always_covers_each_simple_command_not_whatever_follows_it() {
    let server = MockModelServer::start(vec![
        bash("a", "cargo test"),
        MockResponse::text("ran"),
        bash("b", "cargo test 2>&1 | tail -n 3"),
        bash("c", "cargo test && touch marker"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, conversation) = Client::ready(workspace.path(), &server, "balanced").await;

    let mut seen = Vec::new();
    client.send_text(&conversation, "test", &mut seen).await;
    let ask = next_request_or_completion(&mut client, &mut seen).await;
    let ask = ask.expect("the first cargo test must be asked about");
    assert_eq!(ask["params"]["arguments"]["command"], "cargo test");
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow_always"}}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;

    seen.clear();
    client.send_text(&conversation, "again", &mut seen).await;
    let ask = next_request_or_completion(&mut client, &mut seen).await;
    let ask = ask.expect("`cargo test && touch marker` ran without asking");
    assert_eq!(
        ask["params"]["arguments"]["command"],
        "cargo test && touch marker"
    );
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "deny"}}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(!workspace.path().join("marker").exists());
    // The piped `cargo test` ran on the remembered answer: it started without a request.
    let started: Vec<&Value> = super::lsp::events(&seen)
        .filter(|event| event["type"] == "tool_call_started")
        .collect();
    assert_eq!(started.len(), 1, "{:?}", event_types(&seen));
    assert_eq!(started[0]["callId"], "b");
    client.stop().await;
}

/// Reads until a `permission/request` (returned) or the end of the task (`None`). A request
/// may already be in `seen`: it can arrive before the answer to the `conversation/send`
/// that caused it, while that answer is being read.
async fn next_request_or_completion(client: &mut Client, seen: &mut Vec<Value>) -> Option<Value> {
    if let Some(at) = seen
        .iter()
        .position(|message| message["method"] == "permission/request")
    {
        return Some(seen.remove(at));
    }
    loop {
        let message = client.read().await;
        if message["method"] == "permission/request" {
            return Some(message);
        }
        let done = message["params"]["event"]["type"] == "task_complete";
        seen.push(message);
        if done {
            return None;
        }
    }
}

/// `coder exec --mode yolo --auto-approve`: commands that would plant a git hook, an MCP
/// server or coder configuration are approved without a person only because they run
/// confined, where those files cannot change; an ordinary write runs as ever.
#[tokio::test]
async fn yolo_with_auto_approval_runs_protected_file_commands_only_confined() {
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    let commands = [
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit",
        "echo '{\"mcpServers\":{}}' | tee .mcp.json",
        "mkdir -p .coder && cp /dev/null .coder/config.json",
        "cd .git && echo '[core]' >> config",
        "echo ordinary > ordinary.txt",
    ];
    let mut script: Vec<MockResponse> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| bash(&format!("c{index}"), command))
        .collect();
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let env = openai_env(&server);
    let out = coder(
        ws,
        &["--mode", "yolo", "--auto-approve", "set things up"],
        &as_refs(&env),
    )
    .await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "{stderr}");
    assert!(!ws.join(".mcp.json").exists(), "{stderr}");
    assert!(!ws.join(".coder/config.json").exists(), "{stderr}");
    assert!(!ws.join(".git/config").exists(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.join("ordinary.txt")).unwrap(),
        "ordinary\n"
    );
    // The last request holds the whole history: every command ran, none was refused
    // before it ran (only the re-runs outside the sandbox were).
    let last = server.requests().last().unwrap().body.to_string();
    assert_eq!(last.matches("Exit code: ").count(), 5, "{last}");
    assert!(!last.contains("protected files"), "{last}");
}

/// Runs `git` in `dir` for a test's setup.
fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// `coder exec` in the default mode with `$HOME/.ssh/id_rsa` outside the workspace and a
/// link `sshlink -> $HOME/.ssh` shipped in it: commands that look read-only but read the key
/// (brace expansions, a glob through the link, searches that follow links, sed's `r`, a
/// list of names, an option value) are asked about, so denied; `file -C` does not write.
#[tokio::test]
async fn reads_outside_through_braces_globs_links_and_option_values_are_asked() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let home_dir = home.path().canonicalize().unwrap();
    let key = home_dir.join(".ssh/id_rsa");
    std::fs::create_dir(home_dir.join(".ssh")).unwrap();
    std::fs::write(&key, format!("PRIVATE {OUTSIDE_SECRET}\n")).unwrap();
    std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.join("magic"), "0\tstring\tHELLO\thello file\n").unwrap();
    std::os::unix::fs::symlink(home_dir.join(".ssh"), ws.join("sshlink")).unwrap();
    std::fs::write(ws.join("names0"), format!("{}\0", key.display())).unwrap();
    git(ws, &["init", "-q"]);
    git(ws, &["add", "a.txt"]);
    git(ws, &["commit", "-qm", "a"]);

    let commands = [
        "cat {$HOME/.ssh/id_rsa,a.txt}".to_owned(),
        "head -1 {~/.ssh/id_rsa,a.txt}".to_owned(),
        "cat ssh*/id_rsa".to_owned(),
        "grep -R PRIVATE .".to_owned(),
        "grep -r --dereference-recursive PRIVATE .".to_owned(),
        "rg -L PRIVATE".to_owned(),
        "find -L . -name id_rsa -newer a.txt".to_owned(),
        format!("sed 'r {}' a.txt", key.display()),
        "sort --files0-from=names0".to_owned(),
        format!("git blame --ignore-revs-file={} a.txt", key.display()),
        "file -C -m magic".to_owned(),
    ];
    let mut script: Vec<MockResponse> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| bash(&format!("c{index}"), command))
        .collect();
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let mut env = openai_env(&server);
    env.push(("HOME", home_dir.display().to_string()));
    let out = coder(ws, &["look around"], &as_refs(&env)).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    let sent = everything_sent(&server);
    assert!(
        !sent.contains(OUTSIDE_SECRET),
        "the key outside was read: {stderr}"
    );
    assert!(!ws.join("magic.mgc").exists(), "file -C wrote magic.mgc");
    assert_eq!(
        stderr.matches("permission needed: ").count(),
        commands.len(),
        "{stderr}"
    );
}

/// A repository shipped with the workspace whose `.git/config` names programs: `git status`
/// would run its `core.fsmonitor`, `git log -p` its `textconv` driver (selected by a
/// committed `.gitattributes`), and an installed `post-index-change` hook runs when `git
/// status` refreshes the index. None of them runs without asking.
#[tokio::test]
async fn read_only_git_commands_ask_when_the_shipped_repository_runs_programs() {
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.join(".gitattributes"), "*.txt diff=evil\n").unwrap();
    git(ws, &["init", "-q"]);
    git(ws, &["add", "a.txt", ".gitattributes"]);
    git(ws, &["commit", "-qm", "a"]);
    executable(
        &ws.join("ran.sh"),
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran-$(basename \"$0\")\"\ncat \"$1\" 2>/dev/null\n",
    );
    for name in ["fsmonitor", "textconv"] {
        std::fs::copy(ws.join("ran.sh"), ws.join(name)).unwrap();
    }
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    std::fs::write(
        ws.join(".git/config"),
        format!(
            "{config}[core]\n\tfsmonitor = {}\n[diff \"evil\"]\n\ttextconv = {}\n",
            ws.join("fsmonitor").display(),
            ws.join("textconv").display()
        ),
    )
    .unwrap();

    let commands = ["git status --short", "git log -p -1"];
    let mut script: Vec<MockResponse> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| bash(&format!("c{index}"), command))
        .collect();
    script.push(MockResponse::text("done"));
    let server = MockModelServer::start(script).await.unwrap();
    let out = coder(ws, &["look around"], &as_refs(&openai_env(&server))).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !ws.join("ran-fsmonitor").exists(),
        "git status ran core.fsmonitor"
    );
    assert!(
        !ws.join("ran-textconv").exists(),
        "git log -p ran the textconv driver"
    );
    assert_eq!(stderr.matches("permission needed: ").count(), 2, "{stderr}");

    // The hook alone is enough: with a clean configuration, `git status` asks too.
    std::fs::write(ws.join(".git/config"), config).unwrap();
    executable(
        &ws.join(".git/hooks/post-index-change"),
        &format!("#!/bin/sh\ntouch {}\n", ws.join("ran-hook").display()),
    );
    std::fs::write(ws.join("a.txt"), "changed\n").unwrap();
    let server = MockModelServer::start(vec![
        bash("c0", "git status --short"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let out = coder(ws, &["look around"], &as_refs(&openai_env(&server))).await;
    let stderr = text(&out.stderr);
    assert!(
        !ws.join("ran-hook").exists(),
        "git status ran the post-index-change hook"
    );
    assert_eq!(stderr.matches("permission needed: ").count(), 1, "{stderr}");

    // So is a repository nested in the workspace and recorded as a submodule: `git status`
    // looks into it, running its own `core.fsmonitor`.
    std::fs::remove_file(ws.join(".git/hooks/post-index-change")).unwrap();
    let sub = ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("f"), "x\n").unwrap();
    git(&sub, &["init", "-q"]);
    git(&sub, &["add", "f"]);
    git(&sub, &["commit", "-qm", "f"]);
    git(ws, &["add", "sub"]);
    let monitor = ws.join("fsmonitor").display().to_string();
    git(&sub, &["config", "core.fsmonitor", &monitor]);
    std::fs::write(sub.join("f"), "changed\n").unwrap();
    let server = MockModelServer::start(vec![
        bash("c0", "git status --short"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let out = coder(ws, &["look around"], &as_refs(&openai_env(&server))).await;
    let stderr = text(&out.stderr);
    assert!(
        !ws.join("ran-fsmonitor").exists(),
        "git status ran the submodule's fsmonitor"
    );
    assert_eq!(stderr.matches("permission needed: ").count(), 1, "{stderr}");
}

/// `coder lsp`: "allow always" on `python3 -c 'print(1+1)'` and `rm a.txt` does not allow
/// another script or another `rm`; the request says what "allow always" would allow.
#[tokio::test]
async fn allow_always_remembers_the_exact_command_for_programs_without_subcommands() {
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    std::fs::write(ws.join("README.md"), "keep\n").unwrap();
    let server = MockModelServer::start(vec![
        bash("a", "python3 -c 'print(1+1)'"),
        bash("b", "rm a.txt"),
        MockResponse::text("ran"),
        bash("c", "python3 -c 'open(\"marker\", \"w\")'"),
        bash("d", "rm -v README.md"),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut client = Client::start(ws, &server, "balanced");
    client.initialize(json!({})).await;
    let conversation = client.root().await;

    let mut seen = Vec::new();
    client.send_text(&conversation, "work", &mut seen).await;
    for wanted in ["python3 -c 'print(1+1)'", "rm a.txt"] {
        let ask = next_request_or_completion(&mut client, &mut seen).await;
        let ask = ask.unwrap_or_else(|| panic!("`{wanted}` ran without asking"));
        assert_eq!(ask["params"]["arguments"]["command"], wanted);
        assert_eq!(ask["params"]["title"], format!("Run `{wanted}`"));
        let reason = ask["params"]["reason"].as_str().unwrap();
        assert!(reason.contains("balanced preset"), "{reason}");
        let always = ask["params"]["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|option| option["optionId"] == "allow_always")
            .unwrap()
            .clone();
        assert_eq!(always["covers"], format!("`{wanted}` in this project"));
        assert_eq!(always["kind"], "allow_always");
        client
            .write(
                json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"optionId": "allow_always"}}),
            )
            .await;
    }
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(!ws.join("a.txt").exists());

    seen.clear();
    client.send_text(&conversation, "again", &mut seen).await;
    for wanted in ["python3 -c 'open(\"marker\", \"w\")'", "rm -v README.md"] {
        let ask = next_request_or_completion(&mut client, &mut seen).await;
        let ask = ask.unwrap_or_else(|| panic!("`{wanted}` ran without asking"));
        assert_eq!(ask["params"]["arguments"]["command"], wanted);
        client
            .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "deny"}}))
            .await;
    }
    client.until_events("task_complete", 1, &mut seen).await;
    assert!(!ws.join("marker").exists());
    assert!(ws.join("README.md").exists());
    client.stop().await;
}
