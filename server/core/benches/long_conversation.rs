//! One more turn in a long conversation, against the floor of its request: what a turn
//! costs should not grow with the history beyond writing the request's bytes.
//!
//! For each wire format and each size (100, 1,000 and 10,000 messages: a saved session of
//! exchanges with a tool call, about 300 bytes a message, taken up with `Engine::resume`),
//! the engine runs turns of one short input and a one-delta reply that carries its usage
//! (so no token is counted locally), against `coder_testkit::PlainServer`, which reads each
//! request and writes a reply rendered before. The session is saved as a person's is (a
//! resumed session always is): each change is written to the journal, and the snapshot
//! once the session is idle, after the task's end. Each turn is measured from
//! `Engine::send` to the task's end: its wall time and the CPU the process used meanwhile
//! (the engine's threads and the server's, which reads the request: a relay's part). The
//! next turn starts once the snapshot is written (a pause that grows with the size), and
//! the CPU of that pause is printed too: what the idle snapshot costs a turn.
//!
//! The floor at each size: serializing the last request's body once with `serde_json` from
//! a `Value` already built (the body as the server read it, parsed before the clock starts).
//! The exchange floor at each size: the cheapest program doing a turn's whole work over the
//! wire, with the same server and the same HTTP client the engine uses: serialize that body,
//! post it, read the reply to its end (the process's CPU, the server's part included, as
//! for the turn).
//! Printed: medians over turns, the CPU per turn against both floors (target: within 2x of
//! the serialization floor at every size; at 100 messages a turn's fixed cost outweighs a
//! floor of tens of microseconds, which the exchange floor shows: that cost is mostly the
//! HTTP exchange itself), the later half of the turns against the earlier (flat per turn:
//! 1x), and what a turn's CPU grows from 100 to 10,000 messages against what the floor
//! grows.
//!
//! Every size runs in the three workspaces of `coder_testkit::workspaces` (a plain folder
//! of 20,000 files, a git repository of them, that repository with a 100 MB untracked
//! file), one engine each, taking turns; each repository's turn is printed against the
//! plain folder's too.
//!
//! `cargo bench -p coder-core --bench long_conversation` (`-- openai` or `-- anthropic` for
//! one format; `BENCH_RUNS=N` turns per size, default 30; `BENCH_FILES=N` files).

// A benchmark fails loudly on anything unexpected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::{median, ms};
use std::path::Path;
use std::time::{Duration, Instant};

use coder_core::{ApiKey, Config, Engine, ProviderConfig, ProviderKind};
use coder_protocol::SessionId;
use coder_testkit::workspaces::{Workspace, Workspaces, median_ratio};
use coder_testkit::{Chunk, MockResponse, PlainServer};
use serde_json::{Value, json};

const SIZES: [usize; 3] = [100, 1_000, 10_000];

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

/// The CPU time the process has used, all threads.
fn cpu() -> Duration {
    let spent = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(spent.tv_sec as u64, spent.tv_nsec as u32)
}

/// Four messages of one exchange with a tool call, about 1.2 KB in all.
fn exchange(turn: usize) -> [Value; 4] {
    let call = format!("call-{turn}");
    [
        json!({"role": "user", "content": format!("Turn {turn}: {}", "please look at the parser again. ".repeat(6))}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": call, "type": "function",
            "function": {"name": "read", "arguments": format!("{{\"path\":\"src/parser_{turn}.rs\"}}")}}]}),
        json!({"role": "tool", "tool_call_id": call, "name": "read", "content": "fn parse(input: &str) -> Result<Ast, Error> { Ok(Ast::new(input)) }\n".repeat(10)}),
        json!({"role": "assistant", "content": format!("Turn {turn}: {}", "The parser handles that case now. ".repeat(5))}),
    ]
}

