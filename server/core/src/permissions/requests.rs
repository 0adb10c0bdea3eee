//! Permission requests: asking a person, remembering "allow always", auto-approval.

use std::collections::HashMap;
use std::sync::Mutex;

use coder_protocol::{EngineState, EventMsg, PermissionDecision, Preset};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::PermissionRules;
use crate::engine::lock;
use crate::events::TaskEvents;

/// The session's permission state.
pub(crate) struct Permissions {
    pub preset: Mutex<Preset>,
    pub rules: PermissionRules,
    /// Asks are approved without a person (`autoApproveAsk`, `approval.interactive=false`).
    pub auto_approve: bool,
    pending: Mutex<HashMap<String, oneshot::Sender<PermissionDecision>>>,
    /// `(tool, command prefix)` pairs a person allowed for the rest of the session.
    always: Mutex<Vec<(String, Option<String>)>>,
}

/// What a person is asked about.
pub(crate) struct Request<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
    pub summary: &'a str,
    /// What the call would change, computed without changing it (a unified diff).
    pub diff: Option<String>,
    /// Only an explicit answer may allow it: no auto-approval, no "allow always".
    pub human_required: bool,
}

/// How a request ended.
pub(crate) enum Answer {
    Allowed,
    Denied(String),
    /// The task was interrupted while waiting.
    Cancelled,
}

/// The first word of a command, and the second when it is a subcommand (`cargo test`).
fn command_prefix(input: &Value) -> Option<String> {
    let command = input["command"].as_str()?;
    let mut words = command.split_whitespace();
    let first = words.next()?;
    Some(match words.next() {
        Some(second)
            if !second.starts_with('-')
                && second
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '_') =>
        {
            format!("{first} {second}")
        }
        _ => first.to_owned(),
    })
}

impl Permissions {
    pub fn new(preset: Preset, rules: PermissionRules, auto_approve: bool) -> Self {
        Self {
            preset: Mutex::new(preset),
            rules,
            auto_approve,
            pending: Mutex::new(HashMap::new()),
            always: Mutex::new(Vec::new()),
        }
    }

    pub fn preset(&self) -> Preset {
        *lock(&self.preset)
    }

    fn always_allowed(&self, tool: &str, input: &Value) -> bool {
        let key = (tool.to_owned(), command_prefix(input));
        lock(&self.always).contains(&key)
    }

    /// Asks for permission for a call the policy said `ask` about, unless an earlier
    /// "allow always" covers it. A call that needs a person is never approved automatically.
    pub async fn ask(
        &self,
        request: Request<'_>,
        events: &TaskEvents,
        cancel: &CancellationToken,
    ) -> Answer {
        let Request {
            call_id,
            tool,
            input,
            summary,
            diff,
            human_required,
        } = request;
        if !human_required && (self.auto_approve || self.always_allowed(tool, input)) {
            return Answer::Allowed;
        }
        if self.auto_approve {
            return Answer::Denied(format!(
                "{summary}: this needs an explicit approval from a person, and this session \
                 approves automatically; it was not run. Tell the user what you wanted to run \
                 and why."
            ));
        }
        let request_id = Uuid::now_v7().to_string();
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(request_id.clone(), tx);
        let mut options = vec!["allow_once".to_owned()];
        if !human_required {
            options.push("allow_always".to_owned());
        }
        options.push("deny".to_owned());
        events.emit(EventMsg::PermissionRequested {
            request_id: request_id.clone(),
            call_id: call_id.to_owned(),
            tool_name: tool.to_owned(),
            arguments: input.clone(),
            summary: summary.to_owned(),
            options,
            command: (tool == "bash")
                .then(|| input["command"].as_str().map(str::to_owned))
                .flatten(),
            diff,
        });
        events.emit(EventMsg::StateChanged {
            state: EngineState::WaitingForPermission,
        });
        let answer = tokio::select! {
            answer = rx => answer.ok(),
            () = cancel.cancelled() => {
                lock(&self.pending).remove(&request_id);
                return Answer::Cancelled;
            }
        };
        events.emit(EventMsg::StateChanged {
            state: EngineState::Running,
        });
        match answer {
            Some(PermissionDecision::AllowOnce) => Answer::Allowed,
            Some(PermissionDecision::AllowAlways) if !human_required => {
                lock(&self.always).push((tool.to_owned(), command_prefix(input)));
                Answer::Allowed
            }
            Some(PermissionDecision::AllowAlways) => Answer::Allowed,
            Some(PermissionDecision::Deny { message }) => Answer::Denied(match message {
                Some(message) => format!("The user denied this call: {message}"),
                None => "The user denied this call.".to_owned(),
            }),
            None => Answer::Denied("The permission request went unanswered (its asker went away); the call was not run.".to_owned()),
        }
    }

    /// Delivers a person's answer. Returns false for an unknown or already answered id.
    pub fn respond(&self, request_id: &str, decision: PermissionDecision) -> bool {
        match lock(&self.pending).remove(request_id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// Denies every open request (the asker went away).
    pub fn deny_all(&self) {
        lock(&self.pending).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn always_rules_cover_the_same_command_prefix() {
        assert_eq!(
            command_prefix(&json!({"command": "cargo test -p x"})).as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            command_prefix(&json!({"command": "ls -la"})).as_deref(),
            Some("ls")
        );
        assert_eq!(command_prefix(&json!({"path": "a"})), None);
    }
}
