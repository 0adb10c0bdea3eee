//! The ignore rules of the workspace's walks (`@` completion, `glob`, `grep`, a directory's
//! `@` reference, a skill's files), read as the repository's other files are.
//!
//! The `ignore` crate opens `.gitignore`, `.ignore` and `.git/info/exclude` by path and reads
//! them whole: a repository that ships `.gitignore` as a link to `/dev/zero` makes it read
//! without end, a FIFO there makes it wait for ever, and a link out of the workspace has it
//! read the person's files. Here the walks turn the crate's own reading off
//! ([`walker`]) and filter entries with matchers built from bounded reads through the
//! workspace handle (`WorkspaceDir::read_shipped`): regular files only, no link out, at most
//! [`MAX_IGNORE_FILE_BYTES`] a file and [`MAX_IGNORE_BYTES`] a walk. The rules are those of
//! the crate (without requiring a git repository): in each directory from the entry's own
//! up to the workspace root, `.ignore` first, then `.gitignore`, then the `info/exclude` of
//! a `.git` directory there; then the person's global git excludes.
//!
//! A walk that holds each folder as it goes (`beneath_walk.rs`) reads a folder's rules once
//! as it enters it ([`IgnoreRules::enter`]) and matches the folder's entries against them
//! ([`IgnoreRules::ignores`]); other walks ask by path ([`IgnoreRules::is_ignored`]), which
//! looks each entry's folder up in a cache.

use std::collections::HashMap;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::beneath::WorkspaceDir;

/// The most bytes of one ignore file read; a larger one is skipped (as a file that cannot
/// be read is).
pub(crate) const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// The most bytes of ignore files read in one walk; further files are skipped.
pub(crate) const MAX_IGNORE_BYTES: u64 = 16 << 20;

/// The longest ignore pattern compiled (the longest path Linux opens); longer lines are
/// skipped.
const MAX_PATTERN_BYTES: usize = 4096;

/// The ignore files of one directory, in the crate's order of precedence.
const NAMES: [&str; 3] = [".ignore", ".gitignore", ".git/info/exclude"];

/// The rules of one directory and of the directories above it that have any.
#[derive(Debug)]
struct DirRules {
    /// One matcher per name of [`NAMES`] (empty where the file is missing).
    matchers: [Gitignore; 3],
    /// The nearest directory above with rules.
    parent: Option<Arc<DirRules>>,
}

/// The rules in force in one folder: its own and those of the folders above it.
#[derive(Debug, Clone, Default)]
pub(crate) struct FolderRules(Option<Arc<DirRules>>);

/// The ignore rules of a workspace, read once per directory as a walk needs them.
#[derive(Debug, Clone)]
pub(crate) struct IgnoreRules {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// `None` when the workspace cannot be opened: nothing is ignored but by the global
    /// excludes.
    dir: Option<WorkspaceDir>,
    /// The workspace root as named and as resolved.
    roots: Vec<PathBuf>,
    /// The root the matchers are built at (resolved when it could be opened).
    root: PathBuf,
    global: Gitignore,
    /// Read by every entry of a walk's threads, written once per new directory.
    state: RwLock<State>,
    /// Bytes of ignore files that may still be read.
    left: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    /// Each directory seen, relative to the root, with its nearest rules (itself or above).
    dirs: HashMap<PathBuf, Option<Arc<DirRules>>>,
}

impl IgnoreRules {
    /// The rules of `workspace`, none read yet.
    pub fn new(workspace: &Path) -> Self {
        let dir = WorkspaceDir::open(workspace).ok();
        let root = dir
            .as_ref()
            .map_or_else(|| workspace.to_path_buf(), |dir| dir.root().to_path_buf());
        let roots = vec![workspace.to_path_buf(), root.clone()];
        // The person's own files (`core.excludesFile`, `~/.config/git/ignore`).
        let (global, _) = Gitignore::global();
        Self {
            inner: Arc::new(Inner {
                dir,
                roots,
                root,
                global,
                state: RwLock::new(State::default()),
                left: AtomicU64::new(MAX_IGNORE_BYTES),
            }),
        }
    }

    /// Whether `path` (a file, or a directory when `is_dir`) is ignored. A path outside the
    /// workspace is only checked against the global excludes.
    pub fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let relative = self
            .inner
            .roots
            .iter()
            .find_map(|root| path.strip_prefix(root).ok());
        let Some(relative) = relative else {
            return self.inner.global.matched(path, is_dir).is_ignore();
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        let rules = FolderRules(self.rules_of(parent));
        // The matchers are rooted at the resolved root: a path under it is matched as it is.
        if path.starts_with(&self.inner.root) {
            self.ignores(&rules, path, is_dir)
        } else {
            self.ignores(&rules, &self.inner.root.join(relative), is_dir)
        }
    }

