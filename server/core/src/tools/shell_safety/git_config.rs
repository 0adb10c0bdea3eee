//! Whether a repository shipped with the workspace would run a program on a read-only git
//! command.
//!
//! The workspace's `.git/` comes with the repository and is as hostile as any other file
//! (docs/security.md): its configuration can name programs that git runs on `git status`
//! (`core.fsmonitor`), `git diff` and `git log -p` (`diff.<driver>.textconv`, pagers), and
//! its hooks run when the index is written (`post-index-change`, on `git status`), and a
//! submodule's repository has a configuration of its own that `git status` reads. A
//! read-only git command is allowed unasked only when [`runs_programs`] finds none of that.
//!
//! The parser is small and careful rather than complete: anything it does not understand
//! counts as a program (the command then asks). The person's own `~/.gitconfig` is trusted
//! and not read.

use std::path::Path;

/// Keys that run a program or read a file outside the repository, as `section.name` (the
/// subsection dropped), lower case. `section.*` covers every key of a section.
const RUNNING: [&str; 17] = [
    "core.fsmonitor",
    "core.pager",
    "core.sshcommand",
    "core.askpass",
    "core.worktree",
    "core.hookspath",
    "core.gitproxy",
    "pager.*",
    "diff.external",
    "diff.textconv",
    "diff.command",
    "filter.*",
    "merge.driver",
    "interactive.difffilter",
    "gpg.program",
    "blame.ignorerevsfile",
    "include.*",
];

/// Sections that pull in other configuration files, which this check does not follow.
const INCLUDING: [&str; 2] = ["include", "includeif"];

/// Why a read-only git command in the repository at `workspace` could run a program, or
/// `None` when it cannot: `.git` is a directory of its own (not a `gitdir:` file, no
/// `commondir`), its `config` (and `config.worktree`) set none of [`RUNNING`] nor include
/// other files, its index holds no submodule (nor does `.git/modules` exist, nor a split
/// index), and no hook other than the `.sample` files is installed.
pub(crate) fn runs_programs(workspace: &Path) -> Option<String> {
    let git = workspace.join(".git");
    let Ok(meta) = git.symlink_metadata() else {
        // Nothing is shipped here ([`super::SafetyContext::git_root`] covers this case).
        return None;
    };
    if !meta.is_dir() {
        return Some(".git is not a directory (it points to another repository)".to_owned());
    }
    if git.join("commondir").symlink_metadata().is_ok() {
        return Some(".git/commondir shares another repository's configuration".to_owned());
    }
    for name in ["config", "config.worktree"] {
        let path = git.join(name);
        match crate::bounded::read(&path, crate::bounded::MAX_CONFIG_BYTES) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                if let Some(key) = config_runs_programs(&text) {
                    return Some(format!(".git/{name} sets {key}"));
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Some(format!(".git/{name} could not be read: {err}")),
        }
    }
    let wide_hashes = crate::bounded::read(&git.join("config"), crate::bounded::MAX_CONFIG_BYTES)
        .is_ok_and(|config| {
            String::from_utf8_lossy(&config)
                .to_ascii_lowercase()
                .contains("sha256")
        });
    // Past the bound the index is not read: the command is taken as unsafe (it asks), which
    // costs a repository of millions of files a question, and a planted index of gigabytes
    // (a sparse file in an archive) nothing.
    match crate::bounded::read(&git.join("index"), MAX_INDEX_BYTES) {
        Ok(index) => match has_gitlink(&index, if wide_hashes { 32 } else { 20 }) {
            Some(false) => {}
            Some(true) => {
                return Some(
                    "the index holds a submodule, whose own configuration git status reads"
                        .to_owned(),
                );
            }
            None => return Some(".git/index could not be read".to_owned()),
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Some(format!(".git/index could not be read: {err}")),
    }
    match std::fs::read_dir(&git) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name == "modules" || name.starts_with("sharedindex.") {
                    return Some(format!(
                        ".git/{name} holds other repositories or index entries"
                    ));
                }
            }
        }
        Err(_) => return Some(".git could not be read".to_owned()),
    }
    match std::fs::read_dir(git.join("hooks")) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if !name.to_string_lossy().ends_with(".sample") {
                    return Some(format!(
                        ".git/hooks/{} is installed",
                        name.to_string_lossy()
                    ));
                }
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return Some(".git/hooks could not be read".to_owned()),
    }
    None
}

