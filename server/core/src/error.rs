//! The engine's error: a [`ErrorKind`] with a stable string code, and a message for people.
//!
//! Every fallible call of the engine's API returns [`EngineError`]. The doors map the kind
//! once each: `coder lsp` to a JSON-RPC error code (with the kind's code in `data.kind`), the
//! Node addon to the `code` of the JavaScript error, `coder exec` to its exit code. A kind's
//! [`ErrorKind::code`] never changes once published; new kinds may be added.
//!
//! Inside a tool, a failure is the text the model reads as the call's result: tools keep
//! `Result<_, String>` for that (see [`crate::Tool::call`]); it never crosses into the API.

pub use coder_protocol::ErrorKind;
use coder_protocol::{ConversationId, SessionId};

/// An error of the engine's API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    kind: ErrorKind,
    message: String,
}

impl EngineError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    pub fn io(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Io, message)
    }

    pub fn no_runtime() -> Self {
        Self::internal("the engine must be created inside a tokio runtime")
    }

    pub fn unknown_conversation(id: ConversationId) -> Self {
        Self::not_found(format!("no conversation with id {id}"))
    }

    pub fn unknown_permission_request(id: &str) -> Self {
        Self::not_found(format!("no open permission request with id {id}"))
    }

    pub fn root_conversation() -> Self {
        Self::invalid_params("the root conversation cannot be destroyed")
    }

    pub fn invalid_tools(reason: impl std::fmt::Display) -> Self {
        Self::invalid_params(format!("invalid tool set: {reason}"))
    }

    pub fn resume(session: SessionId, kind: ErrorKind, reason: impl std::fmt::Display) -> Self {
        Self::new(kind, format!("cannot resume session {session}: {reason}"))
    }

    /// An input without an image and without text other than whitespace.
    pub fn empty_input() -> Self {
        Self::invalid_params(
            "the input is empty: give some text (not only whitespace), an image, or both",
        )
    }

    pub fn prompt_too_large(size: usize, limit: usize) -> Self {
        Self::new(
            ErrorKind::LimitExceeded,
            format!("the prompt is {size} bytes, over the limit of {limit} bytes (maxPromptBytes)"),
        )
    }

    pub fn too_many_conversations(limit: usize) -> Self {
        Self::new(
            ErrorKind::LimitExceeded,
            format!(
                "the session already holds {limit} conversations, its limit (maxConversations); destroy one first"
            ),
        )
    }

    /// A task was asked for, but no model provider is configured.
    pub fn no_provider() -> Self {
        Self::new(
            ErrorKind::NoProvider,
            "no model provider configured: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server) or ANTHROPIC_API_KEY, or set \"provider\" in .coder/config.json",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_what_people_read() {
        let err = EngineError::prompt_too_large(10, 5);
        assert_eq!(err.kind(), ErrorKind::LimitExceeded);
        assert_eq!(
            err.to_string(),
            "the prompt is 10 bytes, over the limit of 5 bytes (maxPromptBytes)"
        );
    }
}
