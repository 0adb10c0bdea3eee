//! `!command` (seed 004 section 3): a person runs a shell command themselves. It skips the
//! model and the policy: no permission rule, no approval, not even the dangerous-command
//! check (a person typed it), but it runs as `bash` calls do, in the workspace and inside
//! the sandbox. It is a task of its own (`task_started`, `tool_call_started`,
//! `tool_call_completed` or `tool_call_failed`, `task_complete`), and its result enters the
//! conversation as a user message in a fixed structure, so the model sees it next turn.
//! Interrupting the task ends the command: `bash` watches the task's cancellation itself,
//! kills everything the command started, and reports it interrupted (`turn_aborted`).

use std::sync::{Arc, Mutex};

use coder_protocol::{ChatMessage, EventMsg};
use serde_json::json;

use super::Session;
use crate::conversation::Conversation;
use crate::events::TaskEvents;
use crate::process::ToolEnv;
use crate::tools::{BashTool, Tool, ToolContext};
use crate::turn::{TaskControl, TurnOutcome};

/// Opens and closes the message that records a person's shell command.
pub(crate) const SHELL_OPEN: &str = "<shell-command>";
const SHELL_CLOSE: &str = "</shell-command>";

/// The message a person's command leaves in the conversation: the command, then what the
/// `bash` tool reports (exit code, time, output, stderr).
pub(crate) fn shell_message(command: &str, report: &str) -> ChatMessage {
    ChatMessage::user(format!(
        "{SHELL_OPEN}\nThe person ran this command themselves:\n$ {command}\n{}\n{SHELL_CLOSE}",
        report.trim_end()
    ))
}

impl Session {
    /// Runs a person's `!command` in `conversation` and records it.
    pub(super) async fn shell_now(
        self: &Arc<Self>,
        conversation: &Arc<Mutex<Conversation>>,
        command: &str,
        control: TaskControl,
        events: &TaskEvents,
    ) -> TurnOutcome {
        let config = self.config();
        let (todos, seen, conversation_id) = {
            let conv = crate::sync::lock(conversation);
            (conv.todos.clone(), conv.seen.clone(), conv.id)
        };
        let call_id = format!("shell_{}", events.task_id.to_string().replace('-', ""));
        let ctx = ToolContext {
            workspace: config.workspace.clone(),
            conversation_id,
            call_id: call_id.clone(),
            cancel: control.cancel.clone(),
            sandbox: self.services.sandbox.clone(),
            env: Arc::new(ToolEnv::for_config(&config)),
            todos,
            documents: self.state().documents.clone(),
            approved_diff: None,
            seen,
            changes: None,
            live_output: Some(crate::turn::output_to(events, &call_id)),
        };
        let arguments = json!({"command": command});
        events.emit(crate::tools::started(
            &BashTool,
            &call_id,
            &arguments,
            &ctx.workspace,
        ));
        let started = std::time::Instant::now();
        // Recorded like a model's call: without the secrets the environment withholds.
        let result = crate::turn::redacted(BashTool.call(arguments, &ctx).await, &ctx.env);
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let report = match result {
            Ok(output) => {
                events.emit(EventMsg::ToolCallCompleted {
                    call_id,
                    tool_name: BashTool.name().to_owned(),
                    summary: crate::turn::summary::completed(command, &output.content),
                    output: output.content.clone(),
                    duration_ms,
                    diff: None,
                });
                output.content
            }
            Err(error) => {
                events.emit(EventMsg::ToolCallFailed {
                    call_id,
                    tool_name: BashTool.name().to_owned(),
                    summary: crate::turn::summary::failed(command, &error),
                    error: error.clone(),
                    duration_ms,
                });
                error
            }
        };
        self.change(conversation, |conversation| {
            conversation.record([shell_message(command, &report)]);
        });
        if control.cancel.is_cancelled() {
            return TurnOutcome::Aborted(control.reason());
        }
        TurnOutcome::Completed {
            last_agent_message: None,
            step_limit: None,
        }
    }
}
