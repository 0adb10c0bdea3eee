//! MCP servers (seed 003): one connection manager per session, a tool view per conversation.
//!
//! [`McpManager`] starts the configured servers concurrently when the session starts, keeps
//! their status, aggregates their tools under fully-qualified names (`server__tool`) and
//! shuts them down with the session. A conversation sees a snapshot of those tools, narrowed
//! by its allowlist ([`view`]).

mod bounds;
mod config;
mod manager;
mod names;
mod processes;
mod tool;

pub use config::{McpServerConfig, load_mcp_json};
pub use manager::{McpManager, ServerStatus};
pub(crate) use tool::{at_most, view};
