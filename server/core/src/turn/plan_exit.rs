//! The `exit_plan_mode` call: the plan is put to the person through the permission path,
//! and their answer becomes the call's result and, when they approved it, a
//! [`ControlSignal`] the turn acts on before the next model call. A session that approves
//! without a person approves it as "start editing".

use std::time::Instant;

use coder_protocol::{ChatMessage, Mode, ModeChangeReason, ToolCall};
use serde_json::Value;

use super::ControlSignal;
use super::tool_calls::{CANCELLED_BEFORE_START, ToolRun, finished, person_request};
use crate::permissions::PlanAnswer;
use crate::sync::lock;
use crate::tools::Tool;

/// What the person is shown besides the plan (which comes whole in `arguments.plan`).
const SUMMARY: &str = "exit_plan_mode: the plan is ready; approve it to leave plan mode";

/// Runs one `exit_plan_mode` call, its arguments already checked against the schema.
pub(super) async fn exit_plan_mode(
    tool: &dyn Tool,
    workspace: &std::path::Path,
    call: &ToolCall,
    input: &Value,
    run: &ToolRun<'_>,
    started: Instant,
) -> ChatMessage {
    let events = run.events;
    let plan = input["plan"].as_str().unwrap_or_default().to_owned();
    let finish =
        |output: String, failed: bool| finished(events, tool, call, output, failed, started);
    // Offered only in plan mode, but the mode may have been switched during the reply.
    if run.mode() != Mode::Plan {
        return finish(
            "Error: plan mode is not on, so there is no plan to approve; go on with the work."
                .to_owned(),
            true,
        );
    }
    let request = person_request(
        tool,
        call,
        input,
        workspace,
        SUMMARY,
        "a plan is carried out only when a person approves it",
    );
    let answer = run
        .tools
        .permissions
        .ask_plan_exit(request, events, &run.control.cancel)
        .await;
    let (signal, output) = match answer {
        PlanAnswer::StartEditing => (
            Some(ControlSignal::RebuildContext {
                reason: ModeChangeReason::ExitPlanMode,
                rebuild_message: None,
            }),
            "The user approved the plan. Plan mode is off: carry out the plan now, step by step."
                .to_owned(),
        ),
        PlanAnswer::StartEditingUnattended => (
            Some(ControlSignal::RebuildContext {
                reason: ModeChangeReason::ExitPlanMode,
                rebuild_message: None,
            }),
            "This session approves calls without asking a person, so the plan is approved. \
             Plan mode is off: carry out the plan now, step by step."
                .to_owned(),
        ),
        PlanAnswer::ClearContextAndStart => (
            Some(ControlSignal::RebuildContext {
                reason: ModeChangeReason::ExitPlanMode,
                rebuild_message: Some(plan),
            }),
            "The user approved the plan and cleared the context.".to_owned(),
        ),
        PlanAnswer::KeepPlanning(feedback) => {
            let mut output = "The user did not approve the plan yet; plan mode stays on. Revise \
                              the plan and call exit_plan_mode again when it is ready."
                .to_owned();
            if let Some(feedback) = feedback.filter(|text| !text.trim().is_empty()) {
                output.push_str(&format!("\nThe user's feedback: {feedback}"));
            }
            (None, output)
        }
        PlanAnswer::Refused => {
            // SemaCore's `refuse`: plan mode stays on, and the task ends (checkpoint 4).
            run.control.refuse();
            (
                None,
                "The user refused the plan; plan mode stays on and the task stops here. Wait \
                 for the user to say how to go on."
                    .to_owned(),
            )
        }
        PlanAnswer::Unanswered(reason) => (Some(ControlSignal::EndTurn { answer: plan }), reason),
        PlanAnswer::Cancelled => return finish(CANCELLED_BEFORE_START.to_owned(), true),
    };
    events.emit(crate::tools::started(tool, &call.id, input, workspace));
    *lock(&run.signal) = signal;
    finish(output, false)
}
