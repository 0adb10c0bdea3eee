//! File access confined to the workspace by a directory handle, so that a symbolic link
//! appearing between a path's check and its use cannot lead the access out.
//!
//! Checking a path and then opening it by name leaves a window: another process (a
//! command the model started in the background, say) can replace a directory of the path
//! with a link to `~` in between, and the open follows it. Here every access starts from a
//! handle on the workspace root opened once, and never follows a link:
//! - on Linux 5.6 and later, an existing file or directory is opened in one `openat2` call
//!   with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`: the kernel refuses
//!   any link, and any step above the root, during the resolution itself;
//! - elsewhere (older kernels, `openat2` filtered by seccomp, other Unix systems), and to
//!   create missing directories, the path is walked one name at a time with
//!   `openat(dir, name, O_NOFOLLOW | O_DIRECTORY)` from the root handle. Each step opens a
//!   single name relative to a directory already held, so no swap can redirect it.
//!
//! Paths are the absolute, normalized paths that the file tools' path resolver
//! (`tools/paths.rs`) resolves (no `.` or `..`, inside the workspace); any link in them is refused with a message naming the link and
//! where it points. Files are opened with `O_NONBLOCK` and must be regular files, so a FIFO
//! planted in the workspace cannot hang a call. A file with more than one hard link is not
//! written: another of its names may be outside the workspace (a link made by a command) or
//! a protected file.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Files are created with these permissions, less the umask, as `std::fs::write` does.
const NEW_FILE_MODE: u32 = 0o666;
/// Directories are created with these permissions, less the umask.
const NEW_DIR_MODE: u32 = 0o777;

/// A handle on the workspace root through which the file tools read and write.
#[derive(Debug)]
pub(crate) struct WorkspaceDir {
    fd: OwnedFd,
    root: PathBuf,
    /// The root as it was named (it may go through a link, such as `/tmp` on macOS).
    given: PathBuf,
    /// Try `openat2` first (false in tests of the walk that replaces it).
    openat2: bool,
}

impl WorkspaceDir {
    /// Opens the workspace root (resolved once, here).
    pub fn open(workspace: &Path) -> Result<Self, String> {
        Self::open_root(workspace).map_err(|err| {
            format!(
                "the workspace {} is not readable: {err}",
                workspace.display()
            )
        })
    }

