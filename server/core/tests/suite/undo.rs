//! `/undo` (seed 004 section 4): what the last turn changed is put back, its files' edits,
//! the files it created and what its commands changed, and a checkpoint costs what the turn
//! changed (a turn that only talks runs no git).

use coder_core::ProviderKind;
use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use super::support::{Harness, git, repository_with_tracked_txt, until_idle};

/// The model's call of `bash` with `command`.
fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", serde_json::json!({ "command": command }))
}

/// A session whose tools run without asking (their changes are what `/undo` reverts).
fn yolo(server: &MockModelServer) -> Harness {
    Harness::with(
        server,
        ProviderKind::OpenAi,
        |config| config.preset = coder_protocol::Preset::Yolo,
        Vec::new(),
    )
}

#[tokio::test]
async fn undo_reverts_the_last_turns_edits_creations_and_command_changes() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "w1",
            "write",
            serde_json::json!({"path": "made.txt", "content": "new\n"}),
        ),
        bash(
            "b1",
            "printf changed > tracked.txt && printf also > notes.txt",
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let dir = h.workspace.path().to_path_buf();
    repository_with_tracked_txt(&dir);
    // Untracked, not ignored: recorded too.
    std::fs::write(dir.join("notes.txt"), "my notes").unwrap();
    let index_before = std::fs::read(dir.join(".git/index")).unwrap();

    h.run("change things").await;
    assert_eq!(
        std::fs::read_to_string(dir.join("tracked.txt")).unwrap(),
        "changed"
    );
    assert!(dir.join("made.txt").exists());

    let summary = h.engine.command(h.root, "/diff").unwrap().text;
    assert!(
        summary.contains("tracked.txt") && summary.contains("New files: made.txt"),
        "{summary}"
    );
    let full = h.engine.command(h.root, "/diff full").unwrap().text;
    assert!(
        full.contains("-original") && full.contains("+changed"),
        "{full}"
    );
    // New files are shown whole, as git shows a file once added; the index is untouched.
    assert!(
        full.contains("+++ b/made.txt") && full.contains("+new"),
        "{full}"
    );
    assert!(
        full.contains("+++ b/notes.txt") && full.contains("+also"),
        "{full}"
    );
    assert_eq!(std::fs::read(dir.join(".git/index")).unwrap(), index_before);
    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert!(said.starts_with("undid the last turn"), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.join("tracked.txt")).unwrap(),
        "original"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "my notes"
    );
    assert!(!dir.join("made.txt").exists());
    // The person's index is untouched.
    assert_eq!(std::fs::read(dir.join(".git/index")).unwrap(), index_before);
    let again = h.engine.command(h.root, "/undo").unwrap_err();
    assert!(again.to_string().contains("nothing to undo"), "{again}");
}

/// Every file of `.git/objects` and every ref, to see that checkpoints add none.
fn objects_and_refs(dir: &std::path::Path) -> (Vec<std::path::PathBuf>, String) {
    let mut objects = Vec::new();
    let mut pending = vec![dir.join(".git/objects")];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else {
                objects.push(entry.path());
            }
        }
    }
    objects.sort();
    let refs = std::process::Command::new("git")
        .args(["for-each-ref"])
        .current_dir(dir)
        .output()
        .unwrap();
    (objects, String::from_utf8_lossy(&refs.stdout).into_owned())
}

