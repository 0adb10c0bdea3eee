//! Small MCP servers for tests: a script for node that speaks newline-delimited JSON-RPC
//! on stdio, whose requests a test's own JavaScript answers. A real process and a real
//! transport, with exactly the behaviour a test needs (a slow start, a tool list that
//! changes and says so, names that collide).

/// The script of a small MCP server for node: newline-delimited JSON-RPC on stdio, each
/// request (a message with an id) handed to `handle(message)`, which `handle_js` defines
/// and which answers with `send({id, result})` or `send({id, error})`;
/// `initialized(message, name)` is the answer to `initialize` for a server of tools named
/// `name`, which says its tool list may change; `notify(method)` sends a notification
/// (`notify("notifications/tools/list_changed")`).
pub fn node_mcp_server(handle_js: &str) -> String {
    format!(
        r#"
let buffer = "";
const send = (message) => process.stdout.write(JSON.stringify({{ jsonrpc: "2.0", ...message }}) + "\n");
const notify = (method) => send({{ method }});
const initialized = (message, name) => send({{ id: message.id, result: {{
  protocolVersion: message.params.protocolVersion,
  capabilities: {{ tools: {{ listChanged: true }} }}, serverInfo: {{ name, version: "1.0.0" }} }} }});
{handle_js}
process.stdin.on("data", (chunk) => {{
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\n")) >= 0) {{
    const message = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (message.id !== undefined) handle(message);
  }}
}});
"#
    )
}

/// A tool as a `tools/list` answer holds it, in JavaScript: `name`, a description that
/// names it, and an input schema of one optional string `text`.
pub fn js_tool(name: &str) -> String {
    format!(
        r#"{{ name: "{name}", description: "The tool {name}.", inputSchema: {{ type: "object", properties: {{ text: {{ type: "string" }} }} }} }}"#
    )
}
