//! The HTTP side of the mock model: serves the script, records requests.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::render::WireFormat;
use crate::{MockResponse, StreamFault};

/// One request the server received.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    pub path: String,
    /// Header names are lowercase.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// The body byte for byte, as it came (empty when bodies are forgotten).
    #[serde(skip)]
    pub raw_body: Bytes,
    /// The whole stream was written to the client.
    pub stream_finished: bool,
    /// The client went away before the stream ended.
    pub client_disconnected: bool,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<MockResponse>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Request bodies are dropped instead of kept (for long stress runs).
    forget_bodies: std::sync::atomic::AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running mock model server; it stops when dropped.
pub struct MockModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockModelServer {
    /// Starts a server on 127.0.0.1 with a free port, answering with `script` in order.
    pub async fn start(script: Vec<MockResponse>) -> std::io::Result<Self> {
        Self::bind(script, 0).await
    }

    /// Starts a server on 127.0.0.1:`port` (0 picks a free port).
    pub async fn bind(script: Vec<MockResponse>, port: u16) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        lock(&shared.script).extend(script);
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route(
                "/_mock/requests",
                get(|State(shared): State<Arc<Shared>>| async move {
                    axum::Json(lock(&shared.requests).clone())
                }),
            )
            .route(
                "/_mock/script",
                axum::routing::post(
                    |State(shared): State<Arc<Shared>>,
                     axum::Json(more): axum::Json<Vec<MockResponse>>| async move {
                        lock(&shared.script).extend(more);
                        StatusCode::NO_CONTENT
                    },
                ),
            )
            .fallback(answer)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            // An accept error ends the server; tests then fail on connection errors.
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT/v1`: the base URL for OpenAI-compatible clients.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`: the base URL for Anthropic clients.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends responses to the script.
    pub fn push(&self, responses: impl IntoIterator<Item = MockResponse>) {
        lock(&self.shared.script).extend(responses);
    }

    /// Keeps recording requests but drops their bodies, so a long run does not grow.
    pub fn forget_bodies(&self) {
        self.shared
            .forget_bodies
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Waits (at most `timeout`) until `check` holds for the recorded requests.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        check: impl Fn(&[RecordedRequest]) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if check(&lock(&self.shared.requests)) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for MockModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let listing = request.method() == axum::http::Method::GET && path.ends_with("/models");
    let headers = request
        .headers()
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    let raw_body = match axum::body::to_bytes(request.into_body(), usize::MAX).await {
        _ if shared
            .forget_bodies
            .load(std::sync::atomic::Ordering::Relaxed) =>
        {
            Bytes::new()
        }
        Ok(bytes) => bytes,
        Err(_) => Bytes::new(),
    };
    let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    let index = {
        let mut requests = lock(&shared.requests);
        requests.push(RecordedRequest {
            path: path.clone(),
            headers,
            body,
            raw_body,
            stream_finished: false,
            client_disconnected: false,
        });
        requests.len() - 1
    };
    if listing {
        // The provider's list of models (OpenAI's and Anthropic's shape alike): one model.
        let list = serde_json::json!({"object": "list", "data": [
            {"id": "mock-model", "object": "model", "owned_by": "coder-testkit",
             "display_name": "Mock model"}]});
        return axum::Json(list).into_response();
    }
    let Some(format) = WireFormat::from_path(&path) else {
        return (
            StatusCode::NOT_FOUND,
            format!("no model endpoint at {path}"),
        )
            .into_response();
    };
    let next = lock(&shared.script).pop_front();
    match next {
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "{\"error\":{\"message\":\"mock script exhausted\"}}",
        )
            .into_response(),
        Some(MockResponse::Status {
            status,
            body,
            retry_after_secs,
        }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, body).into_response();
            if let Some(secs) = retry_after_secs {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, secs.into());
            }
            response
        }
        Some(MockResponse::Rendered {
            format: rendered,
            body,
        }) => {
            let wanted = format.name();
            if rendered != wanted {
                return (
                    StatusCode::BAD_REQUEST,
                    format!("the scripted reply is rendered as {rendered}, the request asked for {wanted}"),
                )
                    .into_response();
            }
            // One body, one write: no rendering or pacing between the request and its bytes.
            StreamWatch { shared, index }.finish();
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .header(header::CACHE_CONTROL, "no-cache")
                .body(Body::from(body))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        Some(MockResponse::Endless { head, repeat }) => {
            let (head, unit) = format.render_endless(&head, &repeat);
            let body = endless_body(head, &unit, StreamWatch { shared, index });
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .header(header::CACHE_CONTROL, "no-cache")
                .body(body)
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        Some(MockResponse::Stream {
            chunks,
            delay_ms,
            fault,
        }) => {
            let frames = format.render(&chunks);
            let body = sse_body(frames, delay_ms, fault, StreamWatch { shared, index });
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .header(header::CACHE_CONTROL, "no-cache")
                .body(body)
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
    }
}

/// Marks the recorded request finished or abandoned when the body stream ends or is dropped.
struct StreamWatch {
    shared: Arc<Shared>,
    index: usize,
}

impl StreamWatch {
    fn finish(&self) {
        if let Some(request) = lock(&self.shared.requests).get_mut(self.index) {
            request.stream_finished = true;
        }
    }
}

impl Drop for StreamWatch {
    fn drop(&mut self) {
        if let Some(request) = lock(&self.shared.requests).get_mut(self.index)
            && !request.stream_finished
        {
            request.client_disconnected = true;
        }
    }
}

/// `head`, then `unit` again and again until the client goes away (the body is then
/// dropped, and `watch` records the disconnection). The unit is written in batches of at
/// least 64 KiB, so the stream runs as fast as the client reads.
fn endless_body(head: Vec<String>, unit: &str, watch: StreamWatch) -> Body {
    let batch = Bytes::from(unit.repeat((64 * 1024 / unit.len().max(1)).max(1)));
    let stream = futures::stream::iter(head.into_iter().map(Bytes::from))
        .chain(futures::stream::repeat(batch))
        .map(move |bytes| {
            let _watch = &watch;
            Ok::<_, std::io::Error>(bytes)
        });
    Body::from_stream(stream)
}

fn sse_body(
    frames: Vec<String>,
    delay_ms: u64,
    fault: Option<StreamFault>,
    watch: StreamWatch,
) -> Body {
    let delay = Duration::from_millis(delay_ms);
    let cut = match fault {
        Some(StreamFault::Drop { after }) => Some((after, true)),
        Some(StreamFault::Stall { after }) => Some((after, false)),
        None => None,
    };
    let stream = futures::stream::iter(frames.into_iter().enumerate())
        .then(move |(i, frame)| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            match cut {
                Some((after, true)) if i >= after => {
                    Err(std::io::Error::other("mock fault: connection dropped"))
                }
                Some((after, false)) if i >= after => {
                    futures::future::pending::<()>().await;
                    Ok(Bytes::new())
                }
                _ => Ok(Bytes::from(frame)),
            }
        })
        .chain(futures::stream::once(async move {
            watch.finish();
            Ok(Bytes::new())
        }));
    Body::from_stream(stream)
}