/// Checkpoints live outside the repository: a turn adds no object and no ref to it (an
/// untracked `.env` is not carried by a push or a mirror clone), a file over the bound is
/// not recorded and `/undo` leaves it and says so. (The private store goes with the
/// session: the suite's private `TMPDIR` must be empty afterwards.)
#[tokio::test]
async fn undo_keeps_its_records_out_of_the_repository_and_skips_large_files() {
    let server = MockModelServer::start(vec![
        bash(
            "b1",
            "printf changed > tracked.txt && printf more >> big.bin",
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let dir = h.workspace.path().to_path_buf();
    repository_with_tracked_txt(&dir);
    std::fs::write(dir.join(".env"), "API_TOKEN=very-secret-value").unwrap();
    let big = std::fs::File::create(dir.join("big.bin")).unwrap();
    big.set_len(17 << 20).unwrap();
    drop(big);
    let before = objects_and_refs(&dir);

    h.run("change things").await;
    assert_eq!(
        objects_and_refs(&dir),
        before,
        "a checkpoint reached the repository"
    );
    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert!(
        said.starts_with("undid the last turn:\n  restored tracked.txt"),
        "{said}"
    );
    assert!(
        said.contains("left big.bin: over 16 MiB, not recorded"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("tracked.txt")).unwrap(),
        "original"
    );
    assert_eq!(
        std::fs::metadata(dir.join("big.bin")).unwrap().len(),
        (17 << 20) + 4
    );
    h.engine.shutdown().await;
    assert_eq!(objects_and_refs(&dir), before);
}

#[tokio::test]
async fn undo_keeps_what_the_person_changed_after_the_turn() {
    let server = MockModelServer::start(vec![
        bash(
            "b1",
            "printf turn > tracked.txt && printf turn > other.txt && printf new > made.txt",
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = yolo(&server);
    let dir = h.workspace.path().to_path_buf();
    git(&dir, &["init", "-q"]);
    for name in ["tracked.txt", "other.txt", "mine.txt"] {
        std::fs::write(dir.join(name), "original").unwrap();
    }
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "first"]);

    h.engine.send(h.root, "change things").unwrap();
    until_idle(&mut h).await;
    // After the turn, the person edits one of the turn's files and one of their own.
    std::fs::write(dir.join("tracked.txt"), "person").unwrap();
    std::fs::write(dir.join("mine.txt"), "person").unwrap();

    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert!(said.contains("kept tracked.txt"), "{said}");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(read("tracked.txt"), "person");
    assert_eq!(read("mine.txt"), "person");
    assert_eq!(read("other.txt"), "original");
    assert!(!dir.join("made.txt").exists());
}

#[tokio::test]
async fn undo_outside_a_git_repository_says_so() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")])
        .await
        .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    h.run("hi").await;
    let refused = h.engine.command(h.root, "/undo").unwrap_err();
    assert!(refused.to_string().contains("git repository"), "{refused}");
}

#[tokio::test]
async fn a_repository_whose_config_names_programs_never_runs_them_for_checkpoints() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "w1",
            "write",
            serde_json::json!({"path": "b.txt", "content": "beta\n"}),
        ),
        MockResponse::text("ok"),
    ])
    .await
    .unwrap();
    let mut h = Harness::new(&server, ProviderKind::OpenAi);
    let dir = h.workspace.path().to_path_buf();
    git(&dir, &["init", "-q"]);
    std::fs::write(dir.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let ran = dir.join("ran");
    let config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
    std::fs::write(
        dir.join(".git/config"),
        format!(
            "{config}[core]\n\tfsmonitor = touch {0}-fsmonitor\n[filter \"evil\"]\n\tclean = touch {0}-clean; cat\n",
            ran.display()
        ),
    )
    .unwrap();
    let events = h.run("hi").await;
    let warned = super::support::warnings(&events);
    assert!(
        warned.iter().any(|w| w.contains("filter programs")),
        "{warned:?}"
    );
    let refused = h.engine.command(h.root, "/undo").unwrap_err();
    assert!(refused.to_string().contains("filter programs"), "{refused}");
    let _ = h.engine.command(h.root, "/diff");
    assert!(!dir.join("ran-fsmonitor").exists(), "the fsmonitor ran");
    assert!(!dir.join("ran-clean").exists(), "the clean filter ran");
}

