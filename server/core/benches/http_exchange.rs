//! One model request's HTTP exchange on a kept-alive loopback connection, through the HTTP
//! stacks coder could use, against a blocking socket (the floor). Shows what the HTTP
//! client costs a `coder lsp` task (see docs/benchmarks.md, thirteenth round).
//!
//! ```sh
//! cargo bench -p coder-core --bench http_exchange      # BENCH_RUNS=N samples (500)
//! ```
//!
//! The replies come from `coder_testkit::PlainServer` (a thread per connection that writes
//! each queued reply, framed once, in one write): an SSE stream of `deltas` chat-completion
//! chunks. Each client posts a 16 KB body, as large as
//! coder's first request (its system prompt and tool schemas), and reads the reply to its
//! end, the async ones on a runtime of two workers as `coder lsp`'s:
//!
//! - the floor: a blocking socket, the reply read to its end into a buffer that starts on a
//!   page boundary;
//! - the same read into a buffer 16 bytes past a page boundary, where glibc puts a block
//!   too large for its heap (`vec![0; 1 << 20]`): on the machine the thirteenth round ran
//!   on, a blocking read from a loopback socket copies there at a third to half the speed
//!   (the `lsp` bench's floor read there until that round; non-blocking reads are not
//!   slowed);
//! - a raw `tokio` socket, the same reads;
//! - hyper's HTTP/1 connection, driven by a task of its own (as every pooled client does);
//! - hyper's HTTP/1 connection, polled by the requesting task itself (no hand-off);
//! - reqwest, built as coder's model client builds it, the body read as a stream.
//!
//! Every sample takes each client in turn, so the machine's drift touches all alike; each
//! figure is a median over samples.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::median;
use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use coder_testkit::{PageAligned, PlainReply, PlainServer};
use futures::{FutureExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;

const SIZES: [usize; 3] = [1, 5_000, 20_000];
const REQUEST_BYTES: usize = 16_000;
const PATH: &str = "/v1/chat/completions";

/// The reply to every request: `deltas` chunks of `"tok "`, then `[DONE]`.
fn reply(deltas: usize) -> PlainReply {
    // The chunk coder-testkit's mock renders, as the `lsp` bench's replies are made of.
    let chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"tok \"},\"finish_reason\":null,\"index\":0}],\"id\":\"chatcmpl-mock\",\"model\":\"mock-model\",\"object\":\"chat.completion.chunk\"}\n\n";
    PlainReply::sse(&(chunk.repeat(deltas) + "data: [DONE]\n\n"))
}

fn request_bytes(addr: SocketAddr, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {PATH} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// A blocking socket writes the request and reads `expected` bytes, at most `buffer`'s
/// length at a time.
fn blocking(
    stream: &mut TcpStream,
    request: &[u8],
    expected: usize,
    buffer: &mut [u8],
) -> Duration {
    let started = Instant::now();
    stream.write_all(request).expect("write");
    let mut read = 0;
    while read < expected {
        read += stream.read(buffer).expect("read");
    }
    started.elapsed()
}

async fn tokio_socket(
    stream: &mut tokio::net::TcpStream,
    request: &[u8],
    expected: usize,
    buffer: &mut [u8],
) -> Duration {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = Instant::now();
    stream.write_all(request).await.expect("write");
    let mut read = 0;
    while read < expected {
        read += stream.read(buffer).await.expect("read");
    }
    started.elapsed()
}

type Body = Full<Bytes>;

fn hyper_request(addr: SocketAddr, body: &Bytes) -> hyper::Request<Body> {
    hyper::Request::post(PATH)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(body.clone()))
        .expect("request")
}

/// hyper's connection on a task of its own: the request and every chunk of the reply cross
/// between it and the requesting task.
async fn hyper_spawned(send: &mut SendRequest<Body>, addr: SocketAddr, body: &Bytes) -> Duration {
    let started = Instant::now();
    let response = send
        .send_request(hyper_request(addr, body))
        .await
        .expect("response");
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        frame.expect("frame");
    }
    started.elapsed()
}

type Driven = Connection<TokioIo<tokio::net::TcpStream>, Body>;

/// hyper's connection polled by the requesting task with its response: nothing crosses
/// between tasks.
async fn hyper_in_task(
    send: &mut SendRequest<Body>,
    connection: &mut Pin<Box<Driven>>,
    addr: SocketAddr,
    body: &Bytes,
) -> Duration {
    let started = Instant::now();
    let mut response = Box::pin(send.send_request(hyper_request(addr, body)));
    let response = std::future::poll_fn(|cx| {
        let _ = connection.as_mut().poll(cx);
        response.poll_unpin(cx)
    })
    .await
    .expect("response");
    let mut body = response.into_body();
    loop {
        let frame = std::future::poll_fn(|cx| {
            let _ = connection.as_mut().poll(cx);
            hyper::body::Body::poll_frame(Pin::new(&mut body), cx)
        })
        .await;
        match frame {
            Some(frame) => {
                frame.expect("frame");
            }
            None => break,
        }
    }
    started.elapsed()
}

