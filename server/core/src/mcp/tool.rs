//! One MCP tool as an engine tool: its calls go to its server through the manager.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use rmcp::model::Tool as RemoteTool;

use super::McpManager;
use super::progress::CallProgress;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// One tool of one MCP server, under its fully-qualified name.
pub(super) struct McpTool {
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

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Other
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A server's `readOnlyHint` orders its calls (read-only ones run together) and never
    /// loosens the policy.
    fn vouches_read_only(&self) -> bool {
        false
    }

    /// What the server reports of its progress while the call runs is streamed as the
    /// call's live output; it ends with the call.
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let progress = CallProgress::new(ctx);
        self.manager
            .call(
                &self.server,
                &self.tool,
                input,
                &ctx.cancel,
                progress.as_ref(),
            )
            .await
    }
}

impl McpTool {
    /// `remote`, a tool of `server`, as the engine tool `name` with its input `schema`.
    pub fn new(
        name: String,
        server: String,
        remote: &RemoteTool,
        schema: Value,
        manager: Arc<McpManager>,
    ) -> Self {
        Self {
            name,
            tool: remote.name.to_string(),
            server,
            // Cut to its bound when the server's tools were listed (`bounds.rs`).
            description: remote.description.as_deref().unwrap_or_default().to_owned(),
            schema,
            read_only: remote
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            manager,
        }
    }
}
