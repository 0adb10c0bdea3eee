//! The session's services: set up once, shared by every task, never locked as a whole. The
//! configuration and the workspace's files are swapped whole when they change on disk, each
//! behind a leaf lock held only to take or replace its `Arc`.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::events::EventHub;
use crate::mcp::McpManager;
use crate::permissions::Permissions;
use crate::prompt::PromptShapes;
use crate::sandbox::SandboxPolicy;
use crate::snapshot::Saver;
use crate::tools::ToolRegistry;

/// What a session is built from; only `session/` reads the fields, other modules are handed
/// what they need.
pub(crate) struct Services {
    /// The configuration in force: only the keys that apply live change after start
    /// (`session/live_config.rs`); a leaf lock, held only to take or replace the `Arc`.
    pub(super) config: std::sync::Mutex<Arc<Config>>,
    /// The built-in tools and the embedder's.
    pub(super) tools: Arc<ToolRegistry>,
    pub(super) hub: EventHub,
    pub(super) permissions: Arc<Permissions>,
    pub(super) mcp: Arc<McpManager>,
    /// Where commands may write, when the kernel can confine them.
    pub(super) sandbox: Option<Arc<SandboxPolicy>>,
    /// The user's home directory, for the dangerous-command analysis.
    pub(super) home: Option<PathBuf>,
    /// Saves the session snapshot.
    pub(super) saver: Saver,
    /// Appends every change of a conversation as it happens (see `journal.rs`).
    pub(super) journal: crate::journal::Journal,
    /// The working tree at the start of each turn, for `/undo` (see `undo.rs`).
    pub(super) checkpoints: Arc<crate::undo::Checkpoints>,
    /// The system prompt and tools conversations share.
    pub(super) prompt_shapes: PromptShapes,
    /// The rules, skills and custom commands, read again when they change on disk (a leaf
    /// lock: held only to take or replace the `Arc`).
    pub(super) files: Arc<super::files::SharedFiles>,
    /// The walked workspace paths `@` completion matches against (walked in the background
    /// from the start, refreshed when stale or when the watcher sees a change).
    pub(super) paths: Arc<crate::completion::PathIndex>,
}
