//! Modes and permission decisions, as front doors send and show them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

/// How much the agent may do on its own (seed 004 section 2).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, TS, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Analysis and plans; nothing is written.
    Plan,
    /// Reads freely; writes and commands as the permission preset says.
    #[default]
    Default,
    /// File edits run without asking; commands as the preset says.
    AutoEdit,
    /// `bash` skips the policy and the dangerous-command check; the workspace path
    /// constraint still holds.
    Yolo,
}

/// A named permission matrix.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, TS, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// Asks before any write and any command.
    Strict,
    /// Asks before writes and commands that are not known to be read-only.
    #[default]
    Balanced,
    /// Edits files without asking; asks before commands that are not read-only.
    AutoEdit,
    /// Allows everything except what is refused outright.
    Yolo,
}

/// What the policy says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDecision {
    Allow,
    Ask,
    Deny,
}

impl PolicyDecision {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// A person's answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(
    tag = "decision",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum PermissionDecision {
    AllowOnce,
    /// Allow this and later calls of the same tool (for `bash`, the same command prefix)
    /// for the rest of the session.
    AllowAlways,
    /// Refuse; `message` is passed to the model, and the task goes on.
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        message: Option<String>,
    },
    /// Refuse, and refuse calls like it in this project from now on (a rule that lasts,
    /// [`PermissionRule`]); `message` is passed to the model, and the task goes on.
    RejectAlways {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        message: Option<String>,
    },
    /// Refuse and stop (SemaCore's `refuse`, seed 001's checkpoint 4): the call keeps the
    /// refusal as its result, and the task ends as interrupted. For an `exit_plan_mode`
    /// request: keep planning, and the task ends.
    Refuse,
    /// For an `exit_plan_mode` request: leave plan mode and start the work, keeping the
    /// history (`allow_once` means the same).
    StartEditing,
    /// For an `exit_plan_mode` request: leave plan mode, replace the history with the plan,
    /// and start the work from it.
    ClearContextAndStart,
    /// For an `exit_plan_mode` request: stay in plan mode; `message` is the person's
    /// feedback, passed to the model (`deny` means the same).
    KeepPlanning {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        message: Option<String>,
    },
    /// One of the options the request offered, by its id (`permission_requested.options`);
    /// `message` goes to the model with an option that takes one. An id the request did
    /// not offer is a denial that says so. A client may send `{ "optionId": ... }` alone.
    Option {
        option_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        message: Option<String>,
    },
}

/// What choosing an option does, in the Agent Client Protocol's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

/// One choice a permission request offers. Doors show the options a request carries, in
/// order, and nothing else; the answer names one by `optionId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// Stable across versions: `allow_once`, `allow_always`, `deny`, `refuse`; for a plan,
    /// `start_editing`, `clear_context_and_start`, `keep_planning`, `refuse`.
    pub option_id: String,
    pub kind: PermissionOptionKind,
    /// What a person reads, whole ("Yes, and allow `cargo test` for the rest of this
    /// session").
    pub label: String,
    /// The key a terminal reads for it (`y`, `a`, `n`, `s`, `c`), unique in the request.
    pub key: String,
    /// Whether a message to the model may come with it (why not, what to change).
    pub takes_message: bool,
    /// For `allow_always`: exactly what it allows from now on, and for how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub covers: Option<String>,
}

/// A rule a person recorded with "always" (`allow_always`, `reject_always`): it lasts,
/// for one project, in the person's own state (never in the workspace), and applies in every
/// door.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRule {
    /// What `permissions/remove` names.
    pub id: String,
    /// The tool it covers.
    pub tool: String,
    /// For `bash`: the one command shape it covers (`cargo test`, `rm a.txt`), never a
    /// prefix of a compound line: every simple command of a line must be covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub command: Option<String>,
    /// For a tool on files: the folder it covers, relative to the project (`src/parser`;
    /// empty for every file of the project). The tool's calls whose every path is under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub folder: Option<String>,
    /// `allow` or `deny`.
    pub decision: PolicyDecision,
    /// The project (its folder) the rule holds in.
    pub project: String,
    /// In words, as the option that recorded it said.
    pub covers: String,
}

impl PermissionDecision {
    /// Reads a client's answer strictly: an object with a known `decision`, and for `deny`
    /// at most a string `message`, nothing else. Anything else (another type, an unknown
    /// decision, a missing `decision`, an extra field such as `error`) is a denial that
    /// says what was wrong, so a confused or hostile client can never approve by accident.
    pub fn from_answer(answer: &Value) -> PermissionDecision {
        Self::parse_answer(answer).unwrap_or_else(|problem| Self::malformed(&problem))
    }

    /// The denial for an answer that was not a decision: the message (which reaches the
    /// model) says what was wrong with it.
    pub fn malformed(problem: &str) -> PermissionDecision {
        PermissionDecision::Deny {
            message: Some(format!(
                "the answer to the permission request was malformed ({problem}); the call was denied"
            )),
        }
    }

