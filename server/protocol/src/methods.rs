//! The `coder lsp` methods: the table that declares each one with its params and result
//! (the one place a method is added, see docs/protocol.md), and those types. Field names are
//! camelCase on the wire.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::table::method_table;
use crate::{
    ConversationId, ConversationSummary, Event, HistoryEntry, InputItem, Mode, PermissionDecision,
    SessionId, SubscribeParams, SubscribeResult, TaskId, ToolsPrefs,
};

/// The coder protocol version advertised in `initialize`.
pub const PROTOCOL_VERSION: &str = "0.1";

method_table! {
    client_requests {
        /// Opens a conversation (the root, when it is the session's first and nothing was
        /// sent yet); returns its id.
        ConversationCreate, CONVERSATION_CREATE = "conversation/create":
            CreateParams => CreateResult;
        /// Queues input for a conversation; returns the task's id at once, progress comes
        /// as `conversation/event` notifications.
        ConversationSend, CONVERSATION_SEND = "conversation/send": SendParams => SendResult;
        /// Steers input into the conversation's running task: its model reads it at the
        /// next checkpoint (after the current tool calls) without the task ending
        /// (`input_receipt` `steered`); queued as `conversation/send` would be when no task
        /// runs there or the task ends first. Answers the input's id at once.
        ConversationSteer, CONVERSATION_STEER = "conversation/steer":
            SendParams => SteerResult;
        /// Withdraws input no model has read yet (queued, or waiting to be steered): its
        /// `input_receipt` says `dropped`.
        ConversationWithdraw, CONVERSATION_WITHDRAW = "conversation/withdraw":
            WithdrawParams => WithdrawResult;
        /// The session's conversations.
        ConversationList, CONVERSATION_LIST = "conversation/list": ListParams => ListResult;
        /// A conversation's history, as people read it.
        ConversationHistory, CONVERSATION_HISTORY = "conversation/history":
            HistoryParams => HistoryResult;
        /// Removes a conversation (not the root).
        ConversationDestroy, CONVERSATION_DESTROY = "conversation/destroy":
            TargetParams => DestroyResult;
        /// Stops the conversation's running task (`turn_aborted`).
        ConversationInterrupt, CONVERSATION_INTERRUPT = "conversation/interrupt":
            TargetParams => InterruptResult;
        /// Switches a conversation's mode (`mode_changed` follows when it changed); the
        /// next model call has that mode's tools and system prompt.
        ConversationSetMode, CONVERSATION_SET_MODE = "conversation/setMode":
            SetModeParams => SetModeResult;
        /// Changes a conversation's context (seed 003's `SetConversationContext`): its base
        /// and user instructions, MCP allowlist and tool preferences, or builds its MCP
        /// view again. The history keeps its order; a running task keeps the context it
        /// started with, and the conversation's next task has the new one.
        ConversationSetContext, CONVERSATION_SET_CONTEXT = "conversation/setContext":
            SetContextParams => SetContextResult;
        /// Compacts a conversation's history now: queues a task that summarises its older
        /// part (`compacted`, then `token_count`); returns the task's id.
        ConversationCompact, CONVERSATION_COMPACT = "conversation/compact":
            TargetParams => CompactResult;
        /// The messages compactions replaced, one segment per compaction, oldest first.
        ConversationArchive, CONVERSATION_ARCHIVE = "conversation/archive":
            TargetParams => ArchiveResult;
        /// Runs a slash command in a conversation (`/help`, `/model`, `/mode`, `/compact`,
        /// ..., or a custom command): its text for people, and the task it started, if any.
        /// An unknown command is an error and never reaches the model.
        ConversationCommand, CONVERSATION_COMMAND = "conversation/command":
            CommandParams => CommandResult;
        /// Stops the session's running task, whatever conversation it is on, and drops the
        /// continuations its handoffs queued (their calls get a result saying so).
        SessionInterrupt, SESSION_INTERRUPT = "session/interrupt":
            SessionInterruptParams => InterruptResult;
        /// The sessions saved in the workspace (`.coder/sessions/`), newest first.
        SessionList, SESSION_LIST = "session/list": SessionListParams => SessionListResult;
        /// Takes up a saved session: its conversations, histories, todos and modes replace
        /// this session's, which stays on disk and can be taken up later. Only while no
        /// task runs or waits (else `data.kind` `busy`); an unknown id is `-32602` with
        /// `data.kind` `not_found`.
        SessionResume, SESSION_RESUME = "session/resume":
            SessionResumeParams => SessionResumeResult;
        /// The points of a conversation, oldest first: each input a person sent that its
        /// history still holds (a compaction or a clear takes the earlier ones away), named
        /// by its place among the conversation's inputs, with its first line.
        ConversationPoints, CONVERSATION_POINTS = "conversation/points":
            TargetParams => PointsResult;
        /// Takes a conversation back to before one of its points: the files the engine's
        /// turns changed since are put back (those changed since by anything else are kept
        /// and named) and the history is cut before that input; with `dryRun`, only says
        /// what it would do. Only while no task runs or waits (else `data.kind` `busy`).
        ConversationRewind, CONVERSATION_REWIND = "conversation/rewind":
            RewindParams => RewindResult;
        /// Starts a new session from a point: a new saved session (its own id and file)
        /// holds this one's conversations, that one cut before the point, and the
        /// connection goes on in it as after `session/resume`. The session it came from
        /// stays on disk as it was, byte for byte; no file of the workspace is touched.
        SessionFork, SESSION_FORK = "session/fork": ForkParams => ForkResult;
        /// Picks the event stream up again from a `seq`: the events since, from the
        /// engine's bounded buffer, or a snapshot of the session when they are no longer
        /// kept. Live `conversation/event` notifications go on; a `fromSeq` past the next
        /// event is `-32602`.
        SessionSubscribe, SESSION_SUBSCRIBE = "session/subscribe":
            SubscribeParams => SubscribeResult;
        /// The rules files the system prompt holds now (user level, `.coder/rules/`, then
        /// `AGENTS.md`/`CLAUDE.md` from the workspace root down to the start directory).
        RuleList, RULE_LIST = "rule/list": RuleListParams => RuleListResult;
        /// The permission rules a person recorded with "always" for this project (in their
        /// own state; every door applies them).
        PermissionsList, PERMISSIONS_LIST = "permissions/list":
            PermissionsListParams => PermissionsListResult;
        /// Removes one recorded permission rule by id.
        PermissionsRemove, PERMISSIONS_REMOVE = "permissions/remove":
            PermissionsRemoveParams => PermissionsRemoveResult;
        /// The slash commands a person can type: the built-in ones, then the custom ones
        /// (`.coder/commands/<name>.md`), for completion.
        CommandList, COMMAND_LIST = "command/list": CommandListParams => CommandListResult;
        /// The skills (`.coder/skills/<dir>/SKILL.md`) the model is told about.
        SkillList, SKILL_LIST = "skill/list": SkillListParams => SkillListResult;
        /// Workspace paths matching what a person typed after `@`, best first, for a
        /// completion menu.
        WorkspaceCompletePaths, WORKSPACE_COMPLETE_PATHS = "workspace/completePaths":
            CompletePathsParams => CompletePathsResult;
    }
    server_requests {
        /// Asks a person to approve a tool call.
        PermissionRequest, PERMISSION_REQUEST = "permission/request":
            PermissionParams => PermissionResult;
    }
    server_notifications {
        /// Carries one engine event, in `seq` order.
        ConversationEvent, CONVERSATION_EVENT = "conversation/event": EventParams;
    }
}

