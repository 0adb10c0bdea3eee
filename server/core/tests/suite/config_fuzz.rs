//! A seeded fuzz test of configuration files, the person's and the one a repository ships:
//! a file with every section filled in is cut, flipped and spliced with hostile pieces
//! (wrong types, deep nesting, numbers past every integer, invalid UTF-8, long strings,
//! unknown keys), and its values are swapped for extreme ones (zero, the largest integers,
//! `1e308`, negative numbers, empty and huge strings). Loading must give a configuration or
//! an error, never panic; a configuration loaded must make an engine that starts and shuts
//! down. The seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.

use coder_core::{Config, Engine, Overrides, WorkspaceTrust};
use coder_testkit::fuzz::{Rng, mutate};
use serde_json::{Value, json};

/// Files written and loaded.
const ROUNDS: usize = 150;

/// A file with every section: what the fuzz starts from.
fn full_config() -> Value {
    json!({
        "provider": "openai",
        "model": "mock-model",
        "baseUrl": "http://127.0.0.1:9/v1",
        "apiKey": "k",
        "maxSteps": 10,
        "contextWindow": 32000,
        "maxOutputTokens": 1000,
        "compactThreshold": 0.8,
        "toolCalling": "native",
        "requireTodoForComplex": true,
        "workflow": {"autoVerifyAfterEdit": true, "verifyCommands": ["cargo test"]},
        "maxVerifyAttempts": 2,
        "maxReplyBytes": 1000000,
        "streamIdleTimeoutMs": 5000,
        "retry": {"maxRetries": 2, "initialDelayMs": 10, "maxDelayMs": 100},
        "mode": "default",
        "permissions": {"preset": "balanced", "tools": {"bash": "ask"},
            "commands": [{"pattern": "git status", "decision": "allow"}]},
        "approval": {},
        "autoApproveAsk": false,
        "tools": {"disabled": ["glob"], "env": {"passThrough": ["HOME"]}},
        "sandbox": {"enabled": true, "network": "off", "writableRoots": ["/tmp"]},
        "maxInterruptChainDepth": 3,
        "maxHandoffsPerInput": 3,
        "promptCacheKey": true,
        "saveSessions": false,
        "maxPromptBytes": 100000,
        "maxConversations": 10,
        "mcpServers": {"s": {"command": "true", "args": ["x"], "startupTimeoutSec": 1,
            "toolTimeoutSec": 1, "enabled": false}},
        "trustedFolders": ["/nowhere"]
    })
}

/// What a hostile edit splices in, beside `JSON_PIECES`.
const PIECES: &[&[u8]] = &[
    b"1e308",
    b"\"maxSteps\":0",
    b"\"contextWindow\":0",
    b"\"compactThreshold\":-5",
    b"\"baseUrl\":\"file:///etc\"",
    b"\"unknownKey\":1",
];

/// Extreme values a leaf may be swapped for.
fn extreme(rng: &mut Rng) -> Value {
    rng.pick(&[
        json!(0),
        json!(-1),
        json!(u64::MAX),
        json!(1e308),
        json!(0.5),
        json!(""),
        json!("x".repeat(100_000)),
        json!([]),
        json!({}),
        Value::Null,
        json!(true),
    ])
    .clone()
}

/// `value` with each leaf, once in eight, swapped for an extreme value.
fn swap_leaves(value: &mut Value, rng: &mut Rng) {
    match value {
        Value::Object(map) => map.values_mut().for_each(|v| swap_leaves(v, rng)),
        Value::Array(items) => items.iter_mut().for_each(|v| swap_leaves(v, rng)),
        leaf => {
            if rng.chance(8) {
                *leaf = extreme(rng);
            }
        }
    }
}

/// One hostile file: extreme values, or bytes cut and spliced, or both.
fn hostile(rng: &mut Rng) -> Vec<u8> {
    let mut value = full_config();
    swap_leaves(&mut value, rng);
    let bytes = value.to_string().into_bytes();
    if rng.chance(2) {
        mutate(&bytes, PIECES, rng)
    } else {
        bytes
    }
}

#[tokio::test]
async fn hostile_config_files_load_or_fail_and_never_panic() {
    let mut rng = Rng::new(Rng::seed(0x00c0_f16f_11e5));
    let (mut loaded, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        let workspace = tempfile::tempdir().unwrap();
        let ws = workspace.path();
        std::fs::create_dir_all(ws.join(".coder")).unwrap();
        let user = ws.join("user.json");
        // The person's file and the repository's, each valid or hostile.
        let (user_bytes, repo_bytes) = match rng.below(3) {
            0 => (hostile(&mut rng), full_config().to_string().into_bytes()),
            1 => (full_config().to_string().into_bytes(), hostile(&mut rng)),
            _ => (hostile(&mut rng), hostile(&mut rng)),
        };
        std::fs::write(&user, user_bytes).unwrap();
        std::fs::write(ws.join(".coder/config.json"), repo_bytes).unwrap();
        let trust = *rng.pick(&[
            WorkspaceTrust::Recorded,
            WorkspaceTrust::Granted,
            WorkspaceTrust::Denied,
        ]);
        let env = |_: &str| None;
        match Config::load_full(ws, Some(&user), &env, &Overrides::default(), trust) {
            Ok(config) => {
                loaded += 1;
                match Engine::new(config) {
                    Ok(engine) => engine.shutdown().await,
                    Err(err) => assert!(!err.to_string().is_empty(), "round {round}"),
                }
            }
            Err(err) => {
                refused += 1;
                assert!(!err.to_string().is_empty(), "round {round}");
            }
        }
    }
    println!("{loaded} hostile configurations loaded, {refused} refused");
    assert!(
        loaded > 0 && refused > 0,
        "{loaded} loaded, {refused} refused"
    );
}