/// Writes a saved session whose root conversation holds `messages` messages.
fn write_session(workspace: &Path, messages: usize) -> SessionId {
    let session = SessionId::new();
    let history: Vec<Value> = (0..messages.div_ceil(4))
        .flat_map(exchange)
        .take(messages)
        .collect();
    let file = json!({
        "version": 1,
        "sessionId": session,
        "savedAt": "2026-11-28T00:00:00.000Z",
        "conversationId": uuid::Uuid::now_v7(),
        "model": "mock-model",
        "messages": history,
    });
    let dir = workspace.join(".coder/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{session}.json")), file.to_string()).unwrap();
    session
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    OpenAi,
    Anthropic,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// A one-delta reply with its usage, rendered in this format.
    fn reply(self) -> String {
        let chunks = [Chunk::text("Done."), Chunk::usage(1_000, 2)];
        let reply = match self {
            Self::OpenAi => MockResponse::prerendered(&chunks),
            Self::Anthropic => MockResponse::prerendered_anthropic(&chunks),
        };
        reply.rendered_body().unwrap().to_owned()
    }
}

fn engine(workspace: &Path, server: &PlainServer, format: Format) -> Engine {
    let base = format!("http://{}", server.addr());
    let provider = match format {
        Format::OpenAi => ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url: format!("{base}/v1"),
            api_key: Some(ApiKey::new("bench")),
        },
        Format::Anthropic => ProviderConfig {
            kind: ProviderKind::Anthropic,
            base_url: base,
            api_key: Some(ApiKey::new("bench")),
        },
    };
    let mut config = Config::new(workspace, provider, "mock-model");
    config.context_window = Some(100_000_000);
    config.sandbox = false;
    Engine::new(config).unwrap()
}

/// One workspace's figures at one size: medians per turn.
struct Turns {
    wall: Duration,
    cpu: Duration,
    /// The CPU of the pause after a turn, in which the idle session writes its snapshot.
    idle_cpu: Duration,
    /// The median CPU of the later half of the turns against the earlier half's.
    drift: f64,
    /// Every measured turn's CPU, in order.
    cpus: Vec<Duration>,
}

/// One size's figures: each workspace's turns (in [`Workspace::ALL`]'s order) and the
/// floors.
struct Measured {
    turns: [Turns; 3],
    floor: Duration,
    /// The exchange floor's CPU: serialize, post, read the reply.
    exchange_floor: Duration,
    body_bytes: usize,
}

/// Runs `runs` turns (after three not measured) in a conversation of `messages` messages in
/// each workspace, the three engines taking turns.
async fn measure(format: Format, messages: usize, runs: usize, workspaces: [&Path; 3]) -> Measured {
    let server = PlainServer::start().unwrap();
    let engines = workspaces.map(|workspace| {
        let session = write_session(workspace, messages);
        let engine = engine(workspace, &server, format);
        assert_eq!(engine.resume(session).unwrap(), messages);
        engine
    });
    let mut events = engines.each_ref().map(Engine::subscribe);
    let reply = format.reply();
    let mut walls: [Vec<Duration>; 3] = Default::default();
    let mut cpus: [Vec<Duration>; 3] = Default::default();
    let mut idle_cpus: [Vec<Duration>; 3] = Default::default();
    let pause = Duration::from_millis(20 + messages as u64 / 50);
    for turn in 0..runs + 3 {
        for workspace in Workspace::in_turn(turn) {
            let index = workspace.index();
            let engine = &engines[index];
            server.push(&reply);
            let (wall, spent) = (Instant::now(), cpu());
            let task = engine
                .send(engine.root_conversation(), format!("one more turn, {turn}"))
                .unwrap();
            loop {
                let event = events[index].recv().await.unwrap();
                if event.task_id == Some(task)
                    && let Some(end) = event.msg.task_end()
                {
                    assert_eq!(end, coder_protocol::TaskEnd::Completed, "{:?}", event.msg);
                    break;
                }
            }
            let (wall, spent, ended) = (wall.elapsed(), cpu() - spent, cpu());
            tokio::time::sleep(pause).await;
            if turn >= 3 {
                walls[index].push(wall);
                cpus[index].push(spent);
                idle_cpus[index].push(cpu() - ended);
            }
        }
    }
    let body = server.last_request_body();
    for engine in engines {
        engine.shutdown().await;
    }
    let exchange_floor = exchange_floor(format, &server, &body, &reply, runs).await;
    let value: Value = serde_json::from_slice(&body).unwrap();
    let mut floors = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let written = serde_json::to_vec(&value).unwrap();
        floors.push(start.elapsed());
        assert_eq!(written.len(), body.len(), "the floor writes the same body");
    }
    let mut walls = walls.into_iter();
    let mut idle_cpus = idle_cpus.into_iter();
    let turns = cpus.map(|cpus| {
        let later = median(cpus[runs / 2..].to_vec());
        let earlier = median(cpus[..runs / 2].to_vec());
        Turns {
            wall: median(walls.next().unwrap_or_default()),
            cpu: median(cpus.clone()),
            idle_cpu: median(idle_cpus.next().unwrap_or_default()),
            drift: later.as_secs_f64() / earlier.as_secs_f64(),
            cpus,
        }
    });
    Measured {
        turns,
        floor: median(floors),
        exchange_floor,
        body_bytes: body.len(),
    }
}