    /// [`Self::open`], its error as it came.
    fn open_root(workspace: &Path) -> io::Result<Self> {
        let root = workspace.canonicalize()?;
        let fd = rustix::fs::open(
            &root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            fd,
            root,
            given: workspace.to_path_buf(),
            openat2: true,
        })
    }

    /// The workspace root, resolved (no links in it).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The whole content of the regular file at `path`, when it holds at most `max` bytes
    /// (else `FileTooLarge`, without reading it); `None` when nothing is there.
    pub fn read(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        self.existing(path)?
            .map(|file| crate::bounded::read_file(file, max))
            .transpose()
    }

    /// A file the repository ships (configuration, `.mcp.json`, ignore files, project
    /// files, rules, skills, commands), opened for reading: the one way coder reads such a
    /// file. `path` is absolute inside the workspace or relative to its root. Only a
    /// regular file is opened (never a FIFO, a device or `/proc` file), and a symbolic link
    /// is followed only to a file inside the workspace: the link is resolved, and the
    /// resolved path opened again beneath the root with no link followed, so a link swapped
    /// in meanwhile is refused. `None` when nothing is there.
    pub fn open_shipped(&self, path: &Path) -> io::Result<Option<File>> {
        let names = self.names(path)?;
        let refused = match self.existing(path) {
            Ok(file) => return Ok(file),
            Err(err) => err,
        };
        let Some((link, target)) = self.find_link(&names) else {
            return Err(refused);
        };
        let relative: PathBuf = names.iter().collect();
        let resolved = match self.root.join(&relative).canonicalize() {
            Ok(resolved) => resolved,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(io::Error::other(format!(
                    "{} is a symbolic link (to {}) that leads nowhere coder reads",
                    link.display(),
                    target.display()
                )));
            }
            Err(err) => return Err(err),
        };
        if !resolved.starts_with(&self.root) {
            return Err(io::Error::other(format!(
                "{} is a symbolic link to {}, outside the workspace; coder does not read \
                 what a repository's links point to outside it",
                link.display(),
                resolved.display()
            )));
        }
        self.existing(&resolved)
    }

    /// The whole content of the shipped file at `path` (see [`Self::open_shipped`]), when it
    /// holds at most `max` bytes (else `FileTooLarge`, without reading it); `None` when
    /// nothing is there.
    pub fn read_shipped(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        self.open_shipped(path)?
            .map(|file| crate::bounded::read_file(file, max))
            .transpose()
    }

    /// The shipped file `name` (see [`Self::open_shipped`]) in the folder that `folder`
    /// holds, a handle opened beneath the root on the folder `relative` (names below the
    /// root), when it holds at most `max` bytes; `None` when nothing is there. A file that
    /// is there by its one name is opened from the handle; a link, or a name through a
    /// folder that is there (`.git/info/exclude`), is opened as [`Self::read_shipped`] opens
    /// `relative/name`.
    pub fn read_shipped_in(
        &self,
        folder: BorrowedFd<'_>,
        relative: &Path,
        name: &str,
        max: u64,
    ) -> io::Result<Option<Vec<u8>>> {
        let by_path = || self.read_shipped(&relative.join(name), max);
        let Some((first, rest)) = name.split_once('/') else {
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            return match rustix::fs::openat(folder, name, flags, Mode::empty()) {
                Ok(fd) => crate::bounded::read_file(crate::bounded::regular(fd)?, max).map(Some),
                Err(Errno::NOENT) => Ok(None),
                // `O_NOFOLLOW` met a link (`EMLINK` on some systems).
                Err(Errno::LOOP | Errno::MLINK) => by_path(),
                Err(err) => Err(err.into()),
            };
        };
        debug_assert!(!rest.is_empty());
        match rustix::fs::statat(folder, first, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => by_path(),
            Err(Errno::NOENT) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// The first `max` bytes of the shipped file at `path` (see [`Self::open_shipped`]) and
    /// its whole size; `None` when nothing is there.
    pub fn read_shipped_head(&self, path: &Path, max: u64) -> io::Result<Option<(Vec<u8>, u64)>> {
        self.open_shipped(path)?
            .map(|file| crate::bounded::head_of(file, max))
            .transpose()
    }

    /// Whether a regular file the repository ships is at `path` (see
    /// [`Self::open_shipped`]).
    pub fn ships(&self, path: &Path) -> bool {
        matches!(self.open_shipped(path), Ok(Some(_)))
    }

    /// The regular file at `path` opened for reading; `None` when nothing is there.
    fn existing(&self, path: &Path) -> io::Result<Option<File>> {
        match self.open_file(path) {
            Ok(file) => Ok(Some(file)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// The regular file at `path`, opened for reading.
    pub fn open_file(&self, path: &Path) -> io::Result<File> {
        let names = self.names(path)?;
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = self.open_existing(&names, flags)?;
        crate::bounded::regular(fd)
    }

    /// The directory at `path`, opened for a walk by its handle (`beneath_walk.rs`);
    /// links refused, as for every path here.
    /// The handle is new, so its listing starts at the first entry.
    pub fn open_dir(&self, path: &Path) -> io::Result<OwnedFd> {
        let names = self.names(path)?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if names.is_empty() {
            return Ok(rustix::fs::openat(&self.fd, ".", flags, Mode::empty())?);
        }
        self.open_existing(&names, flags)
    }

    /// The names in the directory at `path` (a name that is not UTF-8 as it reads lossily).
    pub fn entries(&self, path: &Path) -> io::Result<Vec<String>> {
        let fd = self.open_dir(path)?;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy();
            if name != "." && name != ".." {
                names.push(name.into_owned());
            }
        }
        Ok(names)
    }

    /// What is at `path` (a link is reported as a link, not followed); `None` when nothing.
    pub fn file_type(&self, path: &Path) -> io::Result<Option<FileType>> {
        let names = self.names(path)?;
        let Some((last, parents)) = names.split_last() else {
            return Ok(Some(FileType::Directory));
        };
        let parent = match self.walk(parents, false) {
            Ok(parent) => parent,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        match rustix::fs::statat(&parent, *last, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// The permission bits of the regular file at `path`.
    pub fn permissions(&self, path: &Path) -> io::Result<u32> {
        let file = self.open_file(path)?;
        Ok(rustix::fs::fstat(&file)?.st_mode & 0o7777)
    }

    /// Replaces the content of the file at `path` (creating it, and missing directories on
    /// the way), then sets `permissions` when given.
    pub fn write(&self, path: &Path, content: &[u8], permissions: Option<u32>) -> io::Result<()> {
        let names = self.names(path)?;
        let Some((last, parents)) = names.split_last() else {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "the workspace root is a directory",
            ));
        };
        let parent = self.walk(parents, true)?;
        // No O_TRUNC: the file is checked before anything in it changes.
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&parent, *last, flags, Mode::from_raw_mode(NEW_FILE_MODE))
            .map_err(|err| self.explain(err, &names))?;
        let links = rustix::fs::fstat(&fd)?.st_nlink;
        if links > 1 {
            // Another name of the same file may lie outside the workspace or be protected.
            return Err(io::Error::other(format!(
                "it has {links} hard links, and writing it would change the file under its \
                 other names too (which may be outside the workspace); the file tools do not \
                 write files with more than one link"
            )));
        }
        let mut file = crate::bounded::regular(fd)?;
        file.set_len(0)?;
        file.write_all(content)?;
        if let Some(bits) = permissions {
            rustix::fs::fchmod(&file, Mode::from_raw_mode(bits))?;
        }
        Ok(())
    }

    /// Removes the file (or link) at `path` itself.
    pub fn remove(&self, path: &Path) -> io::Result<()> {
        self.unlink(path, AtFlags::empty())
    }

    /// Removes the folder at `path` when it is empty (an error names why not: not empty,
    /// not a folder, gone). Links on the way are refused, as for every path here.
    pub fn remove_empty_dir(&self, path: &Path) -> io::Result<()> {
        self.unlink(path, AtFlags::REMOVEDIR)
    }

    /// Unlinks the last name of `path` in its folder, reached without following links.
    fn unlink(&self, path: &Path, flags: AtFlags) -> io::Result<()> {
        let names = self.names(path)?;
        let Some((last, parents)) = names.split_last() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the workspace root cannot be removed",
            ));
        };
        let parent = self.walk(parents, false)?;
        rustix::fs::unlinkat(&parent, *last, flags).map_err(io::Error::from)
    }

    /// The names of `path` below the root; an error for anything else.
    fn names<'p>(&self, path: &'p Path) -> io::Result<Vec<&'p OsStr>> {
        let relative = path
            .strip_prefix(&self.root)
            .or_else(|_| path.strip_prefix(&self.given))
            .unwrap_or(path);
        relative
            .components()
            .map(|component| match component {
                Component::Normal(name) => Ok(name),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is outside the workspace {}",
                        path.display(),
                        self.root.display()
                    ),
                )),
            })
            .collect()
    }

    /// Opens an existing file or directory: in one `openat2` call beneath the root where
    /// the kernel offers it, else by walking.
    fn open_existing(&self, names: &[&OsStr], flags: OFlags) -> io::Result<OwnedFd> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if self.openat2 {
            use rustix::fs::ResolveFlags;
            let relative: PathBuf = names.iter().collect();
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            let target: &Path = if names.is_empty() {
                Path::new(".")
            } else {
                &relative
            };
            match rustix::fs::openat2(&self.fd, target, flags, Mode::empty(), resolve) {
                Ok(fd) => return Ok(fd),
                // No openat2 (before Linux 5.6), or a seccomp filter refusing it.
                Err(Errno::NOSYS | Errno::PERM) => {}
                Err(err) => return Err(self.explain(err, names)),
            }
        }
        let Some((last, parents)) = names.split_last() else {
            return self.fd.try_clone();
        };
        let parent = self.walk(parents, false)?;
        rustix::fs::openat(&parent, *last, flags, Mode::empty())
            .map_err(|err| self.explain(err, names))
    }

    /// Opens the directory `names` one name at a time without following links, creating
    /// missing directories when `create`.
    fn walk(&self, names: &[&OsStr], create: bool) -> io::Result<OwnedFd> {
        self.walk_with(names, create, |err, _, walked| self.explain(err, walked))
    }

    /// [`WorkspaceDir::walk`], with `failed(error, the directory held, the names walked
    /// so far)` making the error of a step that could not be opened.
    fn walk_with(
        &self,
        names: &[&OsStr],
        create: bool,
        failed: impl Fn(Errno, &OwnedFd, &[&OsStr]) -> io::Error,
    ) -> io::Result<OwnedFd> {
        let mut dir = self.fd.try_clone()?;
        for (index, name) in names.iter().enumerate() {
            if create {
                match rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(NEW_DIR_MODE)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(err) => return Err(err.into()),
                }
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            dir = rustix::fs::openat(&dir, *name, flags, Mode::empty())
                .map_err(|err| failed(err, &dir, &names[..=index]))?;
        }
        Ok(dir)
    }

    /// Turns the errors a link causes (`ELOOP` from `O_NOFOLLOW` and `RESOLVE_NO_SYMLINKS`,
    /// `EXDEV` from `RESOLVE_BENEATH`, `ENOTDIR` from a link where a directory was wanted)
    /// into a message naming the link; other errors pass unchanged.
    fn explain(&self, err: Errno, names: &[&OsStr]) -> io::Error {
        if !matches!(err, Errno::LOOP | Errno::XDEV | Errno::NOTDIR) {
            return err.into();
        }
        match self.find_link(names) {
            Some((link, target)) => {
                io::Error::other(link_refused(&link.display().to_string(), &target))
            }
            None if err == Errno::NOTDIR => err.into(),
            None => io::Error::other(
                "a symbolic link appeared in the path while it was being opened; the file \
                 tools do not follow links",
            ),
        }
    }

    /// The first link among the prefixes of `names` (relative to the root), with its text.
    fn find_link(&self, names: &[&OsStr]) -> Option<(PathBuf, PathBuf)> {
        let mut dir = self.fd.try_clone().ok()?;
        for (index, name) in names.iter().enumerate() {
            let stat = rustix::fs::statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
            if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
                let target = rustix::fs::readlinkat(&dir, *name, Vec::new()).ok()?;
                let target = PathBuf::from(target.to_string_lossy().into_owned());
                return Some((names[..=index].iter().collect(), target));
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            dir = rustix::fs::openat(&dir, *name, flags, Mode::empty()).ok()?;
        }
        None
    }
}

