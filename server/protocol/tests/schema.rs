//! Keeps `docs/protocol.schema.json`, the JSON Schema of the `coder lsp` protocol for clients
//! in any language, equal to what schemars renders from the method table.
//!
//! `protocol_schema_is_up_to_date` fails when the file drifts from the Rust types; with
//! `UPDATE_PROTOCOL_SCHEMA=1` (or `UPDATE_PROTOCOL=1`, which also rewrites `protocol.ts`) it
//! rewrites the file instead. `server/cli/tests/suite/lsp/schema.rs` validates the messages
//! of a real `coder lsp` session against it.

use std::fs;
use std::path::{Path, PathBuf};

use coder_protocol::methods::{self, PROTOCOL_VERSION};
use coder_protocol::table::{Direction, MethodInfo, MethodVisitor, Notification, Request};
use pretty_assertions::assert_eq;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// The generated file, relative to the workspace root.
const SCHEMA_FILE: &str = "docs/protocol.schema.json";

const REGENERATE: &str = "UPDATE_PROTOCOL_SCHEMA=1 cargo test -p coder-protocol --test schema";

/// Collects, for every method of the table, the message shape and a row of `x-methods`.
struct Messages {
    generator: SchemaGenerator,
    client_requests: Vec<Value>,
    server_requests: Vec<Value>,
    server_notifications: Vec<Value>,
    rows: Vec<Value>,
}

/// The `$defs` name a `$ref` schema points to.
fn def_name(schema: &Value) -> String {
    schema["$ref"]
        .as_str()
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .unwrap_or_else(|| panic!("not a reference to a definition: {schema}"))
        .to_owned()
}

/// A JSON-RPC 2.0 message with `method` and `params`; `id` for a request.
fn message(info: &MethodInfo, params: &Value, request: bool) -> Value {
    let mut properties = json!({
        "jsonrpc": {"const": "2.0"},
        "method": {"const": info.name},
        "params": params,
    });
    let mut required = vec!["jsonrpc", "method", "params"];
    if request {
        properties["id"] = json!({"type": ["string", "integer"]});
        required.push("id");
    }
    json!({
        "title": info.name,
        "description": docs(info),
        "type": "object",
        "properties": properties,
        "required": required,
    })
}

fn docs(info: &MethodInfo) -> String {
    let lines: Vec<&str> = info.docs.iter().map(|line| line.trim()).collect();
    lines.join(" ")
}

impl MethodVisitor for Messages {
    fn request<M: Request>(&mut self, info: &MethodInfo) {
        let params = self.generator.subschema_for::<M::Params>().to_value();
        let result = self.generator.subschema_for::<M::Result>().to_value();
        let shape = message(info, &params, true);
        let direction = match info.direction {
            Direction::ClientToServer => {
                self.client_requests.push(shape);
                "clientToServer"
            }
            Direction::ServerToClient => {
                self.server_requests.push(shape);
                "serverToClient"
            }
        };
        self.rows.push(json!({
            "method": info.name,
            "kind": "request",
            "direction": direction,
            "params": def_name(&params),
            "result": def_name(&result),
        }));
    }

    fn notification<M: Notification>(&mut self, info: &MethodInfo) {
        let params = self.generator.subschema_for::<M::Params>().to_value();
        self.server_notifications
            .push(message(info, &params, false));
        self.rows.push(json!({
            "method": info.name,
            "kind": "notification",
            "direction": "serverToClient",
            "params": def_name(&params),
        }));
    }
}

