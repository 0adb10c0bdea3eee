use std::path::Path;

use pretty_assertions::assert_eq;

use super::{MAX_LIMIT, PathIndex, complete};

/// An index of `root` that trusts a walk for an hour (so no test depends on how fast it
/// runs).
fn index(root: &Path) -> PathIndex {
    PathIndex::with_refresh_after(root.to_path_buf(), std::time::Duration::from_secs(3600))
}

/// [`index`], its first walk ended.
fn walked(root: &Path) -> PathIndex {
    let index = index(root);
    index.refresh();
    index.until_walked();
    index
}

fn tree(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in files {
        let path = dir.path().join(file);
        if let Some(folder) = file.strip_suffix('/') {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
            continue;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, file).unwrap();
    }
    dir
}

/// The paths answered, best first.
fn paths(root: &Path, query: &str) -> Vec<String> {
    complete(&walked(root), query, 50)
        .into_iter()
        .map(|m| m.path)
        .collect()
}

#[test]
fn a_path_shaped_query_ranks_the_path_with_those_components_first() {
    let dir = tree(&[
        "server/core/src/lib.rs",
        "server/core/src/library_helpers.rs",
        "slib/readme.md",
        "docs/security_and_libraries.md",
        "src_old/liberty.txt",
    ]);
    let found = paths(dir.path(), "src/lib");
    assert_eq!(found[0], "server/core/src/lib.rs", "{found:?}");
    assert_eq!(found[1], "server/core/src/library_helpers.rs", "{found:?}");
}

#[test]
fn a_file_name_fragment_finds_the_file_and_says_where_it_matched() {
    let dir = tree(&["a/b/main.rs", "a/maintenance/x.txt", "zzz.rs"]);
    let found = complete(&walked(dir.path()), "main.rs", 10);
    assert_eq!(found[0].path, "a/b/main.rs");
    assert_eq!(found[0].kind, coder_protocol::methods::PathKind::File);
    // "main.rs" in "a/b/main.rs" is characters 4..=10.
    assert_eq!(found[0].indices, (4..=10).collect::<Vec<u32>>());
}

#[test]
fn gitignored_and_hidden_paths_are_left_out_and_git_is_never_offered() {
    let dir = tree(&[
        ".gitignore",
        "src/app.rs",
        "target/debug/app",
        "notes.log",
        ".env",
        ".github/workflows/ci.yml",
        ".git/config",
        ".ignore",
        "vendor/app_vendored.rs",
    ]);
    std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::write(dir.path().join(".ignore"), "vendor/\n").unwrap();
    assert_eq!(paths(dir.path(), "app"), vec!["src/app.rs"]);
    assert_eq!(paths(dir.path(), "log"), Vec::<String>::new());
    // Hidden paths come when asked for by a leading dot; `.git` never does.
    assert_eq!(paths(dir.path(), ".github/"), vec![".github/workflows/"]);
    assert_eq!(paths(dir.path(), ".env"), vec![".env"]);
    assert!(
        !paths(dir.path(), ".git")
            .iter()
            .any(|p| p.starts_with(".git/"))
    );
    assert!(
        !paths(dir.path(), ".gi co")
            .iter()
            .any(|p| p.contains("config"))
    );
}

#[test]
fn a_folder_prefix_narrows_to_that_folder() {
    let dir = tree(&[
        "server/core/lib.rs",
        "server/cli/main.rs",
        "client/lib.rs",
        "server/core/src/",
    ]);
    assert_eq!(
        paths(dir.path(), "server/core/li"),
        vec!["server/core/lib.rs"]
    );
    // An empty rest lists the folder, folders first.
    assert_eq!(
        paths(dir.path(), "server/core/"),
        vec!["server/core/src/", "server/core/lib.rs"]
    );
    // A prefix that is no folder is fuzzy text like the rest.
    assert_eq!(paths(dir.path(), "srvcore/lib"), vec!["server/core/lib.rs"]);
}

#[test]
fn an_empty_query_lists_the_top_of_the_workspace() {
    let dir = tree(&["b.txt", "a/x.rs", "c/y.rs", ".hidden"]);
    assert_eq!(paths(dir.path(), ""), vec!["a/", "c/", "b.txt"]);
    assert_eq!(paths(dir.path(), "  "), vec!["a/", "c/", "b.txt"]);
}