/// `initialize`'s `initializationOptions`, all optional. The model settings use the config
/// file's names and apply over files and environment (an editor passes what its own
/// settings hold).
#[derive(Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[ts(optional_fields)]
pub struct InitializationOptions {
    /// Resume this saved session (`.coder/sessions/<sessionId>.json` in the workspace):
    /// its conversations and histories come back. An unknown or unreadable session fails
    /// `initialize` with `-32602`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The provider by name: `openai`, `anthropic`, or the name of another service at
    /// `baseUrl` (see [`ProviderName`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderName>,
    /// The model name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `http://` or `https://`; for OpenAI up to and including `/v1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Sent only to `baseUrl` given here or, without one, to the provider's default
    /// endpoint; never to a base URL from a workspace file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The editor's workspace trust: `true` applies the workspace's own
    /// `.coder/config.json` and `.mcp.json` whole for this session; `false` lets them only
    /// narrow, even when the user-level config lists the folder; absent, the user-level
    /// config's `trustedFolders` decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_workspace: Option<bool>,
}

/// Never prints the key.
impl std::fmt::Debug for InitializationOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitializationOptions")
            .field("session_id", &self.session_id)
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("trust_workspace", &self.trust_workspace)
            .finish()
    }
}

/// A model provider by name. `openai` (OpenAI Chat Completions) and `anthropic` (Anthropic
/// Messages) are known, with default endpoints; any other name (`deepseek`, `openrouter`,
/// `qwen`, `moonshot`, `ollama`, ...) is a service at the base URL given with it, spoken to
/// as OpenAI Chat Completions, or as Anthropic Messages when the base URL's path ends in
/// `/anthropic` (`https://api.deepseek.com/anthropic`).
// A newtype: serde writes it as the string itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
pub struct ProviderName(#[ts(type = "\"openai\" | \"anthropic\" | (string & {})")] pub String);

impl ProviderName {
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What `initialize` advertises under `capabilities.experimental.coder`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoderCapabilities {
    pub protocol_version: String,
    pub methods: Vec<String>,
    /// This connection's session; its snapshot is `.coder/sessions/<sessionId>.json`.
    pub session_id: SessionId,
    /// How many messages a resumed session brought back (0 for a new session).
    pub history_loaded: usize,
}

/// `conversation/create` params; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
// The container-level `default` plus `skip_serializing_if` on every field: each is absent
// rather than null on the wire, which ts-rs only sees when told.
#[ts(optional_fields)]
pub struct CreateParams {
    /// Replaces the built-in system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Like `baseInstructions`, read from a file relative to the workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_instructions_file: Option<String>,
    /// Becomes the first user message of the conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_instructions: Option<String>,
    /// MCP tools (`server__tool`) the conversation may see; absent sees all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_allowlist: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_prefs: Option<ToolsPrefs>,
    /// Clamped to the session's mode when looser.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The model for this conversation's requests; absent uses the session's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateResult {
    pub conversation_id: ConversationId,
}

/// `conversation/send` params: `text`, `items`, or both (text first).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    pub conversation_id: ConversationId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<InputItem>>", optional)]
    pub items: Vec<InputItem>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    /// The task the input started. Absent only when the input was a built-in command that
    /// answered at once (`/help`, `/mode plan`): its answer is `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub task_id: Option<TaskId>,
    /// What a built-in command said, for people; absent for input the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub text: Option<String>,
    /// The conversation to go on in, when a built-in command made one (`/new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub conversation_id: Option<ConversationId>,
}

/// `conversation/compact` result.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactResult {
    pub task_id: TaskId,
}

