//! A session's private temporary directory (`coder-sandbox-XXXXXX` in the system's
//! temporary directory, also `TMPDIR` to confined commands), and what sessions that were
//! killed left of theirs.
//!
//! A session holds an exclusive `flock` on its directory for as long as it lives (on a
//! descriptor of its own, closed on exec, so no command inherits it). A session killed
//! before it could remove its directory (SIGKILL, a crash, the machine's power) leaves
//! it, with whatever its commands wrote there, and no lock: the lock ended with the
//! process. The next session to make its own removes such directories first
//! ([`remove_abandoned`]). A lock is what tells, not a process id: a session in another
//! PID namespace sharing the same `/tmp` still holds its lock. A directory made in the
//! last minute is left alone too, whether locked or not: a session takes hold of its
//! directory just after making it.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};

/// The prefix of every session's private temporary directory.
pub(crate) const PREFIX: &str = "coder-sandbox-";

/// How old an unlocked directory must be before it is taken to be abandoned.
const SETTLED: Duration = Duration::from_secs(60);

/// A session's private temporary directory, locked while it lives.
#[derive(Debug)]
pub(crate) struct SessionTempDir {
    dir: tempfile::TempDir,
    /// The directory itself, opened and locked: the lock lasts while this is open.
    _lock: File,
}

impl SessionTempDir {
    /// Removes the abandoned directories of killed sessions in `parent`, then makes this
    /// session's own there and takes hold of it.
    pub fn make(parent: &Path) -> std::io::Result<Self> {
        Self::make_named(parent, PREFIX)
    }

    /// [`SessionTempDir::make`] for directories named `prefix...` (each use has its own, so
    /// one use never removes another's).
    pub fn make_named(parent: &Path, prefix: &str) -> std::io::Result<Self> {
        remove_abandoned(parent, prefix);
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        let lock = File::open(dir.path())?;
        // Where the file system has no locks, nobody can take a lock to sweep either.
        if let Err(err) = flock(&lock, FlockOperation::NonBlockingLockExclusive) {
            tracing::debug!("cannot lock {}: {err}", dir.path().display());
        }
        Ok(Self { dir, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Removes the directory and what commands left in it.
    pub fn close(self) -> std::io::Result<()> {
        self.dir.close()
    }
}

/// Removes the directories in `parent` that sessions killed before they could clean up
/// left: named as sessions name theirs, real directories (not links) of this user, older
/// than [`SETTLED`], and locked by no live session. Best effort: what cannot be removed
/// stays.
fn remove_abandoned(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let user = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        // The lock is held while the directory goes, so no session takes it meanwhile;
        // `remove_dir_all` follows no link out of it.
        if let Some(_held) = lock_abandoned(&path, user)
            && let Err(err) = std::fs::remove_dir_all(&path)
        {
            tracing::debug!("cannot remove {}: {err}", path.display());
        }
    }
}

/// The lock of `path` when it is a settled directory of `user` that no live session holds.
fn lock_abandoned(path: &Path, user: u32) -> Option<File> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let age = meta.modified().ok()?.elapsed().ok()?;
    if !meta.is_dir() || meta.uid() != user || age < SETTLED {
        return None;
    }
    let dir = File::open(path).ok()?;
    flock(&dir, FlockOperation::NonBlockingLockExclusive).ok()?;
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `path`'s modification time two minutes back, past [`SETTLED`].
    fn age(path: &Path) {
        let ago = std::time::SystemTime::now() - Duration::from_secs(120);
        File::open(path).unwrap().set_modified(ago).unwrap();
    }

    #[test]
    fn a_link_named_as_a_sessions_directory_is_not_followed() {
        let parent = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("keep.txt"), "x").unwrap();
        age(victim.path());
        let link = parent.path().join("coder-sandbox-planted");
        std::os::unix::fs::symlink(victim.path(), &link).unwrap();
        let made = SessionTempDir::make(parent.path()).unwrap();
        assert!(
            victim.path().join("keep.txt").exists(),
            "the link was followed"
        );
        assert!(
            link.symlink_metadata().is_ok(),
            "the link itself is not ours either"
        );
        let path = made.path().to_path_buf();
        made.close().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_live_sessions_directory_is_kept_whatever_its_age() {
        let parent = tempfile::tempdir().unwrap();
        let live = SessionTempDir::make(parent.path()).unwrap();
        std::fs::write(live.path().join("work.txt"), "x").unwrap();
        age(live.path());
        let other = SessionTempDir::make(parent.path()).unwrap();
        assert!(live.path().join("work.txt").exists());
        drop(live);
        drop(other);
    }
}
