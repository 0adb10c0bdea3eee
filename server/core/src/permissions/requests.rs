//! Permission requests: asking a person, remembering "allow always", auto-approval.

use std::collections::HashMap;
use std::sync::Mutex;

use coder_protocol::{EngineState, EventMsg, PermissionDecision, Preset};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::PermissionRules;
use crate::events::TaskEvents;
use crate::sync::lock;
use crate::tools::shell_safety::CommandLine;

/// The session's permission state.
pub(crate) struct Permissions {
    pub preset: Mutex<Preset>,
    /// The configured rules, replaced whole when the configuration is read again.
    rules: Mutex<std::sync::Arc<PermissionRules>>,
    /// Asks are approved without a person (`autoApproveAsk`, `approval.interactive=false`).
    pub auto_approve: bool,
    pending: Mutex<HashMap<String, oneshot::Sender<Reply>>>,
    /// Tools other than `bash` a person allowed for the rest of the session.
    always: Mutex<Vec<String>>,
    /// The `bash` commands a person allowed for the rest of the session, by name and
    /// subcommand (`cargo test`); see [`CommandLine::covered_by`].
    always_commands: Mutex<Vec<String>>,
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
    /// For `bash`, the simple commands of the line.
    pub line: Option<&'a CommandLine>,
}

/// What an "allow always" on `line` would remember, for the request's summary: each
/// remembered key in backquotes (`` `cargo test` ``, line breaks shown as `\n`), or `None`
/// when nothing would be.
fn always_covers(line: &CommandLine) -> Option<String> {
    let keys: Vec<String> = line
        .keys()
        .map(|key| format!("`{}`", key.replace('\n', "\\n")))
        .collect();
    if keys.is_empty() {
        return None;
    }
    Some(keys.join(", "))
}

/// What ends an open request: a person's decision, or the session withdrawing it with a
/// reason the model reads (see [`Permissions::withdraw_all`]).
enum Reply {
    Person(PermissionDecision),
    Withdrawn(String),
}

/// What the model reads for a call whose request was open when the session ended.
pub(crate) const SESSION_ENDED: &str =
    "The session ended before anyone answered this permission request; the call was not run.";

/// How a request ended.
pub(crate) enum Answer {
    Allowed,
    Denied(String),
    /// The task was interrupted while waiting.
    Cancelled,
}

impl Permissions {
    pub fn new(preset: Preset, rules: PermissionRules, auto_approve: bool) -> Self {
        Self {
            preset: Mutex::new(preset),
            rules: Mutex::new(std::sync::Arc::new(rules)),
            auto_approve,
            pending: Mutex::new(HashMap::new()),
            always: Mutex::new(Vec::new()),
            always_commands: Mutex::new(Vec::new()),
        }
    }

    pub fn preset(&self) -> Preset {
        *lock(&self.preset)
    }

    /// The configured rules in force.
    pub fn rules(&self) -> std::sync::Arc<PermissionRules> {
        lock(&self.rules).clone()
    }

    /// Puts `rules` in force from the next permission check.
    pub fn set_rules(&self, rules: PermissionRules) {
        *lock(&self.rules) = std::sync::Arc::new(rules);
    }

    /// Whether an earlier "allow always" covers the call. For `bash`, every simple command
    /// of the line must be read-only or one a person allowed always: allowing `cargo test`
    /// does not allow `cargo test && python3 -c ...`.
    fn always_allowed(&self, tool: &str, line: Option<&CommandLine>) -> bool {
        match line {
            Some(line) => line.covered_by(&lock(&self.always_commands)),
            None => lock(&self.always).iter().any(|allowed| allowed == tool),
        }
    }

    /// Remembers an "allow always": the tool, or for `bash` each simple command of the line
    /// that needed approval (a person saw all of them).
    fn remember(&self, tool: &str, line: Option<&CommandLine>) {
        match line {
            Some(line) => {
                let mut commands = lock(&self.always_commands);
                for key in line.keys() {
                    if !commands.contains(key) {
                        commands.push(key.clone());
                    }
                }
            }
            None => lock(&self.always).push(tool.to_owned()),
        }
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
            line,
        } = request;
        if !human_required && (self.auto_approve || self.always_allowed(tool, line)) {
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
        let mut summary = summary.to_owned();
        if !human_required {
            options.push("allow_always".to_owned());
            if let Some(covers) = line.and_then(always_covers) {
                summary.push_str(&format!("; \"allow always\" would allow {covers}"));
            }
        }
        options.push("deny".to_owned());
        events.emit(EventMsg::PermissionRequested {
            request_id: request_id.clone(),
            call_id: call_id.to_owned(),
            tool_name: tool.to_owned(),
            arguments: input.clone(),
            summary,
            options,
            human_required,
            command: (tool == "bash")
                .then(|| input["command"].as_str().map(str::to_owned))
                .flatten(),
            diff,
        });
        events.emit(EventMsg::StateChanged {
            state: EngineState::WaitingForPermission,
        });
        let answer = tokio::select! {
            // An answer given together with the task's interruption (shutdown denies open
            // requests, then interrupts) is what the model reads.
            biased;
            answer = rx => answer.ok(),
            () = cancel.cancelled() => {
                lock(&self.pending).remove(&request_id);
                return Answer::Cancelled;
            }
        };
        events.emit(EventMsg::StateChanged {
            state: EngineState::Running,
        });
        let answer = match answer {
            Some(Reply::Withdrawn(reason)) => return Answer::Denied(reason),
            Some(Reply::Person(decision)) => Some(decision),
            None => None,
        };
        match answer {
            Some(PermissionDecision::AllowOnce) => Answer::Allowed,
            Some(PermissionDecision::AllowAlways) if !human_required => {
                self.remember(tool, line);
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
            Some(tx) => tx.send(Reply::Person(decision)).is_ok(),
            None => false,
        }
    }

    /// Denies every open request (the asker went away).
    pub fn deny_all(&self) {
        lock(&self.pending).clear();
    }

    /// Denies every open request with `reason`, which the model reads as the call's result
    /// (the session is ending).
    pub fn withdraw_all(&self, reason: &str) {
        let open: Vec<_> = lock(&self.pending).drain().collect();
        for (_, tx) in open {
            let _ = tx.send(Reply::Withdrawn(reason.to_owned()));
        }
    }
}
