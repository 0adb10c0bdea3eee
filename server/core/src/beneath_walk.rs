//! A parallel walk of a folder of the workspace that holds each folder open as it goes, for
//! a search that reads every file it meets (`grep`).
//!
//! The walk starts from a handle on its first folder, opened beneath the workspace root with
//! no link followed (`WorkspaceDir::open_dir`). Every folder below is opened by its one name
//! from its parent's handle (`O_DIRECTORY | O_NOFOLLOW`), and every file by its one name from
//! its folder's handle (`O_NOFOLLOW | O_NONBLOCK`, then it must be a regular file). So a
//! folder replaced by a link after the walk entered it does not lead the walk out: what is
//! listed and read is the folder the walk holds, and a name that has become a link is
//! refused when it is opened. Each open resolves one name, where opening by path resolves
//! every folder of the path again.
//!
//! The rules are those of `ignore_files::walker`: hidden entries are skipped (so `.git` is
//! never entered), links are not followed, and each folder's ignore rules are read once, as
//! the walk enters it ([`IgnoreRules::enter`]), then matched against its entries. Folders are
//! shared out among the threads from one stack; a folder's files are visited by the thread
//! that lists it.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use crate::beneath::WorkspaceDir;
use crate::ignore_files::{FolderRules, IgnoreRules};

/// A regular file the walk met, to be opened from its folder's handle.
pub(crate) struct WalkedFile<'a> {
    folder: BorrowedFd<'a>,
    name: &'a CStr,
    path: &'a Path,
}

impl WalkedFile<'_> {
    /// The file's path (under the walk's first folder).
    pub fn path(&self) -> &Path {
        self.path
    }

    /// The file opened for reading by its name in the folder the walk holds: a link there
    /// (swapped in since the folder was listed) is refused, and so is anything but a regular
    /// file, without waiting on a FIFO.
    pub fn open(&self) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(self.folder, self.name, flags, Mode::empty())?;
        let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
        if kind != FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is not a regular file",
            ));
        }
        // Back to blocking reads: the only status flag the file was opened with is
        // `O_NONBLOCK`, so none is kept (one call, where `bounded::regular` reads them first).
        rustix::fs::fcntl_setfl(&fd, OFlags::empty())?;
        Ok(File::from(fd))
    }
}

/// Visits every regular file under `base` (a folder of the workspace that `dir` holds, or
/// a file, visited alone) that the ignore rules keep, on `threads` threads. `visitor` makes
/// each thread's visit. An error is returned only when `base` cannot be opened; folders
/// below that cannot be opened or listed are skipped.
pub(crate) fn walk_files<V>(
    dir: &WorkspaceDir,
    rules: &IgnoreRules,
    base: &Path,
    threads: usize,
    visitor: impl Fn() -> V + Sync,
) -> io::Result<()>
where
    V: FnMut(&WalkedFile<'_>),
{
    let fd = match dir.open_dir(base) {
        Ok(fd) => fd,
        Err(err) if err.kind() == io::ErrorKind::NotADirectory => {
            return visit_one(dir, base, &mut visitor());
        }
        Err(err) => return Err(err),
    };
    let walk = Walk {
        rules,
        pending: Mutex::new(Pending::default()),
        changed: Condvar::new(),
    };
    let rules = rules.folder(base);
    let first = Folder {
        listing: Dir::new(fd)?,
        path: base.to_path_buf(),
        rules,
    };
    let mut visit = visitor();
    let found = walk.list(first, &mut visit);
    lock(&walk.pending).folders = found;
    std::thread::scope(|scope| {
        for _ in 1..threads.max(1) {
            let walk = &walk;
            let visitor = &visitor;
            scope.spawn(move || walk.run(&mut visitor()));
        }
        walk.run(&mut visit);
    });
    Ok(())
}

/// Visits `path`, a file named as the walk's start, opened from its folder's handle.
fn visit_one<V>(dir: &WorkspaceDir, path: &Path, visit: &mut V) -> io::Result<()>
where
    V: FnMut(&WalkedFile<'_>),
{
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    let folder = dir.open_dir(parent)?;
    let name = CString::new(name.as_bytes())?;
    visit(&WalkedFile {
        folder: folder.as_fd(),
        name: &name,
        path,
    });
    Ok(())
}

/// A folder the walk entered: its handle, which also lists it.
struct Folder {
    listing: Dir,
    path: PathBuf,
    rules: FolderRules,
}

impl Folder {
    fn fd(&self) -> io::Result<BorrowedFd<'_>> {
        Ok(self.listing.fd()?)
    }
}

/// A folder to enter: its name in a folder entered already.
struct Work {
    parent: Arc<Folder>,
    name: CString,
    path: PathBuf,
}

/// What the threads share: the folders to enter, and how many are being listed.
struct Walk<'a> {
    rules: &'a IgnoreRules,
    pending: Mutex<Pending>,
    /// Signalled when folders are added, when the walk is over, or when it stops.
    changed: Condvar,
}

