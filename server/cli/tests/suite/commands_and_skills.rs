//! Custom slash commands and skills, as `coder exec` users meet them: the mock model's
//! recorded requests show what the model was told.

use std::path::Path;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::exec::{SECRET, as_refs, coder, openai_env, text};

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// `coder exec` in `workspace` with `user` as the user-level folder (`CODER_HOME`).
async fn exec(
    workspace: &Path,
    user: &Path,
    server: &MockModelServer,
    input: &str,
) -> std::process::Output {
    let mut env = openai_env(server);
    env.push(("CODER_HOME", user.display().to_string()));
    coder(workspace, &[input], &as_refs(&env)).await
}

#[tokio::test]
async fn a_custom_command_expands_into_the_prompt_the_model_gets() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![Chunk::text("ok")])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".coder/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file> <focus>\nmodel: review-model\n---\nReview $1, looking for $2.\nAll: $ARGUMENTS\n",
    );
    // The workspace's command wins over the person's of the same name.
    write(&user.path().join("commands/review.md"), "User review $1\n");
    let out = exec(
        dir.path(),
        user.path(),
        &server,
        "/review src/a.rs \"memory leaks\"",
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = &server.requests()[0].body;
    assert_eq!(
        sent["messages"][1]["content"],
        "Review src/a.rs, looking for memory leaks.\nAll: src/a.rs \"memory leaks\"\n"
    );
    assert_eq!(sent["model"], "review-model");
}

#[tokio::test]
async fn a_users_command_applies_in_every_workspace() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![Chunk::text("ok")])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    write(
        &user.path().join("commands/greet.md"),
        "Say hello to the team.\n",
    );
    let out = exec(dir.path(), user.path(), &server, "/greet  warmly").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = &server.requests()[0].body;
    assert_eq!(
        sent["messages"][1]["content"],
        "Say hello to the team.\n\nARGUMENTS: warmly"
    );
    assert_eq!(sent["model"], "mock-model");
}

#[tokio::test]
async fn an_unknown_slash_command_is_refused_before_the_model() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    write(&dir.path().join(".coder/commands/review.md"), "Review.\n");
    let out = exec(dir.path(), user.path(), &server, "/nosuch thing").await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unknown command /nosuch; known commands: /help, /model,")
            && stderr.contains(", /review"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
    assert!(!stderr.contains(SECRET));
}

/// A built-in command given to `coder exec` runs as at the terminal's prompt: its answer
/// is the output, and no model is asked.
#[tokio::test]
async fn a_built_in_command_runs_in_coder_exec_without_a_model_call() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let out = exec(dir.path(), user.path(), &server, "/tools").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("bash") && stdout.contains("apply_patch"),
        "{stdout}"
    );
    let mut env = openai_env(&server);
    env.push(("CODER_HOME", user.path().display().to_string()));
    let json = coder(dir.path(), &["--json", "/help"], &as_refs(&env)).await;
    assert!(json.status.success(), "{}", text(&json.stderr));
    let line: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(line["type"], "command_result");
    assert!(line["text"].as_str().unwrap().contains("/undo"), "{line}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_path_is_not_a_slash_command() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![Chunk::text("ok")])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let out = exec(dir.path(), user.path(), &server, "/usr/bin/env is what?").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "/usr/bin/env is what?"
    );
}

