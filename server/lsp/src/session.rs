//! The session of a connection, created at `initialize`: the workspace the client names,
//! the configuration of that workspace with the client's model settings over it, and the
//! engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coder_core::{Config, Door, DoorNames, Engine, Overrides, ProviderNeed};
use coder_protocol::methods::InitializationOptions;
use tower_lsp_server::jsonrpc::Error;
use tower_lsp_server::ls_types::InitializeParams;

use crate::documents::EditorDocuments;

/// The JSON-RPC error code of a task asked for without a model provider (server-defined
/// range); see docs/protocol.md.
pub const NO_PROVIDER: i64 = -32001;

/// What to set when no provider is configured, for `coder lsp`'s clients.
pub const NO_PROVIDER_MESSAGE: &str = "no model provider configured: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server) or ANTHROPIC_API_KEY, or \"provider\" in .coder/config.json, or pass initializationOptions.provider/model/baseUrl/apiKey";

/// One connection's engine and the editor's open documents.
pub(crate) struct Session {
    pub engine: Engine,
    pub documents: Arc<EditorDocuments>,
}

/// The folder the client names: its `rootUri`, else its first workspace folder; `None`
/// when it names none (the core then takes the repository enclosing the server's directory).
pub(crate) fn requested_folder(params: &InitializeParams) -> Result<Option<PathBuf>, Error> {
    #[allow(deprecated)] // `rootUri` is deprecated in favour of folders, but clients send it.
    let uri = params.root_uri.as_ref().or_else(|| {
        params
            .workspace_folders
            .as_ref()
            .and_then(|folders| folders.first())
            .map(|folder| &folder.uri)
    });
    let Some(uri) = uri else {
        return Ok(None);
    };
    let path = uri.to_file_path().ok_or_else(|| {
        Error::invalid_params(format!(
            "the workspace `{}` is not a file URI",
            uri.as_str()
        ))
    })?;
    Ok(Some(path.to_path_buf()))
}

/// `coder lsp` as the core knows it: an editor starts the server before anything is
/// configured, so only a task needs a model.
const DOOR: Door = Door {
    names: DoorNames {
        settings: "initializationOptions",
        base_url: "initializationOptions.baseUrl",
        how_to_trust: "pass initializationOptions.trustWorkspace: true to apply them",
    },
    provider: ProviderNeed::ForTasks,
    completes_paths: true,
    watches_files: true,
    keeps_checkpoints: true,
};

/// Loads the configuration of the workspace the client names (or of the repository around
/// `cwd`) with the client's settings over it, the workspace's own files trusted as
/// `initializationOptions.trustWorkspace` (else the user-level config) says; a missing
/// folder or a mistake in the settings fails `initialize` with `-32602` and a message naming
/// it. What an untrusted workspace asked for and did not get becomes a `warning` event of
/// the first task (never a line on stdout, which is the protocol).
pub(crate) fn config(
    params: &InitializeParams,
    cwd: &Path,
    options: &InitializationOptions,
) -> Result<Config, Error> {
    let requested = requested_folder(params)?;
    Config::for_door(&DOOR, requested.as_deref(), cwd, Overrides::from(options))
        .map_err(|err| Error::invalid_params(err.to_string()))
}
