//! The options a JavaScript program gives, turned into the engine's configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;

use coder_core::mcp::McpServerConfig;
use coder_core::model::ModelSettings;
use coder_core::{
    ApiKey, Config, ConfigError, ProviderConfig, ProviderKind, WorkspaceTrust, check_base_url,
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
            Some(url) => check_base_url(url, "model.baseUrl").map_err(|err| err.to_string())?,
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

impl EngineOptions {
    /// The configuration: files and environment first, then these options over them. With a
    /// `model`, a workspace that configures no provider is fine.
    pub fn config(&self) -> Result<Config, String> {
        let workspace = self
            .working_dir
            .canonicalize()
            .map_err(|err| format!("workingDir {}: {err}", self.working_dir.display()))?;
        let trust = WorkspaceTrust::from_flag(self.trust_workspace);
        let mut config = match (Config::load_trusting(&workspace, trust), &self.model) {
            (Ok(config), _) => config,
            (Err(ConfigError::MissingKey(..)), Some(model)) => {
                let settings = model.settings()?;
                Config::new(&workspace, settings.provider, &settings.model)
            }
            (Err(err), _) => return Err(err.to_string()),
        };
        if let Some(model) = &self.model {
            let settings = model.settings()?;
            config.model = settings.model;
            config.provider = Some(settings.provider);
            config.context_window = settings.context_window.or(config.context_window);
            config.max_output_tokens = settings.max_output_tokens;
        }
        // An engine of the SDK always has a model: no provider anywhere fails `create`.
        config.require_provider().map_err(|err| err.to_string())?;
        if let Some(mode) = self.mode {
            config.mode = mode;
            config.preset = coder_core::preset_for(mode);
        }
        if let Some(preset) = self.preset {
            config.preset = preset;
        }
        if let Some(auto_approve) = self.auto_approve {
            config.auto_approve = auto_approve;
        }
        if let Some(disabled) = &self.disabled_tools {
            config.disabled_tools = disabled.clone();
        }
        if let Some(servers) = &self.mcp_servers {
            config.mcp_servers.extend(servers.clone());
        }
        if let Some(save) = self.save_sessions {
            config.save_sessions = save;
        }
        if let Some(sandbox) = self.sandbox {
            config.sandbox = sandbox;
        }
        if let Some(max_steps) = self.max_steps {
            config.max_steps = max_steps;
        }
        // Reported as a `warning` event of the first task, where the program listens.
        if let Some(notice) = config.untrusted_notice("pass trustWorkspace: true to apply them") {
            config.warnings.push(notice);
        }
        Ok(config)
    }
}