/// Files made in coder's own folders are for the person alone (a session holds what the
/// person and the model said), less the umask.
const OWN_FILE_MODE: u32 = 0o600;

/// The refusal of a link met in coder's own folders (`.coder/`): a repository ships them,
/// pointing anywhere, and coder never follows one. Wrapped in an `io::Error`; see
/// [`is_link_refusal`].
#[derive(Debug)]
pub(crate) struct LinkRefused(String);

impl std::fmt::Display for LinkRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LinkRefused {}

/// Whether `err` is a [`LinkRefused`].
pub(crate) fn is_link_refusal(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|inner| inner.is::<LinkRefused>())
}

/// `err` met with the file `shown`, for people: a [`LinkRefused`] names the file itself.
pub(crate) fn own_file_error(shown: &Path, err: &io::Error) -> String {
    if is_link_refusal(err) {
        err.to_string()
    } else {
        format!("{}: {err}", shown.display())
    }
}

/// A folder of coder's own in the workspace (`.coder`, `.coder/sessions`), held open: every
/// file in it is reached by its one name relative to this handle, never through a link, and
/// only regular files are read or written. The one way coder opens its own files.
#[derive(Debug)]
pub(crate) struct OwnDir {
    fd: OwnedFd,
    /// The folder relative to the workspace root (`.coder/sessions`), for messages.
    relative: PathBuf,
}

