//! `permission/request`: asking the editor, and taking its answer back to the engine.

use coder_core::Engine;
use coder_protocol::PermissionDecision;
use coder_protocol::methods::{PermissionParams, PermissionRequest};
use coder_protocol::table;
use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::request::Request;

/// The table's `permission/request`, with its answer read loosely.
enum PermissionAsk {}

impl Request for PermissionAsk {
    type Params = <PermissionRequest as table::Request>::Params;
    /// The answer is read as any JSON value and checked by
    /// [`PermissionDecision::from_answer`], which is stricter than serde would be.
    type Result = Value;
    const METHOD: &'static str = <PermissionRequest as table::Request>::METHOD;
}

/// Sends the request from a task of its own (never from a request handler, which could
/// deadlock tower-lsp) and hands the answer to the engine by request id. An error answer,
/// a malformed one (the guard turns a response with both `result` and `error` into an
/// error), or a result that is not exactly a decision denies the call and tells the model
/// why.
pub(crate) fn ask(client: Client, engine: Engine, params: PermissionParams) {
    tokio::spawn(async move {
        let request_id = params.request_id.clone();
        let decision = match client.send_request::<PermissionAsk>(params).await {
            Ok(answer) => PermissionDecision::parse_answer(&answer).unwrap_or_else(|problem| {
                tracing::warn!("permission request {request_id}: malformed answer: {problem}");
                PermissionDecision::malformed(&problem)
            }),
            Err(err) => {
                tracing::warn!("permission request {request_id} failed: {err}");
                PermissionDecision::Deny {
                    message: Some(format!(
                        "the editor did not answer the permission request: {}",
                        err.message
                    )),
                }
            }
        };
        if let Err(err) = engine.respond_permission(&request_id, decision) {
            tracing::warn!("permission answer not delivered: {err}");
        }
    });
}