/// The first key of a git configuration file that runs a program (see [`RUNNING`]), as
/// written; a line that cannot be parsed is reported as such.
pub(crate) fn config_runs_programs(text: &str) -> Option<String> {
    let mut section: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.trim();
        if line.starts_with('[') {
            let Some(end) = header_end(line) else {
                return Some(format!("an unreadable section header `{line}`"));
            };
            let header = &line[1..end];
            let name = header
                .split(|c: char| c.is_whitespace() || c == '"')
                .next()
                .unwrap_or_default();
            // `[section.subsection]` (the old form) and `[section "subsection"]`.
            let name = name
                .split('.')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            if INCLUDING.contains(&name.as_str()) {
                return Some(format!("[{header}] (it includes other files)"));
            }
            section = Some(name);
            line = line[end + 1..].trim();
        }
        let line = strip_comment(line);
        if line.is_empty() {
            continue;
        }
        let key = line
            .split(|c: char| c == '=' || c.is_whitespace())
            .next()
            .unwrap_or_default();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Some(format!("an unreadable line `{line}`"));
        }
        let Some(section) = &section else {
            return Some(format!("a key outside any section `{line}`"));
        };
        let key = key.to_ascii_lowercase();
        let full = format!("{section}.{key}");
        let runs = RUNNING.iter().any(|running| {
            running
                .strip_suffix(".*")
                .map_or(*running == full, |whole| whole == section)
        });
        if runs {
            return Some(full);
        }
        // A value continued on the next line (`\` at the end) is skipped with it.
        let mut current = line;
        while current.ends_with('\\') {
            match lines.next() {
                Some(next) => current = next,
                None => break,
            }
        }
    }
    None
}

/// Whether a git index (versions 2 to 4) holds a gitlink: a submodule, whose repository
/// (with its own configuration) `git status` and `git diff` look into. `None` when the
/// index cannot be parsed. `hash` is the object name length (20, or 32 for SHA-256).
/// The largest `.git/index` read for submodules; the index of a repository of a million
/// files is about 100 MiB.
const MAX_INDEX_BYTES: u64 = 512 << 20;

fn has_gitlink(index: &[u8], hash: usize) -> Option<bool> {
    const GITLINK: u32 = 0o160000;
    let word = |at: usize| -> Option<u32> {
        let bytes: [u8; 4] = index.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(bytes))
    };
    if index.get(..4)? != b"DIRC" {
        return None;
    }
    let version = word(4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let entries = word(8)?;
    let mut at = 12;
    for _ in 0..entries {
        let start = at;
        let mode = word(start + 24)?;
        if mode & 0o170000 == GITLINK {
            return Some(true);
        }
        let flags_at = start + 40 + hash;
        let flags = u16::from_be_bytes(index.get(flags_at..flags_at + 2)?.try_into().ok()?);
        at = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        if version == 4 {
            // A varint (how much of the previous name to drop), then the rest of the name.
            while index.get(at)? & 0x80 != 0 {
                at += 1;
            }
            at += 1;
        }
        let name = index.get(at..)?.iter().position(|&byte| byte == 0)?;
        at += name;
        at = if version == 4 {
            at + 1
        } else {
            // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
            start + ((at - start) / 8 + 1) * 8
        };
    }
    Some(false)
}

/// The index of the `]` closing a section header, outside the quoted subsection.
fn header_end(line: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ']' if !quoted => return Some(at),
            _ => {}
        }
    }
    None
}

