//! `coder lsp`: the engine behind an LSP-style JSON-RPC 2.0 server on stdio.
//!
//! One session per connection. Requests map to engine calls ([`methods`]); every engine event
//! goes out as a `conversation/event` notification, in `seq` order, from the one stdout
//! writer ([`output`]), batched per burst; permission asks go out as `permission/request`
//! server-to-client requests from tasks of their own ([`permissions`]), so no request
//! handler ever awaits the client. A framing guard ([`framing`]) answers malformed input
//! and keeps the connection. Logs go to stderr, never to stdout.

mod dispatch;
mod documents;
mod framing;
mod methods;
mod output;
mod permissions;
mod replay;
mod session;
mod stdio;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use coder_core::Engine;
use coder_protocol::EventMsg;
use coder_protocol::methods::{
    CoderCapabilities, CommandList, ConversationArchive, ConversationCommand, ConversationCompact,
    ConversationCreate, ConversationDestroy, ConversationHistory, ConversationInterrupt,
    ConversationList, ConversationPoints, ConversationRewind, ConversationSend,
    ConversationSetContext, ConversationSetMode, ConversationSteer, ConversationWithdraw,
    InitializationOptions, METHODS, PROTOCOL_VERSION, PermissionsList, PermissionsRemove, RuleList,
    SessionFork, SessionInterrupt, SessionList, SessionResume, SkillList, WorkspaceCompletePaths,
};
use coder_protocol::table::Request;
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::Method;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    InitializeParams, InitializeResult, InitializedParams, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind,
};
use tower_lsp_server::{Client, LanguageServer, LspService, LspServiceBuilder};

use documents::EditorDocuments;
use session::Session;
pub use session::{NO_PROVIDER, NO_PROVIDER_MESSAGE};

/// The server state of one connection. The session (engine and open documents) is created
/// at `initialize`, from the workspace and settings the client gives.
pub struct Backend {
    /// Where the server was started: the start directory when the client names no folder.
    cwd: PathBuf,
    client: Client,
    session: Arc<OnceLock<Session>>,
    /// To the stdout writer: it takes the engine's events once the session exists.
    out: mpsc::UnboundedSender<output::Out>,
}

impl Backend {
    /// The session; requests reach handlers only after `initialize` succeeded.
    fn session(&self) -> Result<&Session> {
        self.session.get().ok_or_else(Error::internal_error)
    }

    pub(crate) fn engine(&self) -> Result<&Engine> {
        Ok(&self.session()?.engine)
    }