impl WorkspaceDir {
    /// The folder `relative` (names below the root, such as `.coder/sessions`), opened one
    /// name at a time without following links; made, with the folders on the way, when
    /// `create`. `None` when it is missing and not to be made. A link on the way (a linked
    /// `.coder`) is refused with a [`LinkRefused`] naming it and where it points.
    pub fn own_dir(&self, relative: &Path, create: bool) -> io::Result<Option<OwnDir>> {
        let names = self.names(relative)?;
        let walked = self.walk_with(&names, create, |err, dir, walked| {
            let here: PathBuf = walked.iter().collect();
            let name = walked.last().copied().unwrap_or_default();
            own_error(err, dir, name, &here)
        });
        match walked {
            Ok(dir) => Ok(Some(OwnDir {
                fd: dir,
                relative: names.iter().collect(),
            })),
            Err(err) if !create && err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }
}

impl OwnDir {
    /// `name` in this folder, relative to the workspace root (for messages).
    pub fn shown(&self, name: &str) -> PathBuf {
        self.relative.join(name)
    }

    /// The regular file `name`, opened with `flags` (and `O_NOFOLLOW`, `O_NONBLOCK`).
    fn open(&self, name: &str, flags: OFlags, mode: u32) -> io::Result<File> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))
            .map_err(|err| own_error(err, &self.fd, OsStr::new(name), &self.shown(name)))?;
        crate::bounded::regular(fd)
    }

    /// The regular file `name` to be read, within `max` bytes (else `FileTooLarge`, by its
    /// size, before a byte is read); `None` when nothing is there.
    pub fn open_read(&self, name: &str, max: u64) -> io::Result<Option<io::Take<File>>> {
        match self.open(name, OFlags::RDONLY, 0) {
            Ok(file) => crate::bounded::within(file, max).map(Some),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// The bytes of the regular file `name`, within `max` (see [`OwnDir::open_read`]).
    pub fn read(&self, name: &str, max: u64) -> io::Result<Option<Vec<u8>>> {
        let Some(mut file) = self.open_read(name, max)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut file, &mut bytes)?;
        Ok(Some(bytes))
    }

    /// The regular file `name` opened to append to, made when missing; whether it was made
    /// now. A file with other hard links is refused (another name may be outside).
    pub fn append(&self, name: &str) -> io::Result<(File, bool)> {
        let flags = OFlags::WRONLY | OFlags::APPEND;
        let (file, made) = match self.open(name, flags, 0) {
            Ok(file) => (file, false),
            Err(err) if err.kind() == io::ErrorKind::NotFound => (
                self.open(name, flags | OFlags::CREATE | OFlags::EXCL, OWN_FILE_MODE)?,
                true,
            ),
            Err(err) => return Err(err),
        };
        let links = rustix::fs::fstat(&file)?.st_nlink;
        if links > 1 {
            return Err(io::Error::other(format!(
                "{} has {links} hard links; coder does not write such a file of its own",
                self.shown(name).display()
            )));
        }
        Ok((file, made))
    }

    /// Makes the regular file `name` holding `content`, unless something (a link
    /// included) is there already; whether it was made.
    pub fn create_new(&self, name: &str, content: &[u8]) -> io::Result<bool> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        let mut file = match self.open(name, flags, NEW_FILE_MODE) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(err) => return Err(err),
        };
        file.write_all(content)?;
        Ok(true)
    }

    /// Replaces `name` whole: `write` fills a new file in this folder, which is synced and
    /// then renamed over `name` (a link there is replaced, never followed). A crash leaves
    /// the old file or the new one, never half of one.
    pub fn write_atomic(
        &self,
        name: &str,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let unique = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let temp = format!(".{name}.{}.{unique}.{nanos:x}.tmp", std::process::id());
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        let mut file = self.open(&temp, flags, OWN_FILE_MODE)?;
        let written = write(&mut file)
            .and_then(|()| file.sync_data())
            .and_then(|()| {
                rustix::fs::renameat(&self.fd, temp.as_str(), &self.fd, name).map_err(Into::into)
            });
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, temp.as_str(), AtFlags::empty());
        }
        written
    }

    /// Removes `name` itself (a link is removed, never what it points to).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()).map_err(Into::into)
    }

    /// Whether anything (a link included) is at `name`.
    pub fn exists(&self, name: &str) -> bool {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// When `name` itself (not what a link points to) was last changed.
    pub fn modified(&self, name: &str) -> Option<std::time::SystemTime> {
        let stat = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let seconds = u64::try_from(stat.st_mtime).ok()?;
        let nanos = u32::try_from(stat.st_mtime_nsec).unwrap_or(0);
        Some(std::time::UNIX_EPOCH + std::time::Duration::new(seconds, nanos))
    }

    /// The names in this folder that are valid UTF-8 (what each is, is checked when it is
    /// opened).
    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            if let Ok(name) = entry.file_name().to_str()
                && name != "."
                && name != ".."
            {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }
}