#[derive(Default)]
struct Pending {
    folders: Vec<Work>,
    /// Folders being entered and listed, which may add more.
    busy: usize,
    /// A thread panicked: the others stop instead of waiting for its folders.
    stopped: bool,
}

impl Walk<'_> {
    /// One thread's part: enters and lists folders until none is left anywhere.
    fn run<V>(&self, visit: &mut V)
    where
        V: FnMut(&WalkedFile<'_>),
    {
        let _stop = StopOnPanic(self);
        while let Some(work) = self.next() {
            let found = match self.enter(work) {
                Some(folder) => self.list(folder, visit),
                None => Vec::new(),
            };
            let mut pending = lock(&self.pending);
            pending.busy -= 1;
            pending.folders.extend(found);
            drop(pending);
            self.changed.notify_all();
        }
    }

    /// The next folder to enter; `None` once none is left and none is being listed.
    fn next(&self) -> Option<Work> {
        let mut pending = lock(&self.pending);
        loop {
            if pending.stopped {
                return None;
            }
            if let Some(work) = pending.folders.pop() {
                pending.busy += 1;
                return Some(work);
            }
            if pending.busy == 0 {
                return None;
            }
            pending = self
                .changed
                .wait(pending)
                .unwrap_or_else(|poison| poison.into_inner());
        }
    }

    /// Opens the folder by its name in its parent's handle, never through a link, and reads
    /// its ignore rules; `None` when it cannot be opened (gone, or a link now).
    fn enter(&self, work: Work) -> Option<Folder> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let parent = work.parent.fd().ok()?;
        let fd = rustix::fs::openat(parent, &work.name, flags, Mode::empty()).ok()?;
        let rules = self.rules.enter(&work.parent.rules, &work.path, fd.as_fd());
        Some(Folder {
            listing: Dir::new(fd).ok()?,
            path: work.path,
            rules,
        })
    }

    /// Visits the files of `folder` that the rules keep, and returns its folders to enter.
    fn list<V>(&self, mut folder: Folder, visit: &mut V) -> Vec<Work>
    where
        V: FnMut(&WalkedFile<'_>),
    {
        let mut folders = Vec::new();
        while let Some(Ok(entry)) = folder.listing.read() {
            let Ok(fd) = folder.fd() else {
                break;
            };
            let name = entry.file_name();
            // Hidden entries, `.` and `..` among them, are skipped.
            if name.to_bytes().first() == Some(&b'.') {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                        Err(_) => continue,
                    }
                }
                kind => kind,
            };
            let is_dir = match kind {
                FileType::Directory => true,
                FileType::RegularFile => false,
                _ => continue,
            };
            let path = folder.path.join(OsStr::from_bytes(name.to_bytes()));
            if self.rules.ignores(&folder.rules, &path, is_dir) {
                continue;
            }
            if is_dir {
                folders.push((name.to_owned(), path));
            } else {
                visit(&WalkedFile {
                    folder: fd,
                    name,
                    path: &path,
                });
            }
        }
        if folders.is_empty() {
            return Vec::new();
        }
        let parent = Arc::new(folder);
        folders
            .into_iter()
            .map(|(name, path)| Work {
                parent: parent.clone(),
                name,
                path,
            })
            .collect()
    }
}

