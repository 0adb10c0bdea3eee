//! The options a JavaScript program gives, turned into the engine's configuration. The
//! option types are the protocol's ([`EngineOptions`], [`ModelOptions`]), so their
//! TypeScript is generated into `ts/protocol.ts`; this file only maps them onto the core's
//! [`Overrides`], which the core applies as it does for `coder exec` and `coder lsp`.

use coder_core::model::ModelSettings;
use coder_core::{
    ApiKey, Config, Door, DoorNames, Overrides, ProviderConfig, ProviderKind, ProviderNeed,
    check_base_url,
};
use coder_protocol::options::{EngineOptions, ModelOptions};

/// The SDK as the core knows it: an engine of the SDK always has a model, so no provider
/// anywhere fails `create`.
const DOOR: Door = Door {
    names: DoorNames {
        settings: "the SDK's options",
        base_url: "model.baseUrl",
        how_to_trust: "pass trustWorkspace: true to apply them",
    },
    provider: ProviderNeed::AtStart,
};

fn api_key(model: &ModelOptions) -> Option<ApiKey> {
    model
        .api_key
        .clone()
        .map(|key| ApiKey::from_source(key, "the apiKey option"))
}

/// The settings of `model` on its own (`setModel`, `checkModel`), or why the base URL is
/// unusable.
pub fn model_settings(model: &ModelOptions) -> Result<ModelSettings, String> {
    let provider = ProviderKind::from(model.provider);
    let base_url = match &model.base_url {
        Some(url) => check_base_url(url, DOOR.names.base_url).map_err(|err| err.to_string())?,
        None => provider.defaults().base_url.to_owned(),
    };
    Ok(ModelSettings {
        model: model.model.clone(),
        provider: ProviderConfig {
            kind: provider,
            base_url,
            api_key: api_key(model),
        },
        context_window: model.context_window,
        max_output_tokens: model.max_output_tokens.unwrap_or(8192),
    })
}

/// The options as the core's overrides.
fn overrides(options: &EngineOptions) -> Overrides {
    let model = options.model.as_ref();
    Overrides {
        // Set by `Config::for_door` from `DOOR`.
        door: DoorNames::default(),
        provider: model.map(|model| ProviderKind::from(model.provider)),
        model: model.map(|model| model.model.clone()),
        base_url: model.and_then(|model| model.base_url.clone()),
        api_key: model.and_then(api_key),
        context_window: model.and_then(|model| model.context_window),
        max_output_tokens: model.and_then(|model| model.max_output_tokens),
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
    }
}

/// The configuration: `workingDir` is the workspace as given, files and environment
/// first, then the options over them (what an untrusted workspace asked for and did not
/// get is a `warning` event of the first task, where the program listens).
pub fn config(options: &EngineOptions) -> Result<Config, String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    Config::for_door(&DOOR, Some(&options.working_dir), &cwd, overrides(options))
        .map_err(|err| err.to_string())
}
