//! What checkpoints ask of git: where the repository is, what its index holds and what
//! differs from it, once per session (the baseline), and a blob's bytes when `/undo` puts a
//! file back. git runs so that nothing the repository configures runs a program
//! ([`safe_git`]), and a repository whose configuration names filter programs is refused
//! ([`check_filters`]): reading its working tree would run them.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// The most of git's output read (a listing of a huge index is tens of MiB).
const MAX_OUTPUT_BYTES: u64 = 256 << 20;

/// git in `dir`, run so that nothing the repository configures runs a program: no
/// filesystem monitor, no hooks, no signing, no external diff or text conversion, and
/// neither the system's nor the person's global configuration (a repository's own
/// configuration still applies; its filter programs are refused by the callers).
pub(crate) fn safe_git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "commit.gpgSign=false",
            "-c",
            "diff.external=",
        ]);
    command
}

/// Runs git in `dir` with `args`; its output (at most [`MAX_OUTPUT_BYTES`]), or its error.
pub(super) fn run(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let mut child = safe_git(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot run git: {err}"))?;
    let mut output = Vec::new();
    let read = child
        .stdout
        .take()
        .map(|stdout| stdout.take(MAX_OUTPUT_BYTES).read_to_end(&mut output));
    let mut stderr = String::new();
    if let Some(err) = child.stderr.take() {
        let _ = err.take(64 << 10).read_to_string(&mut stderr);
    }
    // Past the bound the rest is not read: git is ended rather than waited for.
    if output.len() as u64 >= MAX_OUTPUT_BYTES {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|err| format!("cannot run git: {err}"))?;
    if let Some(Err(err)) = read {
        return Err(format!("cannot read git's output: {err}"));
    }
    if output.len() as u64 >= MAX_OUTPUT_BYTES {
        return Err("git's listing of this repository is too large to record".to_owned());
    }
    if !status.success() {
        return Err(stderr.trim().to_owned());
    }
    Ok(output)
}

/// Where the workspace's repository is.
#[derive(Debug, Clone)]
pub(super) struct Repository {
    /// The workspace relative to the work tree's top (`""` or `sub/dir/`).
    pub prefix: String,
}

/// The workspace's repository: a `.git` in it or in a folder above it (looked for without
/// starting git), confirmed and described by git.
pub(super) fn discover(workspace: &Path) -> Option<Repository> {
    let marked = workspace
        .ancestors()
        .any(|dir| dir.join(".git").symlink_metadata().is_ok());
    if !marked {
        return None;
    }
    let found = run(
        workspace,
        &["rev-parse", "--is-inside-work-tree", "--show-prefix"],
    )
    .ok()?;
    let found = String::from_utf8_lossy(&found);
    let mut lines = found.lines();
    if lines.next()? != "true" {
        return None;
    }
    let prefix = lines.next().unwrap_or_default().to_owned();
    Some(Repository { prefix })
}

/// Refuses a repository whose configuration names filter programs: recording its working
/// tree would run them (a shipped `.git/config` is the repository author's).
pub(super) fn check_filters(workspace: &Path) -> Result<(), String> {
    match run(workspace, &["config", "--get-regexp", r"^filter\."]) {
        Ok(found) if !found.is_empty() => Err(
            "this repository's git configuration names filter programs, which recording the working tree would run; /undo is off here"
                .to_owned(),
        ),
        _ => Ok(()),
    }
}

/// A file of git's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tracked {
    pub oid: String,
    pub executable: bool,
    /// A symbolic link (its blob is the link's target).
    pub link: bool,
}

/// The repository as the session found it, within the workspace: the index, and the paths
/// whose working copy differs from it (changed, new, deleted), relative to the workspace.
#[derive(Debug, Default)]
pub(super) struct Listing {
    pub index: HashMap<String, Tracked>,
    pub differing: Vec<String>,
}

/// Lists the workspace's part of the repository (two git processes, once per session).
pub(super) fn list(workspace: &Path, repository: &Repository) -> Result<Listing, String> {
    let mut listing = Listing::default();
    let staged = run(workspace, &["ls-files", "--stage", "-z", "--", "."])?;
    for entry in staged
        .split(|byte| *byte == 0)
        .filter(|entry| !entry.is_empty())
    {
        let entry = String::from_utf8_lossy(entry);
        let Some((head, path)) = entry.split_once('\t') else {
            continue;
        };
        let mut fields = head.split(' ');
        let (Some(mode), Some(oid), Some(stage)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if stage != "0" {
            // A conflict: what is on disk is the record.
            listing.differing.push(path.to_owned());
            continue;
        }
        let tracked = match mode {
            "100644" => Tracked {
                oid: oid.to_owned(),
                executable: false,
                link: false,
            },
            "100755" => Tracked {
                oid: oid.to_owned(),
                executable: true,
                link: false,
            },
            "120000" => Tracked {
                oid: oid.to_owned(),
                executable: false,
                link: true,
            },
            // A submodule: its own repository, not recorded.
            _ => continue,
        };
        listing.index.insert(path.to_owned(), tracked);
    }
    let status = run(
        workspace,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
            "--",
            ".",
        ],
    )?;
    for entry in status
        .split(|byte| *byte == 0)
        .filter(|entry| entry.len() > 3)
    {
        let path = String::from_utf8_lossy(&entry[3..]);
        // Status names paths from the work tree's top.
        if let Some(path) = path.strip_prefix(&repository.prefix) {
            listing.differing.push(path.to_owned());
        }
    }
    Ok(listing)
}

/// The bytes of blob `oid` of the workspace's repository.
pub(super) fn blob(workspace: &Path, oid: &str) -> Result<Vec<u8>, String> {
    run(workspace, &["cat-file", "blob", oid])
}
