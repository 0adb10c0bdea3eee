//! The names of coder's own tools, as events (`toolName`) and options (`disabledTools`)
//! carry them. The core's registry is checked against these lists
//! (`server/core/tests/suite/tool_names.rs`), and the SDK builds on the generated copies.

/// The built-in tools besides the conversation tools, sorted.
pub const BUILTIN_TOOLS: &[&str] = &[
    "apply_patch",
    "ask_user",
    "bash",
    "edit",
    "exit_plan_mode",
    "glob",
    "grep",
    "read",
    "skill",
    "todo_write",
    "write",
];

/// The conversation tools (work in other conversations of the session), in their fixed
/// order.
pub const CONVERSATION_TOOLS: &[&str] = &[
    "conv_create",
    "conv_send",
    "conv_list",
    "conv_history",
    "conv_destroy",
];