    /// The rules in force in directory `path` (under the resolved root), read for it and
    /// for each directory above it that was not read yet: the rules of a walk's start.
    pub fn folder(&self, path: &Path) -> FolderRules {
        let relative = path.strip_prefix(&self.inner.root).unwrap_or(Path::new(""));
        FolderRules(self.rules_of(relative))
    }

    /// The rules in force in directory `path` (under the resolved root), a folder of
    /// `parent` that `folder` holds: its own ignore files are read now, once, as a walk
    /// enters it, from its handle.
    pub fn enter(&self, parent: &FolderRules, path: &Path, folder: BorrowedFd<'_>) -> FolderRules {
        let relative = path.strip_prefix(&self.inner.root).unwrap_or(path);
        let read = self.read_dir_rules(relative, |dir, name, max| {
            dir.read_shipped_in(folder, relative, name, max)
        });
        match read {
            Some(matchers) => FolderRules(Some(Arc::new(DirRules {
                matchers,
                parent: parent.0.clone(),
            }))),
            None => parent.clone(),
        }
    }

    /// Whether `path` (under the resolved root; a file, or a directory when `is_dir`) is
    /// ignored by `rules`, those of its folder, or by the global excludes.
    pub fn ignores(&self, rules: &FolderRules, path: &Path, is_dir: bool) -> bool {
        // `.ignore` in any directory wins over `.gitignore` in any, as in the `ignore` crate.
        for index in 0..NAMES.len() {
            let mut at = rules.0.as_deref();
            while let Some(dir) = at {
                match dir.matchers[index].matched(path, is_dir) {
                    Match::None => at = dir.parent.as_deref(),
                    found => return found.is_ignore(),
                }
            }
        }
        if self.inner.global.is_empty() {
            return false;
        }
        let relative = path.strip_prefix(&self.inner.root).unwrap_or(path);
        self.inner.global.matched(relative, is_dir).is_ignore()
    }

    /// The nearest rules at or above directory `relative`, read for each directory on the
    /// way that was not read yet.
    fn rules_of(&self, relative: &Path) -> Option<Arc<DirRules>> {
        {
            let state = self
                .inner
                .state
                .read()
                .unwrap_or_else(|poison| poison.into_inner());
            if let Some(found) = state.dirs.get(relative) {
                return found.clone();
            }
        }
        let mut state = self
            .inner
            .state
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(found) = state.dirs.get(relative) {
            return found.clone();
        }
        // The directories from the root down to `relative` that are not known yet.
        let mut missing: Vec<&Path> = relative
            .ancestors()
            .take_while(|dir| !state.dirs.contains_key(*dir))
            .collect();
        missing.reverse();
        let mut above = missing
            .first()
            .and_then(|first| first.parent())
            .and_then(|parent| state.dirs.get(parent).cloned())
            .flatten();
        for dir in missing {
            let read = self.read_dir_rules(dir, |workspace, name, max| {
                workspace.read_shipped(&dir.join(name), max)
            });
            let rules = match read {
                Some(matchers) => Some(Arc::new(DirRules {
                    matchers,
                    parent: above.clone(),
                })),
                None => above.clone(),
            };
            state.dirs.insert(dir.to_path_buf(), rules.clone());
            above = rules;
        }
        above
    }

    /// The matchers of directory `relative`; `None` when it has no ignore file.
    /// `read(workspace, name, max)` reads the file `name` of the directory.
    fn read_dir_rules(
        &self,
        relative: &Path,
        read: impl Fn(&WorkspaceDir, &str, u64) -> io::Result<Option<Vec<u8>>>,
    ) -> Option<[Gitignore; 3]> {
        let dir = self.inner.dir.as_ref()?;
        let mut any = false;
        let matchers = NAMES.map(|name| {
            let file = relative.join(name);
            let bytes = match self.within_budget(|max| read(dir, name, max)) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return Gitignore::empty(),
                Err(err) => {
                    use std::io::ErrorKind::{NotADirectory, NotFound};
                    // A repository's doing, met at every walk: logged for whoever debugs,
                    // never printed over the terminal's prompt.
                    if !matches!(err.kind(), NotFound | NotADirectory) {
                        tracing::debug!("ignore file {} not read: {err}", file.display());
                    }
                    return Gitignore::empty();
                }
            };
            any = true;
            let mut builder = GitignoreBuilder::new(self.inner.root.join(relative));
            let from = Some(file.clone());
            for line in String::from_utf8_lossy(&bytes).lines() {
                // A pattern longer than any path matches nothing, and compiling it would cost
                // memory in proportion.
                if line.len() > MAX_PATTERN_BYTES {
                    continue;
                }
                // A line that is no valid glob is skipped, as the crate does.
                let _ = builder.add_line(from.clone(), line);
            }
            builder.build().unwrap_or_else(|_| Gitignore::empty())
        });
        any.then_some(matchers)
    }

    /// What `read(max)` reads of an ignore file, `max` being what is left of the walk's
    /// bytes. What it may take is set aside before it is read, so threads reading at once
    /// stay within the bound together; what it did not take is given back.
    fn within_budget(
        &self,
        read: impl FnOnce(u64) -> io::Result<Option<Vec<u8>>>,
    ) -> io::Result<Option<Vec<u8>>> {
        let left = &self.inner.left;
        let taken = left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                Some(left - left.min(MAX_IGNORE_FILE_BYTES))
            })
            .map_or(0, |before| before.min(MAX_IGNORE_FILE_BYTES));
        let read = read(taken);
        let used = match &read {
            Ok(Some(bytes)) => bytes.len() as u64,
            Ok(None) | Err(_) => 0,
        };
        left.fetch_add(taken - used.min(taken), Ordering::AcqRel);
        read
    }
}

