//! The guard in front of the LSP service: it reads the client's frames, checks each body is
//! a JSON-RPC 2.0 message, and answers what is not; nothing it passes on can end the
//! connection.
//!
//! tower-lsp-server's own transport ends the session after answering any body it cannot
//! decode: one that is not UTF-8 or not JSON, and one that is JSON but deserializes neither
//! as its `Request` nor as its `Response` (an object id, a float or out-of-range id, a
//! `jsonrpc` other than `"2.0"`, a batch array, a bare value). It also takes things that are
//! not JSON-RPC: a response with both `result` and `error` passes as a success, one with
//! neither becomes a request with an empty method, a request with `result` passes as a
//! response, and a struct's params deserialize from an array. So coder does not use that
//! transport: this guard parses and checks every body, and the dispatcher
//! ([`crate::dispatch`]) hands the service `Request`s and `Response`s built from checked
//! values. What fails the check is answered here:
//!
//! | problem | answer |
//! | --- | --- |
//! | the body is not JSON (or not UTF-8), no usable `Content-Length` | `-32700`, id `null` |
//! | not a JSON-RPC 2.0 message (`jsonrpc` missing or not `"2.0"`, a method that is not a string, an id that is not a string or integer, a batch, a bare value or `{}`, a response with both or neither of `result` and `error`) | `-32600`, with the message's id when it is valid, else `null` |
//! | a request whose params are not an object | `-32602` (a notification is dropped with a warning on stderr) |
//!
//! A malformed response (both or neither of `result` and `error`, a malformed `error`) whose
//! id names one of the server's requests also fails that request, so nothing waits on it
//! forever: a `permission/request` answered so is a denial.

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, Id, Request, Response};

use crate::output::{Out, push_frame};

/// The largest body accepted; larger frames are answered with an error and skipped.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The longest header line read; longer ones are garbage, answered and skipped.
const MAX_HEADER_LINE: u64 = 8 * 1024;

/// JSON-RPC error codes the guard answers with.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// One frame from the client: its body, or what was wrong with its header.
enum Frame {
    Body(Vec<u8>),
    Malformed(String),
}

/// What a body turned out to be.
#[derive(Debug)]
pub(crate) enum Checked {
    /// A request or notification for the service.
    Request(Request),
    /// A response to one of the server's requests.
    Response(Response),
    /// Answered with this error; nothing is passed on.
    Reject {
        id: Value,
        code: i64,
        message: String,
    },
    /// A malformed response whose id names one of the server's requests: that request
    /// fails with `response` (an error), so nothing waits on it forever (a permission
    /// request resolves as a denial), and the client is answered as for `Reject`.
    BadResponse {
        response: Response,
        id: Value,
        message: String,
    },
    /// A notification that cannot be answered: dropped with a warning.
    Drop(String),
}

