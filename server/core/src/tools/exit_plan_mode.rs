//! `exit_plan_mode`: offered only in plan mode, it carries the plan the model wrote and asks
//! the person, through the permission path, whether to start editing (keeping the history),
//! clear the context and start from the plan, or keep planning with feedback. The turn runs
//! it itself (the turn's `plan_exit`); calling the tool outside a session does nothing.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput};

/// The tool's name.
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// The `exit_plan_mode` tool.
#[derive(Debug, Default)]
pub struct ExitPlanModeTool;

#[async_trait]
impl Tool for ExitPlanModeTool {
    fn name(&self) -> &str {
        EXIT_PLAN_MODE
    }

    fn description(&self) -> &str {
        "Present your plan to the user and ask them to approve it, which ends plan mode. Call \
         it once the plan is complete, with the whole plan in markdown. The user may start \
         the work keeping this conversation, start it from the plan alone in a fresh context, \
         or send feedback and keep you planning. Do not call it for research questions."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string", "minLength": 1, "description": "The plan, in markdown: the steps in order, the files each touches, how it will be tested."},
            },
            "required": ["plan"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::SwitchMode
    }

    fn plan(&self, input: &Value) -> Option<String> {
        input["plan"].as_str().map(str::to_owned)
    }

    fn is_read_only(&self) -> bool {
        false
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, String> {
        Err(format!("{EXIT_PLAN_MODE} runs only inside a session"))
    }
}
