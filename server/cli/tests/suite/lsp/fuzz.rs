//! A seeded fuzz test: 20,000 hostile messages through the real `coder lsp` over pipes,
//! and 5,000 more over Unix socket pairs (the stdio Node and Neovim give a server, read
//! and written as non-blocking streams); then the server still answers correctly and its
//! memory is back where it was.
//!
//! The seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.

use std::time::Duration;

use coder_testkit::MockModelServer;
use coder_testkit::fuzz::Rng;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, BufReader};
use tokio::process::Child;

use super::stdio::{socket_pair, spawn_over};
use super::{Client, rss_kb};

/// Hostile messages over pipes.
const MESSAGES: usize = 20_000;
/// Hostile messages over socket pairs.
const SOCKET_MESSAGES: usize = 5_000;
/// The largest string in a message.
const MAX_STRING: usize = 10 * 1024 * 1024;
/// How far resident memory may stay above where it was after the warm-up.
const RSS_SLACK_KB: u64 = 10 * 1024;

/// Methods a hostile client might name: every method of the protocol's table (so a new one
/// is fuzzed as soon as it is declared), the LSP lifecycle and housekeeping ones, and names
/// no server knows. `shutdown` and `exit` are left out (they end the session by design), and
/// so is `didOpen` (an open document is kept on purpose).
static METHODS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(methods);

fn methods() -> Vec<&'static str> {
    let mut methods: Vec<&'static str> = coder_protocol::methods::TABLE
        .iter()
        .map(|method| method.name)
        .collect();
    methods.extend([
        "initialize",
        "initialized",
        "textDocument/didChange",
        "textDocument/didClose",
        "$/cancelRequest",
        "$/setTrace",
        "no/such/method",
        "",
    ]);
    methods.retain(|method| !matches!(*method, "shutdown" | "exit" | "textDocument/didOpen"));
    methods.sort_unstable();
    methods.dedup();
    methods
}

fn string(rng: &mut Rng) -> String {
    let len = if rng.chance(1000) {
        rng.below(MAX_STRING as u64) as usize + 1
    } else if rng.chance(50) {
        rng.below(100_000) as usize
    } else {
        rng.below(40) as usize
    };
    let pieces = ["a", "é", "\u{1F600}", "\\", "\"", "\n", "\u{0}", "\u{FFFF}"];
    let mut text = String::with_capacity(len);
    if len > 4096 {
        return "x".repeat(len);
    }
    while text.len() < len {
        let piece = *rng.pick(&pieces);
        text.push_str(piece);
    }
    text
}

fn number(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0 => json!(rng.number() as i64),
        1 => json!(rng.number()),
        2 => json!(f64::from_bits(rng.number() & 0x7fef_ffff_ffff_ffff)),
        3 => json!(-1),
        4 => json!(0.5),
        _ => json!(rng.below(100)),
    }
}

fn value(rng: &mut Rng, depth: u32) -> Value {
    let leaf = depth > 4 || rng.chance(2);
    match rng.below(if leaf { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.chance(2)),
        2 => number(rng),
        3 | 4 => json!(string(rng)),
        5 => Value::Array((0..rng.below(5)).map(|_| value(rng, depth + 1)).collect()),
        _ => {
            let keys = [
                "conversationId",
                "sessionId",
                "command",
                "text",
                "id",
                "uri",
                "items",
                "limit",
                "a",
                "",
            ];
            let mut object = Map::new();
            for _ in 0..rng.below(5) {
                object.insert((*rng.pick(&keys)).to_owned(), value(rng, depth + 1));
            }
            Value::Object(object)
        }
    }
}

