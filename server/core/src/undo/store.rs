//! The private store of recorded file contents: one file per content, numbered, in a
//! `coder-undo-*` directory of the system's temporary directory (which confined commands see
//! read-only), removed when the session ends or by the next session when one was killed.
//! Nothing of it goes into the repository.

use std::collections::HashSet;
use std::path::Path;

use crate::sandbox::temp_dir::SessionTempDir;

/// How the private stores are named in the system's temporary directory.
const STORE_PREFIX: &str = "coder-undo-";

/// A content in the store.
pub(super) type Blob = u64;

pub(super) struct Store {
    dir: SessionTempDir,
    next: Blob,
    /// The bytes of each content held, by blob.
    held: std::collections::HashMap<Blob, u64>,
    bytes: u64,
}

impl Store {
    pub fn make() -> Result<Self, String> {
        let dir = SessionTempDir::make_named(&std::env::temp_dir(), STORE_PREFIX)
            .map_err(|err| format!("cannot make a store for checkpoints: {err}"))?;
        Ok(Self {
            dir,
            next: 0,
            held: std::collections::HashMap::new(),
            bytes: 0,
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The bytes the store holds.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Keeps `content`; `None` when the store would pass `max` bytes or cannot be written.
    pub fn put(&mut self, content: &[u8], max: u64) -> Option<Blob> {
        let len = content.len() as u64;
        if self.bytes + len > max {
            return None;
        }
        let blob = self.next;
        if let Err(err) = std::fs::write(self.file(blob), content) {
            tracing::debug!("cannot keep a content for /undo: {err}");
            return None;
        }
        self.next += 1;
        self.held.insert(blob, len);
        self.bytes += len;
        Some(blob)
    }

    pub fn get(&self, blob: Blob) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.file(blob))
    }

    /// Removes every content but those of `kept`.
    pub fn retain(&mut self, kept: &HashSet<Blob>) {
        let gone: Vec<Blob> = self
            .held
            .keys()
            .filter(|blob| !kept.contains(blob))
            .copied()
            .collect();
        for blob in gone {
            let _ = std::fs::remove_file(self.file(blob));
            if let Some(len) = self.held.remove(&blob) {
                self.bytes -= len;
            }
        }
    }

    /// Removes the store (the session ends).
    pub fn close(self) {
        if let Err(err) = self.dir.close() {
            tracing::debug!("cannot remove the checkpoint store: {err}");
        }
    }

    fn file(&self, blob: Blob) -> std::path::PathBuf {
        self.dir.path().join(blob.to_string())
    }
}
