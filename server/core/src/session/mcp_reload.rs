//! MCP servers read again while the session runs, when `.mcp.json` or `mcpServers` of a
//! configuration file changes. The configuration's own loading decides which apply, as at
//! start: `.mcp.json` and the workspace file's servers only in a trusted folder.
//!
//! A change read from a file never starts a program by itself: whoever wrote the file (a
//! command the model ran, a script that command started, a repository's test suite run by
//! auto-verify) may not be the person. Servers the file no longer names stop at once
//! (that only narrows); servers it adds or changes are held, each named with the command
//! line it would run in a `warning`, until a person confirms with `/mcp reload`
//! ([`Session::confirm_mcp`]), which every door reaches only from the person (the
//! terminal's prompt, `conversation/command`, the SDK's `command`), never from the model.
//! Each conversation's MCP view is built again at its next task when the running servers
//! changed their tools, and the change is announced to its model. A file that cannot be used keeps the running servers.

use std::collections::BTreeMap;
use std::sync::Arc;

use coder_protocol::{EventMsg, McpServerState, ReloadedKind};

use super::Session;
use crate::mcp::{McpServerConfig, ServerStatus};
use crate::process::ToolEnv;
use crate::sync::lock;

/// One configured MCP server as a front end lists it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub enabled: bool,
    /// `starting`, `ready`, `failed` or `disabled`.
    pub state: &'static str,
    /// The names of its tools, once it is ready.
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Servers a file added or changed, waiting for a person's `/mcp reload`.
#[derive(Debug, Clone)]
pub(super) struct HeldServers {
    /// Every server the files name now: what runs once confirmed.
    servers: BTreeMap<String, McpServerConfig>,
    /// The files whose change this is.
    paths: Vec<String>,
}

