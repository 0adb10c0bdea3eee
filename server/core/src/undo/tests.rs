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
    checkpoints.begin(None);
    let note = checkpoints.start().unwrap().unwrap_or_default();
    assert!(note.contains("cannot be watched"), "{note}");
    assert!(note.contains("more than 1 folders"), "{note}");
    // A file tool says what it changes; a command does not.
    checkpoints.before_change_of("a/one.txt");
    std::fs::write(ws.join("a/one.txt"), "tool").unwrap();
    std::fs::write(ws.join("b/two.txt"), "command").unwrap();
    checkpoints.end();
    let said = checkpoints.undo().unwrap();
    assert_eq!(said, "undid the last turn:\n  restored a/one.txt");
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
    checkpoints.begin(None);
    checkpoints.start().unwrap();
    std::fs::write(ws.join("a/one.txt"), "changed").unwrap();
    std::fs::write(ws.join("a/one.txt"), "one").unwrap();
    std::fs::write(ws.join("b/two.txt"), "changed").unwrap();
    checkpoints.end();
    assert_eq!(
        checkpoints.undo().unwrap(),
        "undid the last turn:\n  restored b/two.txt"
    );
    checkpoints.close();
}

#[test]
fn the_store_goes_with_the_session() {
    let dir = repository();
    let checkpoints = Checkpoints::new(dir.path());
    checkpoints.begin(None);
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
    let talk = checkpoints.begin_turn(owner(0));
    checkpoints.end_turn().await;
    drop(talk);
    checkpoints.start_in_background().await.unwrap();
    std::fs::write(ws.join("a/one.txt"), "the person, between turns").unwrap();
    // A turn with a command: the person edits while the model answers, then the command.
    let turn = checkpoints.begin_turn(owner(0));
    std::fs::write(ws.join("b/two.txt"), "the person, during the turn").unwrap();
    turn.ready(&events).await;
    std::fs::write(ws.join("a/one.txt"), "the command").unwrap();
    std::fs::write(ws.join("new.txt"), "made by the command").unwrap();
    checkpoints.end_turn().await;
    assert_eq!(
        checkpoints.undo().unwrap(),
        "undid the last turn:\n  restored a/one.txt\n  deleted new.txt (the turn created it)"
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

/// The conversation the tests' turns belong to.
fn conversation() -> coder_protocol::ConversationId {
    static ID: std::sync::OnceLock<coder_protocol::ConversationId> = std::sync::OnceLock::new();
    *ID.get_or_init(coder_protocol::ConversationId::new)
}

fn owner(point: usize) -> TurnOwner {
    TurnOwner {
        conversation: conversation(),
        point,
    }
}

fn read(ws: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(path)).ok()
}

fn kept(rewound: &FileRewind) -> Vec<(&str, coder_protocol::methods::KeptReason)> {
    rewound
        .kept
        .iter()
        .map(|kept| (kept.path.as_str(), kept.reason))
        .collect()
}

/// Turns 1 and 2 undone at once: each file gets what it held before the earliest of them
/// that changed it, files they created go with the folders they made, and the turn before
/// the point stays for `/undo`. A dry run says the same and changes nothing.
#[test]
fn a_rewind_undoes_every_turn_from_the_point_and_the_earliest_before_wins() {
    let dir = repository();
    let ws = dir.path();
    let checkpoints = Checkpoints::new(ws);
    checkpoints.begin(Some(owner(0)));
    checkpoints.start().unwrap();
    std::fs::write(ws.join("a/one.txt"), "turn 0").unwrap();
    checkpoints.end();
    checkpoints.begin(Some(owner(1)));
    std::fs::write(ws.join("a/one.txt"), "turn 1").unwrap();
    std::fs::create_dir_all(ws.join("new/deeper")).unwrap();
    std::fs::write(ws.join("new/deeper/made.txt"), "made").unwrap();
    std::fs::remove_file(ws.join("b/two.txt")).unwrap();
    checkpoints.end();
    checkpoints.begin(Some(owner(2)));
    std::fs::write(ws.join("a/one.txt"), "turn 2").unwrap();
    checkpoints.end();

    let preview = checkpoints.rewind(conversation(), 1, &[1, 2], true);
    assert_eq!(preview.restored, ["a/one.txt", "b/two.txt"]);
    // The preview names the folders the rewind removes, as the rewind does.
    assert_eq!(
        preview.removed,
        ["new/deeper/made.txt", "new/deeper/", "new/"]
    );
    assert!(preview.kept.is_empty() && preview.unrecorded.is_none() && preview.notes.is_empty());
    assert_eq!(read(ws, "a/one.txt").as_deref(), Some("turn 2"));
    assert!(ws.join("new/deeper/made.txt").exists() && !ws.join("b/two.txt").exists());

    let rewound = checkpoints.rewind(conversation(), 1, &[1, 2], false);
    assert_eq!(rewound.restored, ["a/one.txt", "b/two.txt"]);
    assert_eq!(
        rewound.removed,
        ["new/deeper/made.txt", "new/deeper/", "new/"]
    );
    assert_eq!(read(ws, "a/one.txt").as_deref(), Some("turn 0"));
    assert_eq!(read(ws, "b/two.txt").as_deref(), Some("two"));
    assert!(!ws.join("new").exists());
    // The turns rewound are off the stack: `/undo` reverts the one before the point.
    assert_eq!(
        checkpoints.undo().unwrap(),
        "undid the last turn:\n  restored a/one.txt"
    );
    assert_eq!(read(ws, "a/one.txt").as_deref(), Some("one"));
    checkpoints.close();
}

/// What was not the conversation's turns' work stays and is named: the person's change
/// after its last turn, the person's change between two of its turns, and a later turn
/// of another conversation. A point without a record (before a resume) is said.
#[test]
fn a_rewind_keeps_what_the_person_or_another_conversation_changed_since() {
    let dir = repository();
    let ws = dir.path();
    std::fs::write(ws.join("c.txt"), "c").unwrap();
    let checkpoints = Checkpoints::new(ws);
    checkpoints.begin(Some(owner(3)));
    checkpoints.start().unwrap();
    std::fs::write(ws.join("a/one.txt"), "turn 3").unwrap();
    std::fs::write(ws.join("b/two.txt"), "turn 3").unwrap();
    std::fs::write(ws.join("c.txt"), "turn 3").unwrap();
    checkpoints.end();
    // The person, between the turns.
    std::fs::write(ws.join("c.txt"), "the person").unwrap();
    checkpoints.begin(Some(TurnOwner {
        conversation: coder_protocol::ConversationId::new(),
        point: 0,
    }));
    std::fs::write(ws.join("b/two.txt"), "another conversation").unwrap();
    checkpoints.end();
    checkpoints.begin(Some(owner(4)));
    std::fs::write(ws.join("c.txt"), "turn 4").unwrap();
    checkpoints.end();
    // The person, after the last turn.
    std::fs::write(ws.join("a/one.txt"), "the person").unwrap();

    let rewound = checkpoints.rewind(conversation(), 2, &[2, 3, 4], false);
    use coder_protocol::methods::KeptReason::{ChangedSince, OtherConversation};
    assert_eq!(
        kept(&rewound),
        [
            ("a/one.txt", ChangedSince),
            ("b/two.txt", OtherConversation),
            ("c.txt", ChangedSince)
        ]
    );
    assert!(rewound.restored.is_empty() && rewound.removed.is_empty());
    assert_eq!(rewound.notes.len(), 1, "{:?}", rewound.notes);
    assert!(rewound.notes[0].contains("point(s) 2 were not recorded"));
    assert_eq!(read(ws, "a/one.txt").as_deref(), Some("the person"));
    assert_eq!(
        read(ws, "b/two.txt").as_deref(),
        Some("another conversation")
    );
    assert_eq!(read(ws, "c.txt").as_deref(), Some("turn 4"));
    checkpoints.close();
}

/// Outside a git repository nothing of the files is recorded, and a rewind says so.
#[test]
fn outside_a_repository_a_rewind_says_the_files_were_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = Checkpoints::new(dir.path());
    checkpoints.begin(Some(owner(0)));
    let rewound = checkpoints.rewind(conversation(), 0, &[0], false);
    assert!(
        rewound
            .unrecorded
            .as_deref()
            .is_some_and(|why| why.contains("not a git repository")),
        "{rewound:?}"
    );
    assert!(lock(&checkpoints.inner).stack.is_empty());
}
