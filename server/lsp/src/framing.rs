//! A framing guard in front of the LSP service: malformed input gets a JSON-RPC error and
//! the connection goes on.
//!
//! tower-lsp ends the connection on a body that is not JSON. This guard reads the client's
//! frames itself: a frame whose body parses is passed on (with `params: {}` filled in for
//! the coder methods when the client left them out); one that does not is answered with
//! `-32700` (parse error); a header block without a usable `Content-Length` is answered the
//! same way and skipped. The service's frames and the guard's answers go to the one stdout
//! writer ([`crate::output`]), a whole frame at a time.

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;

use crate::output::{Out, push_frame};

/// The largest body accepted; larger frames are answered with an error and skipped.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One frame from the client: its body, or what was wrong with it.
enum Incoming {
    Body(Vec<u8>),
    Malformed(String),
}

/// Reads one frame; `None` at the end of input.
async fn read_frame(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Option<Incoming>> {
    let mut length = None;
    let mut saw_header = false;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        // After a body shorter than its `Content-Length`, the rest of it sits in front of
        // the next header on the same line: find the header wherever it starts, so the
        // frame after a bad one is read correctly.
        let lower = line.to_ascii_lowercase();
        if let Some(at) = lower.find("content-length:") {
            length = line[at + "content-length:".len()..]
                .trim()
                .parse::<usize>()
                .ok();
        }
    }
    let Some(length) = length else {
        return Ok(Some(Incoming::Malformed(
            "missing or invalid Content-Length header".to_owned(),
        )));
    };
    if length > MAX_BODY {
        return Ok(Some(Incoming::Malformed(format!(
            "a body of {length} bytes is too large"
        ))));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await?;
    Ok(Some(Incoming::Body(body)))
}

/// The methods whose params may be left out: the guard passes them on as `{}` (tower-lsp
/// itself rejects a missing `params` for a method that takes any).
fn defaults_params(method: &str) -> bool {
    method.starts_with("conversation/") || method.starts_with("coder/")
}

/// Checks one body: `Err` with the problem when it is not JSON; otherwise the body to pass
/// on, with `params: {}` filled in where [`defaults_params`] allows.
fn check_body(body: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut message: serde_json::Value =
        serde_json::from_slice(&body).map_err(|err| format!("the body is not JSON: {err}"))?;
    let Some(object) = message.as_object_mut() else {
        return Ok(body);
    };
    let wants_default = object
        .get("method")
        .and_then(serde_json::Value::as_str)
        .is_some_and(defaults_params)
        && object.get("params").is_none_or(serde_json::Value::is_null);
    if !wants_default {
        return Ok(body);
    }
    object.insert("params".to_owned(), serde_json::json!({}));
    Ok(message.to_string().into_bytes())
}

/// Passes well-formed frames from `client` to `service`; answers malformed ones on `out`.
pub(crate) async fn guard_input(
    client: impl AsyncRead + Unpin,
    mut service: impl AsyncWrite + Unpin,
    out: mpsc::UnboundedSender<Out>,
) {
    let mut client = BufReader::new(client);
    loop {
        let problem = match read_frame(&mut client).await {
            Ok(Some(Incoming::Body(body))) => match check_body(body) {
                Ok(body) => {
                    let mut framed = Vec::with_capacity(body.len() + 32);
                    push_frame(&mut framed, &body);
                    if service.write_all(&framed).await.is_err() {
                        return;
                    }
                    continue;
                }
                Err(problem) => problem,
            },
            Ok(Some(Incoming::Malformed(problem))) => problem,
            // End of input or a broken pipe: closing `service` tells the server to stop.
            Ok(None) | Err(_) => return,
        };
        tracing::warn!("malformed frame from the client: {problem}");
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32700, "message": format!("parse error: {problem}")},
        });
        let mut framed = Vec::new();
        push_frame(&mut framed, error.to_string().as_bytes());
        let _ = out.send(Out::Frame(framed));
    }
}

/// Passes the service's frames (responses and server-to-client requests) to `out`, whole
/// frames at a time, until the service's output ends.
pub(crate) async fn relay_service(
    service: impl AsyncRead + Unpin,
    out: mpsc::UnboundedSender<Out>,
) {
    let mut service = BufReader::new(service);
    while let Ok(Some(next)) = read_frame(&mut service).await {
        if let Incoming::Body(body) = next {
            let mut framed = Vec::with_capacity(body.len() + 32);
            push_frame(&mut framed, &body);
            if out.send(Out::Frame(framed)).is_err() {
                return;
            }
        }
    }
}
