//! A seeded fuzz test of what an MCP server answers: a real process (node) replays
//! answers scripted by the test, each the valid one or (once in three times) it cut, flipped and spliced with
//! hostile pieces (wrong types, deep nesting, numbers past every integer, invalid UTF-8,
//! strings of up to 1 MiB, errors, a next page), and before any request it sends
//! notifications and requests of its own. Each round starts an engine with the server and
//! runs a task that calls its tool: the task must end, the engine must not panic, and what
//! reaches the model stays bounded. The seed is printed; `CODER_FUZZ_SEED=<n>` replays a
//! run.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use coder_core::ProviderKind;
use coder_core::mcp::McpServerConfig;
use coder_protocol::EventMsg;
use coder_testkit::fuzz::{Rng, mutate};
use coder_testkit::{MockModelServer, MockResponse};
use serde_json::json;

use super::support::Harness;

/// Servers started, one engine each.
const ROUNDS: usize = 30;

/// A server that replays, for each request, the next answer the script holds for its
/// method (`*` for any other), its id put where `@ID@` is and the client's protocol
/// version where `@PV@` is; the script's `preamble` goes out before any request.
const REPLAY_SERVER: &str = r#"
const fs = require("fs");
const script = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const lines = {};
for (const [method, list] of Object.entries(script)) lines[method] = list.map((b) => Buffer.from(b, "base64"));
const replace = (bytes, token, value) => {
  const parts = [];
  let at = 0, found;
  while ((found = bytes.indexOf(token, at)) >= 0) {
    parts.push(bytes.subarray(at, found), Buffer.from(value));
    at = found + token.length;
  }
  parts.push(bytes.subarray(at));
  return Buffer.concat(parts);
};
const next = {};
for (const line of lines.preamble) process.stdout.write(line);
let buffer = "";
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\n")) >= 0) {
    let message;
    try { message = JSON.parse(buffer.slice(0, end)); } catch { message = {}; }
    buffer = buffer.slice(end + 1);
    if (message.id === undefined || message.method === undefined) continue;
    const method = lines[message.method] ? message.method : "*";
    const i = next[method] || 0;
    next[method] = i + 1;
    const list = lines[method];
    let bytes = replace(list[i % list.length], "@ID@", JSON.stringify(message.id));
    const version = (message.params && message.params.protocolVersion) || "2025-06-18";
    bytes = replace(bytes, "@PV@", JSON.stringify(version));
    process.stdout.write(bytes);
  }
});
"#;

/// The valid answers, by method, and what the server sends unasked.
fn valid_script() -> Vec<(&'static str, Vec<&'static [u8]>)> {
    vec![
        (
            "initialize",
            vec![
                br#"{"jsonrpc":"2.0","id":@ID@,"result":{"protocolVersion":@PV@,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fuzz","version":"1.0.0"},"instructions":"be kind"}}
"#,
            ],
        ),
        (
            "tools/list",
            vec![
                br#"{"jsonrpc":"2.0","id":@ID@,"result":{"tools":[{"name":"t","description":"a tool","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"annotations":{"readOnlyHint":true}},{"name":"u","inputSchema":{"type":"object"}}]}}
"#,
            ],
        ),
        (
            "tools/call",
            vec![
                br#"{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"fine"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}],"isError":false}}
"#,
            ],
        ),
        (
            "*",
            vec![
                br#"{"jsonrpc":"2.0","id":@ID@,"result":{}}
"#,
            ],
        ),
        (
            "preamble",
            vec![
                br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}
"#,
                br#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}
"#,
                br#"{"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{}}
"#,
                br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
"#,
            ],
        ),
    ]
}

/// What a hostile edit splices in, beside `JSON_PIECES`.
const PIECES: &[&[u8]] = &[
    b"\"id\":",
    b"\"result\":",
    b"\"error\":{\"code\":-32000,\"message\":\"no\"}",
    b"\"content\":7",
    b"\"tools\":null",
    b"\"inputSchema\":{\"type\":\"array\"}",
    b"\"name\":\"\"",
    b"\"name\":\"a/b c\"",
    b"\"isError\":true",
    b"\"nextCursor\":\"again\"",
];

/// The script of one round: each line valid, or, when `hostile`, once in three times made
/// hostile.
fn script(rng: &mut Rng, hostile: bool) -> serde_json::Value {
    let base64 = base64::engine::general_purpose::STANDARD;
    let mut script = BTreeMap::new();
    for (method, lines) in valid_script() {
        let lines: Vec<String> = lines
            .into_iter()
            .map(|line| {
                let bytes = if hostile && rng.chance(3) {
                    mutate(line, PIECES, rng)
                } else {
                    line.to_vec()
                };
                base64.encode(bytes)
            })
            .collect();
        script.insert(method, lines);
    }
    json!(script)
}

/// A server replaying `script`, given `seconds` to start and for each call: a hostile
/// answer that never comes costs no more.
fn server_config(dir: &Path, script: &serde_json::Value, seconds: f64) -> McpServerConfig {
    let replay = dir.join("replay.js");
    let script_file = dir.join("script.json");
    std::fs::write(&replay, REPLAY_SERVER).unwrap();
    std::fs::write(&script_file, script.to_string()).unwrap();
    McpServerConfig {
        command: Some("node".into()),
        args: vec![
            replay.display().to_string(),
            script_file.display().to_string(),
        ],
        enabled: true,
        startup_timeout_sec: Some(seconds),
        tool_timeout_sec: Some(seconds),
        ..McpServerConfig::default()
    }
}

#[tokio::test]
async fn hostile_mcp_answers_end_in_a_task_that_ends_and_bounded_requests() {
    let mut rng = Rng::new(Rng::seed(0x0c0d_e3c9_f022));
    let (mut called, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        // The first round is the valid script: the harness itself must work.
        let script = script(&mut rng, round > 0);
        let server = MockModelServer::start(vec![
            MockResponse::tool_call("c1", "f__t", json!({"q": "x"})),
            MockResponse::text("done"),
        ])
        .await
        .unwrap();
        // Time enough for node to start on a busy machine; a hostile answer that never
        // comes costs no more.
        let seconds = if round == 0 { 10.0 } else { 2.0 };
        let config = server_config(dir.path(), &script, seconds);
        let mut h = Harness::with(
            &server,
            ProviderKind::OpenAi,
            |c| {
                c.mcp_servers = BTreeMap::from([("f".to_owned(), config)]);
            },
            vec![],
        );
        let events = h.run("go").await;
        let end = events.last().map(|event| &event.msg);
        assert!(
            matches!(end, Some(EventMsg::TaskComplete { error: None, .. })),
            "round {round}: {end:?}"
        );
        let call_ended = events.iter().find_map(|event| match &event.msg {
            EventMsg::ToolCallCompleted { output, .. } => Some(Ok(output.clone())),
            EventMsg::ToolCallFailed { error, .. } => Some(Err(error.clone())),
            _ => None,
        });
        match call_ended {
            Some(Ok(output)) => {
                if round == 0 {
                    assert_eq!(output, "fine");
                }
                called += 1;
            }
            Some(Err(error)) => {
                assert!(round > 0, "the valid server's call failed: {error}");
                refused += 1;
            }
            None => panic!("round {round}: the tool call did not end: {events:?}"),
        }
        for request in server.requests() {
            let size = request.body.to_string().len();
            assert!(size < 4 << 20, "round {round}: a request of {size} bytes");
        }
        h.engine.shutdown().await;
    }
    println!("{called} hostile servers answered the call, {refused} did not");
    assert!(
        called > 1 && refused > 0,
        "{called} called, {refused} refused"
    );
}
