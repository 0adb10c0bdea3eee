//! `coder lsp`: the engine behind an LSP-style JSON-RPC 2.0 server on stdio.
//!
//! One session per connection. Requests map to engine calls ([`methods`]); every engine event
//! goes out as a `conversation/event` notification, in `seq` order, from the one stdout
//! writer ([`output`]), batched per burst; permission asks go out as `permission/request`
//! server-to-client requests from tasks of their own ([`permissions`]), so no request
//! handler ever awaits the client. A framing guard ([`framing`]) answers malformed input
//! and keeps the connection. Logs go to stderr, never to stdout.

mod documents;
mod framing;
mod methods;
mod output;
mod permissions;

use coder_core::Engine;
use coder_protocol::EventMsg;
use coder_protocol::methods::{
    CONVERSATION_CREATE, CONVERSATION_DESTROY, CONVERSATION_HISTORY, CONVERSATION_INTERRUPT,
    CONVERSATION_LIST, CONVERSATION_SEND, CoderCapabilities, InitializationOptions, METHODS,
    PROTOCOL_VERSION,
};
use std::path::Path;
use std::sync::Arc;

use documents::EditorDocuments;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    InitializeParams, InitializeResult, InitializedParams, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind,
};
use tower_lsp_server::{LanguageServer, LspService, Server};

/// The server state of one connection.
pub struct Backend {
    engine: Engine,
    documents: Arc<EditorDocuments>,
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let can_apply = params
            .capabilities
            .workspace
            .and_then(|workspace| workspace.apply_edit)
            .unwrap_or(false);
        self.documents.set_can_apply(can_apply);
        let options: InitializationOptions = match params.initialization_options {
            Some(options) => serde_json::from_value(options).map_err(|err| {
                tower_lsp_server::jsonrpc::Error::invalid_params(format!(
                    "invalid initializationOptions: {err}"
                ))
            })?,
            None => InitializationOptions::default(),
        };
        let history_loaded = match options.session_id {
            Some(session) => self
                .engine
                .resume(session)
                .map_err(|err| tower_lsp_server::jsonrpc::Error::invalid_params(err.to_string()))?,
            None => 0,
        };
        let coder = CoderCapabilities {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            methods: METHODS.iter().map(|method| (*method).to_owned()).collect(),
            session_id: self.engine.session_id(),
            history_loaded,
        };
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Kind(
                    TextDocumentSyncKind::INCREMENTAL,
                )),
                experimental: Some(serde_json::json!({ "coder": coder })),
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

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        self.documents
            .did_open(document.uri, document.version, document.text);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let document = params.text_document;
        self.documents
            .did_change(&document.uri, document.version, params.content_changes);
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.documents.did_close(&params.text_document.uri);
    }
}

/// Serves one session for `workspace` on stdin/stdout until the client exits or goes away.
pub async fn serve_stdio(engine: Engine, workspace: &Path) {
    serve(engine, workspace, tokio::io::stdin(), tokio::io::stdout()).await;
}

/// Serves one session over `input` and `output` (stdio in production).
pub async fn serve(
    engine: Engine,
    workspace: &Path,
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) {
    let (frames, frames_rx) = tokio::sync::mpsc::unbounded_channel();
    let events = engine.subscribe();
    let mut writer = None;
    let writer_slot = &mut writer;
    let backend_engine = engine.clone();
    let mut builder = LspService::build(move |client| {
        let asker = output::Asker {
            client,
            engine: backend_engine.clone(),
        };
        let documents = Arc::new(EditorDocuments::new(workspace, asker.client.clone()));
        backend_engine.set_documents(documents.clone());
        *writer_slot = Some(tokio::spawn(output::run(frames_rx, events, asker, output)));
        Backend {
            engine: backend_engine,
            documents,
        }
    })
    .custom_method(CONVERSATION_CREATE, Backend::create)
    .custom_method(CONVERSATION_SEND, Backend::send)
    .custom_method(CONVERSATION_LIST, Backend::list)
    .custom_method(CONVERSATION_HISTORY, Backend::history)
    .custom_method(CONVERSATION_DESTROY, Backend::destroy)
    .custom_method(CONVERSATION_INTERRUPT, Backend::interrupt);
    if std::env::var_os("CODER_LSP_TEST_HOOKS").is_some_and(|v| v == "1") {
        builder = builder.custom_method("coder/test/panic", Backend::test_panic);
    }
    let (service, socket) = builder.finish();
    let (to_service, service_input) = tokio::io::duplex(1 << 16);
    let (service_output, from_service) = tokio::io::duplex(1 << 16);
    tokio::spawn(framing::guard_input(input, to_service, frames.clone()));
    let relay = tokio::spawn(framing::relay_service(from_service, frames));
    Server::new(service_input, service_output, socket)
        .serve(service)
        .await;
    // The service's output is closed now: let the relay pass on its last frames and the
    // writer flush them.
    let _ = relay.await;
    if let Some(writer) = writer {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    }
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
