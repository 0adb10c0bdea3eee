//! What a front door sets over the configuration files and the environment, in one type.
//!
//! `coder exec`'s flags, `coder lsp`'s `initializationOptions` and the Node addon's options
//! each build an [`Overrides`]; [`Config::for_door`] is the one place they are applied. The model settings take part in choosing the provider (a key given here goes
//! only to the base URL given here or to the provider's default endpoint, see `config.rs`);
//! the rest are set over what the files say, after an untrusted workspace's file was
//! narrowed: a door's settings are the person's own.
//!
//! [`Config::for_door`]: crate::Config::for_door

use std::collections::BTreeMap;

use coder_protocol::methods::InitializationOptions;
use coder_protocol::options::{EngineOptions, ModelOptions};
use coder_protocol::{Mode, Preset};

use crate::config::{ApiKey, Config, preset_for};
use crate::mcp::McpServerConfig;

/// Every setting a front door may set; `None` leaves the files' (or the default) value.
/// Names follow the config file's keys. The protocol's option types convert into it
/// (`From<&EngineOptions>`, `From<&InitializationOptions>`, `From<&ModelOptions>`), so a
/// door only names itself ([`crate::Door`]).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// How messages name where these settings came from.
    pub door: DoorNames,
    /// A provider name: `openai`, `anthropic`, or another service at `base_url` (see
    /// [`coder_protocol::methods::ProviderName`]).
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Sent only to `base_url` given here or, without one, to the provider's default
    /// endpoint: never to a base URL from a file or the environment.
    pub api_key: Option<ApiKey>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    /// The mode new conversations start in; without `preset`, also the preset that fits it.
    pub mode: Option<Mode>,
    pub preset: Option<Preset>,
    /// Approve `ask` decisions without a person (dangerous commands still need one).
    pub auto_approve: Option<bool>,
    /// Tools switched off, instead of the files' list.
    pub disabled_tools: Option<Vec<String>>,
    /// MCP servers added to (or replacing, by name) the files' servers.
    pub mcp_servers: Option<BTreeMap<String, McpServerConfig>>,
    pub save_sessions: Option<bool>,
    pub sandbox: Option<bool>,
    pub max_steps: Option<u32>,
    /// The person's word on the workspace: `Some(true)` applies its own `.coder/config.json`
    /// and `.mcp.json` whole, `Some(false)` lets them only narrow even when the user-level
    /// file lists the folder, `None` leaves it to that list ([`crate::WorkspaceTrust`]).
    pub trust_workspace: Option<bool>,
}

/// How a front door's messages name its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoorNames {
    /// These settings as a whole, e.g. `initializationOptions`.
    pub settings: &'static str,
    /// The base URL setting, e.g. `initializationOptions.baseUrl`.
    pub base_url: &'static str,
    /// What the notice of an untrusted workspace ends with: how to trust it from this door.
    pub how_to_trust: &'static str,
}

impl Default for DoorNames {
    fn default() -> Self {
        DoorNames {
            settings: "the front door's settings",
            base_url: "the base URL setting",
            how_to_trust: "trust the folder to apply them",
        }
    }
}

/// The model settings of the SDK's `ModelOptions` (`Engine.create`'s `model`, `setModel`,
/// `checkModel`).
impl From<&ModelOptions> for Overrides {
    fn from(model: &ModelOptions) -> Self {
        Overrides {
            provider: Some(model.provider.as_str().to_owned()),
            model: Some(model.model.clone()),
            base_url: model.base_url.clone(),
            api_key: model
                .api_key
                .clone()
                .map(|key| ApiKey::from_source(key, "the apiKey option")),
            context_window: model.context_window,
            max_output_tokens: model.max_output_tokens,
            ..Overrides::default()
        }
    }
}

/// The SDK's `Engine.create` options.
impl From<&EngineOptions> for Overrides {
    fn from(options: &EngineOptions) -> Self {
        let model = options
            .model
            .as_ref()
            .map(Overrides::from)
            .unwrap_or_default();
        Overrides {
            mode: options.mode,
            preset: options.preset,
            auto_approve: options.auto_approve,
            disabled_tools: options.disabled_tools.clone(),
            mcp_servers: options.mcp_servers.clone().map(|servers| {
                servers
                    .into_iter()
                    .map(|(name, server)| (name, server.into()))
                    .collect()
            }),
            save_sessions: options.save_sessions,
            sandbox: options.sandbox,
            max_steps: options.max_steps,
            trust_workspace: options.trust_workspace,
            ..model
        }
    }
}

/// `coder lsp`'s `initializationOptions`.
impl From<&InitializationOptions> for Overrides {
    fn from(options: &InitializationOptions) -> Self {
        Overrides {
            provider: options
                .provider
                .as_ref()
                .map(|name| name.as_str().to_owned()),
            model: options.model.clone(),
            base_url: options.base_url.clone(),
            api_key: options
                .api_key
                .clone()
                .map(|key| ApiKey::from_source(key, "initializationOptions.apiKey")),
            trust_workspace: options.trust_workspace,
            ..Overrides::default()
        }
    }
}