#[tokio::test]
async fn undo_puts_back_a_folder_a_command_removed_and_removes_one_it_made() {
    let server = MockModelServer::start(vec![
        bash(
            "b1",
            "rm -r src && mkdir -p made/deep && printf x > made/deep/f.txt",
        ),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let mut h = Harness::with(
        &server,
        ProviderKind::OpenAi,
        |config| {
            config.preset = coder_protocol::Preset::Yolo;
            // `rm -r` asks a person, and nobody is there: approved, as in a headless run.
            config.auto_approve = true;
        },
        Vec::new(),
    );
    let dir = h.workspace.path().to_path_buf();
    git(&dir, &["init", "-q"]);
    std::fs::create_dir_all(dir.join("src/inner")).unwrap();
    std::fs::write(dir.join("src/a.txt"), "alpha").unwrap();
    std::fs::write(dir.join("src/inner/b.txt"), "beta").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    // Not committed: recorded by copy.
    std::fs::write(dir.join("src/notes.txt"), "mine").unwrap();

    h.engine.send(h.root, "rearrange").unwrap();
    until_idle(&mut h).await;
    assert!(!dir.join("src").exists());
    assert!(dir.join("made/deep/f.txt").exists());

    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert!(said.starts_with("undid the last turn"), "{said}");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(read("src/a.txt"), "alpha");
    assert_eq!(read("src/inner/b.txt"), "beta");
    assert_eq!(read("src/notes.txt"), "mine");
    assert!(
        !dir.join("made").exists(),
        "the folders the command made: {said}"
    );
    assert!(said.contains("made/deep/"), "{said}");
}

/// A turn's start is what the person left: their edit between two turns is what `/undo`
/// of the second turn puts back, and `/undo` of the first then keeps it.
#[tokio::test]
async fn undo_puts_back_what_the_person_saved_between_turns() {
    let server = MockModelServer::start(vec![
        bash("b1", "printf one > tracked.txt"),
        MockResponse::text("first"),
        MockResponse::tool_call(
            "w2",
            "write",
            serde_json::json!({"path": "tracked.txt", "content": "two"}),
        ),
        MockResponse::text("second"),
    ])
    .await
    .unwrap();
    let mut h = yolo(&server);
    let dir = h.workspace.path().to_path_buf();
    repository_with_tracked_txt(&dir);
    let read = || std::fs::read_to_string(dir.join("tracked.txt")).unwrap();

    h.engine.send(h.root, "first").unwrap();
    until_idle(&mut h).await;
    assert_eq!(read(), "one");
    std::fs::write(dir.join("tracked.txt"), "person").unwrap();
    h.engine.send(h.root, "second").unwrap();
    until_idle(&mut h).await;
    assert_eq!(read(), "two");

    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert_eq!(said, "undid the last turn:\n  restored tracked.txt");
    assert_eq!(read(), "person");
    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert!(said.contains("kept tracked.txt"), "{said}");
    assert_eq!(read(), "person");
}

/// A turn that only talks records nothing, and `/undo` says so rather than reverting the
/// turn before it.
#[tokio::test]
async fn undo_after_a_turn_that_only_talked_changes_nothing() {
    let server = MockModelServer::start(vec![
        bash("b1", "printf one > tracked.txt"),
        MockResponse::text("first"),
        MockResponse::text("just talk"),
    ])
    .await
    .unwrap();
    let mut h = yolo(&server);
    let dir = h.workspace.path().to_path_buf();
    repository_with_tracked_txt(&dir);
    h.engine.send(h.root, "first").unwrap();
    until_idle(&mut h).await;
    h.engine.send(h.root, "second").unwrap();
    until_idle(&mut h).await;
    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert_eq!(said, "the last turn changed no file to undo");
    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert_eq!(said, "undid the last turn:\n  restored tracked.txt");
    assert_eq!(
        std::fs::read_to_string(dir.join("tracked.txt")).unwrap(),
        "original"
    );
}

/// The first tool that changes files may run in a conversation the turn started
/// (`conv_create`): the recorder starts for it as for the turn's own, and `/undo` reverts it
/// with the turn.
#[tokio::test]
async fn undo_reverts_what_a_conversation_the_turn_started_changed() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "a1",
            "conv_create",
            serde_json::json!({"user_instruction": "change the file"}),
        ),
        bash("b1", "printf child > tracked.txt"),
        MockResponse::text("changed"),
        MockResponse::text("all done"),
    ])
    .await
    .unwrap();
    let mut h = yolo(&server);
    let dir = h.workspace.path().to_path_buf();
    repository_with_tracked_txt(&dir);
    h.engine.send(h.root, "delegate").unwrap();
    until_idle(&mut h).await;
    assert_eq!(
        std::fs::read_to_string(dir.join("tracked.txt")).unwrap(),
        "child"
    );
    let said = h.engine.command(h.root, "/undo").unwrap().text;
    assert_eq!(said, "undid the last turn:\n  restored tracked.txt");
    assert_eq!(
        std::fs::read_to_string(dir.join("tracked.txt")).unwrap(),
        "original"
    );
}
