//! MCP servers read again while the session runs, when `.mcp.json` or `mcpServers` of a
//! configuration file changes. The configuration's own loading decides which apply, as at
//! start: `.mcp.json` and the workspace file's servers only in a trusted folder. Servers
//! whose definition changed are restarted, removed ones stopped, new ones started
//! ([`crate::mcp::McpManager::apply`]); each conversation's MCP view is dropped, so its
//! next task sees the new tools. A file that cannot be used keeps the running servers.

use std::sync::Arc;

use coder_protocol::{EventMsg, McpServerState, ReloadedKind};

use super::Session;
use crate::mcp::ServerStatus;
use crate::process::ToolEnv;
use crate::sync::lock;

impl Session {
    /// Reads `.mcp.json` again through the configuration's own loading (the same trust as
    /// at start) and, when its servers changed, brings the running servers to it in the
    /// background; `workspace_reloaded` follows once they have started or failed. Returns
    /// the warnings to report now.
    /// `mcp_json` says `.mcp.json` changed: in an untrusted folder that is ignored with a
    /// warning, as at start.
    pub(super) fn reload_mcp(self: &Arc<Self>, paths: Vec<String>, mcp_json: bool) -> Vec<String> {
        let current = self.config();
        let next = match current.reload() {
            Some(Ok(next)) => next,
            // Reported by the configuration's own reload.
            Some(Err(_)) if !mcp_json => return Vec::new(),
            Some(Err(err)) => {
                return vec![format!(
                    "{} changed but cannot be used ({err}); the running MCP servers are kept \
                     until it is fixed",
                    paths.join(", ")
                )];
            }
            None if !mcp_json => return Vec::new(),
            None => {
                return vec![format!(
                    "{} changed: this session's configuration was not loaded from files, so \
                     the change applies after a restart",
                    paths.join(", ")
                )];
            }
        };
        if mcp_json && !next.workspace_trusted {
            return vec![format!(
                "{} changed, but the workspace is not a trusted folder: its MCP servers are \
                 not started",
                paths.join(", ")
            )];
        }
        if next.mcp_servers == current.mcp_servers {
            return Vec::new();
        }
        let servers = next.mcp_servers.clone();
        {
            let mut config = lock(&self.services.config);
            let mut updated = (**config).clone();
            updated.mcp_servers = servers.clone();
            *config = Arc::new(updated);
        }
        let session = self.clone();
        tokio::spawn(async move {
            let workspace = current.workspace.clone();
            let env = ToolEnv::for_config(&current);
            let touched = session.services.mcp.apply(servers, &workspace, env).await;
            if touched.is_empty() {
                return;
            }
            let root = session.root();
            for (server, status) in touched {
                session
                    .services
                    .hub
                    .emit(root, None, status_event(server, status));
            }
            let conversations: Vec<_> = session.state().conversations.values().cloned().collect();
            for conversation in conversations {
                lock(&conversation).mcp_view = None;
            }
            session.services.hub.emit(
                root,
                None,
                EventMsg::WorkspaceReloaded {
                    what: ReloadedKind::Mcp,
                    paths,
                },
            );
        });
        Vec::new()
    }
}

/// The `mcp_server_status` event of a server the reload touched (`None`: stopped).
fn status_event(server: String, status: Option<ServerStatus>) -> EventMsg {
    let (state, tools, error) = match status {
        None => (McpServerState::Stopped, None, None),
        Some(ServerStatus::Ready { tools, .. }) => (
            McpServerState::Ready,
            Some(u32::try_from(tools).unwrap_or(u32::MAX)),
            None,
        ),
        Some(ServerStatus::Failed { error, .. }) => (McpServerState::Failed, None, Some(error)),
        Some(ServerStatus::Disabled) => (McpServerState::Disabled, None, None),
        // Settled by then: a server still starting is one whose tools could not be listed.
        Some(ServerStatus::Starting) => (
            McpServerState::Failed,
            None,
            Some("it did not finish starting".to_owned()),
        ),
    };
    EventMsg::McpServerStatus {
        server,
        state,
        tools,
        error,
    }
}
