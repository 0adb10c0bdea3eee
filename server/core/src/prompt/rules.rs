//! Rules files: instructions the person keeps at user level and in the workspace, told to
//! the model in the system prompt, each under its path.
//!
//! Read, in this order (the most general first, the nearest last, so that a later file wins
//! where they disagree):
//! 1. the user-level file, `AGENTS.md` beside the user configuration file (see
//!    [`crate::user_config_path`]);
//! 2. `.coder/rules/*.md` in the workspace, sorted by name;
//! 3. `AGENTS.md` then `CLAUDE.md` in the workspace root and in every directory down to the
//!    one coder was started in.
//!
//! Workspace files are read through the workspace handle
//! ([`WorkspaceDir::read_shipped_head`]): a symbolic link is followed only to a file inside
//! the workspace (`CLAUDE.md -> AGENTS.md`), so a link cannot smuggle a file from outside
//! the workspace into the prompt, and a FIFO or a device is refused. Each file is cut at [`MAX_FILE_BYTES`] and all of them together at
//! [`MAX_TOTAL_BYTES`]; what is cut or refused is reported as a warning. Rules are prompt
//! text, not commands: they are read whether or not the folder is trusted. A session keeps
//! them and reads them again when they change on disk (`session/files.rs`); a file that
//! cannot be read then keeps its last good text ([`load_rules_keeping`]).

use std::path::{Path, PathBuf};

use crate::tools::beneath::WorkspaceDir;

/// The most bytes of one rules file that go into the prompt.
pub(crate) const MAX_FILE_BYTES: usize = 32 * 1024;
/// The most bytes of all rules files together.
pub(crate) const MAX_TOTAL_BYTES: usize = 64 * 1024;

/// The names read in each directory from the workspace root down to the start directory.
const DIRECTORY_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// One rules file as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleFile {
    /// Where it was read, told to the model as the file's label.
    pub path: PathBuf,
    /// Its text, cut at the size limit.
    pub text: String,
    /// Its size on disk in bytes.
    pub size: u64,
    /// Whether the text was cut.
    pub truncated: bool,
}

/// The rules files found, and a warning for each one cut or refused.
#[derive(Debug, Default, Clone)]
pub(crate) struct LoadedRules {
    pub files: Vec<RuleFile>,
    pub warnings: Vec<String>,
}

/// Reads the rules of a session in `workspace`, started in `started_in`, with the user-level
/// file `user_file`. A file that exists but cannot be read keeps its text of `previous`
/// (the last good read), with a warning saying so.
pub(crate) fn load_rules_keeping(
    workspace: &Path,
    started_in: Option<&Path>,
    user_file: Option<&Path>,
    previous: &[RuleFile],
) -> LoadedRules {
    let mut loaded = LoadedRules::default();
    let mut budget = MAX_TOTAL_BYTES;
    if let Some(path) = user_file {
        match crate::bounded::read_head(path, MAX_FILE_BYTES as u64 + 4) {
            Ok((bytes, size)) => loaded.add(path, &bytes, size, &mut budget),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => loaded.refuse(path, &err.to_string(), previous),
        }
    }
    let dir = match WorkspaceDir::open(workspace) {
        Ok(dir) => dir,
        Err(err) => {
            loaded.warnings.push(format!("rules not read: {err}"));
            return loaded;
        }
    };
    let root = dir.root().to_path_buf();
    for path in rules_folder(&root) {
        loaded.read(&dir, &path, &mut budget, previous);
    }
    for folder in folders_down_to(&root, workspace, started_in) {
        for name in DIRECTORY_FILES {
            loaded.read(&dir, &folder.join(name), &mut budget, previous);
        }
    }
    loaded
}

impl LoadedRules {
    fn read(&mut self, dir: &WorkspaceDir, path: &Path, budget: &mut usize, previous: &[RuleFile]) {
        // A few bytes past the cut tell a file cut there from one that ends there; the rest
        // of a larger file is not read.
        match dir.read_shipped_head(path, MAX_FILE_BYTES as u64 + 4) {
            Ok(Some((bytes, size))) => self.add(path, &bytes, size, budget),
            Ok(None) => {}
            Err(err) => self.refuse(path, &err.to_string(), previous),
        }
    }

    /// Reports a file that cannot be read; its last good text stays, when there is one.
    fn refuse(&mut self, path: &Path, why: &str, previous: &[RuleFile]) {
        match previous.iter().find(|file| file.path == path) {
            Some(kept) => {
                self.warnings.push(format!(
                    "rules file {} not read: {why}; its last good version is kept",
                    path.display()
                ));
                self.files.push(kept.clone());
            }
            None => self
                .warnings
                .push(format!("rules file {} not read: {why}", path.display())),
        }
    }