impl From<CommandResult> for SendResult {
    fn from(result: CommandResult) -> Self {
        Self {
            task_id: result.task_id,
            text: (!result.text.is_empty()).then_some(result.text),
            conversation_id: result.conversation_id,
        }
    }
}

/// Params naming one conversation (`conversation/destroy`, `conversation/interrupt`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetParams {
    pub conversation_id: ConversationId,
}

/// `conversation/setMode` params.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetModeParams {
    pub conversation_id: ConversationId,
    pub mode: Mode,
}

/// `conversation/setContext` params: what to change of a conversation's context; every
/// field but `conversationId` may be left out, and what is left out is kept.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetContextParams {
    pub conversation_id: ConversationId,
    /// Replace the built-in system prompt; `null` goes back to it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "null_or_value"
    )]
    #[ts(optional, type = "string | null")]
    #[schemars(with = "Option<String>")]
    pub base_instructions: Option<Option<String>>,
    /// Like `baseInstructions`, read from a file inside the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub base_instructions_file: Option<String>,
    /// New user instructions: a user message at the start of the conversation's next
    /// task, after what its history holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub user_instructions: Option<String>,
    /// MCP tools (`server__tool`) the conversation may see, checked as at creation;
    /// `null` sees all.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "null_or_value"
    )]
    #[ts(optional, type = "string[] | null")]
    #[schemars(with = "Option<Vec<String>>")]
    pub mcp_allowlist: Option<Option<Vec<String>>>,
    /// The tools offered besides the MCP ones: a key left out keeps the conversation's
    /// current choice; `shell_mode` narrows to the session's shell (with a `warning`), and
    /// a tool the session disabled stays hidden (with a `warning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tools_prefs: Option<ToolsPrefs>,
    /// Build the conversation's MCP view again from the servers' tools as they are now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub refresh_mcp_view: bool,
}

