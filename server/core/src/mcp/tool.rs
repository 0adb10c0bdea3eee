//! MCP tools as engine tools, and the per-conversation view of them.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::McpManager;
use super::names::{plain, qualified};
use crate::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};

/// One tool of one MCP server, under its fully-qualified name.
struct McpTool {
    name: String,
    server: String,
    tool: String,
    description: String,
    schema: Value,
    read_only: bool,
    manager: Arc<McpManager>,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A server's `readOnlyHint` orders its calls (read-only ones run together) and never
    /// loosens the policy.
    fn vouches_read_only(&self) -> bool {
        false
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        self.manager
            .call(&self.server, &self.tool, input, &ctx.cancel)
            .await
    }
}

/// A view of the manager's tools, narrowed by `allowlist` when given. Returns the view and
/// the problems found: allowlisted names no server offers, tools whose schema is invalid,
/// names that had to be changed.
pub(crate) fn view(
    manager: &Arc<McpManager>,
    allowlist: Option<&[String]>,
) -> (ToolRegistry, Vec<String>) {
    let mut problems = Vec::new();
    let mut taken = BTreeSet::new();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for (server, remote) in manager.tools() {
        let name = qualified(&server, &remote.name, &mut taken);
        let wanted = plain(&server, &remote.name);
        if name != wanted {
            problems.push(format!(
                "MCP tool `{}` of `{server}` is offered as `{name}` (`{wanted}` was too long or taken)",
                remote.name
            ));
        }
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
        // Cut to its bound when the server's tools were listed (`bounds.rs`).
        let description = remote.description.as_deref().unwrap_or_default().to_owned();
        tools.push(Arc::new(McpTool {
            name,
            tool: remote.name.to_string(),
            server,
            description,
            schema,
            read_only: remote
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            manager: manager.clone(),
        }));
    }
    if let Some(list) = allowlist {
        for wanted in list {
            if !taken.contains(wanted) {
                problems.push(format!("no MCP server offers `{wanted}`"));
            }
        }
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
/// otherwise give a thousand warnings to each conversation). The allowlist check sees them
/// all.
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