    /// Reads a client's answer as [`PermissionDecision::from_answer`] does, saying what was
    /// wrong with one that is not a decision.
    pub fn parse_answer(answer: &Value) -> Result<PermissionDecision, String> {
        let Some(object) = answer.as_object() else {
            return Err("not an object".to_owned());
        };
        let decision = match object.get("decision") {
            Some(Value::String(decision)) => decision.as_str(),
            Some(_) => return Err("`decision` is not a string".to_owned()),
            None if object.contains_key("optionId") => "option",
            None => return Err("no `decision`".to_owned()),
        };
        let allowed: &[&str] = match decision {
            "allow_once"
            | "allow_always"
            | "refuse"
            | "start_editing"
            | "clear_context_and_start" => &["decision"],
            "deny" | "keep_planning" | "reject_always" => &["decision", "message"],
            "option" => &["decision", "optionId", "message"],
            other => return Err(format!("unknown decision `{}`", shorten(other))),
        };
        if let Some(extra) = object.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(format!("unexpected field `{}`", shorten(extra)));
        }
        let message = match object.get("message") {
            None | Some(Value::Null) => None,
            Some(Value::String(message)) => Some(message.clone()),
            Some(_) => return Err("`message` is not a string".to_owned()),
        };
        match decision {
            "allow_once" => Ok(PermissionDecision::AllowOnce),
            "allow_always" => Ok(PermissionDecision::AllowAlways),
            "refuse" => Ok(PermissionDecision::Refuse),
            "start_editing" => Ok(PermissionDecision::StartEditing),
            "clear_context_and_start" => Ok(PermissionDecision::ClearContextAndStart),
            "keep_planning" => Ok(PermissionDecision::KeepPlanning { message }),
            "reject_always" => Ok(PermissionDecision::RejectAlways { message }),
            "option" => match object.get("optionId") {
                Some(Value::String(option_id)) => Ok(PermissionDecision::Option {
                    option_id: option_id.clone(),
                    message,
                }),
                _ => Err("`optionId` is not a string".to_owned()),
            },
            _ => Ok(PermissionDecision::Deny { message }),
        }
    }
}

/// At most 40 characters of a client's text, for an error message.
fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(40).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Plan, Mode::Default, Mode::AutoEdit, Mode::Yolo];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::Default => "default",
            Mode::AutoEdit => "auto-edit",
            Mode::Yolo => "yolo",
        }
    }
}

impl Preset {
    pub const ALL: [Preset; 4] = [
        Preset::Strict,
        Preset::Balanced,
        Preset::AutoEdit,
        Preset::Yolo,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Strict => "strict",
            Preset::Balanced => "balanced",
            Preset::AutoEdit => "auto-edit",
            Preset::Yolo => "yolo",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn well_formed_answers_are_read_as_sent() {
        let cases = [
            (
                json!({"decision": "allow_once"}),
                PermissionDecision::AllowOnce,
            ),
            (
                json!({"decision": "allow_always"}),
                PermissionDecision::AllowAlways,
            ),
            (
                json!({"decision": "deny"}),
                PermissionDecision::Deny { message: None },
            ),
            (
                json!({"decision": "deny", "message": "not now"}),
                PermissionDecision::Deny {
                    message: Some("not now".into()),
                },
            ),
            (json!({"decision": "refuse"}), PermissionDecision::Refuse),
            (
                json!({"decision": "start_editing"}),
                PermissionDecision::StartEditing,
            ),
            (
                json!({"decision": "clear_context_and_start"}),
                PermissionDecision::ClearContextAndStart,
            ),
            (
                json!({"decision": "keep_planning"}),
                PermissionDecision::KeepPlanning { message: None },
            ),
            (
                json!({"decision": "keep_planning", "message": "split step 2"}),
                PermissionDecision::KeepPlanning {
                    message: Some("split step 2".into()),
                },
            ),
        ];
        for (answer, decision) in cases {
            assert_eq!(
                PermissionDecision::from_answer(&answer),
                decision,
                "{answer}"
            );
        }
    }

    #[test]
    fn anything_malformed_is_a_denial_that_says_why() {
        let cases = [
            (json!(null), "not an object"),
            (json!("allow_once"), "not an object"),
            (json!([{"decision": "allow_once"}]), "not an object"),
            (json!({}), "no `decision`"),
            (json!({"decision": true}), "`decision` is not a string"),
            (
                json!({"decision": "allow_forever"}),
                "unknown decision `allow_forever`",
            ),
            (
                json!({"decision": "allow_once", "error": {"code": 1}}),
                "unexpected field `error`",
            ),
            (
                json!({"decision": "allow_once", "message": "x"}),
                "unexpected field `message`",
            ),
            (
                json!({"decision": "deny", "message": 7}),
                "`message` is not a string",
            ),
            (
                json!({"decision": "start_editing", "message": "x"}),
                "unexpected field `message`",
            ),
            (
                json!({"decision": "refuse", "message": "x"}),
                "unexpected field `message`",
            ),
            (
                json!({"decision": "keep_planning", "message": ["x"]}),
                "`message` is not a string",
            ),
            (
                json!({"decision": "keep_planning", "plan": "x"}),
                "unexpected field `plan`",
            ),
        ];
        for (answer, problem) in cases {
            let PermissionDecision::Deny {
                message: Some(message),
            } = PermissionDecision::from_answer(&answer)
            else {
                panic!("{answer} was not denied");
            };
            assert!(message.contains(problem), "{answer}: {message}");
        }
    }
}
