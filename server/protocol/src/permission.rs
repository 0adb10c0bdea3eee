//! Modes and permission decisions, as front doors send and show them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// How much the agent may do on its own (seed 004 section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, TS)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, TS)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDecision {
    Allow,
    Ask,
    Deny,
}

/// A person's answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
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
    /// Refuse; `message` is passed to the model.
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        message: Option<String>,
    },
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