/// The whole schema document.
fn render() -> Value {
    let mut messages = Messages {
        generator: SchemaSettings::draft2020_12().into_generator(),
        client_requests: Vec::new(),
        server_requests: Vec::new(),
        server_notifications: Vec::new(),
        rows: Vec::new(),
    };
    methods::visit(&mut messages);
    // `initialize`'s options and capabilities travel in LSP's own messages, not in the
    // table; their coder parts get definitions of their own.
    let options = messages
        .generator
        .subschema_for::<methods::InitializationOptions>();
    let options = format!("#/$defs/{}", def_name(&options.to_value()));
    messages
        .generator
        .subschema_for::<methods::CoderCapabilities>();
    let mut defs: Map<String, Value> = messages.generator.take_definitions(true);
    defs.insert(
        "ClientRequest".into(),
        json!({"description": "A request from the client to coder.", "oneOf": messages.client_requests}),
    );
    defs.insert(
        "ServerRequest".into(),
        json!({"description": "A request from coder to the client.", "oneOf": messages.server_requests}),
    );
    defs.insert(
        "ServerNotification".into(),
        json!({"description": "A notification from coder to the client.", "oneOf": messages.server_notifications}),
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "The coder lsp protocol",
        "description": format!(
            "Generated from the Rust method table in server/protocol/src/methods.rs by server/protocol/tests/schema.rs; do not edit by hand (regenerate with `{REGENERATE}`). The root validates any coder method message (the LSP lifecycle is LSP's own); a response's `result` validates against the definition its method's `result` in `x-methods` names. `initializationOptions` of `initialize`: {options}."
        ),
        "x-protocolVersion": PROTOCOL_VERSION,
        "x-methods": messages.rows,
        "anyOf": [
            {"$ref": "#/$defs/ClientRequest"},
            {"$ref": "#/$defs/ServerRequest"},
            {"$ref": "#/$defs/ServerNotification"},
        ],
        "$defs": defs,
    })
}

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(SCHEMA_FILE)
}

fn wants_update() -> bool {
    ["UPDATE_PROTOCOL_SCHEMA", "UPDATE_PROTOCOL"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0"))
}

#[test]
fn protocol_schema_is_up_to_date() {
    let path = schema_path();
    let expected = format!("{:#}\n", render());
    let actual = fs::read_to_string(&path).unwrap_or_default();
    if wants_update() {
        if actual != expected {
            fs::write(&path, &expected).unwrap();
            eprintln!("wrote {SCHEMA_FILE}");
        }
        return;
    }
    assert!(
        actual == expected,
        "{SCHEMA_FILE} is out of date with the Rust protocol types; regenerate it with\n\n    {REGENERATE}\n\n{}",
        pretty_assertions::StrComparison::new(&actual, &expected),
    );
}

/// The schema is valid draft 2020-12, and it tells real messages from wrong ones.
#[test]
fn the_schema_accepts_protocol_messages_and_refuses_others() {
    let schema = render();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let conversation = "0193a5c2-7b1e-7c3a-9d2f-0123456789ab";
    let good = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "conversation/create", "params": {}}),
        json!({"jsonrpc": "2.0", "id": "a", "method": "conversation/send",
               "params": {"conversationId": conversation, "text": "hi"}}),
        json!({"jsonrpc": "2.0", "method": "conversation/event", "params": {"event":
               {"seq": 3, "conversationId": conversation, "taskId": null,
                "type": "agent_message_delta", "delta": "Hel"}}}),
    ];
    for message in good {
        let errors: Vec<String> = validator
            .iter_errors(&message)
            .map(|e| e.to_string())
            .collect();
        assert_eq!(errors, Vec::<String>::new(), "{message}");
    }
    let bad = [
        // No conversation id.
        json!({"jsonrpc": "2.0", "id": 1, "method": "conversation/send", "params": {"text": "hi"}}),
        // An event type that does not exist.
        json!({"jsonrpc": "2.0", "method": "conversation/event", "params": {"event":
               {"seq": 3, "conversationId": conversation, "taskId": null, "type": "nope"}}}),
        // A method that is not in the table.
        json!({"jsonrpc": "2.0", "id": 1, "method": "conversation/nope", "params": {}}),
    ];
    for message in bad {
        assert!(!validator.is_valid(&message), "accepted {message}");
    }
}

/// Every row of the table names definitions that exist.
#[test]
fn every_method_names_its_definitions() {
    let schema = render();
    let rows = schema["x-methods"].as_array().unwrap();
    assert_eq!(rows.len(), methods::TABLE.len());
    for row in rows {
        for key in ["params", "result"] {
            if let Some(name) = row[key].as_str() {
                assert!(
                    schema["$defs"].get(name).is_some(),
                    "{}: no definition {name}",
                    row["method"]
                );
            }
        }
    }
}
