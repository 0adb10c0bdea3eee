//! `@` path completion over the session's path index.

use coder_protocol::methods::PathMatch;

use super::Session;

impl Session {
    /// Workspace paths matching `query`, best first (see [`crate::completion`]).
    pub fn complete_paths(&self, query: &str, limit: usize) -> Vec<PathMatch> {
        let workspace = self.config().workspace.clone();
        crate::completion::complete(&self.services.paths, &workspace, query, limit)
    }
}
