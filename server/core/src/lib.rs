//! The coder engine.
//!
//! One [`Engine`] is one session: it owns the conversations, runs at most one task at a time
//! (inputs that arrive meanwhile wait in a FIFO), streams the model, runs tools and emits
//! [`coder_protocol::Event`]s. It knows nothing of LSP, napi or terminals, and it never builds
//! its own tokio runtime: it spawns onto the runtime it was created in.

mod beneath;
mod beneath_walk;
mod bounded;
mod commands;
pub mod completion;
mod complexity;
pub mod config;
pub mod control_chars;
mod conversation;
mod documents;
mod engine;
mod error;
pub mod event_json;
mod events;
mod frontmatter;
mod ignore_files;
#[cfg(test)]
mod input_fuzz;
mod journal;
mod launchers;
pub mod mcp;
pub mod model;
pub mod numbers;
mod permissions;
pub mod person_images;
pub mod process;
mod prompt;
mod references;
mod reminders;
mod sandbox;
mod secrets;
mod session;
pub mod skills;
mod snapshot;
mod sync;
mod tokens;
mod tool_prompt;
mod tool_selection;
pub mod tools;
pub mod trust;
mod turn;
mod undo;
pub mod verify;
mod watch;

pub use commands::ArgumentChoice;
pub use config::{
    ApiKey, Config, ConfigError, DEFAULT_MAX_REPLY_BYTES, Door, DoorNames, Overrides,
    ProviderConfig, ProviderKind, ProviderNeed, RetryConfig, ToolCalling, Workspace,
    WorkspaceTrust, check_base_url, preset_for, user_config_path,
};
pub use conversation::{ContextChange, ConversationSpec};
pub use documents::Documents;
pub use engine::Engine;
pub use error::{EngineError, ErrorKind};
pub use events::{EventReceiver, ReplayedEvents};
pub use permissions::{CommandRule, MatrixRow, PermissionRules};
pub use prompt::built_in_prompt;
pub use sandbox::{
    CreationAudit, NetworkEnforcement, PROTECTED_PATHS, SandboxEnforcement, SandboxNetwork,
};
pub use session::{McpServerInfo, Replay};
pub use snapshot::{
    ConversationSnapshot, FunctionDefinition, SESSIONS_DIR, SessionSnapshot, ToolDefinition,
};
pub use tools::{Tool, ToolContext, ToolOutput};