/// A field that may be absent (`None`), `null` (`Some(None)`) or a value.
mod null_or_value {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(
        value: &Option<Option<T>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

/// `conversation/setContext` result: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct SetContextResult {}

/// `conversation/setMode` result: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct SetModeResult {}

/// `conversation/list` params: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct ListParams {}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct ListResult {
    pub conversations: Vec<ConversationSummary>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryParams {
    pub conversation_id: ConversationId,
    /// The last `limit` entries; absent returns all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct HistoryResult {
    pub entries: Vec<HistoryEntry>,
}

/// `conversation/destroy` result: `ok: false` with a reason for the root conversation or
/// an unknown id.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct DestroyResult {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reason: Option<String>,
}

/// `conversation/archive` result.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct ArchiveResult {
    pub segments: Vec<crate::ArchivedSegment>,
}

/// `session/list` params: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct SessionListParams {}

/// `session/list` result.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct SessionListResult {
    pub sessions: Vec<SessionInfo>,
}

/// A saved session, as a picker shows it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: SessionId,
    /// When it was last saved (RFC 3339).
    pub saved_at: String,
    /// The model of its root conversation.
    pub model: String,
    pub conversations: usize,
    /// Messages in all its conversations.
    pub messages: usize,
    /// The first thing a person asked in its root conversation, cut to 100 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub title: Option<String>,
}

/// `session/resume` params.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResumeParams {
    pub session_id: SessionId,
}

/// `session/resume` result: how many messages came back.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResumeResult {
    pub session_id: SessionId,
    pub messages: usize,
}

/// `conversation/command` params.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandParams {
    pub conversation_id: ConversationId,
    /// The command as typed, `/name` and its arguments.
    pub command: String,
}

/// `conversation/command` result.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandResult {
    /// What the command says, for people (may be several lines).
    pub text: String,
    /// The task it started (`/compact`, a custom command): follow it by its events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub task_id: Option<TaskId>,
    /// The conversation to go on in, when the command made one (`/new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub conversation_id: Option<ConversationId>,
    /// `text` is a unified diff (`/diff full`): a door may colour its lines as a diff.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub diff: bool,
}

/// `permissions/list` params: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct PermissionsListParams {}

/// `permissions/list` result: this project's recorded rules, oldest first.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct PermissionsListResult {
    pub rules: Vec<crate::PermissionRule>,
}

/// `conversation/steer` result.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SteerResult {
    /// The input's id: `input_receipt` events name it, and `conversation/withdraw` takes it.
    pub input_id: TaskId,
    /// A task of the conversation was running: the input goes to it at its next checkpoint
    /// (or is queued if it ends first). `false`: the input was queued as a task of its own.
    pub steering: bool,
}

/// `conversation/withdraw` params.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WithdrawParams {
    pub input_id: TaskId,
}

/// `conversation/withdraw` result: whether input of that id was waiting and is withdrawn.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct WithdrawResult {
    pub withdrawn: bool,
}

/// `permissions/remove` params.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct PermissionsRemoveParams {
    pub id: String,
}

/// `permissions/remove` result: whether a rule of that id was removed.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct PermissionsRemoveResult {
    pub removed: bool,
}

/// `rule/list` params: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct RuleListParams {}

/// `rule/list` result: the rules files in the order the prompt tells them (nearest last).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct RuleListResult {
    pub rules: Vec<RuleInfo>,
}

/// One rules file of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleInfo {
    /// Where it was read.
    pub path: String,
    /// Its size on disk in bytes.
    pub size: u64,
    /// Whether it was cut at the size limit (the prompt holds its beginning).
    pub truncated: bool,
}

/// `session/interrupt` params: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct SessionInterruptParams {}

/// `conversation/interrupt` and `session/interrupt` result: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct InterruptResult {}