async fn reqwest_stream(client: &reqwest::Client, url: &reqwest::Url, body: &Bytes) -> Duration {
    let started = Instant::now();
    let response = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.clone())
        .send()
        .await
        .expect("response");
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        chunk.expect("chunk");
    }
    started.elapsed()
}

/// The async clients' connections to one server, kept alive from sample to sample.
struct Clients {
    socket: tokio::net::TcpStream,
    /// The raw socket's buffer (its placement does not slow a non-blocking read).
    buffer: Vec<u8>,
    spawned: SendRequest<Body>,
    in_task: (SendRequest<Body>, Pin<Box<Driven>>),
    reqwest: reqwest::Client,
}

async fn handshake(addr: SocketAddr) -> (SendRequest<Body>, Driven) {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake")
}

impl Clients {
    async fn connect(addr: SocketAddr) -> Self {
        let socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
        socket.set_nodelay(true).expect("nodelay");
        let (spawned, connection) = handshake(addr).await;
        tokio::spawn(connection);
        let (in_task, connection) = handshake(addr).await;
        // As `ModelClient::new` builds it for a plain-HTTP base URL.
        let reqwest = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .tls_certs_only([])
            .build()
            .expect("reqwest");
        Self {
            socket,
            buffer: vec![0; 1 << 20],
            spawned,
            in_task: (in_task, Box::pin(connection)),
            reqwest,
        }
    }
}

const NAMES: [&str; 6] = [
    "blocking socket (floor)",
    "blocking, 16 bytes into a page",
    "tokio socket",
    "hyper, connection task",
    "hyper, polled in the task",
    "reqwest, as coder builds it",
];

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let body = Bytes::from(format!(
        "{{\"pad\":\"{}\"}}",
        "x".repeat(REQUEST_BYTES - 10)
    ));
    // A page boundary and 1 MiB after it (and 16 bytes more for the misplaced read).
    let mut buffer = PageAligned::new((1 << 20) + 16);
    println!(
        "one exchange on a kept-alive loopback connection, a {} KB request (median of {runs}):",
        REQUEST_BYTES / 1000
    );
    for deltas in SIZES {
        let reply = reply(deltas);
        let expected = reply.len();
        let server = PlainServer::start().expect("server");
        let addr = server.addr();
        let url = reqwest::Url::parse(&format!("http://{addr}{PATH}")).expect("url");
        let request = request_bytes(addr, &body);
        let mut floor_socket = TcpStream::connect(addr).expect("connect");
        floor_socket.set_nodelay(true).expect("nodelay");
        let mut offset_socket = TcpStream::connect(addr).expect("connect");
        offset_socket.set_nodelay(true).expect("nodelay");
        let mut clients = Some(runtime.block_on(Clients::connect(addr)));
        let mut times: [Vec<Duration>; 6] = Default::default();
        // One warm-up sample, then the measured ones.
        for sample in 0..=runs {
            // One reply for each exchange of the sample, all the same.
            for _ in 0..NAMES.len() {
                server.push_reply(&reply);
            }
            let taken = clients.take().expect("clients");
            let (sent, body, url) = (request.clone(), body.clone(), url.clone());
            let (rest, back) = runtime.block_on(async move {
                tokio::spawn(async move {
                    let mut clients = taken;
                    let socket =
                        tokio_socket(&mut clients.socket, &sent, expected, &mut clients.buffer)
                            .await;
                    let spawned = hyper_spawned(&mut clients.spawned, addr, &body).await;
                    let (send, connection) = &mut clients.in_task;
                    let in_task = hyper_in_task(send, connection, addr, &body).await;
                    let reqwest = reqwest_stream(&clients.reqwest, &url, &body).await;
                    ([socket, spawned, in_task, reqwest], clients)
                })
                .await
                .expect("sample")
            });
            clients = Some(back);
            let floor = blocking(
                &mut floor_socket,
                &request,
                expected,
                &mut buffer[..1 << 20],
            );
            let offset = blocking(&mut offset_socket, &request, expected, &mut buffer[16..]);
            if sample > 0 {
                times[0].push(floor);
                times[1].push(offset);
                for (at, time) in rest.into_iter().enumerate() {
                    times[at + 2].push(time);
                }
            }
        }
        let floor = median(times[0].clone());
        println!("  {deltas} deltas ({} KB):", expected / 1000);
        for (name, samples) in NAMES.iter().zip(times) {
            let time = median(samples);
            println!(
                "    {name:<32} {:8.1} us  {:.2}x",
                time.as_secs_f64() * 1e6,
                time.as_secs_f64() / floor.as_secs_f64()
            );
        }
    }
}
