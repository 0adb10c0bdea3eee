//! The options a program gives the Node addon (`Engine.create`, `setModel`, `checkModel`).
//!
//! The addon turns [`EngineOptions`] into the core's `config::Overrides`, as `coder exec`
//! does with its flags and `coder lsp` with [`crate::methods::InitializationOptions`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::methods::ProviderName;
use crate::{Mode, Preset};

/// `Engine.create(options)`. Everything but `workingDir` is optional; what is left out
/// comes from the workspace's `.coder/config.json`, the user's config and the environment,
/// as for `coder exec`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct EngineOptions {
    #[ts(optional = false)]
    pub working_dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<Preset>,
    /// Approve what the policy would ask about (dangerous commands still ask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_approve: Option<bool>,
    /// Tools not offered to the model (see `BUILTIN_TOOLS` and `CONVERSATION_TOOLS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_tools: Option<Vec<String>>,
    /// Added to the config files' servers (replacing one of the same name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<BTreeMap<String, McpServerOptions>>,
    /// Keep `.coder/sessions/<id>.json` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_sessions: Option<bool>,
    /// Confine commands with the OS sandbox (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
    /// Model calls per task before the task stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// The person trusts `workingDir`: its own `.coder/config.json` and `.mcp.json` apply
    /// whole (MCP servers, provider endpoint, looser modes). `false`: they may only narrow,
    /// even when the user-level config lists the folder in `trustedFolders`; left out, that
    /// list decides. What an untrusted folder asked for and did not get is a `warning`
    /// event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_workspace: Option<bool>,
    /// Start even when no model is configured anywhere: a task asked for then fails with
    /// `no_provider` until `setModel` gives the session one (default false: `create`
    /// fails, naming what to set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_later: Option<bool>,
}

/// A model and the provider serving it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelOptions {
    /// `openai`, `anthropic`, or the name of another service at `baseUrl`, which is then
    /// required (see [`ProviderName`]).
    pub provider: ProviderName,
    pub model: String,
    /// `http://` or `https://`; for OpenAI up to and including `/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub base_url: Option<String>,
    /// Sent only to `baseUrl` or, without one, to the provider's default endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub max_output_tokens: Option<u32>,
}

/// One MCP server, as in `.coder/config.json`'s `mcpServers` (which also takes the
/// timeouts in snake_case). Stdio servers have a `command`; streamable HTTP servers a
/// `url`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<String>>", optional)]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[ts(as = "Option<BTreeMap<String, String>>", optional)]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cwd: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[ts(as = "Option<BTreeMap<String, String>>", optional)]
    pub headers: BTreeMap<String, String>,
    /// Default true.
    #[serde(default = "enabled")]
    #[ts(as = "Option<bool>", optional)]
    pub enabled: bool,
    /// Seconds, from 0 to a day.
    #[serde(
        default,
        with = "startup_timeout_sec",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<f64>", range(min = 0, max = 86400))]
    #[ts(as = "Option<f64>", optional)]
    pub startup_timeout_sec: Option<f64>,
    /// Seconds, from 0 to a day.
    #[serde(
        default,
        with = "tool_timeout_sec",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<f64>", range(min = 0, max = 86400))]
    #[ts(as = "Option<f64>", optional)]
    pub tool_timeout_sec: Option<f64>,
}

fn enabled() -> bool {
    true
}

/// The longest timeout an MCP server may be given, in seconds: a day.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// The longest timeout, for code that holds one: a day.
pub fn longest_timeout() -> std::time::Duration {
    std::time::Duration::from_secs_f64(MAX_TIMEOUT_SECS)
}

/// Reads a timeout in seconds: a number from 0 to [`MAX_TIMEOUT_SECS`]. Anything else (a
/// negative number, one past the bound) is refused, naming `key`, rather than taken and
/// turned into a duration that cannot exist.
fn timeout<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    key: &str,
) -> Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(deserializer)? {
        Some(value) if !(0.0..=MAX_TIMEOUT_SECS).contains(&value) => {
            Err(serde::de::Error::custom(format_args!(
                "{key} must be a number of seconds from 0 to {MAX_TIMEOUT_SECS}, not {value}"
            )))
        }
        seconds => Ok(seconds),
    }
}

/// `startupTimeoutSec` (`#[serde(with)]`), as [`timeout`] reads it.
pub mod startup_timeout_sec {
    use serde::{Deserializer, Serialize, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<f64>, D::Error> {
        super::timeout(deserializer, "startupTimeoutSec (startup_timeout_sec)")
    }

    pub fn serialize<S: Serializer>(
        seconds: &Option<f64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        seconds.serialize(serializer)
    }
}

/// `toolTimeoutSec` (`#[serde(with)]`), as [`timeout`] reads it.
pub mod tool_timeout_sec {
    use serde::{Deserializer, Serialize, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<f64>, D::Error> {
        super::timeout(deserializer, "toolTimeoutSec (tool_timeout_sec)")
    }

    pub fn serialize<S: Serializer>(
        seconds: &Option<f64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        seconds.serialize(serializer)
    }
}
