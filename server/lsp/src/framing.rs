//! A framing guard in front of the LSP service: malformed input gets a JSON-RPC error and
//! the connection goes on.
//!
//! tower-lsp ends the connection on a body that is not JSON. This guard reads the client's
//! frames itself: a frame whose body parses is passed on unchanged; one that does not is
//! answered with `-32700` (parse error); a header block without a usable `Content-Length`
//! is skipped up to the next header. Both the service's frames and the guard's answers go
//! to stdout through one writer, a whole frame at a time.

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;

/// The largest body accepted; larger frames are answered with an error and skipped.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One frame from the client: its body, or what was wrong with it.
enum Incoming {
    Body(Vec<u8>),
    Malformed(String),
}

/// Reads one frame; `None` at the end of input. With `validate`, a body that is not JSON is
/// reported as malformed.
async fn read_frame(
    input: &mut (impl AsyncBufRead + Unpin),
    validate: bool,
) -> std::io::Result<Option<Incoming>> {
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
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
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
    if !validate {
        return Ok(Some(Incoming::Body(body)));
    }
    Ok(Some(
        match serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
            Ok(_) => Incoming::Body(body),
            Err(err) => Incoming::Malformed(format!("the body is not JSON: {err}")),
        },
    ))
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Passes well-formed frames from `client` to `service`, answers malformed ones on `answers`.
pub(crate) async fn guard_input(
    client: impl AsyncRead + Unpin,
    mut service: impl AsyncWrite + Unpin,
    answers: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut client = BufReader::new(client);
    loop {
        match read_frame(&mut client, true).await {
            Ok(Some(Incoming::Body(body))) => {
                if service.write_all(&frame(&body)).await.is_err() {
                    return;
                }
            }
            Ok(Some(Incoming::Malformed(problem))) => {
                tracing::warn!("malformed frame from the client: {problem}");
                let error = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {"code": -32700, "message": format!("parse error: {problem}")},
                });
                let _ = answers.send(frame(error.to_string().as_bytes()));
            }
            // End of input or a broken pipe: closing `service` tells the server to stop.
            Ok(None) | Err(_) => return,
        }
    }
}

/// Writes the service's frames and the guard's answers to `out`, whole frames at a time,
/// until the service's output ends.
pub(crate) async fn merge_output(
    service: impl AsyncRead + Unpin,
    mut answers: mpsc::UnboundedReceiver<Vec<u8>>,
    mut out: impl AsyncWrite + Unpin,
) {
    let mut service = BufReader::new(service);
    loop {
        let bytes = tokio::select! {
            next = read_frame(&mut service, false) => match next {
                Ok(Some(Incoming::Body(body))) => frame(&body),
                Ok(Some(Incoming::Malformed(_))) => continue,
                Ok(None) | Err(_) => {
                    while let Ok(answer) = answers.try_recv() {
                        let _ = out.write_all(&answer).await;
                    }
                    let _ = out.flush().await;
                    return;
                }
            },
            Some(answer) = answers.recv() => answer,
        };
        if out.write_all(&bytes).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
}
