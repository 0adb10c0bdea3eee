//! A conversation's view of the MCP tools (seed 003's `McpView`): the manager's tools under
//! their fully-qualified names, in a stable order, narrowed by the conversation's
//! allowlist. Built when the conversation opens and rebuilt whenever the manager's tools
//! change (the servers settling, a reload, a server's `notifications/tools/list_changed`)
//! or the allowlist does; a task keeps the tools it started with. The view also remembers
//! what the conversation's model was last offered, so a change can be announced to it.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::McpManager;
use super::names::{plain, qualified};
use super::tool::McpTool;
use crate::tools::{Tool, ToolRegistry, ToolSpec};

/// The MCP tools one conversation sees.
#[derive(Debug, Clone)]
pub(crate) struct McpView {
    /// Fully-qualified names the conversation may see; `None` sees every tool.
    allowlist: Option<Vec<String>>,
    tools: Arc<ToolRegistry>,
    /// The manager's tool generation ([`McpManager::generation`]) it was built from;
    /// `None` before its first build.
    built_at: Option<u64>,
    /// Problems of the last build that no task has reported yet.
    unreported: Vec<String>,
    /// Every problem of the last build: a rebuild reports only new ones.
    problems: Vec<String>,
    /// The names the conversation's model was last offered; `None` before its first task.
    offered: Option<BTreeSet<String>>,
}

impl Default for McpView {
    fn default() -> Self {
        Self::new(None)
    }
}

/// How the tools a conversation's model is offered changed since it was last offered some.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolChanges {
    /// Tools offered now that were not then, in name order.
    pub added: Vec<ToolSpec>,
    /// Names offered then and no longer, in name order.
    pub removed: Vec<String>,
}

impl McpView {
    /// A view narrowed by `allowlist` (normalised already), not built yet.
    pub fn new(allowlist: Option<Vec<String>>) -> Self {
        Self {
            allowlist,
            tools: Arc::new(ToolRegistry::empty()),
            built_at: None,
            unreported: Vec::new(),
            problems: Vec::new(),
            offered: None,
        }
    }

    /// Builds the view again from `manager`'s tools as they are now.
    pub fn rebuild(&mut self, manager: &Arc<McpManager>) {
        // Read first: a change while the tools are read makes the view stale, not lost.
        let generation = manager.generation();
        let (tools, problems) = tools_of(manager, self.allowlist.as_deref());
        let new = problems
            .iter()
            .filter(|problem| {
                !self.problems.contains(problem) && !self.unreported.contains(problem)
            })
            .cloned()
            .collect::<Vec<_>>();
        self.unreported.extend(new);
        self.problems = problems;
        self.tools = Arc::new(tools);
        self.built_at = Some(generation);
    }

    /// Whether the view holds `manager`'s tools as they are now.
    pub fn is_current(&self, manager: &McpManager) -> bool {
        self.built_at == Some(manager.generation())
    }

    /// Narrows the view by `allowlist` instead (normalised already), and builds it again.
    pub fn set_allowlist(&mut self, manager: &Arc<McpManager>, allowlist: Option<Vec<String>>) {
        self.allowlist = allowlist;
        self.rebuild(manager);
    }

    pub fn allowlist(&self) -> Option<&[String]> {
        self.allowlist.as_deref()
    }

    /// The tools, as a task takes them.
    pub fn tools(&self) -> Arc<ToolRegistry> {
        self.tools.clone()
    }

    /// The problems of its builds that no task has reported yet.
    pub fn take_problems(&mut self) -> Vec<String> {
        std::mem::take(&mut self.unreported)
    }

    /// Records that the model is offered the view's tools now, and says how they changed
    /// since it was last offered some (nothing at its first task, or when nothing changed).
    pub fn offer(&mut self) -> Option<ToolChanges> {
        let now: BTreeSet<String> = self
            .tools
            .specs()
            .iter()
            .map(|spec| spec.name.clone())
            .collect();
        let before = self.offered.replace(now.clone())?;
        let changes = ToolChanges {
            added: self
                .tools
                .specs()
                .iter()
                .filter(|spec| !before.contains(&spec.name))
                .cloned()
                .collect(),
            removed: before.difference(&now).cloned().collect(),
        };
        (!changes.added.is_empty() || !changes.removed.is_empty()).then_some(changes)
    }
}