/// Reads one frame; `None` at the end of input.
async fn read_frame(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Option<Frame>> {
    let mut length = None;
    let mut saw_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut *input)
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Ok(None);
        }
        if line.last() != Some(&b'\n') && read as u64 == MAX_HEADER_LINE {
            return Ok(Some(Frame::Malformed(
                "a header line is too long".to_owned(),
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        // After a body shorter than its `Content-Length`, the rest of it sits in front of
        // the next header on the same line: find the header wherever it starts, so the
        // frame after a bad one is read correctly.
        let lower = text.to_ascii_lowercase();
        if let Some(at) = lower.find("content-length:") {
            length = text[at + "content-length:".len()..]
                .trim()
                .parse::<usize>()
                .ok();
        }
    }
    let Some(length) = length else {
        return Ok(Some(Frame::Malformed(
            "missing or invalid Content-Length header".to_owned(),
        )));
    };
    if length > MAX_BODY {
        return Ok(Some(Frame::Malformed(format!(
            "a body of {length} bytes is too large"
        ))));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await?;
    Ok(Some(Frame::Body(body)))
}

/// The LSP methods that take no params at all.
fn takes_no_params(method: &str) -> bool {
    matches!(method, "shutdown" | "exit")
}

/// The methods whose params may be left out: the guard passes them on as `{}` (tower-lsp
/// itself rejects a missing `params` for a method that takes any). Those of the protocol's
/// method table, and the `coder/` test hooks; other names under `conversation/` too, so
/// that an unknown one is answered "method not found" rather than "missing params".
fn defaults_params(method: &str) -> bool {
    coder_protocol::methods::METHODS.contains(&method)
        || method.starts_with("conversation/")
        || method.starts_with("coder/")
}

fn reject(id: Value, code: i64, message: impl Into<String>) -> Checked {
    Checked::Reject {
        id,
        code,
        message: message.into(),
    }
}

/// Checks one body as a JSON-RPC 2.0 message.
pub(crate) fn check(body: &[u8]) -> Checked {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(err) => {
            return reject(
                Value::Null,
                PARSE_ERROR,
                short(format!("parse error: the body is not JSON: {err}")),
            );
        }
    };
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return reject(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: a batch (LSP has no batches)",
            );
        }
        _ => {
            return reject(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: a message is a JSON object",
            );
        }
    };
    // The id to answer with: the message's own when it is a string or an integer.
    let (id, id_ok) = match object.get("id") {
        None => (Value::Null, true),
        Some(Value::Null) => (Value::Null, true),
        Some(id @ Value::String(_)) => (id.clone(), true),
        Some(Value::Number(n)) if n.is_i64() => (Value::Number(n.clone()), true),
        Some(_) => (Value::Null, false),
    };
    if !id_ok {
        return reject(
            id,
            INVALID_REQUEST,
            "invalid request: an id is a string or an integer",
        );
    }
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return reject(
            id,
            INVALID_REQUEST,
            "invalid request: \"jsonrpc\" must be \"2.0\"",
        );
    }
    match object.get("method") {
        Some(Value::String(method)) => {
            let method = method.clone();
            check_request(object, id, &method)
        }
        Some(_) => reject(
            id,
            INVALID_REQUEST,
            "invalid request: \"method\" must be a string",
        ),
        None => check_response(object, id),
    }
}

fn check_request(mut object: Map<String, Value>, id: Value, method: &str) -> Checked {
    if object.contains_key("result") || object.contains_key("error") {
        return reject(
            id,
            INVALID_REQUEST,
            "invalid request: a request carries no \"result\" or \"error\"",
        );
    }
    let is_request = object.contains_key("id");
    if is_request && id.is_null() {
        return reject(
            id,
            INVALID_REQUEST,
            "invalid request: a request's id is a string or an integer",
        );
    }
    // Lua's JSON encoders (Neovim 0.7's among them) cannot tell an empty table that is an
    // object from one that is an array, and send `{}` as `[]`: an empty array is taken as
    // no params.
    if object
        .get("params")
        .is_some_and(|params| params.as_array().is_some_and(Vec::is_empty))
    {
        if takes_no_params(method) {
            object.remove("params");
        } else {
            object.insert("params".to_owned(), json!({}));
        }
    }
    match object.get("params") {
        None | Some(Value::Null) if defaults_params(method) => {
            object.insert("params".to_owned(), json!({}));
        }
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) if is_request => {
            return reject(
                id,
                INVALID_PARAMS,
                format!("invalid params: the params of {method} must be an object"),
            );
        }
        Some(_) => {
            return Checked::Drop(format!(
                "notification {method} dropped: its params are not an object"
            ));
        }
    }
    match serde_json::from_value(Value::Object(object)) {
        Ok(request) => Checked::Request(request),
        Err(err) => reject(
            id,
            INVALID_REQUEST,
            short(format!("invalid request: {err}")),
        ),
    }
}

/// The longest error message sent back: serde's messages quote the offending value, so a
/// 10 MB string of the wrong type would otherwise come back whole.
pub(crate) const MAX_ERROR_MESSAGE: usize = 1024;