#[tokio::test]
async fn the_model_sees_the_skills_and_loads_one_on_demand() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("c1", "skill", json!({"name": "pdf-forms"})),
        MockResponse::tool_call(
            "c2",
            "skill",
            json!({"name": "pdf-forms", "file": "reference/fields.md"}),
        ),
        MockResponse::tool_call("c3", "skill", json!({"name": "broken"})),
        MockResponse::stream(vec![Chunk::text("done")]),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".coder/skills/pdf/SKILL.md"),
        "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\n# Filling forms\nUse the fields reference.\n",
    );
    write(
        &dir.path().join(".coder/skills/pdf/reference/fields.md"),
        "Field list\n",
    );
    write(
        &user.path().join("skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: >\n  Write release\n  notes.\n---\nBody\n",
    );
    // No name: not offered, and a warning names the file.
    write(
        &dir.path().join(".coder/skills/broken/SKILL.md"),
        "---\ndescription: lacks a name\n---\nBody\n",
    );
    let out = exec(dir.path(), user.path(), &server, "fill the form").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let broken = dir.path().join(".coder/skills/broken/SKILL.md");
    assert!(
        stderr.contains(&format!(
            "warning: skill {} is not offered: the frontmatter has no `name`",
            broken.display()
        )),
        "{stderr}"
    );
    let requests = server.requests();
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- notes: Write release notes.\n- pdf-forms: Fill in PDF forms.\n"),
        "{system}"
    );
    assert!(!system.contains("lacks a name"), "{system}");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"skill"), "{tools:?}");
    let result = |i: usize| {
        let messages = requests[i].body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let loaded = result(1);
    let skill_md = dir.path().join(".coder/skills/pdf/SKILL.md");
    assert!(
        loaded.starts_with(&format!(
            "Skill pdf-forms ({})\n\n# Filling forms\nUse the fields reference.\n",
            skill_md.display()
        )),
        "{loaded}"
    );
    assert!(loaded.ends_with("\n- reference/fields.md\n"), "{loaded}");
    assert_eq!(result(2), "Field list\n");
    let unknown = result(3);
    assert!(
        unknown.contains("no skill named broken; the skills are: notes, pdf-forms."),
        "{unknown}"
    );
    assert!(
        unknown.contains("the frontmatter has no `name`"),
        "{unknown}"
    );
    assert_eq!(text(&out.stdout), "done\n");
}

#[tokio::test]
async fn a_repository_cannot_link_a_command_or_skill_to_the_persons_files() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![Chunk::text("ok")])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("credentials");
    std::fs::write(&secret, format!("[default]\nkey = {SECRET}\n")).unwrap();
    std::fs::create_dir_all(dir.path().join(".coder/commands")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join(".coder/commands/review.md")).unwrap();
    std::fs::create_dir_all(dir.path().join(".coder/skills/deploy")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join(".coder/skills/deploy/SKILL.md")).unwrap();
    let out = exec(dir.path(), user.path(), &server, "/review now").await;
    // The linked command is not usable: the person is told, the model gets nothing.
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(server.requests().is_empty());
    assert!(!text(&out.stderr).contains(SECRET));

    let out = exec(dir.path(), user.path(), &server, "hello").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("skill") && stderr.contains("SKILL.md"),
        "{stderr}"
    );
    let sent = server.requests()[0].body.to_string();
    assert!(!sent.contains(SECRET) && !sent.contains("deploy"), "{sent}");
}

#[tokio::test]
async fn a_command_that_would_expand_past_the_prompt_limit_is_refused_before_it_is_built() {
    let server = MockModelServer::start(vec![MockResponse::stream(vec![Chunk::text("ok")])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".coder/commands/boom.md"),
        &"$ARGUMENTS".repeat(20_000),
    );
    let args = "x".repeat(1_000);
    let out = exec(dir.path(), user.path(), &server, &format!("/boom {args}")).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("/boom expands to a prompt over the limit"),
        "{}",
        text(&out.stderr)
    );
    assert!(server.requests().is_empty());
}

/// `/status` is a built-in command every door runs: in `coder exec` it says where the
/// session stands without asking the model.
#[tokio::test]
async fn status_in_coder_exec_says_where_the_session_stands() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let out = exec(dir.path(), user.path(), &server, "/status").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let workspace = dir.path().canonicalize().unwrap();
    let port = server.openai_base_url();
    let host = port
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default();
    let starts = [
        format!("model: mock-model (OpenAI API at {host})"),
        "mode: ".to_owned(),
        "permissions: ".to_owned(),
        "context: 0 of ".to_owned(),
        "session: ".to_owned(),
        format!("workspace: {} (not trusted", workspace.display()),
        "sandbox: ".to_owned(),
        "MCP servers: none".to_owned(),
        "saved in: ".to_owned(),
    ];
    assert_eq!(lines.len(), starts.len(), "{stdout}");
    for (line, start) in lines.iter().zip(&starts) {
        assert!(
            line.starts_with(start.as_str()),
            "{line:?} ≠ {start:?}…\n{stdout}"
        );
    }
    assert!(server.requests().is_empty());
}