/// Every tool of the ready servers under its fully-qualified name, in a stable order (the
/// servers by name, each server's tools as it lists them), with the problems naming them
/// found: names that had to be changed, a tool a server lists twice.
fn qualified_tools(
    manager: &McpManager,
) -> (Vec<(String, String, rmcp::model::Tool)>, Vec<String>) {
    let mut problems = Vec::new();
    let mut taken = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut tools = Vec::new();
    for (server, remote) in manager.tools() {
        if !seen.insert((server.clone(), remote.name.to_string())) {
            problems.push(format!(
                "MCP server `{server}` lists the tool `{}` more than once; the first is used",
                remote.name
            ));
            continue;
        }
        let name = qualified(&server, &remote.name, &mut taken);
        let wanted = plain(&server, &remote.name);
        if name != wanted {
            problems.push(format!(
                "MCP tool `{}` of `{server}` is offered as `{name}` (`{wanted}` was too long or taken)",
                remote.name
            ));
        }
        tools.push((name, server, remote));
    }
    (tools, problems)
}

/// The fully-qualified names of every tool the ready servers offer.
pub(crate) fn offered_names(manager: &McpManager) -> Vec<String> {
    qualified_tools(manager)
        .0
        .into_iter()
        .map(|(name, _, _)| name)
        .collect()
}

/// The manager's tools narrowed by `allowlist` when given, and the problems found:
/// allowlisted names no server offers, tools whose schema is invalid, names that had to
/// be changed.
fn tools_of(
    manager: &Arc<McpManager>,
    allowlist: Option<&[String]>,
) -> (ToolRegistry, Vec<String>) {
    let (qualified, mut problems) = qualified_tools(manager);
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    if let Some(list) = allowlist {
        for wanted in list {
            if !qualified.iter().any(|(name, _, _)| name == wanted) {
                problems.push(format!("no MCP server offers `{wanted}`"));
            }
        }
    }
    for (name, server, remote) in qualified {
        if allowlist.is_some_and(|list| !list.contains(&name)) {
            continue;
        }
        let schema = Value::Object((*remote.input_schema).clone());
        if let Err(err) = jsonschema::validator_for(&schema) {
            problems.push(format!(
                "MCP tool `{name}` has an invalid input schema and is left out: {err}"
            ));
            continue;
        }
        tools.push(Arc::new(McpTool::new(
            name,
            server,
            &remote,
            schema,
            manager.clone(),
        )));
    }
    let registry = match ToolRegistry::new(tools) {
        Ok(registry) => registry,
        Err(err) => {
            problems.push(format!("MCP tools left out: {err}"));
            ToolRegistry::empty()
        }
    };
    (registry, problems)
}

/// The problems of a view a task reports, each a `warning`: the first [`PROBLEMS_SHOWN`],
/// and one that counts the rest (a server of a thousand tools with names too long would
/// otherwise give a thousand warnings to each conversation).
const PROBLEMS_SHOWN: usize = 20;

pub(crate) fn at_most(mut problems: Vec<String>) -> Vec<String> {
    if problems.len() > PROBLEMS_SHOWN {
        let more = problems.len() - PROBLEMS_SHOWN;
        problems.truncate(PROBLEMS_SHOWN);
        problems.push(format!("and {more} more problems with MCP tools"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_reports_twenty_problems_and_counts_the_rest() {
        let many: Vec<String> = (0..1_000).map(|n| format!("problem {n}")).collect();
        let shown = at_most(many);
        assert_eq!(shown.len(), 21);
        assert_eq!(shown[19], "problem 19");
        assert_eq!(shown[20], "and 980 more problems with MCP tools");
        assert_eq!(at_most(vec!["one".to_owned()]), ["one"]);
    }
}
