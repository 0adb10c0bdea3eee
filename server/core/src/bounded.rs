//! Reading a file that a repository (or anyone but coder) wrote, within a size: a file past
//! it is refused by its size before a byte is read. A repository can ship a file of
//! gigabytes that git stores in kilobytes (it repeats itself), and a clone writes it out
//! whole; read at startup, it would take that much memory.
//!
//! Every file is opened with `O_NONBLOCK` and must be a regular file ([`regular`]): a FIFO
//! or a device (`/dev/zero`, `/dev/stdin`, `/proc/self/pagemap`, which report no size) is
//! refused before a byte is read, so it can neither hang coder nor feed it without end.
//! The files a repository ships are read through the workspace handle
//! (`WorkspaceDir::read_shipped` in `beneath.rs`), which adds that no link leads out of the
//! workspace; the functions here that take a path are for the person's own files.

use std::fs::File;
use std::io::{self, Read, Take};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// The most coder reads of a configuration file (`.coder/config.json`, the person's own, a
/// `.mcp.json`, a repository's `.git/config`): a file past it is refused by its size.
pub(crate) const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The error for a file past `max` bytes (callers name the file).
pub(crate) fn too_large(max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "it is larger than {}, the most coder reads of such a file",
            size(max)
        ),
    )
}

/// `bytes` for people: in MiB or KiB when whole.
pub(crate) fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// `file` to be read, unless it holds more than `max` bytes (`FileTooLarge`). What is read
/// through the handle stops at `max` even if the file grows meanwhile.
pub(crate) fn within(file: File, max: u64) -> io::Result<Take<File>> {
    if file.metadata()?.len() > max {
        return Err(too_large(max));
    }
    Ok(file.take(max))
}

/// The bytes of `file`, unless it holds more than `max` (see [`within`]).
pub(crate) fn read_file(file: File, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    within(file, max)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The first `max` bytes of `file` and its whole size: the rest of a larger file is not
/// read.
pub(crate) fn head_of(file: File, max: u64) -> io::Result<(Vec<u8>, u64)> {
    let size = file.metadata()?.len();
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes)?;
    Ok((bytes, size))
}

/// `fd` as a file when it is a regular file; an error naming what it is otherwise. `fd`
/// was opened with `O_NONBLOCK` (so a FIFO did not hang the open); a regular file goes back
/// to blocking reads and writes.
pub(crate) fn regular(fd: OwnedFd) -> io::Result<File> {
    let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
    match kind {
        FileType::RegularFile => {
            let flags = rustix::fs::fcntl_getfl(&fd)?;
            rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)?;
            Ok(File::from(fd))
        }
        FileType::Directory => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory, not a file",
        )),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file (a FIFO, socket or device); coder only reads and \
             writes regular files",
        )),
    }
}

/// The regular file at `path` (links followed: the person's own files), opened for reading
/// without waiting on a FIFO (see [`regular`]).
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    regular(rustix::fs::open(path, flags, Mode::empty())?)
}

/// The bytes of `path`, unless it holds more than `max` (see [`within`]).
pub(crate) fn read(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_file(open_regular(path)?, max)
}

/// The first `max` bytes of `path` and its whole size (see [`head_of`]).
pub(crate) fn read_head(path: &Path, max: u64) -> io::Result<(Vec<u8>, u64)> {
    head_of(open_regular(path)?, max)
}

/// The text of `path` (UTF-8), unless it holds more than `max` bytes (see [`open`]).
pub(crate) fn read_to_string(path: &Path, max: u64) -> io::Result<String> {
    String::from_utf8(read(path, max)?)
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err.utf8_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_before_a_byte_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let Err(err) = read(path, 1 << 20) else {
                panic!("{} was read", path.display());
            };
            assert!(
                matches!(
                    err.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::IsADirectory
                ),
                "{}: {err}",
                path.display()
            );
        }
        // A `/proc` file is a regular file that says it is empty: it is read no further
        // than the bound.
        let Ok(bytes) = read(Path::new("/proc/self/pagemap"), 1 << 10) else {
            return;
        };
        assert!(bytes.len() <= 1 << 10, "{}", bytes.len());
    }

    #[test]
    fn a_file_past_the_bound_is_refused_by_its_size_and_one_within_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        File::create(&big).unwrap().set_len(3 << 20).unwrap();
        let err = read(&big, 2 << 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(
            err.to_string(),
            "it is larger than 2 MiB, the most coder reads of such a file"
        );
        let small = dir.path().join("small");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_to_string(&small, 2).unwrap(), "{}");
        assert_eq!(
            read(&small, 1).unwrap_err().kind(),
            io::ErrorKind::FileTooLarge
        );
    }
}
