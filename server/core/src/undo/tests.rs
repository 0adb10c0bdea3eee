use std::path::Path;

use super::watching::FolderWatch;
use super::*;

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository with `a/one.txt` and `b/two.txt` committed.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in [("a/one.txt", "one"), ("b/two.txt", "two")] {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    dir
}

#[test]
fn the_watch_reads_a_change_made_just_before_it_asks() {
    let folder = tempfile::tempdir().unwrap();
    let mut watch = FolderWatch::start(folder.path(), 10).unwrap();
    watch.watch(vec![folder.path().to_path_buf()]).unwrap();
    for round in 0..20 {
        let file = folder.path().join(format!("f{round}"));
        std::fs::write(&file, "x").unwrap();
        // No wait: the flush's marker comes after the write in the watcher's one queue.
        let changed = watch.changed();
        assert!(changed.paths.contains(&file), "round {round}: {changed:?}");
        assert!(!changed.missed);
    }
    assert!(watch.changed().paths.is_empty());
}

#[test]
fn past_the_most_folders_the_file_tools_changes_are_still_undone_and_commands_are_not() {
    let dir = repository();
    let ws = dir.path();
    let mut checkpoints = Checkpoints::new(ws);
    checkpoints.max_folders = 1;
    checkpoints.begin();
    let note = checkpoints.start().unwrap().unwrap_or_default();
    assert!(note.contains("cannot be watched"), "{note}");
    assert!(note.contains("more than 1 folders"), "{note}");
    // A file tool says what it changes; a command does not.
    checkpoints.before_change_of("a/one.txt");
    std::fs::write(ws.join("a/one.txt"), "tool").unwrap();
    std::fs::write(ws.join("b/two.txt"), "command").unwrap();
    checkpoints.end();
    let said = checkpoints.undo().unwrap();
    assert_eq!(said, "undid the last turn: restored a/one.txt");
    assert_eq!(
        std::fs::read_to_string(ws.join("a/one.txt")).unwrap(),
        "one"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b/two.txt")).unwrap(),
        "command"
    );
    checkpoints.close();
}

#[test]
fn a_file_changed_back_by_the_turn_is_not_named() {
    let dir = repository();
    let ws = dir.path();
    let checkpoints = Checkpoints::new(ws);
    checkpoints.begin();
    checkpoints.start().unwrap();
    std::fs::write(ws.join("a/one.txt"), "changed").unwrap();
    std::fs::write(ws.join("a/one.txt"), "one").unwrap();
    std::fs::write(ws.join("b/two.txt"), "changed").unwrap();
    checkpoints.end();
    assert_eq!(
        checkpoints.undo().unwrap(),
        "undid the last turn: restored b/two.txt"
    );
    checkpoints.close();
}

#[test]
fn the_store_goes_with_the_session() {
    let dir = repository();
    let checkpoints = Checkpoints::new(dir.path());
    checkpoints.begin();
    checkpoints.start().unwrap();
    let store = match &lock(&checkpoints.inner).phase {
        Phase::Recording(recorder) => recorder.store.path().to_path_buf(),
        _ => panic!("not recording"),
    };
    assert!(store.is_dir());
    checkpoints.close();
    assert!(!store.exists());
    assert!(checkpoints.undo().is_err());
}

/// A turn whose tools change nothing reads nothing; the person's changes before a turn's
/// first tool (between turns, or while the model answers) stay theirs, and `/undo` of that
/// turn reverts only what its tools changed.
#[tokio::test]
async fn a_turn_reads_the_person_s_changes_only_when_a_tool_is_about_to_change_files() {
    let dir = repository();
    let ws = dir.path();
    let checkpoints = Arc::new(Checkpoints::new(ws));
    let events = crate::events::TaskEvents {
        hub: crate::events::EventHub::default(),
        conversation_id: coder_protocol::ConversationId::new(),
        task_id: coder_protocol::TaskId::new(),
    };
    // A turn that talks starts the recorder in the background and reads nothing.
    let talk = checkpoints.begin_turn();
    checkpoints.end_turn().await;
    drop(talk);
    checkpoints.start_in_background().await.unwrap();
    std::fs::write(ws.join("a/one.txt"), "the person, between turns").unwrap();
    // A turn with a command: the person edits while the model answers, then the command.
    let turn = checkpoints.begin_turn();
    std::fs::write(ws.join("b/two.txt"), "the person, during the turn").unwrap();
    turn.ready(&events).await;
    std::fs::write(ws.join("a/one.txt"), "the command").unwrap();
    std::fs::write(ws.join("new.txt"), "made by the command").unwrap();
    checkpoints.end_turn().await;
    assert_eq!(
        checkpoints.undo().unwrap(),
        "undid the last turn: restored a/one.txt; removed new.txt"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a/one.txt")).unwrap(),
        "the person, between turns"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b/two.txt")).unwrap(),
        "the person, during the turn"
    );
    assert!(!ws.join("new.txt").exists());
    // The talk before it changed nothing.
    assert_eq!(
        checkpoints.undo().unwrap(),
        "the last turn changed no file to undo"
    );
    checkpoints.close();
}
