//! The protocol as declared (`coder_protocol::methods::TABLE`, `docs/protocol.schema.json`)
//! against the real `coder lsp`: every method of the table is served, and every message of a
//! session that uses them all validates against the schema a client in another language
//! would use.

use std::collections::BTreeMap;

use coder_protocol::methods::{METHODS, TABLE};
use coder_protocol::table::Direction;
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use jsonschema::Validator;
use serde_json::{Value, json};

use super::Client;

/// The schema file clients get, read as they would read it.
fn schema() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/protocol.schema.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Validators for the whole schema and for each of its definitions, built once.
struct Schema {
    root: Validator,
    defs: BTreeMap<String, Validator>,
    /// Method -> the definition its result must match.
    results: BTreeMap<String, String>,
}

impl Schema {
    fn load() -> Self {
        let schema = schema();
        let root = jsonschema::validator_for(&schema).unwrap();
        let defs = schema["$defs"]
            .as_object()
            .unwrap()
            .keys()
            .map(|name| {
                let one = json!({
                    "$schema": schema["$schema"],
                    "$ref": format!("#/$defs/{name}"),
                    "$defs": schema["$defs"],
                });
                (name.clone(), jsonschema::validator_for(&one).unwrap())
            })
            .collect();
        let results = schema["x-methods"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|row| {
                Some((
                    row["method"].as_str()?.to_owned(),
                    row["result"].as_str()?.to_owned(),
                ))
            })
            .collect();
        Schema {
            root,
            defs,
            results,
        }
    }

    /// Every way `value` fails `validator`, as text (empty when it is valid).
    fn errors(validator: &Validator, value: &Value) -> Vec<String> {
        validator
            .iter_errors(value)
            .map(|error| format!("{error} at {}", error.instance_path()))
            .collect()
    }

    fn check_message(&self, message: &Value) {
        let errors = Self::errors(&self.root, message);
        assert!(
            errors.is_empty(),
            "{message}\ndoes not validate: {errors:?}"
        );
    }

    fn check_def(&self, def: &str, value: &Value) {
        let validator = self
            .defs
            .get(def)
            .unwrap_or_else(|| panic!("no definition {def}"));
        let errors = Self::errors(validator, value);
        assert!(errors.is_empty(), "{value}\nis not a {def}: {errors:?}");
    }

    fn check_result(&self, method: &str, response: &Value) {
        let result = response
            .get("result")
            .unwrap_or_else(|| panic!("{method} failed: {response}"));
        self.check_def(&self.results[method], result);
    }
}

/// Sends a request, checks it and its result against the schema, and returns the result.
async fn call(
    client: &mut Client,
    schema: &Schema,
    method: &str,
    params: Value,
    seen: &mut Vec<Value>,
) -> Value {
    schema.check_message(&json!({"jsonrpc": "2.0", "id": 0, "method": method, "params": params}));
    let response = client.request(method, params, seen).await;
    schema.check_result(method, &response);
    response["result"].clone()
}

#[tokio::test]
async fn every_method_of_the_table_is_served() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let init = client.initialize(json!({})).await;
    assert_eq!(
        init["result"]["capabilities"]["experimental"]["coder"]["methods"],
        json!(METHODS)
    );
    let client_methods: Vec<&str> = TABLE
        .iter()
        .filter(|info| info.direction == Direction::ClientToServer)
        .map(|info| info.name)
        .collect();
    assert_eq!(client_methods, METHODS);
    for method in client_methods {
        // `{}` is a valid call of some methods and invalid params for others; never an
        // unknown method.
        let response = client.request(method, json!({}), &mut Vec::new()).await;
        assert_ne!(
            response["error"]["code"], -32601,
            "{method} is not served: {response}"
        );
    }
    // What the assertion above tells apart.
    let unknown = client
        .request("conversation/unknown", json!({}), &mut Vec::new())
        .await;
    assert_eq!(unknown["error"]["code"], -32601);
    client.stop().await;
}

#[tokio::test]
async fn a_session_using_every_method_validates_against_the_schema() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::thinking("a file is needed"),
            Chunk::text("Writing it."),
            Chunk::tool_call("c1", "write", json!({"path": "a.txt", "content": "a\n"})),
            Chunk::usage(12, 5),
        ]),
        MockResponse::text("done"),
    ])
    .await
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let schema = Schema::load();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let init = client.initialize(json!({})).await;
    schema.check_def(
        "CoderCapabilities",
        &init["result"]["capabilities"]["experimental"]["coder"],
    );
    let mut seen = Vec::new();
    let list = call(
        &mut client,
        &schema,
        "conversation/list",
        json!({}),
        &mut seen,
    )
    .await;
    let root = list["conversations"][0]["id"].clone();
    let params = json!({"userInstructions": "be brief", "mode": "default"});
    call(
        &mut client,
        &schema,
        "conversation/create",
        params,
        &mut seen,
    )
    .await;
    let other = call(
        &mut client,
        &schema,
        "conversation/create",
        json!({}),
        &mut seen,
    )
    .await;
    let params = json!({"conversationId": root, "text": "write a.txt"});
    call(&mut client, &schema, "conversation/send", params, &mut seen).await;
    let ask = client.server_request("permission/request", &mut seen).await;
    schema.check_message(&ask);
    let answer = json!({"decision": "allow_once"});
    schema.check_def("PermissionDecision", &answer);
    client
        .write(json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer}))
        .await;
    client.until_events("task_complete", 1, &mut seen).await;
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("a.txt")).unwrap(),
        "a\n"
    );
    let params = json!({"conversationId": root, "limit": 10});
    call(
        &mut client,
        &schema,
        "conversation/history",
        params,
        &mut seen,
    )
    .await;
    let params = json!({"conversationId": root, "userInstructions": "be terse",
        "baseInstructions": null, "mcpAllowlist": [], "refreshMcpView": true});
    call(
        &mut client,
        &schema,
        "conversation/setContext",
        params,
        &mut seen,
    )
    .await;
    let params = json!({"conversationId": root});
    call(
        &mut client,
        &schema,
        "conversation/interrupt",
        params,
        &mut seen,
    )
    .await;
    let params = json!({"conversationId": other["conversationId"]});
    let destroyed = call(
        &mut client,
        &schema,
        "conversation/destroy",
        params,
        &mut seen,
    )
    .await;
    assert_eq!(destroyed["ok"], true);
    let params = json!({"conversationId": root});
    let refused = call(
        &mut client,
        &schema,
        "conversation/destroy",
        params,
        &mut seen,
    )
    .await;
    assert_eq!(refused["ok"], false);

    let types = super::event_types(&seen);
    for expected in [
        "state_changed",
        "task_started",
        "agent_reasoning_delta",
        "agent_reasoning",
        "agent_message_delta",
        "agent_message",
        "tool_calls_requested",
        "permission_requested",
        "tool_call_started",
        "tool_call_completed",
        "token_count",
        "task_complete",
    ] {
        assert!(
            types.iter().any(|t| t == expected),
            "no {expected} in {types:?}"
        );
    }
    for message in &seen {
        schema.check_message(message);
    }
    client.stop().await;
}
