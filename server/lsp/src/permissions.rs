//! `permission/request`: asking the editor, taking its answer back to the engine, and
//! cancelling the request (`$/cancelRequest`) when the engine withdraws it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use coder_core::Engine;
use coder_protocol::PermissionDecision;
use coder_protocol::methods::{PermissionParams, PermissionRequest};
use coder_protocol::table;
use serde_json::Value;
use tower::Service;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{self, Id};
use tower_lsp_server::ls_types::notification::Cancel;
use tower_lsp_server::ls_types::{CancelParams, NumberOrString};

/// The `permission/request`s on their way to the editor: the engine's request id to the
/// JSON-RPC id the request went out under.
#[derive(Clone, Default)]
pub(crate) struct Open(Arc<Mutex<HashMap<String, Id>>>);

impl Open {
    fn insert(&self, request_id: &str, id: Id) {
        let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        open.insert(request_id.to_owned(), id);
    }

    fn remove(&self, request_id: &str) -> Option<Id> {
        let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        open.remove(request_id)
    }
}

/// Sends the request from a task of its own (never from a request handler, which could
/// deadlock tower-lsp) and hands the answer to the engine by request id. An error answer,
/// a malformed one (the guard turns a response with both `result` and `error` into an
/// error), or a result that is not exactly a decision denies the call and tells the model
/// why. An answer to a request the engine withdrew meanwhile is dropped.
pub(crate) fn ask(client: Client, engine: Engine, open: Open, params: PermissionParams) {
    let id = client.next_request_id();
    let request_id = params.request_id.clone();
    open.insert(&request_id, id.clone());
    tokio::spawn(async move {
        let answer = send(client, id, params).await;
        if open.remove(&request_id).is_none() {
            return;
        }
        let decision = match answer {
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

/// Tells the editor a request the engine withdrew is no longer wanted, so it can close its
/// prompt; whatever it answers later is dropped.
pub(crate) fn cancel(client: Client, open: &Open, request_id: &str) {
    let Some(id) = open.remove(request_id) else {
        return;
    };
    let id = match id {
        Id::Number(number) => match i32::try_from(number) {
            Ok(number) => NumberOrString::Number(number),
            Err(_) => NumberOrString::String(number.to_string()),
        },
        Id::String(text) => NumberOrString::String(text),
        Id::Null => return,
    };
    tokio::spawn(async move {
        client
            .send_notification::<Cancel>(CancelParams { id })
            .await;
    });
}

/// `permission/request` under the id `id`. The answer is read as any JSON value and checked
/// by [`PermissionDecision::parse_answer`], which is stricter than serde would be.
async fn send(mut client: Client, id: Id, params: PermissionParams) -> jsonrpc::Result<Value> {
    let params = serde_json::to_value(params).map_err(|err| jsonrpc::Error {
        code: jsonrpc::ErrorCode::InternalError,
        message: format!("the request was not serialized: {err}").into(),
        data: None,
    })?;
    let request = jsonrpc::Request::build(<PermissionRequest as table::Request>::METHOD)
        .id(id)
        .params(params)
        .finish();
    let Ok(Some(response)) = client.call(request).await else {
        return Err(jsonrpc::Error::internal_error());
    };
    response.into_parts().1
}
