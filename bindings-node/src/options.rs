//! The options a JavaScript program gives, turned into the engine's configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;

use coder_core::mcp::McpServerConfig;
use coder_core::model::ModelSettings;
use coder_core::{
    ApiKey, Config, DoorNames, Overrides, ProviderConfig, ProviderKind, check_base_url,
};
use coder_protocol::{Mode, Preset};
use serde::Deserialize;

/// `NativeEngine.create(options)`. Everything but `workingDir` is optional; what is left
/// out comes from the workspace's `.coder/config.json`, the user's config and the
/// environment, as for `coder exec`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EngineOptions {
    pub working_dir: PathBuf,
    pub model: Option<ModelOptions>,
    pub mode: Option<Mode>,
    pub preset: Option<Preset>,
    /// Approve what the policy would ask about (dangerous commands still ask).
    pub auto_approve: Option<bool>,
    /// Tools not offered to the model.
    pub disabled_tools: Option<Vec<String>>,
    pub mcp_servers: Option<BTreeMap<String, McpServerConfig>>,
    pub save_sessions: Option<bool>,
    pub sandbox: Option<bool>,
    pub max_steps: Option<u32>,
    /// `true` applies the workspace's own `.coder/config.json` and `.mcp.json` whole for
    /// this engine; `false` lets them only narrow even when the user-level config lists the
    /// folder; absent, the user-level config's `trustedFolders` decides.
    pub trust_workspace: Option<bool>,
}

/// A model and the provider serving it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelOptions {
    /// `openai` (and any OpenAI-compatible server) or `anthropic`.
    pub provider: ProviderKind,
    pub model: String,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
}

impl ModelOptions {
    /// The settings, or why the base URL is unusable.
    pub fn settings(&self) -> Result<ModelSettings, String> {
        let base_url = match &self.base_url {
            Some(url) => check_base_url(url, DOOR.base_url).map_err(|err| err.to_string())?,
            None => self.provider.defaults().base_url.to_owned(),
        };
        Ok(ModelSettings {
            model: self.model.clone(),
            provider: ProviderConfig {
                kind: self.provider,
                base_url,
                api_key: self
                    .api_key
                    .clone()
                    .map(|key| ApiKey::from_source(key, "the apiKey option")),
            },
            context_window: self.context_window,
            max_output_tokens: self.max_output_tokens.unwrap_or(8192),
        })
    }
}

/// How the SDK's messages name its options.
const DOOR: DoorNames = DoorNames {
    settings: "the SDK's options",
    base_url: "model.baseUrl",
    how_to_trust: "pass trustWorkspace: true to apply them",
};

impl EngineOptions {
    /// The options as the core's overrides.
    fn overrides(&self) -> Overrides {
        let model = self.model.as_ref();
        Overrides {
            door: DOOR,
            provider: model.map(|model| model.provider),
            model: model.map(|model| model.model.clone()),
            base_url: model.and_then(|model| model.base_url.clone()),
            api_key: model
                .and_then(|model| model.api_key.clone())
                .map(|key| ApiKey::from_source(key, "the apiKey option")),
            context_window: model.and_then(|model| model.context_window),
            max_output_tokens: model.and_then(|model| model.max_output_tokens),
            mode: self.mode,
            preset: self.preset,
            auto_approve: self.auto_approve,
            disabled_tools: self.disabled_tools.clone(),
            mcp_servers: self.mcp_servers.clone(),
            save_sessions: self.save_sessions,
            sandbox: self.sandbox,
            max_steps: self.max_steps,
            trust_workspace: self.trust_workspace,
        }
    }

    /// The configuration: files and environment first, then these options over them (what
    /// an untrusted workspace asked for and did not get is a `warning` event of the first
    /// task, where the program listens).
    pub fn config(&self) -> Result<Config, String> {
        let workspace = self
            .working_dir
            .canonicalize()
            .map_err(|err| format!("workingDir {}: {err}", self.working_dir.display()))?;
        let config = Config::load_overriding(&workspace, &self.overrides())
            .map_err(|err| err.to_string())?;
        // An engine of the SDK always has a model: no provider anywhere fails `create`.
        config.require_provider().map_err(|err| err.to_string())?;
        Ok(config)
    }
}
