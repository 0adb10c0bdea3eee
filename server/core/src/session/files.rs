//! The files a session keeps in memory: rules, skills and custom commands, read at start
//! and again when the watcher sees them change (`session/reload.rs`). A file that cannot be
//! used on a reload keeps its last good version, with a warning naming it.
//!
//! When the platform's watcher could not start, nothing tells the session that files
//! changed: it reads them again at each task start and each listing instead, as it did
//! before it watched ([`super::Session::workspace_files`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coder_protocol::ReloadedKind;

use super::extensions::{folders, user_folder};
use crate::commands::Commands;
use crate::config::Config;
use crate::prompt::rules::{LoadedRules, load_rules_keeping};
use crate::skills::Skill;

/// One reading of the rules, skills and commands.
#[derive(Debug, Default, Clone)]
pub(crate) struct WorkspaceFiles {
    /// The rules, with the warnings every task repeats (a file cut, a link refused).
    pub rules: LoadedRules,
    pub skills: Vec<Skill>,
    /// Why each `SKILL.md` that is not offered (or kept at its last good version) is so:
    /// the `skill` tool tells the model when it asks for one by name.
    pub skill_problems: Vec<String>,
    pub commands: Commands,
}

impl WorkspaceFiles {
    /// Reads all three, and the warnings of the skills that cannot be used.
    pub fn load(config: &Config) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let mut files = Self::default();
        for kind in [
            ReloadedKind::Rules,
            ReloadedKind::Skills,
            ReloadedKind::Commands,
        ] {
            let (next, more) = files.reload(kind, config);
            files = next;
            // A broken command is reported when it is used, as before the session watched.
            if kind == ReloadedKind::Skills {
                warnings.extend(more);
            }
        }
        (files, warnings)
    }

    /// These files with `kind` read again, keeping the last good version of a file that
    /// cannot be used; the warnings of skills and commands (those of rules stay in
    /// `rules.warnings`, which each task reports).
    pub fn reload(&self, kind: ReloadedKind, config: &Config) -> (Self, Vec<String>) {
        let mut next = self.clone();
        let mut warnings = Vec::new();
        match kind {
            ReloadedKind::Rules => {
                next.rules = load_rules_keeping(
                    &config.workspace,
                    config.started_in.as_deref(),
                    config.user_rules_file().as_deref(),
                    &self.rules.files,
                );
            }
            ReloadedKind::Skills => {
                let (skills, problems) =
                    crate::skills::load_keeping(&folders(config), &self.skills);
                next.skills = skills;
                next.skill_problems = problems.clone();
                warnings = problems;
            }
            ReloadedKind::Commands => {
                next.commands = Commands::load_keeping(&folders(config), &self.commands);
                warnings = next
                    .commands
                    .broken
                    .iter()
                    .map(|broken| {
                        let kept = next.commands.get(&broken.name).is_some();
                        format!(
                            "command file {}: {}{}",
                            broken.path.display(),
                            broken.problem,
                            if kept {
                                "; its last good version is kept"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect();
            }
            ReloadedKind::Config | ReloadedKind::Mcp => {}
        }
        (next, warnings)
    }
}

/// Shared by the session's tasks and its reload loop.
pub(crate) type SharedFiles = std::sync::Mutex<Arc<WorkspaceFiles>>;

/// What a changed `path` means to a session: which of its files to read again. `None` for
/// a path the session does not read.
pub(crate) fn kind_of(path: &Path, config: &Config) -> Option<ReloadedKind> {
    let coder = config.workspace.join(".coder");
    let user = user_folder(config);
    let under = |name: &str| {
        path.starts_with(coder.join(name))
            || user
                .as_ref()
                .is_some_and(|user| path.starts_with(user.join(name)))
    };
    if under("skills") {
        return Some(ReloadedKind::Skills);
    }
    if under("commands") {
        return Some(ReloadedKind::Commands);
    }
    if path.starts_with(coder.join("rules")) || Some(path) == config.user_rules_file().as_deref() {
        return Some(ReloadedKind::Rules);
    }
    if path == coder.join("config.json") || Some(path) == config.user_file.as_deref() {
        return Some(ReloadedKind::Config);
    }
    if path == config.workspace.join(".mcp.json") {
        return Some(ReloadedKind::Mcp);
    }
    let name = path.file_name()?;
    (path.starts_with(&config.workspace) && (name == "AGENTS.md" || name == "CLAUDE.md"))
        .then_some(ReloadedKind::Rules)
}

/// The folders a session watches for these files (see `watch/mod.rs` for why no more).
pub(crate) fn watched_folders(config: &Config) -> Vec<crate::watch::WatchedFolder> {
    use crate::watch::WatchedFolder;
    let flat = |path: PathBuf| WatchedFolder {
        path,
        recursive: false,
    };
    let deep = |path: PathBuf| WatchedFolder {
        path,
        recursive: true,
    };
    let coder = config.workspace.join(".coder");
    let mut wanted: Vec<WatchedFolder> = crate::prompt::rules::folders_down_to_start(
        &config.workspace,
        config.started_in.as_deref(),
    )
    .into_iter()
    .map(flat)
    .collect();
    wanted.extend([
        flat(coder.clone()),
        flat(coder.join("rules")),
        flat(coder.join("commands")),
        deep(coder.join("skills")),
    ]);
    if let Some(user) = user_folder(config) {
        wanted.extend([
            flat(user.join("commands")),
            deep(user.join("skills")),
            flat(user),
        ]);
    }
    wanted
}