/// A message-like object: each envelope field present or not, of a random type.
fn envelope(rng: &mut Rng) -> Value {
    let mut object = Map::new();
    if !rng.chance(8) {
        let version = if rng.chance(6) {
            value(rng, 3)
        } else {
            json!("2.0")
        };
        object.insert("jsonrpc".to_owned(), version);
    }
    if !rng.chance(4) {
        let id = if rng.chance(4) {
            value(rng, 3)
        } else {
            json!(rng.below(1_000_000))
        };
        object.insert("id".to_owned(), id);
    }
    if !rng.chance(6) {
        let method = if rng.chance(8) {
            value(rng, 3)
        } else {
            json!(*rng.pick(&METHODS))
        };
        object.insert("method".to_owned(), method);
    }
    if rng.chance(2) {
        object.insert("params".to_owned(), value(rng, 0));
    }
    if rng.chance(8) {
        object.insert("result".to_owned(), value(rng, 2));
    }
    if rng.chance(8) {
        let error = if rng.chance(2) {
            json!({"code": number(rng), "message": string(rng)})
        } else {
            value(rng, 2)
        };
        object.insert("error".to_owned(), error);
    }
    Value::Object(object)
}

fn deep(rng: &mut Rng) -> Vec<u8> {
    let depth = rng.below(20_000) as usize + 1;
    let (open, close) = if rng.chance(2) {
        ("[", "]")
    } else {
        ("{\"a\":", "}")
    };
    let mut body = open.repeat(depth);
    body.push('1');
    body.push_str(&close.repeat(depth));
    body.into_bytes()
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body);
    frame
}

/// One hostile write: a frame, several, or no frame at all.
fn hostile(rng: &mut Rng) -> Vec<u8> {
    match rng.below(20) {
        0..=7 => framed(envelope(rng).to_string().as_bytes()),
        8 | 9 => framed(value(rng, 0).to_string().as_bytes()),
        10 => framed(&deep(rng)),
        11 => {
            // Invalid UTF-8, inside a string or anywhere.
            let mut body =
                br#"{"jsonrpc":"2.0","id":1,"method":"conversation/list","params":{"a":""#.to_vec();
            let len = rng.below(64) as usize + 1;
            body.extend(rng.bytes(len).iter().map(|b| b | 0x80));
            body.extend_from_slice(br#""}}"#);
            if rng.chance(2) {
                let len = rng.below(200) as usize;
                body = rng.bytes(len);
            }
            framed(&body)
        }
        12 => {
            // Bad headers: no length, a wrong one, a bad one, garbage, or a short body.
            let body = envelope(rng).to_string();
            match rng.below(6) {
                0 => format!("Content-Type: text/plain\r\n\r\n{body}").into_bytes(),
                1 => format!("Content-Length: -{}\r\n\r\n", body.len()).into_bytes(),
                2 => format!("Content-Length: {}\r\n\r\n{body}", body.len() / 2).into_bytes(),
                3 => format!("content-length:{}\r\nX: y\r\n\r\n{body}", body.len()).into_bytes(),
                4 => {
                    let len = rng.below(3000) as usize;
                    let mut garbage = rng.bytes(len);
                    garbage.extend_from_slice(b"\r\n\r\n");
                    garbage
                }
                _ => b"Content-Length: 99999999999999999999999\r\n\r\n".to_vec(),
            }
        }
        _ => {
            // A valid request among the garbage.
            let method = if rng.chance(50) {
                "conversation/create"
            } else {
                "conversation/list"
            };
            framed(
                json!({"jsonrpc": "2.0", "id": rng.below(1_000_000), "method": method, "params": {}})
                    .to_string()
                    .as_bytes(),
            )
        }
    }
}

/// Reads every frame the server writes and sends each one's JSON on; a frame that is not
/// JSON fails the test.
async fn drain<R: AsyncRead + Unpin>(
    mut stdout: BufReader<R>,
    seen: tokio::sync::mpsc::UnboundedSender<Value>,
) {
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length: ") {
                length = Some(value.parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; length.expect("a frame without Content-Length")];
        stdout.read_exact(&mut body).await.unwrap();
        let message: Value = serde_json::from_slice(&body).expect("the server wrote bad JSON");
        if seen.send(message).is_err() {
            return;
        }
    }
}

