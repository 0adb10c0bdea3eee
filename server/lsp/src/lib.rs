//! `coder lsp`: the engine behind an LSP-style JSON-RPC 2.0 server on stdio.
//!
//! One session per connection. Requests map to engine calls; every engine event goes out as a
//! `conversation/event` notification, in `seq` order, from one forwarding task; permission
//! asks go out as `permission/request` server-to-client requests from tasks of their own, so
//! no request handler ever awaits the client. Logs go to stderr, never to stdout.

mod framing;
mod methods;

use coder_core::{Engine, EngineError};
use coder_protocol::EventMsg;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    InitializeParams, InitializeResult, InitializedParams, ServerCapabilities, ServerInfo,
};
use tower_lsp_server::{LanguageServer, LspService, Server};

pub use methods::{
    CreateParams, CreateResult, DestroyResult, EventParams, HistoryParams, ListParams,
    PermissionParams, PermissionResult, SendParams, SendResult, TargetParams,
};

/// The coder protocol version advertised in `initialize`.
pub const PROTOCOL_VERSION: &str = "0.1";

/// The methods this server answers besides the LSP lifecycle.
pub const METHODS: [&str; 6] = [
    "conversation/create",
    "conversation/send",
    "conversation/list",
    "conversation/history",
    "conversation/destroy",
    "conversation/interrupt",
];

/// The server state of one connection.
pub struct Backend {
    engine: Engine,
}

impl LanguageServer for Backend {
    async fn initialize(&self, _: InitializeParams) -> Result<InitializeResult> {
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                experimental: Some(serde_json::json!({
                    "coder": {"protocolVersion": PROTOCOL_VERSION, "methods": METHODS},
                })),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "coder".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
            ..InitializeResult::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        tracing::info!("client initialized");
    }

    async fn shutdown(&self) -> Result<()> {
        self.engine.shutdown().await;
        Ok(())
    }
}

fn engine_error(err: EngineError) -> Error {
    let code = match err {
        EngineError::UnknownConversation(_)
        | EngineError::RootConversation
        | EngineError::InvalidSpec(_)
        | EngineError::UnknownPermissionRequest(_) => ErrorCode::InvalidParams,
        _ => ErrorCode::InternalError,
    };
    Error {
        code,
        message: err.to_string().into(),
        data: None,
    }
}

/// Serves one session on stdin/stdout until the client exits or goes away.
pub async fn serve_stdio(engine: Engine) {
    let events = engine.subscribe();
    let forward_engine = engine.clone();
    let (service, socket) = LspService::build(move |client| {
        tokio::spawn(methods::forward_events(
            client.clone(),
            forward_engine.clone(),
            events,
        ));
        Backend {
            engine: forward_engine,
        }
    })
    .custom_method("conversation/create", Backend::create)
    .custom_method("conversation/send", Backend::send)
    .custom_method("conversation/list", Backend::list)
    .custom_method("conversation/history", Backend::history)
    .custom_method("conversation/destroy", Backend::destroy)
    .custom_method("conversation/interrupt", Backend::interrupt)
    .finish();
    let (to_service, service_input) = tokio::io::duplex(1 << 16);
    let (service_output, from_service) = tokio::io::duplex(1 << 16);
    let (answers, answers_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(framing::guard_input(
        tokio::io::stdin(),
        to_service,
        answers,
    ));
    let writer = tokio::spawn(framing::merge_output(
        from_service,
        answers_rx,
        tokio::io::stdout(),
    ));
    Server::new(service_input, service_output, socket)
        .serve(service)
        .await;
    // The server's output is closed now; let the writer flush what is left.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    // The client is gone (exit or closed stdin): stop work and reap the MCP servers.
    engine.deny_pending_permissions();
    engine.shutdown().await;
}

/// Whether an event ends a task (for front doors that track tasks).
pub fn ends_task(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::TaskComplete { .. } | EventMsg::TurnAborted { .. }
    )
}
