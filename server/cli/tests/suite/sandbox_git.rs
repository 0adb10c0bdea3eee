//! A confined command cannot plant git configuration that runs outside the sandbox on the
//! person's next `git` command: each attack runs through `coder exec --mode yolo` with the
//! sandbox on, then the person's own `git status` runs in the workspace after coder exits,
//! and the marker its `core.fsmonitor` would write must not appear.
//!
//! The commands build the names they touch at run time (`g=.gi; g=${g}t`), so coder's
//! reading of the command line does not see them and only the sandbox stands in the way.

use std::path::Path;

use super::sandbox::{coder, model_running, text, tool_result};

/// A workspace holding a git repository with one commit, the user-level configuration
/// directory, and a directory outside both where a planted `core.fsmonitor` would write.
struct Repo {
    workspace: tempfile::TempDir,
    home: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let repo = Self {
            workspace: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q"]);
        repo.git(&["commit", "-q", "--allow-empty", "-m", "one"]);
        repo
    }

    fn root(&self) -> &Path {
        self.workspace.path()
    }

    /// The person's own `git`, outside coder; its output.
    fn git(&self, args: &[&str]) -> String {
        self.git_in(self.root(), args)
    }

    /// [`Repo::git`] run in `dir`.
    fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "person")
            .env("GIT_AUTHOR_EMAIL", "person@example.com")
            .env("GIT_COMMITTER_NAME", "person")
            .env("GIT_COMMITTER_EMAIL", "person@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    }

    /// Runs `command` through `coder exec --mode yolo`; what the model was told.
    async fn run(&self, command: &str) -> String {
        let server = model_running(command).await;
        let out = coder(self.root(), self.home.path(), &server, &["go"], &[]).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        tool_result(&server)
    }

    /// A `core.fsmonitor` line that writes `marker` outside the workspace.
    fn fsmonitor(&self, marker: &str) -> String {
        let path = self.outside.path().join(marker);
        format!(
            "[core]\\n\\tfsmonitor = \\\"echo ESCAPED > {}; false\\\"\\n",
            path.display()
        )
    }

    fn escaped(&self) -> Vec<String> {
        std::fs::read_dir(self.outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

#[tokio::test]
async fn a_planted_commondir_does_not_run_on_the_next_git_command() {
    let repo = Repo::new();
    let command = format!(
        "g=.gi; g=${{g}}t; mkdir evil && cp -r $g/objects $g/refs evil/ && \
         cp $g/config evil/config && printf \"{}\" >> evil/config && \
         echo ../evil > $g/commondir; cat $g/commondir",
        repo.fsmonitor("commondir")
    );
    let result = repo.run(&command).await;
    assert!(
        result.contains("Output:\n../evil\n"),
        "the attack did not run: {result}"
    );
    assert!(
        result.contains("The command created .git/commondir"),
        "{result}"
    );
    assert!(!repo.root().join(".git/commondir").exists());

    repo.git(&["status"]);
    assert_eq!(repo.escaped(), Vec::<String>::new(), "{result}");
}

#[tokio::test]
async fn a_nested_repository_wired_in_through_the_index_does_not_run() {
    let repo = Repo::new();
    let command = format!(
        "n=.gi; n=${{n}}t; i=ini; i=${{i}}t; git $i -q --bare evilgit; \
         printf \"{}\\tbare = false\\n\\tworktree = ..\\n\" >> evilgit/config; \
         mkdir -p sub; echo \"gitdir: ../evilgit\" > sub/$n; \
         git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub && echo wired",
        repo.fsmonitor("nested")
    );
    let result = repo.run(&command).await;
    assert!(result.contains("wired"), "the attack did not run: {result}");
    assert!(
        result.contains("The command created or changed sub/.git"),
        "{result}"
    );
    assert!(!repo.root().join("sub/.git").exists());
    // Git run inside a bare repository follows its configuration too.
    assert!(
        result.contains("The command made evilgit a git repository"),
        "{result}"
    );

    repo.git(&["status"]);
    repo.git_in(&repo.root().join("evilgit"), &["status"]);
    repo.git_in(&repo.root().join("evilgit/refs"), &["status"]);
    assert_eq!(repo.escaped(), Vec::<String>::new(), "{result}");
}

#[tokio::test]
async fn a_submodules_configuration_is_read_only() {
    let repo = Repo::new();
    let library = tempfile::tempdir().unwrap();
    let library_git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(library.path())
            .env("HOME", repo.home.path())
            .status()
            .unwrap();
        assert!(status.success());
    };
    library_git(&["init", "-q"]);
    library_git(&[
        "-c",
        "user.name=p",
        "-c",
        "user.email=p@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "lib",
    ]);
    let library_path = library.path().display().to_string();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &library_path,
        "lib",
    ]);
    repo.git(&["commit", "-qm", "lib"]);
    let config = std::fs::read_to_string(repo.root().join(".git/modules/lib/config")).unwrap();

    let command = format!(
        "g=.gi; g=${{g}}t; printf \"{}\" >> $g/modules/lib/config; \
         echo ../../../evil > $g/modules/lib/commondir; echo inside > inside.txt",
        repo.fsmonitor("submodule")
    );
    let result = repo.run(&command).await;
    assert!(result.contains("Read-only file system"), "{result}");
    assert_eq!(
        std::fs::read_to_string(repo.root().join(".git/modules/lib/config")).unwrap(),
        config,
        "{result}"
    );
    assert!(
        result.contains("The command created .git/modules/lib/commondir"),
        "{result}"
    );
    assert!(repo.root().join("inside.txt").exists(), "{result}");

    repo.git(&["status"]);
    assert_eq!(repo.escaped(), Vec::<String>::new(), "{result}");
}

#[tokio::test]
async fn a_repository_a_command_makes_is_removed_but_the_files_stay() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = workspace.path();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    // At the root of a workspace that had none, in an ignored directory, and under another
    // case: all found.
    let command = "i=ini; i=${i}t; n=.GI; n=${n}T; git $i -q . && git $i -q target/a && \
                   mkdir -p target/b && git $i -q --bare x && \
                   echo 'gitdir: ../../x' > target/b/$n && echo kept > target/b/file";
    let server = model_running(command).await;
    let out = coder(root, home.path(), &server, &["go"], &[]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = tool_result(&server);
    assert!(
        result.contains("The command created or changed .git, target/a/.git, target/b/.GIT"),
        "{result}"
    );
    assert!(!root.join(".git").exists());
    assert!(!root.join("target/a/.git").exists());
    assert!(!root.join("target/b/.GIT").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("target/b/file")).unwrap(),
        "kept\n"
    );
}
