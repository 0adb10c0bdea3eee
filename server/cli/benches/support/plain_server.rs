//! A model server that does nothing but answer, for the streaming benches' floor: a thread
//! per connection reads each request (its head, then its body to the `content-length`) and
//! writes the next queued reply, rendered with its head before the request came, in one
//! write (and closes the connection after it when the request said `connection: close`). Measured against coder-testkit's axum mock, whose serving added about 0.3 ms to
//! a 5,000-delta read (docs/benchmarks.md, thirteenth round).

// Each bench that includes this file uses part of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Vec<u8>>>,
    /// The `content-length` of the last request read.
    last_length: AtomicUsize,
}

/// The server; its threads end with the process (each connection's when its client closes).
pub struct PlainServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl PlainServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { return };
                let shared = serving.clone();
                std::thread::spawn(move || answer(connection, &shared));
            }
        });
        Self { addr, shared }
    }

    /// Queues `body` (an SSE stream) as the answer to the next request.
    pub fn push(&self, body: &str) {
        let mut reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        reply.extend_from_slice(body.as_bytes());
        self.shared.replies.lock().unwrap().push_back(reply);
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The `content-length` of the last request read.
    pub fn last_request_length(&self) -> usize {
        self.shared.last_length.load(Ordering::Relaxed)
    }
}

const EXHAUSTED: &[u8] =
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

fn answer(connection: TcpStream, shared: &Shared) {
    let _ = connection.set_nodelay(true);
    let Ok(read_half) = connection.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = connection;
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        let mut length = 0;
        let mut close = false;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            close |= lower.trim_end() == "connection: close";
        }
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        shared.last_length.store(length, Ordering::Relaxed);
        let reply = shared.replies.lock().unwrap().pop_front();
        let written = match &reply {
            Some(reply) => writer.write_all(reply),
            None => writer.write_all(EXHAUSTED),
        };
        // A client that asked to close reads to the end of the stream.
        if written.is_err() || reply.is_none() || close {
            return;
        }
    }
}
