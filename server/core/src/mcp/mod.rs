//! MCP servers (seed 003): one connection manager per session, a tool view per conversation.
//!
//! [`McpManager`] starts the configured servers concurrently when the session starts, keeps
//! their status and their tools (read again when a server says its list changed), and
//! shuts them down with the session. A conversation sees those tools under fully-qualified
//! names (`server__tool`), narrowed by its allowlist ([`McpView`]), which is checked when
//! it is given ([`allowlist`]).

pub(crate) mod allowlist;
mod bounds;
mod config;
mod manager;
mod names;
mod processes;
mod progress;
mod tool;
mod view;

pub use config::{McpServerConfig, load_mcp_json};
pub use manager::{McpManager, McpUsage, ServerStatus};
pub(crate) use view::{McpView, ToolChanges, at_most};

/// Checks the entries of a normalised allowlist against `manager`'s servers as far as they
/// are known now ([`allowlist::check`]).
pub(crate) fn check_allowlist(
    manager: &McpManager,
    names: &[String],
) -> Result<(), allowlist::Refusal> {
    allowlist::check(names, &view::offered_names(manager), &manager.statuses())
}
