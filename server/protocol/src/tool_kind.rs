//! What a tool call is and where it reaches, as events carry it: a client shows a call by
//! its kind and its locations, never by its tool's name. The kinds are the Agent Client
//! Protocol's, so that door maps them one to one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What a tool call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or other content (`read`, `skill`).
    Read,
    /// Changes files (`write`, `edit`, `apply_patch`).
    Edit,
    /// Removes files.
    Delete,
    /// Moves or renames files.
    Move,
    /// Searches files or content (`grep`, `glob`).
    Search,
    /// Runs a command (`bash`).
    Execute,
    /// Plans or keeps notes, with no effect outside the session (`todo_write`).
    Think,
    /// Reads from the network.
    Fetch,
    /// Changes the conversation's mode (`exit_plan_mode`).
    SwitchMode,
    /// Anything else: the conversation tools, and every MCP tool.
    Other,
}

/// One file a change would make, whole: what it holds now and what it would hold (the
/// Agent Client Protocol's diff content). Beside the unified diff, for editors that show a
/// change side by side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    /// An absolute path.
    pub path: String,
    /// What it holds now; absent for a file the change creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub old_text: Option<String>,
    /// What it would hold; absent for a file the change deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub new_text: Option<String>,
}

/// A question the model puts to the person (`ask_user`), carried by the permission request
/// that asks it: the request's options are the question's choices in their order, then one
/// for an answer in the person's own words, then one for not answering. A door that knows
/// nothing of questions shows the options as for any request, and the answer works.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question, whole.
    pub question: String,
    /// A short label for it (at most 12 characters): `Auth method`.
    pub header: String,
    /// Whether several choices may be picked. A door that offers that answers with the
    /// option for the person's own words, the picked labels joined by `, ` as its message.
    pub multi_select: bool,
    /// What each choice means, in the order of the request's options.
    pub choices: Vec<QuestionChoice>,
}

/// One answer the model offers to a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionChoice {
    /// What the person picks (1 to 5 words).
    pub label: String,
    /// What picking it means.
    pub description: String,
}

/// A place in the workspace (or beyond it) a tool call reads or changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolLocation {
    /// An absolute path.
    pub path: String,
    /// The first line concerned (1-based), when the call names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub line: Option<u64>,
}

impl ToolLocation {
    pub fn path(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            line: None,
        }
    }
}
