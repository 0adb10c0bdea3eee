use std::path::Path;

use pretty_assertions::assert_eq;

use super::{MAX_LIMIT, PathIndex, complete};

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
    complete(&PathIndex::default(), root, query, 50)
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
    let found = complete(&PathIndex::default(), dir.path(), "main.rs", 10);
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
        complete(&PathIndex::default(), root, "", usize::MAX).len(),
        2.min(MAX_LIMIT)
    );
}

#[test]
fn the_index_is_kept_until_invalidated() {
    let dir = tree(&["one.rs"]);
    let index = PathIndex::default();
    assert_eq!(complete(&index, dir.path(), "rs", 10).len(), 1);
    std::fs::write(dir.path().join("two.rs"), "").unwrap();
    assert_eq!(complete(&index, dir.path(), "rs", 10).len(), 1);
    index.invalidate();
    assert_eq!(complete(&index, dir.path(), "rs", 10).len(), 2);
}