/// Stops the walk when its thread panics, so the others do not wait for its folders.
struct StopOnPanic<'a, 'b>(&'a Walk<'b>);

impl Drop for StopOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            lock(&self.0.pending).stopped = true;
            self.0.changed.notify_all();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::symlink;

    use super::*;

    /// The files a walk of `base` visits, relative to `root`, with what each open gave.
    fn walked(root: &Path, base: &Path, threads: usize) -> BTreeMap<String, String> {
        let dir = WorkspaceDir::open(root).unwrap();
        let rules = IgnoreRules::new(root);
        let seen = Mutex::new(BTreeMap::new());
        walk_files(&dir, &rules, base, threads, || {
            |file: &WalkedFile<'_>| {
                let opened = file
                    .open()
                    .and_then(std::io::read_to_string)
                    .unwrap_or_else(|err| format!("refused: {err}"));
                let path = file.path().strip_prefix(root).unwrap();
                lock(&seen).insert(path.display().to_string(), opened);
            }
        })
        .unwrap();
        seen.into_inner().unwrap()
    }

    #[test]
    fn visits_the_files_the_ignore_walker_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for file in [
            "a.rs",
            "a.log",
            "keep.log",
            "build/out",
            "sub/b.log",
            "sub/c.txt",
            "sub/deep/d.txt",
            "sub/deeper/e.txt",
            "sub/deeper/f.tmp",
            ".hidden/g",
            ".h",
            ".git/config",
            "excluded/h",
            "lib/i.rs",
        ] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n!keep.log\n").unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "excluded\n").unwrap();
        std::fs::write(root.join("sub/.gitignore"), "!b.log\ndeep\n").unwrap();
        std::fs::write(root.join("sub/.ignore"), "c.txt\n").unwrap();
        std::fs::write(root.join("sub/deeper/.gitignore"), "*.tmp\n").unwrap();
        // Links, to a file or a folder, are not followed; a FIFO is no regular file.
        symlink(root.join("a.rs"), root.join("link.rs")).unwrap();
        symlink(root.join("lib"), root.join("linked")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("pipe"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        for base in [root.clone(), root.join("sub"), root.join("lib/i.rs")] {
            let expected: Vec<String> = crate::ignore_files::walker(&root, &base)
                .build()
                .flatten()
                .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
                .map(|entry| {
                    let path = entry.path().strip_prefix(&root).unwrap();
                    path.display().to_string()
                })
                .collect();
            let mut expected = expected;
            expected.sort();
            for threads in [1, 3] {
                let found = walked(&root, &base, threads);
                assert_eq!(
                    found.keys().cloned().collect::<Vec<_>>(),
                    expected,
                    "{}",
                    base.display()
                );
                assert!(found.values().all(|text| text == "x"), "{found:?}");
            }
        }
        assert_eq!(
            walked(&root, &root, 2).into_keys().collect::<Vec<_>>(),
            [
                "a.rs",
                "keep.log",
                "lib/i.rs",
                "sub/b.log",
                "sub/deeper/e.txt"
            ]
        );
    }

    #[test]
    fn hostile_ignore_files_are_not_read_as_the_walk_enters_their_folders() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(outside.path().join("rules"), "*\n").unwrap();
        let out_rules = outside.path().join("rules");
        for (folder, target) in [
            ("zero", Path::new("/dev/zero")),
            ("stdin", Path::new("/dev/stdin")),
            ("pagemap", Path::new("/proc/self/pagemap")),
            ("out", &out_rules),
        ] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
            std::fs::write(root.join(folder).join("f"), "x").unwrap();
            symlink(target, root.join(folder).join(".gitignore")).unwrap();
        }
        // A repository's own exclude file, a link out of the workspace.
        std::fs::create_dir_all(root.join("repo/.git/info")).unwrap();
        std::fs::write(root.join("repo/f"), "x").unwrap();
        symlink(&out_rules, root.join("repo/.git/info/exclude")).unwrap();
        std::fs::create_dir_all(root.join("fifo")).unwrap();
        std::fs::write(root.join("fifo/f"), "x").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo/.ignore"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        // A link inside the workspace to a regular file is read, as the shipped files are.
        std::fs::create_dir_all(root.join("near")).unwrap();
        std::fs::write(root.join("near/f"), "x").unwrap();
        std::fs::write(root.join("near/g"), "x").unwrap();
        std::fs::write(root.join("rules.txt"), "f\n").unwrap();
        symlink("../rules.txt", root.join("near/.gitignore")).unwrap();
        assert_eq!(
            walked(&root, &root, 2).into_keys().collect::<Vec<_>>(),
            [
                "fifo/f",
                "near/g",
                "out/f",
                "pagemap/f",
                "repo/f",
                "rules.txt",
                "stdin/f",
                "zero/f"
            ]
        );
    }

    #[test]
    fn a_folder_swapped_for_a_link_mid_walk_leads_nowhere_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for file in ["first", "d/f1", "d/f2", "d/f4", "d/sub/f3", "e/g"] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), "inside").unwrap();
            std::fs::create_dir_all(outside.path().join(file).parent().unwrap()).unwrap();
            std::fs::write(outside.path().join(file), "outside").unwrap();
        }
        let swap = |folder: &str| {
            let parked = root.join(format!("{folder}-parked"));
            std::fs::rename(root.join(folder), &parked).unwrap();
            symlink(outside.path().join(folder), root.join(folder)).unwrap();
            parked
        };
        let seen = Mutex::new(BTreeMap::new());
        let visit = |file: &WalkedFile<'_>| {
            let path = file.path().strip_prefix(&root).unwrap().to_owned();
            if path == Path::new("first") {
                // Before the walk enters `e`: it finds a link there and does not enter.
                swap("e");
            }
            let first_in_d = !lock(&seen)
                .keys()
                .any(|seen: &PathBuf| seen.starts_with("d"));
            if path.starts_with("d") && first_in_d {
                // After the walk entered `d`: it goes on in the folder it holds, where the
                // other two files become a link to the same file outside and a FIFO.
                let parked = swap("d");
                let mut others = ["f1", "f2", "f4"]
                    .into_iter()
                    .filter(|name| !path.ends_with(name));
                let (link, fifo) = (others.next().unwrap(), others.next().unwrap());
                std::fs::remove_file(parked.join(link)).unwrap();
                symlink(outside.path().join("d").join(link), parked.join(link)).unwrap();
                std::fs::remove_file(parked.join(fifo)).unwrap();
                let mode = Mode::from_raw_mode(0o644);
                rustix::fs::mknodat(rustix::fs::CWD, parked.join(fifo), FileType::Fifo, mode, 0)
                    .unwrap();
            }
            let opened = file
                .open()
                .and_then(std::io::read_to_string)
                .unwrap_or_else(|_| "refused".to_owned());
            lock(&seen).insert(path, opened);
        };
        // A FIFO opened without `O_NONBLOCK` would wait for a writer for ever.
        let (done, walked) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let ws = WorkspaceDir::open(&root).unwrap();
                let rules = IgnoreRules::new(&root);
                walk_files(&ws, &rules, &root, 1, || visit).unwrap();
                done.send(()).unwrap();
            });
            let waited = walked.recv_timeout(std::time::Duration::from_secs(60));
            if waited.is_err() {
                // Let the walk's thread go: a FIFO's open ends when a writer comes.
                for name in ["f1", "f2", "f4"] {
                    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
                    let path = root.join("d-parked").join(name);
                    let _ = rustix::fs::open(&path, flags, Mode::empty());
                }
            }
            assert!(waited.is_ok(), "the walk hung on a FIFO");
        });
        let seen = seen.into_inner().unwrap();
        assert!(!seen.values().any(|text| text == "outside"), "{seen:?}");
        let mut opened: Vec<&str> = seen.values().map(String::as_str).collect();
        opened.sort();
        // `first`, the first file of `d` and `d/sub/f3` read inside; the link and the FIFO
        // refused; nothing of `e`.
        assert_eq!(
            opened,
            ["inside", "inside", "inside", "refused", "refused"],
            "{seen:?}"
        );
        assert!(seen.contains_key(Path::new("d/sub/f3")), "{seen:?}");
    }
}
