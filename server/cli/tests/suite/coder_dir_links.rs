//! A repository that ships `.coder/` or `.coder/sessions/` (or the sessions' `.gitignore`)
//! as links, through `coder exec`: the session is saved inside the workspace or not at all,
//! never through a link; a `.coder` linked out is refused at start (its configuration is
//! read through it).

use std::os::unix::fs::symlink;
use std::path::Path;

use coder_testkit::{MockModelServer, MockResponse};

use crate::suite::exec::{coder_on, text};

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_linked_coder_or_sessions_folder_is_refused_and_nothing_is_saved_outside() {
    for linked in [".coder/sessions", ".coder"] {
        let server = MockModelServer::start(vec![MockResponse::text("done")])
            .await
            .unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let link = workspace.path().join(linked);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(outside.path(), &link).unwrap();
        let out = coder_on(workspace.path(), &server, "k", &["hi"]).await;
        assert_eq!(names(outside.path()), Vec::<String>::new(), "{linked}");
        let stderr = text(&out.stderr);
        if linked == ".coder" {
            // Its configuration is read through the folder: refused at start, by name.
            assert!(!out.status.success(), "{stderr}");
            assert!(
                stderr.contains(".coder is a symbolic link"),
                "{linked}: {stderr}"
            );
            continue;
        }
        assert!(out.status.success(), "{linked}: {stderr}");
        assert_eq!(text(&out.stdout), "done\n");
        let warning = stderr
            .lines()
            .find(|line| line.contains("is a symbolic link"))
            .unwrap_or_else(|| panic!("{linked}: no warning: {stderr}"));
        assert!(
            warning.starts_with("warning: ")
                && warning.contains(&format!("{linked} is a symbolic link"))
                && warning.contains("not saved"),
            "{warning}"
        );
        assert_eq!(
            stderr.matches("is a symbolic link").count(),
            1,
            "said once: {stderr}"
        );
    }
}

#[tokio::test]
async fn a_dangling_gitignore_link_in_the_sessions_folder_creates_nothing_outside() {
    let server = MockModelServer::start(vec![MockResponse::text("done")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let sessions = workspace.path().join(".coder/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    symlink(outside.path().join("planted"), sessions.join(".gitignore")).unwrap();
    let out = coder_on(workspace.path(), &server, "k", &["hi"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(names(outside.path()), Vec::<String>::new());
    // The session itself is saved, inside.
    let saved = names(&sessions);
    assert!(
        saved.iter().any(|name| name.ends_with(".json")),
        "{saved:?}"
    );
}