/// The error of opening `name` in `dir` (shown as `shown`): a link there is named with where
/// it points ([`LinkRefused`]); other errors pass unchanged.
fn own_error(err: Errno, dir: &OwnedFd, name: &OsStr, shown: &Path) -> io::Error {
    if matches!(err, Errno::LOOP | Errno::NOTDIR | Errno::MLINK)
        && let Ok(target) = rustix::fs::readlinkat(dir, name, Vec::new())
    {
        return io::Error::other(LinkRefused(format!(
            "{} is a symbolic link (to {}); coder does not follow links in its own folders",
            shown.display(),
            target.to_string_lossy()
        )));
    }
    err.into()
}

/// The bytes of the file `path` that the repository in `workspace` ships, when it holds at
/// most `max` bytes: [`WorkspaceDir::read_shipped`] through a handle opened for this read.
/// `None` when nothing is there.
pub(crate) fn read_shipped(workspace: &Path, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    match WorkspaceDir::open_root(workspace) {
        Ok(dir) => dir.read_shipped(path, max),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// [`read_shipped`] as UTF-8 text.
pub(crate) fn read_shipped_text(
    workspace: &Path,
    path: &Path,
    max: u64,
) -> io::Result<Option<String>> {
    read_shipped(workspace, path, max)?
        .map(|bytes| {
            String::from_utf8(bytes)
                .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err.utf8_error()))
        })
        .transpose()
}

