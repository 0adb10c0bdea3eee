//! A model server that does nothing but answer, for the streaming benches' floor: a thread
//! per connection reads each request (its head, then its body to the `content-length`) and
//! writes the next queued reply, framed before the request came, in one write (and closes
//! the connection after it when the request said `connection: close`). Measured against
//! [`crate::MockModelServer`], whose serving added about 0.3 ms to a 5,000-delta read
//! (docs/benchmarks.md, thirteenth round).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A reply framed once (status, head, SSE body), queued again without a copy.
#[derive(Clone)]
pub struct PlainReply(Arc<[u8]>);

impl PlainReply {
    /// `body`, an SSE stream, as a `200` answer.
    pub fn sse(body: &str) -> Self {
        let mut reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        reply.extend_from_slice(body.as_bytes());
        Self(reply.into())
    }

    /// Its bytes on the wire, head included.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<PlainReply>>,
    /// The `content-length` of the last request read.
    last_length: AtomicUsize,
    /// The body of the last request read (swapped in, not copied).
    last_body: Mutex<Vec<u8>>,
}

/// The server; its threads end with the process (each connection's when its client closes).
pub struct PlainServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl PlainServer {
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { return };
                let shared = serving.clone();
                std::thread::spawn(move || answer(connection, &shared));
            }
        });
        Ok(Self { addr, shared })
    }

    /// Queues `body` (an SSE stream) as the answer to the next request.
    pub fn push(&self, body: &str) {
        self.push_reply(&PlainReply::sse(body));
    }

    /// Queues `reply` as the answer to the next request.
    pub fn push_reply(&self, reply: &PlainReply) {
        self.replies().push_back(reply.clone());
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

    /// The body of the last request read.
    pub fn last_request_body(&self) -> Vec<u8> {
        self.shared
            .last_body
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn replies(&self) -> std::sync::MutexGuard<'_, VecDeque<PlainReply>> {
        self.shared
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
        // The body read becomes the last one; the buffer it replaces takes the next.
        std::mem::swap(
            &mut body,
            &mut shared
                .last_body
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let reply = shared
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let written = match &reply {
            Some(reply) => writer.write_all(&reply.0),
            None => writer.write_all(EXHAUSTED),
        };
        // A client that asked to close reads to the end of the stream.
        if written.is_err() || reply.is_none() || close {
            return;
        }
    }
}

/// A memory page.
const PAGE: usize = 4096;

/// A zeroed buffer of `len` bytes that starts on a page boundary, for a floor's reads: 16
/// bytes past one, where glibc puts a block of a megabyte, a blocking read from a loopback
/// socket copies at a third to half the speed on the machine of the thirteenth round
/// (docs/benchmarks.md; `cargo bench -p coder-core --bench http_exchange` shows both).
pub struct PageAligned {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl PageAligned {
    pub fn new(len: usize) -> Self {
        let storage = vec![0; len + PAGE];
        let start = storage.as_ptr().align_offset(PAGE);
        Self {
            storage,
            start,
            len,
        }
    }
}

impl std::ops::Deref for PageAligned {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }
}

impl std::ops::DerefMut for PageAligned {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(stream: &mut TcpStream, extra_head: &str) -> String {
        let body = "{\"x\":1}";
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n{extra_head}\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        let mut body = vec![0; length];
        stream.read_exact(&mut body).unwrap();
        format!("{}{}", head, String::from_utf8(body).unwrap())
    }

    #[test]
    fn queued_replies_answer_requests_in_order_then_the_queue_runs_dry() {
        let server = PlainServer::start().unwrap();
        server.push("data: one\n\n");
        server.push_reply(&PlainReply::sse("data: two\n\n"));
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        let first = exchange(&mut stream, "");
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(first.ends_with("\r\n\r\ndata: one\n\n"), "{first}");
        assert_eq!(server.last_request_length(), 7);
        assert!(exchange(&mut stream, "").ends_with("data: two\n\n"));
        let dry = exchange(&mut stream, "");
        assert!(dry.starts_with("HTTP/1.1 500 "), "{dry}");
    }

    #[test]
    fn a_request_that_asks_to_close_gets_its_reply_then_the_end_of_the_stream() {
        let server = PlainServer::start().unwrap();
        server.push("data: only\n\n");
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        assert!(exchange(&mut stream, "connection: close\r\n").ends_with("data: only\n\n"));
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn a_page_aligned_buffer_starts_on_a_page_and_has_its_length() {
        let mut buffer = PageAligned::new(10_000);
        assert_eq!(buffer.as_ptr() as usize % PAGE, 0);
        assert_eq!(buffer.len(), 10_000);
        buffer[9_999] = 1;
        assert_eq!(buffer.iter().map(|&b| b as usize).sum::<usize>(), 1);
    }
}