/// The line without a `#` or `;` comment that starts outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => return line[..at].trim(),
            _ => {}
        }
    }
    line.trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_run_programs_are_found_in_any_spelling() {
        let cases = [
            ("[core]\n\tfsmonitor = ./x\n", Some("core.fsmonitor")),
            ("[Core]\n\tFSMonitor=./x\n", Some("core.fsmonitor")),
            ("[diff \"pdf\"]\n\ttextconv = ./x\n", Some("diff.textconv")),
            ("[diff.pdf]\n\ttextconv = ./x\n", Some("diff.textconv")),
            ("[pager]\n\tlog = ./x\n", Some("pager.log")),
            ("[filter \"lfs\"]\n\tclean = x\n", Some("filter.clean")),
            ("[gpg \"ssh\"]\n\tprogram = ./x\n", Some("gpg.program")),
            ("[core] pager = ./x\n", Some("core.pager")),
            ("[include]\n\tpath = x\n", Some("include")),
            ("[includeIf \"gitdir:x\"]\n\tpath = x\n", Some("includeIf")),
            ("[core]\n\tsshCommand = x\n", Some("core.sshcommand")),
            (
                "[blame]\n\tignoreRevsFile = /x\n",
                Some("blame.ignorerevsfile"),
            ),
            ("[core\n", Some("unreadable")),
            ("fsmonitor = x\n", Some("outside any section")),
            // A continued value is skipped with its next line.
            ("[user]\n\tname = \"a \\\n b\"\n\temail = x\n", None),
            (
                "[core]\n\trepositoryformatversion = 0 ; fsmonitor = x\n\tbare = false\n\
                 [remote \"origin\"]\n\turl = https://x # pager = y\n\
                 [branch \"main\"]\n\tremote = origin\n",
                None,
            ),
            (
                "[diff \"a\"]\n\twordRegex = x\n[user]\n\tname = \"x ; y\"\n",
                None,
            ),
        ];
        for (config, wanted) in cases {
            let found = config_runs_programs(config);
            match wanted {
                Some(wanted) => assert!(
                    found.as_deref().is_some_and(|found| found.contains(wanted)),
                    "{config:?}: {found:?}"
                ),
                None => assert_eq!(found, None, "{config:?}"),
            }
        }
    }

    /// Indexes written by the real `git`, in every version, with and without a submodule.
    #[test]
    fn an_index_of_a_gigabyte_is_not_read_and_counts_as_unsafe() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        let index = std::fs::File::create(dir.path().join(".git/index")).unwrap();
        index.set_len(1 << 30).unwrap();
        assert_eq!(
            runs_programs(dir.path()).as_deref(),
            Some(
                ".git/index could not be read: it is larger than 512 MiB, the most coder reads of such a file"
            )
        );
    }

    #[test]
    fn gitlinks_are_found_in_real_indexes() {
        for version in ["2", "3", "4"] {
            for with_submodule in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let git = |args: &[&str], at: &Path| {
                    let status = std::process::Command::new("git")
                        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                        .stderr(std::process::Stdio::null())
                        .args(args)
                        .current_dir(at)
                        .env("GIT_CONFIG_NOSYSTEM", "1")
                        .env("HOME", dir.path())
                        .status()
                        .unwrap();
                    assert!(status.success(), "{args:?}");
                };
                let ws = dir.path();
                git(&["init", "-q"], ws);
                for name in ["a.txt", "a-much-longer-name-to-pad.txt", "dir/b.txt"] {
                    std::fs::create_dir_all(ws.join(name).parent().unwrap()).unwrap();
                    std::fs::write(ws.join(name), "x").unwrap();
                }
                git(&["add", "."], ws);
                if with_submodule {
                    let sub = ws.join("zz-sub");
                    std::fs::create_dir(&sub).unwrap();
                    git(&["init", "-q"], &sub);
                    std::fs::write(sub.join("f"), "x").unwrap();
                    git(&["add", "f"], &sub);
                    git(&["commit", "-qm", "x"], &sub);
                    git(&["add", "zz-sub"], ws);
                }
                git(&["update-index", "--index-version", version], ws);
                // An entry with the extended flag (version 3 and later).
                git(&["update-index", "--skip-worktree", "a.txt"], ws);
                let index = std::fs::read(ws.join(".git/index")).unwrap();
                assert_eq!(
                    has_gitlink(&index, 20),
                    Some(with_submodule),
                    "version {version}"
                );
                assert_eq!(
                    runs_programs(ws).is_some(),
                    with_submodule,
                    "version {version}: {:?}",
                    runs_programs(ws)
                );
            }
        }
    }
}
