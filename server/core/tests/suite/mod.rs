mod architecture;
mod commands;
mod compaction;
mod config_fuzz;
mod conversation_items;
mod conversations;
mod documents;
mod faults;
mod input_limits;
mod internal_tools;
mod interrupts;
mod limits;
mod mcp;
mod mcp_fuzz;
mod mcp_views;
mod models;
mod patch_instructions;
mod permissions;
mod plan_mode;
mod prompt_tools;
mod races;
mod read_only_batches;
mod replay;
mod replayable_snapshots;
mod sandbox;
mod session_files;
mod session_saves;
mod sessions;
mod shutdown;
mod streaming;
mod support;
mod tool_call_fuzz;
mod tool_names;
mod tools;
mod undo;
mod workflow;

/// The ids of a permission request's options, in order.
pub fn option_ids(options: &[coder_protocol::PermissionOption]) -> Vec<&str> {
    options
        .iter()
        .map(|option| option.option_id.as_str())
        .collect()
}