/// A walk of `base` (inside `workspace`) with the crate's reading of ignore files off and
/// [`IgnoreRules`] in their place. Hidden files are skipped (callers may turn that off with
/// `.hidden(false)`), links are not followed, and `.git` is never entered.
pub(crate) fn walker(workspace: &Path, base: &Path) -> ignore::WalkBuilder {
    walk(workspace, base, false)
}

/// As [`walker`], yielding folders only: files are passed over without a rule's check.
pub(crate) fn folder_walker(workspace: &Path, base: &Path) -> ignore::WalkBuilder {
    walk(workspace, base, true)
}

fn walk(workspace: &Path, base: &Path, folders_only: bool) -> ignore::WalkBuilder {
    let rules = IgnoreRules::new(workspace);
    let mut builder = ignore::WalkBuilder::new(base);
    builder
        .standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            if entry.depth() == 0 {
                return true;
            }
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            (is_dir || !folders_only) && !rules.is_ignored(entry.path(), is_dir)
        });
    builder
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn names(workspace: &Path, base: &Path) -> Vec<String> {
        let mut found: Vec<String> = walker(workspace, base)
            .build()
            .flatten()
            .filter(|entry| entry.depth() > 0)
            .map(|entry| {
                entry
                    .path()
                    .strip_prefix(workspace)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        found.sort();
        found
    }

    #[test]
    fn rules_apply_as_the_ignore_crate_applies_them() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for file in [
            "a.log",
            "keep.log",
            "sub/b.log",
            "sub/c.txt",
            "sub/deep/d.txt",
            "build/x",
        ] {
            std::fs::create_dir_all(ws.join(file).parent().unwrap()).unwrap();
            std::fs::write(ws.join(file), "").unwrap();
        }
        std::fs::write(ws.join(".gitignore"), "*.log\nbuild/\n!keep.log\n").unwrap();
        std::fs::write(ws.join("sub/.gitignore"), "!b.log\ndeep\n").unwrap();
        std::fs::write(ws.join("sub/.ignore"), "c.txt\n").unwrap();
        assert_eq!(names(ws, ws), ["keep.log", "sub", "sub/b.log"]);
        // A walk of a folder below the root keeps the rules of the folders above it.
        assert_eq!(names(ws, &ws.join("sub")), ["sub/b.log"]);
    }

    #[test]
    fn hostile_ignore_files_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::write(outside.path().join("rules"), "*\n").unwrap();
        for (folder, target) in [
            ("zero", Path::new("/dev/zero")),
            ("stdin", Path::new("/dev/stdin")),
            ("pagemap", Path::new("/proc/self/pagemap")),
            ("out", &outside.path().join("rules")),
        ] {
            std::fs::create_dir_all(ws.join(folder)).unwrap();
            std::fs::write(ws.join(folder).join("f"), "").unwrap();
            symlink(target, ws.join(folder).join(".gitignore")).unwrap();
        }
        std::fs::create_dir_all(ws.join("fifo")).unwrap();
        std::fs::write(ws.join("fifo/f"), "").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            ws.join("fifo/.gitignore"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        // A link inside the workspace to a regular file is read.
        std::fs::create_dir_all(ws.join("near")).unwrap();
        std::fs::write(ws.join("near/f"), "").unwrap();
        std::fs::write(ws.join("rules.txt"), "f\n").unwrap();
        symlink("../rules.txt", ws.join("near/.gitignore")).unwrap();
        let found = names(ws, ws);
        for folder in ["zero", "stdin", "pagemap", "out", "fifo"] {
            assert!(found.contains(&format!("{folder}/f")), "{found:?}");
        }
        assert!(!found.contains(&"near/f".to_owned()), "{found:?}");
    }
}