/// The median CPU of serializing `body` (parsed before the clock starts), posting it to
/// `server` as the engine does (one kept-alive client, the same headers' weight) and reading
/// `reply` back to its end.
async fn exchange_floor(
    format: Format,
    server: &PlainServer,
    body: &[u8],
    reply: &str,
    runs: usize,
) -> Duration {
    let value: Value = serde_json::from_slice(body).unwrap();
    let url = match format {
        Format::OpenAi => format!("http://{}/v1/chat/completions", server.addr()),
        Format::Anthropic => format!("http://{}/v1/messages", server.addr()),
    };
    let client = reqwest::Client::new();
    let mut cpus = Vec::new();
    for run in 0..runs + 3 {
        server.push(reply);
        let spent = cpu();
        let written = serde_json::to_vec(&value).unwrap();
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("authorization", "Bearer bench")
            .body(written)
            .send()
            .await
            .unwrap();
        let read = response.bytes().await.unwrap();
        let spent = cpu() - spent;
        assert!(!read.is_empty(), "the reply is read");
        if run >= 3 {
            cpus.push(spent);
        }
    }
    median(cpus)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let only = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let workspaces = Workspaces::for_bench().unwrap();
    println!(
        "{} files in each workspace; the three engines take turns; ratios to the plain folder are medians of turn-by-turn ratios",
        workspaces.files()
    );
    for format in [Format::OpenAi, Format::Anthropic] {
        if only.as_deref().is_some_and(|only| only != format.name()) {
            continue;
        }
        let mut cpus = Vec::new();
        let mut floors = Vec::new();
        for messages in SIZES {
            let measured = measure(format, messages, runs, workspaces.paths()).await;
            println!(
                "{} {:>6} messages ({:.2} MB request): floor (serialize the body) {:.3} ms; exchange floor (serialize, post, read the reply) {:.3} ms CPU",
                format.name(),
                messages,
                measured.body_bytes as f64 / 1e6,
                ms(measured.floor),
                ms(measured.exchange_floor),
            );
            for workspace in Workspace::ALL {
                let turns = &measured.turns[workspace.index()];
                println!(
                    "  {:<20} turn {:.3} ms wall, {:.3} ms CPU ({:.2}x of the plain folder's); CPU/floor {:.2}x (target <= 2x); CPU/exchange floor {:.2}x; later turns/earlier {:.2}x; idle snapshot after it {:.3} ms CPU",
                    workspace.name(),
                    ms(turns.wall),
                    ms(turns.cpu),
                    median_ratio(&turns.cpus, &measured.turns[0].cpus),
                    turns.cpu.as_secs_f64() / measured.floor.as_secs_f64(),
                    turns.cpu.as_secs_f64() / measured.exchange_floor.as_secs_f64(),
                    turns.drift,
                    ms(turns.idle_cpu),
                );
            }
            cpus.push(measured.turns[0].cpu);
            floors.push(measured.floor);
        }
        let grown = cpus[2].saturating_sub(cpus[0]);
        let floor_grown = floors[2].saturating_sub(floors[0]);
        println!(
            "{} from 100 to 10,000 messages a turn's CPU (plain folder) grows {:.3} ms, the floor {:.3} ms: {:.2}x (target <= 2x)",
            format.name(),
            ms(grown),
            ms(floor_grown),
            grown.as_secs_f64() / floor_grown.as_secs_f64()
        );
    }
}
