//! The engine's error: a [`ErrorKind`] with a stable string code, and a message for people.
//!
//! Every fallible call of the engine's API returns [`EngineError`]. The doors map the kind
//! once each: `coder lsp` to a JSON-RPC error code (with the kind's code in `data.kind`), the
//! Node addon to the `code` of the JavaScript error, `coder exec` to its exit code. A kind's
//! [`ErrorKind::code`] never changes once published; new kinds may be added.
//!
//! Inside a tool, a failure is the text the model reads as the call's result: tools keep
//! `Result<_, String>` for that (see [`crate::Tool::call`]); it never crosses into the API.

use coder_protocol::{ConversationId, SessionId};

/// What went wrong, in terms a client can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request itself is wrong: a bad spec, a conversation that cannot be destroyed, an
    /// invalid tool set, a model setting that cannot work.
    InvalidParams,
    /// It names a conversation, permission request or saved session that does not exist.
    NotFound,
    /// The session cannot do it now (for example resume a session already in use).
    Busy,
    /// A task was asked for but no model provider is configured.
    NoProvider,
    /// A configured limit refuses it (`maxPromptBytes`, `maxConversations`).
    LimitExceeded,
    /// The work was interrupted before it was done.
    Cancelled,
    /// Reading or writing a file of the engine failed (snapshots, the user configuration).
    Io,
    /// The model provider failed for good (after retries), or refused the request.
    Provider,
    /// A fault of the engine or its environment (for example no tokio runtime).
    Internal,
}

impl ErrorKind {
    /// The stable code of the kind, as clients see it.
    pub fn code(self) -> &'static str {
        match self {
            Self::InvalidParams => "invalid_params",
            Self::NotFound => "not_found",
            Self::Busy => "busy",
            Self::NoProvider => "no_provider",
            Self::LimitExceeded => "limit_exceeded",
            Self::Cancelled => "cancelled",
            Self::Io => "io",
            Self::Provider => "provider",
            Self::Internal => "internal",
        }
    }

    /// Whether the caller's request is at fault (rather than the engine or its machine).
    pub fn is_caller_error(self) -> bool {
        matches!(
            self,
            Self::InvalidParams | Self::NotFound | Self::Busy | Self::LimitExceeded
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

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
    fn codes_are_stable_strings() {
        let kinds = [
            ErrorKind::InvalidParams,
            ErrorKind::NotFound,
            ErrorKind::Busy,
            ErrorKind::NoProvider,
            ErrorKind::LimitExceeded,
            ErrorKind::Cancelled,
            ErrorKind::Io,
            ErrorKind::Provider,
            ErrorKind::Internal,
        ];
        let codes: Vec<&str> = kinds.iter().map(|kind| kind.code()).collect();
        assert_eq!(
            codes,
            [
                "invalid_params",
                "not_found",
                "busy",
                "no_provider",
                "limit_exceeded",
                "cancelled",
                "io",
                "provider",
                "internal"
            ]
        );
    }

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
