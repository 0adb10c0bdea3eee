//! Rules files in the system prompt, through `coder exec`: the user-level file, the
//! workspace's `.coder/rules/`, then `AGENTS.md`/`CLAUDE.md` from the root down to the start
//! directory; the size caps; a link out of the workspace.

use std::path::Path;

use coder_testkit::{MockModelServer, MockResponse};

use super::exec::{as_refs, coder, git, openai_env, text};

/// Runs one `coder exec` in `start` and returns the system prompt it sent and its stderr.
async fn system_prompt_from(start: &Path) -> (String, String) {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let out = coder(start, &["hi"], &as_refs(&openai_env(&server))).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    (system, text(&out.stderr))
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

#[tokio::test]
async fn rules_run_from_the_user_file_to_the_start_directory_each_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let start = repo.join("crates/app");
    std::fs::create_dir_all(&start).unwrap();
    git(&repo, &["init", "-q"]);
    // `coder` runs in `start` with HOME at `start/.home`.
    write(
        &start.join(".home/.config/coder/AGENTS.md"),
        "USER rule: answer briefly.",
    );
    write(&repo.join(".coder/rules/b-style.md"), "B rule.");
    write(&repo.join(".coder/rules/a-tests.md"), "A rule.");
    write(&repo.join(".coder/rules/notes.txt"), "not a rule");
    write(&repo.join("AGENTS.md"), "ROOT agents.");
    write(&repo.join("CLAUDE.md"), "ROOT claude.");
    write(&repo.join("crates/AGENTS.md"), "CRATES agents.");
    write(&start.join("CLAUDE.md"), "APP claude.");
    write(&repo.join("other/AGENTS.md"), "OTHER, not on the way down.");
    let (system, stderr) = system_prompt_from(&start).await;
    let root = repo.canonicalize().unwrap();
    let order = [
        "USER rule: answer briefly.".to_owned(),
        format!(
            "## {}\nA rule.",
            root.join(".coder/rules/a-tests.md").display()
        ),
        format!(
            "## {}\nB rule.",
            root.join(".coder/rules/b-style.md").display()
        ),
        format!("## {}\nROOT agents.", root.join("AGENTS.md").display()),
        format!("## {}\nROOT claude.", root.join("CLAUDE.md").display()),
        format!(
            "## {}\nCRATES agents.",
            root.join("crates/AGENTS.md").display()
        ),
        format!(
            "## {}\nAPP claude.",
            root.join("crates/app/CLAUDE.md").display()
        ),
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|part| {
            system
                .find(part.as_str())
                .unwrap_or_else(|| panic!("{part:?} missing from {system}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{system}");
    assert!(system.contains("\n# Rules\n"), "{system}");
    assert!(!system.contains("OTHER") && !system.contains("not a rule"));
    assert!(!stderr.contains("rules"), "{stderr}");
}

#[tokio::test]
async fn a_long_rules_file_is_cut_and_the_total_is_capped_with_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let long = format!("{}TAIL-NOT-SENT", "x".repeat(40 * 1024));
    write(&ws.join(".coder/rules/1.md"), &long);
    write(&ws.join(".coder/rules/2.md"), &"y".repeat(40 * 1024));
    write(&ws.join("AGENTS.md"), "LEFT OUT: over the total.");
    let (system, stderr) = system_prompt_from(ws).await;
    assert!(!system.contains("TAIL-NOT-SENT"));
    assert!(system.contains(&"x".repeat(32 * 1024)));
    assert!(system.contains("[cut here: the file is longer than the rules size limit]"));
    assert!(!system.contains("LEFT OUT"), "the 64 KiB total is reached");
    assert!(
        stderr.contains("1.md cut to 32768 of its 40973 bytes"),
        "{stderr}"
    );
    assert!(stderr.contains("2.md cut to"), "{stderr}");
    assert!(
        stderr.contains("AGENTS.md left out: the rules files together exceed 64 KiB"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_rules_file_linking_out_of_the_workspace_is_refused_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    write(
        &dir.path().join("secret.md"),
        "SECRET outside the workspace",
    );
    std::os::unix::fs::symlink(dir.path().join("secret.md"), ws.join("AGENTS.md")).unwrap();
    write(&ws.join("CLAUDE.md"), "Still read.");
    let (system, stderr) = system_prompt_from(&ws).await;
    assert!(!system.contains("SECRET"), "{system}");
    assert!(system.contains("Still read."), "{system}");
    assert!(stderr.contains("AGENTS.md not read"), "{stderr}");
}