    /// Creates the session for `params`; the engine starts without a model when nothing
    /// names a provider.
    async fn start_session(&self, params: InitializeParams) -> Result<usize> {
        let options: InitializationOptions = match params.initialization_options.clone() {
            Some(options) => serde_json::from_value(options).map_err(|err| {
                Error::invalid_params(format!("invalid initializationOptions: {err}"))
            })?,
            None => InitializationOptions::default(),
        };
        if self.session.get().is_some() {
            return Err(Error::invalid_request());
        }
        let config = session::config(&params, &self.cwd, &options)?;
        let workspace = config.workspace.clone();
        let engine = Engine::new(config).map_err(|err| Error {
            code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
            message: err.to_string().into(),
            data: None,
        })?;
        let events = engine.subscribe();
        let history_loaded = match options.session_id {
            Some(session) => match engine.resume(session) {
                Ok(loaded) => loaded,
                Err(err) => {
                    // `initialize` fails with the engine's kind; the client may initialize
                    // again, without `sessionId` to start fresh (docs/protocol.md).
                    engine.shutdown().await;
                    return Err(methods::engine_error(err));
                }
            },
            None => 0,
        };
        let can_apply = params
            .capabilities
            .workspace
            .and_then(|workspace| workspace.apply_edit)
            .unwrap_or(false);
        let documents = Arc::new(EditorDocuments::new(&workspace, self.client.clone()));
        documents.set_can_apply(can_apply);
        engine.set_documents(documents.clone());
        let asker = output::Asker {
            client: self.client.clone(),
            engine: engine.clone(),
            open: permissions::Open::default(),
        };
        if let Err(Session { engine, .. }) = self.session.set(Session {
            engine: engine.clone(),
            documents,
        }) {
            // Another `initialize` won the race.
            engine.shutdown().await;
            return Err(Error::invalid_request());
        }
        tracing::info!("session for {}", workspace.display());
        let _ = self.out.send(output::Out::Events(events, asker));
        Ok(history_loaded)
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let history_loaded = self.start_session(params).await?;
        let coder = CoderCapabilities {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            methods: METHODS.iter().map(|method| (*method).to_owned()).collect(),
            session_id: self.engine()?.session_id(),
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
        if let Some(session) = self.session.get() {
            session.engine.shutdown().await;
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let Ok(session) = self.session() else { return };
        let document = params.text_document;
        session
            .documents
            .did_open(document.uri, document.version, document.text);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let Ok(session) = self.session() else { return };
        let document = params.text_document;
        session
            .documents
            .did_change(&document.uri, document.version, params.content_changes);
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let Ok(session) = self.session() else { return };
        session.documents.did_close(&params.text_document.uri);
    }
}

/// Serves one session on stdin/stdout until the client exits or goes away. `cwd` is the
/// workspace (or lies inside it) when the client names none.
pub async fn serve_stdio(cwd: &Path) {
    serve_stdio_until(cwd, std::future::pending()).await;
}

/// [`serve_stdio`], also ending the session when `stop` completes (a signal).
pub async fn serve_stdio_until(cwd: &Path, stop: impl std::future::Future<Output = ()>) {
    serve_until(cwd, stdio::input(), stdio::output(), stop).await;
}

/// Serves one session over `input` and `output` (stdio in production).
pub async fn serve(
    cwd: &Path,
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) {
    serve_until(cwd, input, output, std::future::pending()).await;
}

/// [`serve`], also ending the session when `stop` completes: the running task is
/// interrupted (its tool processes killed), the session saved and the MCP servers reaped
/// before anything else, since the process exits soon after.
pub async fn serve_until(
    cwd: &Path,
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    stop: impl std::future::Future<Output = ()>,
) {
    let (frames, frames_rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(output::run(frames_rx, output));
    let session = Arc::new(OnceLock::new());
    let backend_session = session.clone();
    let backend_out = frames.clone();
    let mut builder = LspService::build(move |client| Backend {
        cwd: cwd.to_path_buf(),
        client,
        session: backend_session,
        out: backend_out,
    });
    builder = route::<ConversationCreate>(builder, Backend::create);
    builder = route::<ConversationSend>(builder, Backend::send);
    builder = route::<ConversationSteer>(builder, Backend::steer);
    builder = route::<ConversationWithdraw>(builder, Backend::withdraw);
    builder = route::<ConversationList>(builder, Backend::list);
    builder = route::<ConversationHistory>(builder, Backend::history);
    builder = route::<ConversationDestroy>(builder, Backend::destroy);
    builder = route::<ConversationInterrupt>(builder, Backend::interrupt);
    builder = route::<ConversationSetMode>(builder, Backend::set_mode);
    builder = route::<ConversationSetContext>(builder, Backend::set_context);
    builder = route::<ConversationCompact>(builder, Backend::compact);
    builder = route::<ConversationCommand>(builder, Backend::command);
    builder = route::<ConversationArchive>(builder, Backend::archive);
    builder = route::<SessionInterrupt>(builder, Backend::interrupt_session);
    builder = route::<SessionList>(builder, Backend::sessions);
    builder = route::<SessionResume>(builder, Backend::resume);
    builder = route::<ConversationPoints>(builder, Backend::points);
    builder = route::<ConversationRewind>(builder, Backend::rewind);
    builder = route::<SessionFork>(builder, Backend::fork);
    builder = route::<RuleList>(builder, Backend::rules);
    builder = route::<PermissionsList>(builder, Backend::permission_rules);
    builder = route::<PermissionsRemove>(builder, Backend::remove_permission_rule);
    builder = route::<CommandList>(builder, Backend::commands);
    builder = route::<SkillList>(builder, Backend::skills);
    builder = route::<WorkspaceCompletePaths>(builder, Backend::complete_paths);
    if std::env::var_os("CODER_LSP_TEST_HOOKS").is_some_and(|v| v == "1") {
        builder = builder.custom_method("coder/test/panic", Backend::test_panic);
    }
    let (service, socket) = builder.finish();
    let (requests, requests_rx) = mpsc::channel(64);
    let (responses, responses_rx) = mpsc::channel(64);
    let guard = tokio::spawn(framing::guard_input(
        input,
        framing::Routes {
            requests,
            responses,
            out: frames.clone(),
        },
    ));
    // On the runtime's workers, not the caller's thread (the main thread's `block_on` in
    // production): a request then goes from the input guard to its handler, and the handler
    // to the engine, within the worker that read it, not with a wake-up of another thread.
    let mut dispatch = tokio::spawn(dispatch::run(
        service,
        socket,
        requests_rx,
        responses_rx,
        frames,
    ));
    let stopped = tokio::select! {
        _ = &mut dispatch => false,
        () = stop => true,
    };
    dispatch.abort();
    if stopped && let Some(session) = session.get() {
        tracing::info!("stopping on a signal");
        session.engine.shutdown().await;
    }
    // After `exit` the client may keep its input open: stop reading it. Every sender of
    // frames is gone then, so the writer writes what is left and ends.
    guard.abort();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    // The client is gone (exit or closed stdin): end the session. After `shutdown` (or a
    // signal) this returns at once: the engine's shutdown runs once.
    if let Some(session) = session.get() {
        session.engine.shutdown().await;
    }
}

/// Registers `handler` for the client-to-server request `M` of the protocol's method table
/// (`coder_protocol::methods`): under the table's name, and only if the handler takes the
/// table's params and returns its result, so the two cannot drift apart.
fn route<M: Request>(
    builder: LspServiceBuilder<Backend>,
    handler: impl for<'a> Method<&'a Backend, (M::Params,), Result<M::Result>>
    + Clone
    + Send
    + Sync
    + 'static,
) -> LspServiceBuilder<Backend> {
    builder.custom_method(M::METHOD, handler)
}

/// Whether an event ends a task (for front doors that track tasks).
pub fn ends_task(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::TaskComplete { .. } | EventMsg::TurnAborted { .. }
    )
}
