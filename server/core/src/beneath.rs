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
use std::os::fd::OwnedFd;
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
        let names = self.names(path)?;
        let Some((last, parents)) = names.split_last() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the workspace root cannot be removed",
            ));
        };
        let parent = self.walk(parents, false)?;
        rustix::fs::unlinkat(&parent, *last, AtFlags::empty()).map_err(io::Error::from)
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
                .map_err(|err| self.explain(err, &names[..=index]))?;
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
}