impl Session {
    /// Reads `.mcp.json` again through the configuration's own loading (the same trust as
    /// at start). Servers no longer named stop in the background; added or changed ones
    /// are held for a person ([`HeldServers`]); `workspace_reloaded` follows once the
    /// stopped ones have ended. Returns the warnings to report now.
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
        let running = current.mcp_servers.clone();
        // What runs without asking: the running servers the files still name as they are.
        let kept: BTreeMap<String, McpServerConfig> = running
            .iter()
            .filter(|(name, _)| next.mcp_servers.contains_key(*name))
            .map(|(name, config)| (name.clone(), config.clone()))
            .collect();
        let waiting = waiting(&next.mcp_servers, &running);
        let mut warnings = Vec::new();
        let held = (!waiting.is_empty()).then(|| {
            warnings.push(held_warning(&paths, &waiting, &running));
            HeldServers {
                servers: next.mcp_servers.clone(),
                paths: paths.clone(),
            }
        });
        *lock(&self.held_mcp) = held;
        // A server switched off (`enabled: false`) is only narrowed: it stops now.
        let mut applied = kept;
        for (name, config) in &next.mcp_servers {
            if !config.enabled && running.contains_key(name) {
                applied.insert(name.clone(), config.clone());
            }
        }
        if applied != running {
            self.start_mcp(applied, paths);
        }
        warnings
    }

    /// Starts the servers a file changed, once a person confirms (`/mcp reload`): the text
    /// of the command's answer.
    pub(super) fn confirm_mcp(self: &Arc<Self>) -> String {
        let Some(held) = lock(&self.held_mcp).take() else {
            return "No change to the MCP servers waits for confirmation.".to_owned();
        };
        let running = self.config().mcp_servers.clone();
        let names: Vec<&str> = waiting(&held.servers, &running)
            .into_iter()
            .map(|(name, _)| name.as_str())
            .collect();
        let text = format!(
            "Applying the MCP servers of {}: {}. Their status follows as each starts.",
            held.paths.join(", "),
            names.join(", ")
        );
        self.start_mcp(held.servers, held.paths);
        text
    }

    /// `/mcp`: every server with its state and what it runs, and any change held.
    pub(super) fn mcp_listing(&self) -> String {
        let config = self.config();
        let statuses = self.services.mcp.statuses();
        let mut text = String::new();
        if config.mcp_servers.is_empty() {
            text.push_str("No MCP servers are configured.\n");
        }
        for (name, server) in &config.mcp_servers {
            let state = server_state(statuses.get(name));
            text.push_str(&format!("{name}: {state}; {}\n", server.describe()));
        }
        if let Some(held) = &*lock(&self.held_mcp) {
            let waiting = waiting(&held.servers, &config.mcp_servers);
            text.push_str(&held_warning(&held.paths, &waiting, &config.mcp_servers));
        }
        text.trim_end().to_owned()
    }

    /// The servers a front door's program sets (the SDK's `setMcpServers`): the program
    /// is the person's own, unlike a file anyone may have written, so they apply at once.
    /// Servers not named stop; new or changed ones start; their statuses follow as
    /// `mcp_server_status` events. A change a file made that waited for a person is dropped:
    /// what the program set replaces it.
    pub(crate) fn set_mcp_servers(self: &Arc<Self>, servers: BTreeMap<String, McpServerConfig>) {
        *lock(&self.held_mcp) = None;
        self.start_mcp(servers, Vec::new());
    }

    /// Stops `name` and starts it again with the same settings; `false` when the session
    /// has no such server.
    pub(crate) fn restart_mcp_server(self: &Arc<Self>, name: &str) -> bool {
        let servers = self.config().mcp_servers.clone();
        if !servers.contains_key(name) {
            return false;
        }
        let mut without = servers.clone();
        without.remove(name);
        let session = self.clone();
        let current = self.config();
        tokio::spawn(async move {
            let workspace = current.workspace.clone();
            let env = ToolEnv::for_config(&current);
            session
                .services
                .mcp
                .apply(without, &workspace, env.clone())
                .await;
            let touched = session.services.mcp.apply(servers, &workspace, env).await;
            session.report_statuses(touched);
        });
        true
    }

    /// An `mcp_server_status` event for each server an apply started, stopped or changed.
    fn report_statuses(&self, touched: Vec<(String, Option<ServerStatus>)>) {
        let root = self.root();
        for (server, status) in touched {
            self.services
                .hub
                .emit(root, None, status_event(server, status));
        }
    }

    /// Every configured server with its state and, once ready, its tools' names.
    pub(crate) fn mcp_servers(&self) -> Vec<McpServerInfo> {
        let config = self.config();
        let statuses = self.services.mcp.statuses();
        let tools = self.services.mcp.tools();
        config
            .mcp_servers
            .iter()
            .map(|(name, server)| {
                let status = statuses.get(name);
                McpServerInfo {
                    name: name.clone(),
                    command: server.command.clone(),
                    args: server.args.clone(),
                    url: server.url.clone(),
                    enabled: server.enabled,
                    state: match status {
                        Some(ServerStatus::Ready { .. }) => "ready",
                        Some(ServerStatus::Starting) => "starting",
                        Some(ServerStatus::Failed { .. }) => "failed",
                        Some(ServerStatus::Disabled) | None => "disabled",
                    },
                    tools: tools
                        .iter()
                        .filter(|(server, _)| server == name)
                        .map(|(_, tool)| tool.name.to_string())
                        .collect(),
                    error: match status {
                        Some(ServerStatus::Failed { error, .. }) => Some(error.clone()),
                        _ => None,
                    },
                }
            })
            .collect()
    }

    /// Brings the running servers to `servers` in the background and records them as the
    /// session's; statuses and `workspace_reloaded` follow once they have started, failed
    /// or stopped.
    fn start_mcp(self: &Arc<Self>, servers: BTreeMap<String, McpServerConfig>, paths: Vec<String>) {
        let current = self.config();
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
            session.report_statuses(touched);
            session.services.hub.emit(
                root,
                None,
                EventMsg::WorkspaceReloaded {
                    what: ReloadedKind::Mcp,
                    paths,
                },
            );
        });
    }
}

/// The servers of `named` that would start (or restart) over `running`: new or changed,
/// and switched on.
fn waiting<'a>(
    named: &'a BTreeMap<String, McpServerConfig>,
    running: &BTreeMap<String, McpServerConfig>,
) -> Vec<(&'a String, &'a McpServerConfig)> {
    named
        .iter()
        .filter(|(name, config)| running.get(*name) != Some(*config) && config.enabled)
        .collect()
}

/// The warning that names the servers held for a person, and what each would run.
fn held_warning(
    paths: &[String],
    waiting: &[(&String, &McpServerConfig)],
    running: &BTreeMap<String, McpServerConfig>,
) -> String {
    let servers: Vec<String> = waiting
        .iter()
        .map(|(name, config)| {
            let how = if running.contains_key(*name) {
                "changed"
            } else {
                "new"
            };
            format!(
                "`{}` ({how}) {}",
                crate::control_chars::neutralize(name),
                config.describe()
            )
        })
        .collect();
    format!(
        "{} changed: MCP server {} is not started until you confirm with /mcp reload (a \
         file read while coder runs never starts a program by itself: a command or tool may \
         have written it)",
        paths.join(", "),
        servers.join("; ")
    )
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

/// A server's state in words: `ready, 3 tools`, `starting`, `failed: why`, `disabled`.
pub(super) fn server_state(status: Option<&ServerStatus>) -> String {
    match status {
        Some(ServerStatus::Ready { tools, .. }) => format!("ready, {tools} tools"),
        Some(ServerStatus::Starting) => "starting".to_owned(),
        Some(ServerStatus::Failed { error, .. }) => format!("failed: {error}"),
        Some(ServerStatus::Disabled) | None => "disabled".to_owned(),
    }
}
