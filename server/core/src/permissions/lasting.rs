//! Rules that last: what a person allowed or denied "always", recorded per project in their
//! own state (`permissions.json` beside the user-level configuration file, never in the
//! workspace, which a repository controls). Every session of the project, in every door,
//! reads them at each question; `permissions/list` and `/permissions` show them and
//! `permissions/remove` takes one away.
//!
//! ```json
//! { "rules": [ { "id": "…", "tool": "bash", "command": "cargo test", "decision": "allow",
//!   "project": "/home/me/src/app", "covers": "`cargo test` in this project" } ] }
//! ```
//!
//! The file is read bounded and written atomically; a file that cannot be read holds no
//! rule (a warning says why when a rule is recorded over it).

use std::path::{Path, PathBuf};

use coder_protocol::{PermissionRule, PolicyDecision};
use serde_json::{Value, json};

/// The most bytes the rules file may hold.
const MAX_RULES_BYTES: u64 = 4 << 20;

/// One project's lasting rules, in the person's state file.
#[derive(Debug, Clone)]
pub(crate) struct LastingRules {
    file: PathBuf,
    project: String,
}

impl LastingRules {
    /// The rules of `workspace` (canonical), kept beside the user-level configuration file
    /// `user_file`.
    pub fn new(user_file: &Path, workspace: &Path) -> Option<Self> {
        let file = user_file.parent()?.join("permissions.json");
        let project = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        Some(Self {
            file,
            project: project.to_string_lossy().into_owned(),
        })
    }

    fn read_all(&self) -> Vec<PermissionRule> {
        let Ok(text) = crate::bounded::read_to_string(&self.file, MAX_RULES_BYTES) else {
            return Vec::new();
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            return Vec::new();
        };
        value["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|rule| serde_json::from_value(rule.clone()).ok())
            .collect()
    }

    fn write_all(&self, rules: &[PermissionRule]) -> Result<(), String> {
        crate::trust::write_atomically(&self.file, &json!({ "rules": rules }))
            .map_err(|err| err.to_string())
    }

    /// This project's rules, oldest first.
    pub fn list(&self) -> Vec<PermissionRule> {
        self.read_all()
            .into_iter()
            .filter(|rule| rule.project == self.project)
            .collect()
    }

    /// Records a rule for this project (once: the same rule again changes nothing).
    pub fn add(
        &self,
        tool: &str,
        command: Option<&str>,
        folder: Option<&str>,
        decision: PolicyDecision,
        covers: &str,
    ) -> Result<(), String> {
        let mut rules = self.read_all();
        let same = |rule: &PermissionRule| {
            rule.project == self.project
                && rule.tool == tool
                && rule.command.as_deref() == command
                && rule.folder.as_deref() == folder
                && rule.decision == decision
        };
        if rules.iter().any(same) {
            return Ok(());
        }
        rules.push(PermissionRule {
            id: uuid::Uuid::now_v7().to_string(),
            tool: tool.to_owned(),
            command: command.map(str::to_owned),
            folder: folder.map(str::to_owned),
            decision,
            project: self.project.clone(),
            covers: covers.to_owned(),
        });
        self.write_all(&rules)
    }

    /// Removes this project's rule `id`; whether there was one.
    pub fn remove(&self, id: &str) -> Result<bool, String> {
        let mut rules = self.read_all();
        let before = rules.len();
        rules.retain(|rule| !(rule.project == self.project && rule.id == id));
        if rules.len() == before {
            return Ok(false);
        }
        self.write_all(&rules).map(|()| true)
    }

    /// The command shapes of `tool` this project's rules give `decision`.
    pub fn commands(&self, tool: &str, decision: PolicyDecision) -> Vec<String> {
        self.list()
            .into_iter()
            .filter(|rule| rule.tool == tool && rule.decision == decision)
            .filter_map(|rule| rule.command)
            .collect()
    }

    /// Whether a rule gives `tool` (no command shape) `decision` for a call whose paths are
    /// all under `folder` (`None`: a call on no files, which only a rule for the whole tool
    /// covers).
    pub fn covers_tool(&self, tool: &str, folder: Option<&str>, decision: PolicyDecision) -> bool {
        self.list().iter().any(|rule| {
            rule.tool == tool
                && rule.command.is_none()
                && rule.decision == decision
                && covers_folder(rule.folder.as_deref(), folder)
        })
    }
}

/// Whether a rule for `ruled` (`None`: the whole tool) covers a call whose paths are all
/// under `folder`: the call's folder is the rule's or one inside it, component by component
/// (`src` covers `src/parser`, not `srcs`).
pub(crate) fn covers_folder(ruled: Option<&str>, folder: Option<&str>) -> bool {
    match (ruled, folder) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(ruled), Some(folder)) => {
            ruled.is_empty()
                || folder == ruled
                || folder
                    .strip_prefix(ruled)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_last_per_project_and_go_one_by_one() {
        let home = tempfile::tempdir().unwrap();
        let user_file = home.path().join("coder/config.json");
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let rules = LastingRules::new(&user_file, one.path()).unwrap();
        let other = LastingRules::new(&user_file, two.path()).unwrap();
        rules
            .add(
                "bash",
                Some("cargo test"),
                None,
                PolicyDecision::Allow,
                "`cargo test`",
            )
            .unwrap();
        rules
            .add(
                "bash",
                Some("cargo test"),
                None,
                PolicyDecision::Allow,
                "`cargo test`",
            )
            .unwrap();
        rules
            .add(
                "write",
                None,
                None,
                PolicyDecision::Deny,
                "every `write` call",
            )
            .unwrap();
        rules
            .add(
                "edit",
                None,
                Some("src"),
                PolicyDecision::Allow,
                "`edit` on files under `src/`",
            )
            .unwrap();
        other
            .add("bash", Some("make"), None, PolicyDecision::Allow, "`make`")
            .unwrap();
        assert_eq!(
            rules.commands("bash", PolicyDecision::Allow),
            ["cargo test"]
        );
        assert!(rules.covers_tool("write", Some("docs"), PolicyDecision::Deny));
        assert!(!rules.covers_tool("write", Some("docs"), PolicyDecision::Allow));
        // A folder rule covers calls on files under it, and no others.
        assert!(rules.covers_tool("edit", Some("src"), PolicyDecision::Allow));
        assert!(rules.covers_tool("edit", Some("src/parser"), PolicyDecision::Allow));
        assert!(!rules.covers_tool("edit", Some("srcs"), PolicyDecision::Allow));
        assert!(!rules.covers_tool("edit", Some(""), PolicyDecision::Allow));
        assert!(!rules.covers_tool("edit", None, PolicyDecision::Allow));
        assert_eq!(other.list().len(), 1);
        let id = rules.list()[0].id.clone();
        assert!(rules.remove(&id).unwrap());
        assert!(!rules.remove(&id).unwrap());
        assert!(rules.commands("bash", PolicyDecision::Allow).is_empty());
        // A file that is not the rules holds none.
        std::fs::write(home.path().join("coder/permissions.json"), "not json").unwrap();
        assert!(rules.list().is_empty());
    }
}
