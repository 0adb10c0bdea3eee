//! The options a JavaScript program gives, handed to the core. The option types are the
//! protocol's ([`EngineOptions`], [`ModelOptions`]), so their TypeScript is generated into
//! `ts/protocol.ts`; the core maps them onto its overrides and model settings, as it does
//! for `coder exec` and `coder lsp`. This file only names the SDK as a door.

use coder_core::model::ModelSettings;
use coder_core::{Config, Door, DoorNames, Overrides, ProviderNeed};
use coder_protocol::options::{EngineOptions, ModelOptions};

/// The SDK as the core knows it: an engine of the SDK has a model, so no provider anywhere
/// fails `create`, unless the program asked to give it one later (`modelLater`).
const DOOR: Door = Door {
    names: DoorNames {
        settings: "the SDK's options",
        base_url: "model.baseUrl",
        how_to_trust: "pass trustWorkspace: true to apply them",
    },
    provider: ProviderNeed::AtStart,
    completes_paths: true,
    watches_files: true,
    keeps_checkpoints: true,
};

/// The settings of `model` on its own (`setModel`, `checkModel`), or why they are unusable.
pub fn model_settings(model: &ModelOptions) -> Result<ModelSettings, String> {
    ModelSettings::from_options(model, &DOOR.names).map_err(|err| err.to_string())
}

/// The configuration: `workingDir` is the workspace as given, files and environment
/// first, then the options over them (what an untrusted workspace asked for and did not
/// get is a `warning` event of the first task, where the program listens).
pub fn config(options: &EngineOptions) -> Result<Config, String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let door = Door {
        provider: if options.model_later == Some(true) {
            ProviderNeed::ForTasks
        } else {
            ProviderNeed::AtStart
        },
        ..DOOR
    };
    Config::for_door(
        &door,
        Some(&options.working_dir),
        &cwd,
        Overrides::from(options),
    )
    .map_err(|err| err.to_string())
}