/// `conversation/event` params: one engine event, unchanged.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct EventParams {
    pub event: Event,
}

/// `permission/request` params, server to client. The answer is a [`PermissionDecision`]:
/// `{ decision: "allow_once" | "allow_always" | "deny", message? }`, or `{ decision:
/// "refuse" }` (deny and end the task). An answer that is an error, or anything else than
/// such an object, denies the call
/// ([`PermissionDecision::from_answer`]).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionParams {
    pub request_id: String,
    pub conversation_id: ConversationId,
    pub task_id: Option<TaskId>,
    pub tool_name: String,
    pub arguments: Value,
    /// What the call does.
    pub kind: crate::ToolKind,
    /// The paths the call reads or changes, absolute.
    pub locations: Vec<crate::ToolLocation>,
    /// What would happen, in a few words (`Run cargo test`, `Edit src/main.rs`).
    pub title: String,
    /// Why the person is asked: the rule or preset, the command's risk, the sandbox.
    pub reason: String,
    pub summary: String,
    /// The choices, in order; the answer names one (`{ "optionId": ... }`).
    pub options: Vec<crate::PermissionOption>,
    /// For `bash`: the whole command that would run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub command: Option<String>,
    /// For `write`, `edit` and `apply_patch`: the change as a unified diff, before it is
    /// made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub diff: Option<String>,
    /// For a call that leaves plan mode: the plan, whole, in markdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub plan: Option<String>,
    /// For `write`, `edit` and `apply_patch`: each file's text now and after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<crate::FileDiff>>", optional)]
    pub changes: Vec<crate::FileDiff>,
}

/// The client's answer to `permission/request`.
pub type PermissionResult = PermissionDecision;

/// `command/list` params: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct CommandListParams {}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct CommandListResult {
    pub commands: Vec<CommandInfo>,
}

/// One slash command a person can type as `/name args`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// Typed after the `/`.
    pub name: String,
    pub description: String,
    /// What the arguments are, for a person (`<file> [focus]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub argument_hint: Option<String>,
    /// The model the command's task uses instead of the conversation's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub model: Option<String>,
    pub source: CommandSource,
    /// The file a custom command comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub path: Option<String>,
    /// A custom command's prompt as its file gives it, without the frontmatter (before
    /// `$ARGUMENTS` and `$1`... are replaced), for a preview.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub body: Option<String>,
}

/// Where a command or a skill is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandSource {
    /// Built into coder.
    Builtin,
    /// The workspace's `.coder/` folder.
    Workspace,
    /// The user-level folder beside the user configuration file.
    User,
}

/// `skill/list` params: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct SkillListParams {}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct SkillListResult {
    pub skills: Vec<SkillInfo>,
}

/// One skill: a folder with a `SKILL.md`, which the model loads with the `skill` tool.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    /// The skill's `SKILL.md`.
    pub path: String,
    pub source: CommandSource,
}

/// `workspace/completePaths` params.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletePathsParams {
    /// What the person typed after `@` (without the `@`), possibly quoted (`"my fi`). A
    /// `dir/` prefix naming a workspace folder narrows to that folder; empty lists the top
    /// of the workspace.
    #[serde(default)]
    pub query: String,
    /// At most this many matches (default 50, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct CompletePathsResult {
    /// Best first.
    pub matches: Vec<PathMatch>,
}

/// One workspace path offered for an `@` reference.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathMatch {
    /// Relative to the workspace, `/`-separated; a directory ends with `/`.
    pub path: String,
    pub kind: PathKind,
    /// The positions in `path` that matched the query, counted in Unicode scalar values
    /// (code points, as `Array.from(path)` counts them), ascending, for highlighting.
    pub indices: Vec<u32>,
}