fn seed() -> u64 {
    Rng::seed(0x00c0_de15_f0dd_ba11_u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_hostile_messages_leave_the_server_answering_and_its_memory_back() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    client.initialize(json!({})).await;
    let Client {
        child,
        stdin,
        stdout,
        ..
    } = client;
    fuzz(child, stdin, stdout, MESSAGES, seed()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_messages_over_socket_pairs_leave_the_server_answering() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (child_in, ours_in) = socket_pair();
    let (child_out, ours_out) = socket_pair();
    let child = spawn_over(workspace.path(), &server, child_in, child_out);
    let mut client = Client::over(child, ours_in, ours_out);
    client.initialize(json!({})).await;
    let Client {
        child,
        stdin,
        stdout,
        ..
    } = client;
    // Another stream of the same generator: not the pipes' first 5,000.
    fuzz(
        child,
        stdin,
        stdout,
        SOCKET_MESSAGES,
        seed().rotate_left(17),
    )
    .await;
}

/// Writes `messages` hostile messages from `seed` to the server (`child`, written through
/// `stdin`, read through `stdout`, after `initialize`), then checks that it still answers
/// correctly, that its resident memory is back within [`RSS_SLACK_KB`] of where the warm-up
/// left it, and that it exits with 0 once its input ends.
async fn fuzz<W, R>(
    mut child: Child,
    mut stdin: W,
    stdout: BufReader<R>,
    messages: usize,
    seed: u64,
) where
    W: AsyncWrite + Unpin,
    R: AsyncRead + Unpin + Send + 'static,
{
    let mut rng = Rng::new(seed);
    let pid = child.id().unwrap();
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(drain(stdout, seen_tx));
    let mut next_id = 10_000_000i64;
    // Sends a valid request and waits for its answer, skipping everything else; resends
    // while a hostile frame (a Content-Length longer than what followed) swallows it.
    let mut ask = async |stdin: &mut W, method: &str, params: Value| {
        for _ in 0..50 {
            next_id += 1;
            let id = next_id;
            let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            let mut frame = b"\r\n\r\n".to_vec();
            frame.extend(framed(body.to_string().as_bytes()));
            tokio::io::AsyncWriteExt::write_all(stdin, &frame)
                .await
                .unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            while let Ok(Some(message)) = tokio::time::timeout_at(deadline, seen.recv()).await {
                if message["id"] == id {
                    return message;
                }
            }
        }
        panic!("{method} was never answered");
    };

    // Warm-up: what a normal session does.
    for _ in 0..50 {
        ask(&mut stdin, "conversation/list", json!({})).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_kb(pid);

    let mut bytes = 0usize;
    let started = std::time::Instant::now();
    let mut generating = Duration::ZERO;
    for _ in 0..messages {
        let generated = std::time::Instant::now();
        let write = hostile(&mut rng);
        generating += generated.elapsed();
        bytes += write.len();
        tokio::io::AsyncWriteExt::write_all(&mut stdin, &write)
            .await
            .unwrap();
    }
    println!(
        "written in {:?}, of which generating {generating:?}",
        started.elapsed()
    );
    // A Content-Length left waiting swallows what comes next; a few empty lines and resent
    // requests get past it.
    let list = ask(&mut stdin, "conversation/list", json!({})).await;
    let conversations = list["result"]["conversations"].as_array().unwrap();
    assert!(conversations.iter().any(|c| c["isRoot"] == true), "{list}");
    println!("answered after {:?}", started.elapsed());
    let created = ask(&mut stdin, "conversation/create", json!({})).await;
    let id = created["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let history = ask(
        &mut stdin,
        "conversation/history",
        json!({"conversationId": id}),
    )
    .await;
    assert_eq!(history["result"]["entries"], json!([]), "{history}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rss_kb(pid);
    println!(
        "{messages} hostile writes, {} MB; resident {before} kB after the warm-up, {after} kB after the fuzz",
        bytes / 1_000_000
    );
    assert!(
        after <= before + RSS_SLACK_KB,
        "resident memory grew from {before} kB to {after} kB (seed {seed})"
    );
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("coder lsp did not exit after stdin closed")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let _ = reader.await;
}
