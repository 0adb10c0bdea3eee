//! Drives the tower-lsp service without its transport: checked requests go in, responses
//! and server-to-client requests go to the one stdout writer as frames.
//!
//! This is what `tower_lsp_server::Server::serve` does, minus its decoder (see
//! [`crate::framing`] for why): requests are dispatched in arrival order, so notifications
//! such as `didChange` apply in order, and their futures run concurrently on this task, with
//! no limit on how many (a handler never awaits the client, so none can hold a slot the
//! client's answer would need). `exit` stops the dispatch.

use futures::stream::FuturesUnordered;
use futures::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::sync::mpsc;
use tower::Service;
use tower_lsp_server::jsonrpc::{Request, Response};
use tower_lsp_server::{ClientSocket, LspService};

use coder_protocol::methods::SESSION_SUBSCRIBE;

use crate::Backend;
use crate::framing::{MAX_ERROR_MESSAGE, short};
use crate::output::{Out, push_frame};

/// Serializes one message as a frame.
pub(crate) fn frame_of(message: &impl Serialize) -> Option<Vec<u8>> {
    match serde_json::to_vec(message) {
        Ok(body) => {
            let mut framed = Vec::with_capacity(body.len() + 32);
            push_frame(&mut framed, &body);
            Some(framed)
        }
        Err(err) => {
            tracing::error!("a message was not serialized: {err}");
            None
        }
    }
}

/// `response` with its error message cut to [`MAX_ERROR_MESSAGE`] bytes.
fn bounded(response: Response) -> Response {
    match response.error() {
        Some(error) if error.message.len() > MAX_ERROR_MESSAGE => {
            let mut error = error.clone();
            error.message = short(error.message.into_owned()).into();
            let (id, _) = response.into_parts();
            Response::from_error(id, error)
        }
        _ => response,
    }
}

fn send(out: &mpsc::UnboundedSender<Out>, message: &impl Serialize) {
    if let Some(frame) = frame_of(message) {
        let _ = out.send(Out::Frame(frame));
    }
}

/// Serves `requests` and `responses` until `exit` or the end of the client's input; returns
/// once every request taken has been answered.
pub(crate) async fn run(
    mut service: LspService<Backend>,
    socket: ClientSocket,
    mut requests: mpsc::Receiver<Request>,
    mut responses: mpsc::Receiver<Response>,
    out: mpsc::UnboundedSender<Out>,
) {
    let (mut to_client, mut client_answers) = socket.split();
    let forward_out = out.clone();
    // Server-to-client requests (`permission/request`, `workspace/applyEdit`).
    let forward = tokio::spawn(async move {
        while let Some(request) = to_client.next().await {
            send(&forward_out, &request);
        }
    });
    let mut in_flight = FuturesUnordered::new();
    loop {
        tokio::select! {
            Some(request) = requests.recv() => {
                if futures::future::poll_fn(|cx| service.poll_ready(cx)).await.is_err() {
                    break;
                }
                // `session/subscribe` is answered beside tower-lsp ([`crate::replay`]), once
                // the session exists; before, the service refuses it as it refuses any
                // request before `initialize`.
                if request.method() == SESSION_SUBSCRIBE
                    && let Ok(engine) = service.inner().engine()
                {
                    let engine = engine.clone();
                    let out = out.clone();
                    let (_, id, params) = request.into_parts();
                    if let Some(id) = id {
                        // Off the dispatch loop: a long answer is written while other
                        // requests go on.
                        tokio::task::spawn_blocking(move || {
                            if let Some(answer) = crate::replay::answer(&engine, id, params) {
                                let _ = out.send(answer);
                            }
                        });
                    }
                    continue;
                }
                let exit = request.method() == "exit";
                in_flight.push(service.call(request));
                if exit {
                    break;
                }
            }
            Some(response) = responses.recv() => {
                // Fails only once the server has exited; the answer is moot then.
                let _ = client_answers.send(response).await;
            }
            Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                if let Ok(Some(response)) = done {
                    send(&out, &bounded(response));
                }
            }
            else => break,
        }
    }
    while let Some(done) = in_flight.next().await {
        if let Ok(Some(response)) = done {
            send(&out, &bounded(response));
        }
    }
    forward.abort();
}