/// A message cut to [`MAX_ERROR_MESSAGE`] bytes.
pub(crate) fn short(mut message: String) -> String {
    if message.len() > MAX_ERROR_MESSAGE {
        let mut end = MAX_ERROR_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

fn check_response(object: Map<String, Value>, id: Value) -> Checked {
    if !object.contains_key("id") {
        return reject(
            id,
            INVALID_REQUEST,
            "invalid request: neither a request (no \"method\") nor a response (no \"id\")",
        );
    }
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => {}
        (None, Some(error)) => {
            let well_formed = error.as_object().is_some_and(|error| {
                error.get("code").is_some_and(|code| code.is_i64())
                    && error.get("message").is_some_and(Value::is_string)
            });
            if !well_formed {
                return bad_response(
                    id,
                    "invalid request: a response's error has an integer code and a string message",
                );
            }
        }
        (Some(_), Some(_)) => {
            return bad_response(
                id,
                "invalid request: a response carries \"result\" or \"error\", not both",
            );
        }
        (None, None) => {
            return bad_response(
                id,
                "invalid request: a response carries \"result\" or \"error\"",
            );
        }
    }
    match serde_json::from_value(Value::Object(object)) {
        Ok(response) => Checked::Response(response),
        Err(err) => bad_response(id, short(format!("invalid request: {err}"))),
    }
}

/// A malformed response: passed on as a failure of the request its id names, when it names
/// one, and answered with `-32600`.
fn bad_response(id: Value, message: impl Into<String>) -> Checked {
    let message = message.into();
    match serde_json::from_value::<Id>(id.clone()) {
        Ok(request) if !id.is_null() => {
            let mut error = Error::invalid_request();
            error.message = message.clone().into();
            Checked::BadResponse {
                response: Response::from_error(request, error),
                id,
                message,
            }
        }
        _ => reject(id, INVALID_REQUEST, message),
    }
}

/// An error answer as a frame.
fn error_frame(id: Value, code: i64, message: &str) -> Vec<u8> {
    let error = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    let mut framed = Vec::new();
    push_frame(&mut framed, error.to_string().as_bytes());
    framed
}

/// Where checked messages go.
pub(crate) struct Routes {
    pub requests: mpsc::Sender<Request>,
    pub responses: mpsc::Sender<Response>,
    pub out: mpsc::UnboundedSender<Out>,
}

/// Reads the client's frames until its input ends: checked requests and responses go to
/// the dispatcher, everything else is answered on `out`.
pub(crate) async fn guard_input(client: impl AsyncRead + Unpin, routes: Routes) {
    let mut client = BufReader::new(client);
    loop {
        let checked = match read_frame(&mut client).await {
            Ok(Some(Frame::Body(body))) => check(&body),
            Ok(Some(Frame::Malformed(problem))) => {
                reject(Value::Null, PARSE_ERROR, format!("parse error: {problem}"))
            }
            // End of input or a broken pipe: closing the routes tells the dispatcher.
            Ok(None) | Err(_) => return,
        };
        match checked {
            Checked::Request(request) => {
                if routes.requests.send(request).await.is_err() {
                    return;
                }
            }
            Checked::Response(response) => {
                if routes.responses.send(response).await.is_err() {
                    return;
                }
            }
            Checked::Reject { id, code, message } => {
                tracing::warn!("bad message from the client: {message}");
                if routes
                    .out
                    .send(Out::Frame(error_frame(id, code, &message)))
                    .is_err()
                {
                    return;
                }
            }
            Checked::BadResponse {
                response,
                id,
                message,
            } => {
                tracing::warn!("bad response from the client: {message}");
                if routes.responses.send(response).await.is_err()
                    || routes
                        .out
                        .send(Out::Frame(error_frame(id, INVALID_REQUEST, &message)))
                        .is_err()
                {
                    return;
                }
            }
            Checked::Drop(why) => tracing::warn!("{why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_and_id(body: &str) -> (i64, Value) {
        match check(body.as_bytes()) {
            Checked::Reject { id, code, .. } => (code, id),
            Checked::BadResponse { id, response, .. } => {
                assert_eq!(serde_json::to_value(response.id()).unwrap(), id, "{body}");
                assert!(response.is_error(), "{body}");
                (INVALID_REQUEST, id)
            }
            other => panic!("{body} passed: {other:?}"),
        }
    }

    #[test]
    fn what_is_not_json_rpc_is_rejected_with_the_id_when_valid() {
        let cases = [
            (
                r#"{"id": 1, "method": "conversation/list"}"#,
                -32600,
                json!(1),
            ),
            (
                r#"{"jsonrpc": null, "id": 1, "method": "x"}"#,
                -32600,
                json!(1),
            ),
            (
                r#"{"jsonrpc": "1.0", "id": "a", "method": "x"}"#,
                -32600,
                json!("a"),
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 2, "method": 5}"#,
                -32600,
                json!(2),
            ),
            (
                r#"{"jsonrpc": "2.0", "id": {}, "method": "x"}"#,
                -32600,
                Value::Null,
            ),
            (
                r#"{"jsonrpc": "2.0", "id": [1], "method": "x"}"#,
                -32600,
                Value::Null,
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 1.5, "method": "x"}"#,
                -32600,
                Value::Null,
            ),
            (
                r#"{"jsonrpc": "2.0", "id": true, "method": "x"}"#,
                -32600,
                Value::Null,
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 18446744073709551615, "method": "x"}"#,
                -32600,
                Value::Null,
            ),
            (
                r#"{"jsonrpc": "2.0", "id": null, "method": "x"}"#,
                -32600,
                Value::Null,
            ),
            (
                r#"[{"jsonrpc": "2.0", "id": 1, "method": "x"}]"#,
                -32600,
                Value::Null,
            ),
            ("7", -32600, Value::Null),
            (r#""text""#, -32600, Value::Null),
            ("null", -32600, Value::Null),
            ("{}", -32600, Value::Null),
            (r#"{"jsonrpc": "2.0"}"#, -32600, Value::Null),
            (
                r#"{"jsonrpc": "2.0", "id": 3, "result": 1, "error": {"code": 1, "message": "m"}}"#,
                -32600,
                json!(3),
            ),
            (r#"{"jsonrpc": "2.0", "id": 3}"#, -32600, json!(3)),
            (
                r#"{"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}}"#,
                -32600,
                json!(3),
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 4, "method": "x", "result": 1}"#,
                -32600,
                json!(4),
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 5, "method": "x", "params": [1]}"#,
                -32602,
                json!(5),
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 5, "method": "x", "params": 1}"#,
                -32602,
                json!(5),
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 5, "method": "x", "params": "s"}"#,
                -32602,
                json!(5),
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 5, "method": "x", "params": false}"#,
                -32602,
                json!(5),
            ),
            ("{not json", -32700, Value::Null),
        ];
        for (body, code, id) in cases {
            assert_eq!(code_and_id(body), (code, id), "{body}");
        }
        let invalid_utf8 = b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"\xff\"}";
        assert!(matches!(
            check(invalid_utf8),
            Checked::Reject { code: -32700, .. }
        ));
    }

    #[test]
    fn valid_messages_pass_and_bad_notifications_drop() {
        for body in [
            r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}"#,
            r#"{"jsonrpc": "2.0", "id": "x", "method": "conversation/list"}"#,
            r#"{"jsonrpc": "2.0", "method": "initialized", "params": {}}"#,
            r#"{"jsonrpc": "2.0", "id": -9223372036854775808, "method": "shutdown"}"#,
            // Neovim's encoder sends an empty Lua table as `[]`.
            r#"{"jsonrpc": "2.0", "id": 2, "method": "conversation/create", "params": []}"#,
            r#"{"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": []}"#,
            r#"{"jsonrpc": "2.0", "method": "initialized", "params": []}"#,
        ] {
            assert!(
                matches!(check(body.as_bytes()), Checked::Request(_)),
                "{body}"
            );
        }
        for body in [
            r#"{"jsonrpc": "2.0", "id": 1, "result": null}"#,
            r#"{"jsonrpc": "2.0", "id": null, "error": {"code": -1, "message": "m"}}"#,
        ] {
            assert!(
                matches!(check(body.as_bytes()), Checked::Response(_)),
                "{body}"
            );
        }
        let dropped = check(br#"{"jsonrpc": "2.0", "method": "initialized", "params": [1]}"#);
        assert!(matches!(dropped, Checked::Drop(_)), "{dropped:?}");
    }
}