/// What a completed path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    File,
    Dir,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `setContext` tells a field left out (kept) from `null` (back to the default).
    #[test]
    fn set_context_tells_absent_from_null() {
        let id = ConversationId::new();
        let read = |json: Value| serde_json::from_value::<SetContextParams>(json).unwrap();
        let absent = read(serde_json::json!({"conversationId": id}));
        assert_eq!(absent.base_instructions, None);
        assert_eq!(absent.mcp_allowlist, None);
        assert!(!absent.refresh_mcp_view);
        let null = read(serde_json::json!({
            "conversationId": id, "baseInstructions": null, "mcpAllowlist": null
        }));
        assert_eq!(null.base_instructions, Some(None));
        assert_eq!(null.mcp_allowlist, Some(None));
        let given = read(serde_json::json!({
            "conversationId": id, "baseInstructions": "be brief", "mcpAllowlist": ["a__b"],
            "refreshMcpView": true
        }));
        assert_eq!(given.base_instructions, Some(Some("be brief".to_owned())));
        assert_eq!(given.mcp_allowlist, Some(Some(vec!["a__b".to_owned()])));
        assert!(given.refresh_mcp_view);
        // Written back as read: `null` stays `null`, what was left out stays out.
        assert_eq!(
            serde_json::to_value(&null).unwrap(),
            serde_json::json!({"conversationId": id, "baseInstructions": null, "mcpAllowlist": null})
        );
    }
}

/// `conversation/points` result: the conversation's points, oldest first.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
pub struct PointsResult {
    pub points: Vec<RewindPoint>,
}

/// A point of a conversation: an input a person sent, which a rewind or a fork goes back
/// to. Points the history no longer holds (a compaction summarised them, a clear removed
/// them) are gone and not listed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindPoint {
    /// Its place among the conversation's inputs, from 0: the same after a resume or a
    /// compaction (the inputs a compaction summarised still count); after a rewind or a
    /// fork, the next input takes the place of the first one cut.
    pub point: usize,
    /// The first line of its text, cut to 100 characters (empty for images alone).
    pub text: String,
    /// The messages of the history from it on: what a rewind to it removes.
    pub messages: usize,
}

/// `conversation/rewind` params.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindParams {
    pub conversation_id: ConversationId,
    /// The point to go back to (see `conversation/points`).
    pub point: usize,
    /// Only say what the rewind would do; nothing changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub dry_run: bool,
    /// `false`: the history alone goes back and every file stays as it is (the records of
    /// the turns cut away are dropped). Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub files: Option<bool>,
}

/// `conversation/rewind` result: what was done (or, for a dry run, what would be).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindResult {
    pub dry_run: bool,
    /// The messages cut from the history: the point's input and everything after it. The
    /// model's next request carries the history as it is left.
    pub messages_removed: usize,
    /// Files put back to what they held before the point.
    pub restored: Vec<String>,
    /// Files created since the point, removed; folders made since and left empty end in
    /// `/` (a dry run names files only).
    pub removed: Vec<String>,
    /// Files left as they are, each with why.
    pub kept: Vec<KeptFile>,
    /// Whether the session recorded file changes (false outside a git repository): when
    /// not, only the conversation went back.
    pub files_recorded: bool,
    /// For each file of `restored` and `removed`, the lines putting it back adds and
    /// removes (a removed file's lines are all removed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<LineChange>>", optional)]
    pub line_changes: Vec<LineChange>,
    /// What happened, for people.
    pub text: String,
}

/// How many lines a rewind adds to a file and removes from it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
pub struct LineChange {
    pub path: String,
    pub added: usize,
    pub removed: usize,
}

/// A file a rewind leaves as it is.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
pub struct KeptFile {
    pub path: String,
    pub reason: KeptReason,
    /// The reason in words, for people.
    pub detail: String,
}

/// Why a rewind keeps a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeptReason {
    /// Changed since by the person, or anything outside the conversation's turns.
    ChangedSince,
    /// A later turn of another conversation of the session changed it.
    OtherConversation,
    /// Its content was not recorded (too large, a symbolic link, past the records' bound).
    NotRecorded,
    /// Putting it back failed.
    Failed,
}

/// `session/fork` params.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkParams {
    pub conversation_id: ConversationId,
    /// The point the fork starts from (see `conversation/points`): the fork's copy of the
    /// conversation is cut before it.
    pub point: usize,
}

/// `session/fork` result: the new session, which the connection goes on in.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkResult {
    pub session_id: SessionId,
    /// The session it was forked from, left as it was.
    pub forked_from: SessionId,
    /// The messages the fork holds, in all its conversations.
    pub messages: usize,
    /// What happened, for people.
    pub text: String,
}