    /// Adds rules file `path` of `size` bytes, whose first bytes are `bytes`.
    fn add(&mut self, path: &Path, bytes: &[u8], size: u64, budget: &mut usize) {
        let limit = MAX_FILE_BYTES.min(*budget);
        if limit == 0 {
            self.warnings.push(format!(
                "rules file {} left out: the rules files together exceed {} KiB",
                path.display(),
                MAX_TOTAL_BYTES / 1024
            ));
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let truncated = text.len() > limit || size > bytes.len() as u64;
        let text = if truncated {
            let mut end = limit.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.warnings.push(format!(
                "rules file {} cut to {end} of its {size} bytes (at most {} KiB a file, {} KiB \
                 in all)",
                path.display(),
                MAX_FILE_BYTES / 1024,
                MAX_TOTAL_BYTES / 1024
            ));
            text[..end].to_owned()
        } else {
            text.into_owned()
        };
        *budget -= text.len();
        self.files.push(RuleFile {
            path: path.to_path_buf(),
            text,
            size,
            truncated,
        });
    }
}

/// The directories whose `AGENTS.md` and `CLAUDE.md` are rules: the workspace root, then
/// each directory down to `started_in`.
pub(crate) fn folders_down_to_start(workspace: &Path, started_in: Option<&Path>) -> Vec<PathBuf> {
    folders_down_to(workspace, workspace, started_in)
}

/// `.coder/rules/*.md` under `root`, sorted by name (links out are refused when read).
fn rules_folder(root: &Path) -> Vec<PathBuf> {
    let folder = root.join(".coder").join("rules");
    let is_dir = std::fs::symlink_metadata(&folder).is_ok_and(|meta| meta.is_dir());
    let Ok(entries) = std::fs::read_dir(&folder)
        .map_err(|_| ())
        .and_then(|entries| if is_dir { Ok(entries) } else { Err(()) })
    else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    paths.sort();
    paths
}

/// The workspace root, then each directory down to `started_in` (the root alone when coder
/// was started there, or the start directory is not below the root).
fn folders_down_to(root: &Path, workspace: &Path, started_in: Option<&Path>) -> Vec<PathBuf> {
    let mut folders = vec![root.to_path_buf()];
    let below = started_in.and_then(|dir| {
        dir.strip_prefix(workspace)
            .or_else(|_| dir.strip_prefix(root))
            .ok()
    });
    let mut folder = root.to_path_buf();
    for part in below.into_iter().flat_map(Path::components) {
        if let std::path::Component::Normal(name) = part {
            folder.push(name);
            folders.push(folder.clone());
        }
    }
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_run_from_the_root_down_to_the_start_directory() {
        let root = Path::new("/w");
        assert_eq!(
            folders_down_to(root, root, Some(Path::new("/w/a/b"))),
            [PathBuf::from("/w"), "/w/a".into(), "/w/a/b".into()]
        );
        assert_eq!(folders_down_to(root, root, None), [PathBuf::from("/w")]);
    }

    #[test]
    fn a_long_file_is_cut_on_a_character_boundary() {
        let mut loaded = LoadedRules::default();
        let mut budget = MAX_TOTAL_BYTES;
        let text = "é".repeat(MAX_FILE_BYTES);
        let size = text.len() as u64;
        loaded.add(
            Path::new("/w/AGENTS.md"),
            text.as_bytes(),
            size,
            &mut budget,
        );
        let file = &loaded.files[0];
        assert!(file.truncated);
        assert_eq!(file.text.len(), MAX_FILE_BYTES);
        assert_eq!(file.size, 2 * MAX_FILE_BYTES as u64);
        assert_eq!(loaded.warnings.len(), 1);
    }

    #[test]
    fn a_file_of_gigabytes_is_read_no_further_than_its_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("AGENTS.md");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(1 << 30).unwrap();
        let loaded = load_rules_keeping(dir.path(), None, None, &[]);
        let rules = &loaded.files[0];
        assert!(rules.truncated);
        assert_eq!(rules.size, 1 << 30);
        assert_eq!(rules.text.len(), MAX_FILE_BYTES);
        assert!(
            loaded.warnings[0].contains("cut to 32768 of its 1073741824 bytes"),
            "{:?}",
            loaded.warnings
        );
    }
}
