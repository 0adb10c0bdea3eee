//! The tool names the protocol publishes (`coder_protocol::tools`, rendered into
//! `bindings-node/ts/protocol.ts` for the SDK) are the registry's.

use coder_core::tools::{CONVERSATION_TOOLS, ToolRegistry};
use pretty_assertions::assert_eq;

#[test]
fn the_published_tool_names_are_the_registrys() {
    let mut builtin: Vec<String> = ToolRegistry::builtin()
        .iter()
        .map(|tool| tool.name().to_owned())
        .filter(|name| !CONVERSATION_TOOLS.contains(&name.as_str()))
        .collect();
    builtin.sort();
    assert_eq!(builtin, coder_protocol::tools::BUILTIN_TOOLS);
    assert_eq!(
        CONVERSATION_TOOLS.as_slice(),
        coder_protocol::tools::CONVERSATION_TOOLS
    );
}