/// The refusal of a path through a symbolic link inside the workspace.
pub(crate) fn link_refused(link: &str, target: &Path) -> String {
    format!(
        "{link} is a symbolic link (to {}); the file tools do not follow links, use the path \
         it points to",
        target.display()
    )
}

/// Removes `.` and `..` without touching the file system; `..` at the root stays there.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The longest existing part of `path` with symbolic links resolved, followed by the rest
/// as written.
pub(crate) fn existing_canonical(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(resolved) = existing.canonicalize() {
            let mut full = resolved;
            full.extend(rest.iter().rev());
            return Some(full);
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    #[test]
    fn reads_writes_and_removes_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = WorkspaceDir::open(&root).unwrap();
        let file = root.join("a/b/c.txt");
        assert_eq!(ws.read(&file, 1 << 20).unwrap(), None);
        assert_eq!(ws.file_type(&file).unwrap(), None);
        ws.write(&file, b"one", Some(0o640)).unwrap();
        assert_eq!(
            ws.read(&file, 1 << 20).unwrap().as_deref(),
            Some(&b"one"[..])
        );
        assert_eq!(ws.permissions(&file).unwrap(), 0o640);
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(
            ws.file_type(&root.join("a")).unwrap(),
            Some(FileType::Directory)
        );
        ws.remove(&file).unwrap();
        assert!(!file.exists());
        let err = ws.open_file(&root.join("a")).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
    }

    /// The workspace handle as it works without `openat2`.
    fn walking(root: &Path) -> WorkspaceDir {
        WorkspaceDir {
            openat2: false,
            ..WorkspaceDir::open(root).unwrap()
        }
    }

    #[test]
    fn links_anywhere_in_the_path_are_refused_and_named() {
        for walk in [false, true] {
            links_are_refused(walk);
        }
    }

    #[test]
    fn a_racing_link_never_leads_out_with_or_without_openat2() {
        for walk in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("secret"), "s").unwrap();
            let root = dir.path().canonicalize().unwrap();
            let d = root.join("d");
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("secret"), "inside").unwrap();
            let ws = if walk {
                walking(&root)
            } else {
                WorkspaceDir::open(&root).unwrap()
            };
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let racer = {
                let (stop, d, parked) = (stop.clone(), d.clone(), root.join("parked"));
                let outside = outside.path().to_path_buf();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let _ = std::fs::rename(&d, &parked);
                        let _ = symlink(&outside, &d);
                        let _ = std::fs::remove_file(&d);
                        let _ = std::fs::rename(&parked, &d);
                    }
                })
            };
            let mut read_outside = 0;
            for i in 0..500 {
                let _ = ws.write(&d.join(format!("f{i}")), b"x", None);
                if ws
                    .read(&d.join("secret"), 1 << 20)
                    .is_ok_and(|r| r.as_deref() == Some(b"s"))
                {
                    read_outside += 1;
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            racer.join().unwrap();
            let escaped = std::fs::read_dir(outside.path()).unwrap().count();
            assert_eq!((escaped, read_outside), (1, 0), "walk: {walk}");
        }
    }

    fn links_are_refused(walk: bool) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let root = dir.path().canonicalize().unwrap();
        symlink(outside.path(), root.join("out")).unwrap();
        symlink(outside.path().join("secret"), root.join("file")).unwrap();
        std::fs::create_dir(root.join("inside")).unwrap();
        symlink("inside", root.join("near")).unwrap();
        let ws = if walk {
            walking(&root)
        } else {
            WorkspaceDir::open(&root).unwrap()
        };
        for (path, link) in [
            ("out/secret", "out"),
            ("file", "file"),
            ("near/new.txt", "near"),
        ] {
            let err = ws.read(&root.join(path), 1 << 20).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{link} is a symbolic link")),
                "{path}: {err}"
            );
            let err = ws.write(&root.join(path), b"x", None).unwrap_err();
            assert!(err.to_string().contains("symbolic link"), "{path}: {err}");
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert!(!root.join("inside/new.txt").exists());
        // Removing a link removes the link, never what it points to.
        ws.remove(&root.join("file")).unwrap();
        assert!(outside.path().join("secret").exists());
    }

    #[test]
    fn shipped_files_follow_links_inside_only_and_are_regular() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("AGENTS.md"), "rules").unwrap();
        symlink("AGENTS.md", root.join("CLAUDE.md")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        symlink("../AGENTS.md", root.join("sub/up.md")).unwrap();
        symlink(outside.path().join("secret"), root.join("out.md")).unwrap();
        symlink(outside.path(), root.join("outdir")).unwrap();
        for device in ["/dev/zero", "/dev/stdin", "/proc/self/pagemap"] {
            let name = device.rsplit('/').next().unwrap();
            symlink(device, root.join(name)).unwrap();
        }
        symlink("missing", root.join("dangling")).unwrap();
        let ws = WorkspaceDir::open(&root).unwrap();
        for path in ["CLAUDE.md", "sub/up.md", "AGENTS.md"] {
            let read = ws.read_shipped(Path::new(path), 1 << 20).unwrap();
            assert_eq!(read.as_deref(), Some(&b"rules"[..]), "{path}");
        }
        // By the workspace's absolute path too.
        let read = ws.read_shipped(&root.join("CLAUDE.md"), 1 << 20).unwrap();
        assert_eq!(read.as_deref(), Some(&b"rules"[..]));
        assert_eq!(ws.read_shipped(Path::new("none"), 1 << 20).unwrap(), None);
        for path in [
            "out.md",
            "outdir/secret",
            "zero",
            "stdin",
            "pagemap",
            "dangling",
        ] {
            let Err(err) = ws.read_shipped(Path::new(path), 1 << 20) else {
                panic!("{path} was read");
            };
            assert!(!err.to_string().is_empty(), "{path}");
        }
        let err = ws.read_shipped(Path::new("out.md"), 1).unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        assert_eq!(
            ws.read_shipped(Path::new("AGENTS.md"), 2)
                .unwrap_err()
                .kind(),
            io::ErrorKind::FileTooLarge
        );
    }

    #[test]
    fn files_with_other_hard_links_are_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("real"), "keep").unwrap();
        std::fs::hard_link(root.join("real"), root.join("alias")).unwrap();
        let ws = WorkspaceDir::open(&root).unwrap();
        let err = ws.write(&root.join("alias"), b"x", None).unwrap_err();
        assert!(err.to_string().contains("2 hard links"), "{err}");
        assert_eq!(std::fs::read_to_string(root.join("real")).unwrap(), "keep");
    }

    #[test]
    fn fifos_are_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("pipe"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let ws = WorkspaceDir::open(&root).unwrap();
        let err = ws.read(&root.join("pipe"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        // No reader: the open fails at once (ENXIO) instead of waiting for one.
        assert!(ws.write(&root.join("pipe"), b"x", None).is_err());
    }

    #[test]
    fn own_folders_and_their_files_are_never_reached_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = WorkspaceDir::open(&root).unwrap();
        // Missing and not to be made; then made, with the folders on the way.
        assert!(
            ws.own_dir(Path::new(".coder/sessions"), false)
                .unwrap()
                .is_none()
        );
        let own = ws
            .own_dir(Path::new(".coder/sessions"), true)
            .unwrap()
            .unwrap();
        // A dangling link is left alone: nothing is made where it points.
        symlink(
            outside.path().join("planted"),
            root.join(".coder/sessions/.gitignore"),
        )
        .unwrap();
        assert!(!own.create_new(".gitignore", b"*").unwrap());
        assert!(own.create_new("new", b"x").unwrap());
        // Links to files, devices and FIFOs are refused, read or written.
        std::fs::write(outside.path().join("rc"), "keep").unwrap();
        symlink(
            outside.path().join("rc"),
            root.join(".coder/sessions/a.jsonl"),
        )
        .unwrap();
        symlink("/dev/zero", root.join(".coder/sessions/z.json")).unwrap();
        for name in ["a.jsonl", "z.json"] {
            let err = own.read(name, 1 << 20).unwrap_err();
            assert!(is_link_refusal(&err), "{name}: {err}");
            assert!(
                err.to_string()
                    .starts_with(&format!(".coder/sessions/{name} is a symbolic link")),
                "{err}"
            );
            assert!(is_link_refusal(&own.append(name).unwrap_err()));
        }
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join(".coder/sessions/pipe.json"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let err = own.read("pipe.json", 1 << 20).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        // Appending makes the file once; a file with another hard link is not written.
        let (_, made) = own.append("s.jsonl").unwrap();
        assert!(made);
        assert!(!own.append("s.jsonl").unwrap().1);
        std::fs::hard_link(
            root.join(".coder/sessions/s.jsonl"),
            outside.path().join("other"),
        )
        .unwrap();
        assert!(
            own.append("s.jsonl")
                .unwrap_err()
                .to_string()
                .contains("2 hard links")
        );
        // An atomic write replaces a link itself, leaving its target and no temporary file.
        own.write_atomic("a.jsonl", |file| file.write_all(b"new"))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("rc")).unwrap(),
            "keep"
        );
        assert_eq!(own.read("a.jsonl", 1 << 20).unwrap().unwrap(), b"new");
        let mut names = own.names().unwrap();
        names.sort();
        assert_eq!(
            names,
            [
                ".gitignore",
                "a.jsonl",
                "new",
                "pipe.json",
                "s.jsonl",
                "z.json"
            ]
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 2);
        // A linked folder on the way is refused, made or not.
        let other = tempfile::tempdir().unwrap();
        let linked = other.path().canonicalize().unwrap();
        symlink(outside.path(), linked.join(".coder")).unwrap();
        let ws = WorkspaceDir::open(&linked).unwrap();
        for create in [false, true] {
            let err = ws
                .own_dir(Path::new(".coder/sessions"), create)
                .unwrap_err();
            assert!(is_link_refusal(&err), "{err}");
            assert!(
                err.to_string().starts_with(".coder is a symbolic link"),
                "{err}"
            );
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 2);
    }
}
