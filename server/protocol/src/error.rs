//! The kinds of engine error, with the stable codes clients branch on.
//!
//! The same kind is the engine's API error ([`ErrorKind::code`] is `data.kind` of a `coder lsp`
//! error, the `code` of a JavaScript error) and the `kind` of an `error` event, so a client
//! tells "the conversation no longer fits the model's context" from "the provider is down"
//! without reading the message.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What went wrong, in terms a client can act on. A kind's code never changes once
/// published; new kinds may be added, so clients keep a default branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request itself is wrong: a bad spec, a conversation that cannot be destroyed, an
    /// invalid tool set, a model setting that cannot work, empty input.
    InvalidParams,
    /// It names a conversation, permission request or saved session that does not exist.
    NotFound,
    /// The session cannot do it now (for example resume a session already in use).
    Busy,
    /// A task was asked for but no model provider is configured.
    NoProvider,
    /// A configured limit refuses it (`maxPromptBytes`, `maxConversations`, `maxReplyBytes`).
    LimitExceeded,
    /// The work was interrupted before it was done.
    Cancelled,
    /// Reading or writing a file of the engine failed (snapshots, the user configuration).
    Io,
    /// The model provider failed for good (after retries), or refused the request.
    Provider,
    /// The provider refused the request because the conversation no longer fits the
    /// model's context window: a new conversation (or, later, compaction) is the remedy.
    ContextLengthExceeded,
    /// A fault of the engine or its environment (for example no tokio runtime).
    Internal,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 10] = [
        Self::InvalidParams,
        Self::NotFound,
        Self::Busy,
        Self::NoProvider,
        Self::LimitExceeded,
        Self::Cancelled,
        Self::Io,
        Self::Provider,
        Self::ContextLengthExceeded,
        Self::Internal,
    ];

    /// The stable code of the kind, as clients see it (its serde name).
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
            Self::ContextLengthExceeded => "context_length_exceeded",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_strings_and_the_wire_names() {
        let codes: Vec<&str> = ErrorKind::ALL.iter().map(|kind| kind.code()).collect();
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
                "context_length_exceeded",
                "internal"
            ]
        );
        for kind in ErrorKind::ALL {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::String(kind.code().to_owned())
            );
        }
    }
}