impl Overrides {
    /// Sets the settings that do not choose the provider over `config`.
    pub(crate) fn apply(&self, config: &mut Config) {
        if let Some(window) = self.context_window {
            config.context_window = Some(window);
        }
        if let Some(tokens) = self.max_output_tokens {
            config.max_output_tokens = Some(tokens);
        }
        if let Some(mode) = self.mode {
            config.mode = mode;
            config.preset = preset_for(mode);
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
        if let Some(steps) = self.max_steps {
            config.max_steps = steps;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::WorkspaceTrust;

    fn load(workspace: &Path, overrides: &Overrides) -> Config {
        let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "k".to_owned());
        let trust = WorkspaceTrust::from_flag(overrides.trust_workspace);
        Config::load_full(workspace, None, &env, overrides, trust).unwrap()
    }

    fn server(command: &str) -> McpServerConfig {
        serde_json::from_value(serde_json::json!({ "command": command })).unwrap()
    }

    #[test]
    fn every_setting_of_a_door_lands_over_the_files() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir(workspace.path().join(".coder")).unwrap();
        std::fs::write(
            workspace.path().join(".coder/config.json"),
            serde_json::json!({
                "maxSteps": 7, "maxOutputTokens": 100, "contextWindow": 1000,
                "tools": {"disabled": ["grep"]}, "saveSessions": true,
                "mcpServers": {"kept": {"command": "a"}, "replaced": {"command": "b"}},
            })
            .to_string(),
        )
        .unwrap();
        let overrides = Overrides {
            trust_workspace: Some(true),
            model: Some("m".into()),
            context_window: Some(2000),
            max_output_tokens: Some(200),
            mode: Some(Mode::AutoEdit),
            auto_approve: Some(true),
            disabled_tools: Some(vec!["bash".into()]),
            mcp_servers: Some(BTreeMap::from([
                ("replaced".to_owned(), server("c")),
                ("added".to_owned(), server("d")),
            ])),
            save_sessions: Some(false),
            sandbox: Some(false),
            max_steps: Some(9),
            ..Overrides::default()
        };
        let config = load(workspace.path(), &overrides);
        assert_eq!(config.model, "m");
        assert_eq!(config.context_window, Some(2000));
        assert_eq!(config.max_output_tokens, Some(200));
        assert_eq!(
            (config.mode, config.preset),
            (Mode::AutoEdit, Preset::AutoEdit)
        );
        assert!(config.auto_approve);
        assert_eq!(config.disabled_tools, ["bash"]);
        let commands: Vec<(&str, Option<&str>)> = config
            .mcp_servers
            .iter()
            .map(|(name, server)| (name.as_str(), server.command.as_deref()))
            .collect();
        assert_eq!(
            commands,
            [
                ("added", Some("d")),
                ("kept", Some("a")),
                ("replaced", Some("c"))
            ]
        );
        assert!(!config.save_sessions);
        assert!(!config.sandbox);
        assert_eq!(config.max_steps, 9);

        // Without overrides, the files' values.
        let config = load(
            workspace.path(),
            &Overrides {
                trust_workspace: Some(true),
                ..Overrides::default()
            },
        );
        assert_eq!((config.max_steps, config.max_output_tokens), (7, Some(100)));
        assert_eq!(config.disabled_tools, ["grep"]);
    }

    #[test]
    fn a_preset_given_with_a_mode_wins_over_the_one_that_fits_the_mode() {
        let workspace = tempfile::tempdir().unwrap();
        let overrides = Overrides {
            mode: Some(Mode::Yolo),
            preset: Some(Preset::Strict),
            ..Overrides::default()
        };
        let config = load(workspace.path(), &overrides);
        assert_eq!((config.mode, config.preset), (Mode::Yolo, Preset::Strict));
    }

    /// A door's settings are the person's own: they apply whole even where the untrusted
    /// workspace's file was narrowed.
    #[test]
    fn a_door_loosens_what_an_untrusted_workspace_may_not() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir(workspace.path().join(".coder")).unwrap();
        std::fs::write(
            workspace.path().join(".coder/config.json"),
            r#"{"mode": "yolo"}"#,
        )
        .unwrap();
        let config = load(workspace.path(), &Overrides::default());
        assert_eq!(config.mode, Mode::Default);
        assert_eq!(config.ignored_settings, ["mode"]);
        let overrides = Overrides {
            mode: Some(Mode::AutoEdit),
            ..Overrides::default()
        };
        assert_eq!(load(workspace.path(), &overrides).mode, Mode::AutoEdit);
    }
}