#[test]
fn a_quoted_query_matches_spaces() {
    let dir = tree(&["docs/my notes.txt", "docs/my/other notes.md", "mynotes.rs"]);
    assert_eq!(
        paths(dir.path(), "\"my notes"),
        vec!["docs/my notes.txt", "docs/my/other notes.md"]
    );
    assert_eq!(
        paths(dir.path(), "\"my notes\""),
        paths(dir.path(), "\"my notes")
    );
    // Unquoted, the words match anywhere, each on its own.
    assert!(paths(dir.path(), "notes my").contains(&"mynotes.rs".to_owned()));
}

#[test]
fn hostile_queries_answer_from_inside_the_workspace_only() {
    let dir = tree(&["etc/passwd.txt", "src/lib.rs"]);
    let root = dir.path();
    let long = "a/".repeat(500_000);
    for query in [
        "../",
        "../../etc/passwd",
        "/etc/passwd",
        "/",
        "\0",
        "src\0/lib",
        long.as_str(),
        "\"",
        "\"\"",
        "..",
    ] {
        for found in paths(root, query) {
            assert!(
                root.join(&found).starts_with(root),
                "{query:?} gave {found}"
            );
            assert!(!found.contains(".."), "{query:?} gave {found}");
        }
    }
    assert_eq!(paths(root, "src\0/lib"), vec!["src/lib.rs"]);
    // The workspace's own absolute path is taken as the workspace.
    let absolute = format!("{}/src/li", root.display());
    assert_eq!(paths(root, &absolute), vec!["src/lib.rs"]);
    assert_eq!(
        complete(&walked(root), "", usize::MAX).len(),
        2.min(MAX_LIMIT)
    );
}

/// Opens `index`'s gate and calls `until` at most 2,000 times, 5 ms apart.
fn open_until(index: &PathIndex, mut until: impl FnMut() -> bool) -> bool {
    index.gate().open();
    for _ in 0..2_000 {
        if until() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

#[test]
fn a_stale_index_answers_at_once_while_a_background_walk_finds_new_files() {
    let dir = tree(&["one.rs"]);
    let index = walked(dir.path());
    index.gate().close();
    std::fs::write(dir.path().join("two.rs"), "").unwrap();
    // Still fresh: the file is not known yet.
    assert_eq!(complete(&index, "rs", 10).len(), 1);
    // The watcher saw a change: a walk starts, which cannot end before the gate opens;
    // the call answers from the last walk instead of waiting for it.
    index.mark_stale();
    assert_eq!(index.walks(), 2);
    let answer: Vec<String> = complete(&index, "rs", 10)
        .into_iter()
        .map(|m| m.path)
        .collect();
    assert_eq!(answer, vec!["one.rs"]);
    assert_eq!(index.walks(), 2, "a walk runs: no other starts");
    // Once the walk ends, the new file is offered.
    assert!(open_until(&index, || complete(&index, "rs", 10).len() == 2));
    assert_eq!(paths_of(&index, "two"), vec!["two.rs"]);
}

#[test]
fn concurrent_first_calls_start_one_walk_and_answer_without_waiting_for_it() {
    let dir = tree(&["a/one.rs", "b/two.rs", "three.rs"]);
    let index = index(dir.path());
    index.gate().close();
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| complete(&index, "rs", 10)))
            .collect();
        for call in calls {
            // The walk is held at the gate: each answer holds what was walked so far.
            let found = call.join().unwrap();
            assert!(found.len() <= 3, "{found:?}");
        }
    });
    assert_eq!(index.walks(), 1);
    assert!(open_until(&index, || complete(&index, "rs", 10).len() == 3));
    assert_eq!(index.walks(), 1);
}

#[test]
fn stopping_the_index_ends_a_walk_in_progress_and_starts_no_other() {
    let dir = tree(&["one.rs", "two.rs"]);
    let index = index(dir.path());
    index.gate().close();
    index.refresh();
    std::thread::scope(|scope| {
        let stopping = scope.spawn(|| index.stop());
        // The walk is held at the gate; let it through once the stop is asked for, so it
        // sees the stop at its next path. `stop` returns once the walk's thread ended.
        let mut rounds = 0;
        while !stopping.is_finished() && rounds < 2_000 {
            if index.is_stopped() {
                index.gate().open();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            rounds += 1;
        }
        stopping.join().unwrap();
    });
    // The walk was not finished, so nothing was kept, and no call starts another.
    assert_eq!(complete(&index, "rs", 10), Vec::new());
    assert_eq!(index.walks(), 1);
}

fn paths_of(index: &PathIndex, query: &str) -> Vec<String> {
    complete(index, query, 50)
        .into_iter()
        .map(|m| m.path)
        .collect()
}
