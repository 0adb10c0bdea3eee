//! The private store of recorded file contents: one append-only pack file in a
//! `coder-undo-*` directory of the system's temporary directory (which confined commands see
//! read-only), removed when the session ends or by the next session when one was killed.
//! Nothing of it goes into the repository. A content is written with one append (a file
//! per content cost a file creation each, about half a millisecond here) and read back by
//! its place in the pack.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::sandbox::temp_dir::SessionTempDir;

/// How the private stores are named in the system's temporary directory.
const STORE_PREFIX: &str = "coder-undo-";
/// The pack's name in the store.
const PACK: &str = "pack";

/// A content in the store.
pub(super) type Blob = u64;

pub(super) struct Store {
    dir: SessionTempDir,
    pack: File,
    /// The pack's length (where the next content goes).
    end: u64,
    next: Blob,
    /// Where each content held is in the pack, and its length.
    held: HashMap<Blob, (u64, u64)>,
    /// The bytes of the contents held (the pack may hold more, of contents let go).
    bytes: u64,
}

impl Store {
    pub fn make() -> Result<Self, String> {
        let dir = SessionTempDir::make_named(&std::env::temp_dir(), STORE_PREFIX)
            .map_err(|err| format!("cannot make a store for checkpoints: {err}"))?;
        let pack = open_pack(dir.path())
            .map_err(|err| format!("cannot make a store for checkpoints: {err}"))?;
        Ok(Self {
            dir,
            pack,
            end: 0,
            next: 0,
            held: HashMap::new(),
            bytes: 0,
        })
    }

    /// Where the store lives (tests look inside it).
    #[cfg(test)]
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
        if let Err(err) = self.pack.write_all(content) {
            tracing::debug!("cannot keep a content for /undo: {err}");
            // What a failed write left at the end is not any content's.
            self.end = self.pack.metadata().map_or(self.end, |meta| meta.len());
            return None;
        }
        let blob = self.next;
        self.next += 1;
        self.held.insert(blob, (self.end, len));
        self.end += len;
        self.bytes += len;
        Some(blob)
    }

    pub fn get(&self, blob: Blob) -> std::io::Result<Vec<u8>> {
        let (at, len) =
            self.held.get(&blob).copied().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such record")
            })?;
        let mut bytes = vec![0; usize::try_from(len).map_err(std::io::Error::other)?];
        self.pack.read_exact_at(&mut bytes, at)?;
        Ok(bytes)
    }

    /// Lets go of every content but those of `kept`; the pack is written again without them
    /// when they are most of it.
    pub fn retain(&mut self, kept: &HashSet<Blob>) {
        self.held.retain(|blob, _| kept.contains(blob));
        self.bytes = self.held.values().map(|(_, len)| len).sum();
        if self.bytes * 2 > self.end {
            return;
        }
        if let Err(err) = self.repack() {
            tracing::debug!("cannot write the store for /undo again: {err}");
        }
    }

    /// Writes the contents held into a new pack, in place of the old one.
    fn repack(&mut self) -> std::io::Result<()> {
        let fresh = self.dir.path().join("pack.new");
        let mut pack = File::options()
            .create_new(true)
            .read(true)
            .append(true)
            .open(&fresh)?;
        let mut held = HashMap::with_capacity(self.held.len());
        let mut end = 0;
        for (blob, (at, len)) in &self.held {
            let mut bytes = vec![0; usize::try_from(*len).map_err(std::io::Error::other)?];
            self.pack.read_exact_at(&mut bytes, *at)?;
            pack.write_all(&bytes)?;
            held.insert(*blob, (end, *len));
            end += len;
        }
        std::fs::rename(&fresh, self.dir.path().join(PACK))?;
        self.pack = pack;
        self.held = held;
        self.end = end;
        Ok(())
    }

    /// Removes the store (the session ends).
    pub fn close(self) {
        drop(self.pack);
        if let Err(err) = self.dir.close() {
            tracing::debug!("cannot remove the checkpoint store: {err}");
        }
    }
}

fn open_pack(dir: &Path) -> std::io::Result<File> {
    File::options()
        .create_new(true)
        .read(true)
        .append(true)
        .open(dir.join(PACK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_come_back_and_a_repack_keeps_only_what_is_kept() {
        let mut store = Store::make().unwrap();
        let blobs: Vec<Blob> = (0..10)
            .map(|n| {
                store
                    .put(format!("content {n}").as_bytes(), 1 << 20)
                    .unwrap()
            })
            .collect();
        assert_eq!(store.get(blobs[3]).unwrap(), b"content 3");
        assert_eq!(store.put(&[0; 100], 150), None, "past the bound");
        let kept: HashSet<Blob> = [blobs[2], blobs[7]].into_iter().collect();
        store.retain(&kept);
        assert_eq!(store.bytes(), 18);
        assert_eq!(store.end, 18, "written again without the others");
        assert_eq!(store.get(blobs[2]).unwrap(), b"content 2");
        assert_eq!(store.get(blobs[7]).unwrap(), b"content 7");
        assert!(store.get(blobs[3]).is_err());
        let after = store.put(b"more", 1 << 20).unwrap();
        assert_eq!(store.get(after).unwrap(), b"more");
        let path = store.path().to_path_buf();
        store.close();
        assert!(!path.exists());
    }
}
