//! Stale-write protection: what the agent last saw of each file it read or wrote, as a
//! content hash, so that `edit`, `write` and `apply_patch` refuse to change a file that
//! changed since (on disk, by a command, by the person, or in the editor's buffer).
//!
//! One record per conversation: a conversation's history is what its model has seen, so a
//! file another conversation changed is stale for this one until it reads the file again.
//! A hash, not a modification time: two writes within the file system's time granularity
//! (or a change that restores the time) would go unnoticed otherwise. Files the agent never
//! read are not checked; records live as long as the session (a resumed session starts with
//! none).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::sync::lock;

/// The files a conversation's agent read or wrote, by resolved path, with a hash of the
/// content it saw (`None`: it deleted the file).
#[derive(Debug, Default)]
pub struct SeenFiles {
    files: Mutex<HashMap<PathBuf, Option<u64>>>,
}

impl SeenFiles {
    /// Records that the agent saw (read or wrote) `content` at `path`; `None` when it
    /// deleted the file.
    pub fn saw(&self, path: &Path, content: Option<u64>) {
        lock(&self.files).insert(path.to_path_buf(), content);
    }

    /// Fails when the agent saw `path` and its content is not `current` now (`None`: the
    /// file does not exist). `label` names the file to the model.
    pub fn check(&self, path: &Path, label: &str, current: Option<&[u8]>) -> Result<(), String> {
        let Some(seen) = lock(&self.files).get(path).copied() else {
            return Ok(());
        };
        if seen == current.map(content_hash) {
            return Ok(());
        }
        Err(format!(
            "{label} has changed since you last read it (on disk or in the editor); nothing \
             was written. Read the file again, then make the change against its current \
             content."
        ))
    }
}

/// The hash [`SeenFiles`] keeps of a file's content.
pub fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// A reader that hashes what passes through it, so a file read once in a stream is hashed
/// as [`content_hash`] hashes it whole.
pub struct HashingReader<R> {
    inner: R,
    hasher: DefaultHasher,
}

impl<R: Read> HashingReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: DefaultHasher::new(),
        }
    }

    /// The hash of everything read so far.
    pub fn hash(&self) -> u64 {
        self.hasher.finish()
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.hasher.write(&buf[..read]);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};

    use super::*;

    #[test]
    fn a_streamed_read_hashes_as_the_whole_content() {
        let text = "first line\nsecond\r\nthird without end".repeat(1000);
        let mut reader = BufReader::with_capacity(7, HashingReader::new(text.as_bytes()));
        let lines = reader.by_ref().split(b'\n').count();
        assert!(lines > 1);
        assert_eq!(reader.get_ref().hash(), content_hash(text.as_bytes()));
    }

    #[test]
    fn only_files_seen_with_other_content_are_refused() {
        let seen = SeenFiles::default();
        let path = Path::new("/w/a.txt");
        assert!(seen.check(path, "a.txt", Some(b"anything")).is_ok());
        seen.saw(path, Some(content_hash(b"one")));
        assert!(seen.check(path, "a.txt", Some(b"one")).is_ok());
        let err = seen.check(path, "a.txt", Some(b"two")).unwrap_err();
        assert!(
            err.starts_with("a.txt has changed since you last read it"),
            "{err}"
        );
        assert!(seen.check(path, "a.txt", None).is_err());
        seen.saw(path, None);
        assert!(seen.check(path, "a.txt", None).is_ok());
    }
}
