//! The auto-verify loop of a turn (seed 004 section 6): when the model ends its reply after
//! editing files that are not all documentation, one allowlisted test command runs
//! (`crate::verify` chooses it). A failure the model can fix sends it back with the output
//! and "fix it and verify again", up to `maxVerifyAttempts` times; a failure of the
//! environment is a best-effort warning and ends verification; when verification applies
//! but cannot run, the person is told so, never left guessing.
//!
//! It applies in `auto-edit` and `yolo`; in `default` only when the person asked for
//! verification; never in `plan`. The command runs as a `bash` call does (workspace,
//! sandbox, tool environment) and goes through the permission policy as one: allowed, it
//! runs; `ask` puts it to the person (or approves it in a session that approves by itself);
//! denied, or declined, it does not run and the person is told so.

use std::time::Instant;

use coder_protocol::{ChatMessage, EventMsg, Mode, PolicyDecision, VerificationStatus};
use serde_json::json;

use super::{TaskControl, TurnTools};
use crate::events::TaskEvents;
use crate::permissions::{Answer, Call, Request as Ask, check};
use crate::tools::ToolContext;
use crate::tools::shell_safety::SafetyContext;
use crate::verify::{
    Request, VERIFY_COMMANDS, VERIFY_TIMEOUT_MS, Verdict, Workflow, choose, is_documentation,
    verdict,
};

/// Opens and closes the message that tells the model how verification went.
const OPEN: &str = "<verification>";
const CLOSE: &str = "</verification>";

/// The most output of a failed run that goes back to the model, in bytes (its tail).
const OUTPUT_FOR_MODEL: usize = 8_000;

/// One task's verification: its settings, what was edited since it last ran, and how many
/// times it ran.
pub(crate) struct Verifier {
    pub workflow: Workflow,
    /// What the person's input said about verification.
    pub request: Request,
    /// Files the edit tools changed since the last verification.
    edited: Vec<String>,
    /// Runs so far in this task.
    runs: u32,
    /// Failures sent back to the model so far.
    retries: u32,
    /// Set after an environment failure: verification is over for this task.
    stopped: bool,
    /// The model was sent back to fix a failure: the command runs again after its next
    /// reply, edits or not, so the task never ends on "retrying".
    retry_pending: bool,
}

/// What the turn does after a reply without tool calls.
pub(crate) enum Next {
    /// The task completes.
    Done,
    /// The task completes; the message (a failure nobody will fix now) goes in the history.
    DoneWith(ChatMessage),
    /// The model is asked again, with this message.
    Again(ChatMessage),
    /// The task was interrupted while the command ran.
    Interrupted,
}

impl Verifier {
    pub fn new(workflow: Workflow, request: Request) -> Self {
        Self {
            workflow,
            request,
            edited: Vec::new(),
            runs: 0,
            retries: 0,
            stopped: false,
            retry_pending: false,
        }
    }

    /// Notes the files a reply's edit calls changed.
    pub fn edited(&mut self, paths: Vec<String>) {
        self.edited.extend(paths);
    }

    /// Whether the mode lets verification run by itself.
    fn mode_allows(&self, mode: Mode) -> bool {
        match mode {
            Mode::AutoEdit | Mode::Yolo => true,
            Mode::Default => self.request.asked,
            Mode::Plan => false,
        }
    }

    /// Verifies after a reply without tool calls, when the task's edits call for it.
    pub async fn after_reply(
        &mut self,
        tools: &TurnTools,
        mode: &(dyn Fn() -> Mode + Sync),
        events: &TaskEvents,
        control: &TaskControl,
    ) -> Next {
        let edited = std::mem::take(&mut self.edited);
        let retrying = std::mem::take(&mut self.retry_pending);
        if self.stopped
            || !self.workflow.auto_verify_after_edit
            || !self.mode_allows(mode())
            || (!retrying && edited.iter().all(|path| is_documentation(path)))
        {
            return Next::Done;
        }
        let max_retries = self.workflow.max_verify_attempts;
        let not_run = |command: Option<&str>, why: String| {
            events.emit(EventMsg::Verification {
                status: VerificationStatus::NotRun,
                command: command.map(str::to_owned),
                attempt: 0,
                max_retries,
                exit_code: None,
                message: format!("auto-verification did not run: {why}"),
            });
            Next::Done
        };
        let bash = tools.registry.get(crate::tools::BASH).filter(|_| {
            !tools
                .hidden
                .iter()
                .any(|hidden| hidden == crate::tools::BASH)
        });
        let Some(bash) = bash else {
            return not_run(None, "the bash tool is not available".to_owned());
        };
        let workspace = &tools.base.workspace;
        let Some((command, _source)) = choose(&self.request, &self.workflow, workspace) else {
            return not_run(
                None,
                format!(
                    "no allowlisted test command fits this project; name one in your request \
                     or set workflow.verifyCommands to one of: {}",
                    VERIFY_COMMANDS.join(", ")
                ),
            );
        };
        let input = json!({"command": command, "timeout_ms": VERIFY_TIMEOUT_MS});
        let safety = SafetyContext::new(
            workspace,
            tools.home.as_deref(),
            tools.base.sandbox.as_deref(),
        );
        let permissions = &tools.permissions;
        let call_id = format!(
            "verify_{}_{}",
            events.task_id.to_string().replace('-', ""),
            self.runs + 1
        );
        let ctx = ToolContext {
            call_id: call_id.clone(),
            ..tools.base.clone()
        };
        // Decided with the mode and preset in force now; a change while a person is asked
        // decides it again.
        loop {
            let verdict_of_policy = check(
                mode(),
                permissions.preset(),
                &permissions.rules(),
                &Call::of(bash.tool.as_ref(), &input, &ctx.workspace),
                &safety,
            );
            match verdict_of_policy.decision {
                PolicyDecision::Allow => break,
                PolicyDecision::Deny => {
                    return not_run(
                        Some(command),
                        format!(
                            "the permissions deny `{command}` ({})",
                            verdict_of_policy.reason
                        ),
                    );
                }
                // Asked as any `bash` call would be (section 5): the person sees the command
                // and why it runs; "allow always" covers the next verification too, and a
                // session that approves by itself runs it.
                PolicyDecision::Ask => {
                    let summary = format!(
                        "bash: {command} (auto-verification after the edits; {})",
                        verdict_of_policy.reason
                    );
                    let request = Ask {
                        call_id: &call_id,
                        tool: bash.tool.name(),
                        kind: bash.tool.kind(),
                        locations: bash.tool.locations(&input, &ctx.workspace),
                        command: bash.tool.command_line(&input),
                        plan: None,
                        input: &input,
                        summary: &summary,
                        reason: &verdict_of_policy.reason,
                        diff: None,
                        changes: Vec::new(),
                        folder: None,
                        human_required: verdict_of_policy.human_required,
                        line: verdict_of_policy.line.as_ref(),
                        unattended: verdict_of_policy.unattended,
                    };
                    match permissions.ask(request, events, &ctx.cancel).await {
                        Answer::Allowed => break,
                        Answer::Denied(why) => {
                            return not_run(Some(command), format!("not approved ({why})"));
                        }
                        // A person's refusal ends the task, as an interrupt does.
                        Answer::Refused(_) => {
                            control.refuse();
                            return Next::Interrupted;
                        }
                        Answer::Cancelled => return Next::Interrupted,
                        Answer::Redecide => {}
                    }
                }
            }
        }

        self.runs += 1;
        let attempt = self.runs;
        events.emit(crate::tools::started(
            bash.tool.as_ref(),
            &call_id,
            &input,
            &ctx.workspace,
        ));
        let started = Instant::now();
        let result = tokio::select! {
            biased;
            result = bash.tool.call(input, &ctx) => Some(result.map(|output| output.content)),
            () = control.cancel.cancelled() => None,
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let Some(result) = result.filter(|_| !control.cancel.is_cancelled()) else {
            events.emit(EventMsg::ToolCallFailed {
                call_id,
                tool_name: bash.tool.name().to_owned(),
                summary: super::summary::failed(command, "interrupted"),
                error: super::tool_calls::CANCELLED_WHILE_RUNNING.to_owned(),
                duration_ms,
            });
            return Next::Interrupted;
        };
        match &result {
            Ok(report) => events.emit(EventMsg::ToolCallCompleted {
                call_id,
                tool_name: bash.tool.name().to_owned(),
                summary: super::summary::completed(command, report),
                output: report.clone(),
                duration_ms,
                diff: None,
            }),
            Err(error) => events.emit(EventMsg::ToolCallFailed {
                call_id,
                tool_name: bash.tool.name().to_owned(),
                summary: super::summary::failed(command, error),
                error: error.clone(),
                duration_ms,
            }),
        }
        let report = |status, exit_code, message: String| {
            events.emit(EventMsg::Verification {
                status,
                command: Some(command.to_owned()),
                attempt,
                max_retries,
                exit_code,
                message,
            });
        };
        match verdict(&result, tools.home.as_deref()) {
            Verdict::Passed => {
                report(
                    VerificationStatus::Passed,
                    Some(0),
                    format!("auto-verification passed: `{command}`"),
                );
                Next::Done
            }
            Verdict::Environment { exit_code, why } => {
                self.stopped = true;
                report(
                    VerificationStatus::Environment,
                    exit_code,
                    format!(
                        "auto-verification is best-effort and stopped: `{command}` could not \
                         check the change ({why})"
                    ),
                );
                Next::Done
            }
            Verdict::Failed(code) => {
                let output = tail(result.as_deref().unwrap_or_default());
                if self.retries < max_retries {
                    self.retries += 1;
                    self.retry_pending = true;
                    report(
                        VerificationStatus::Retrying,
                        Some(code),
                        format!(
                            "auto-verification failed: `{command}` exited with {code}; the \
                             model is fixing it (retry {} of {max_retries})",
                            self.retries
                        ),
                    );
                    Next::Again(ChatMessage::user(format!(
                        "{OPEN}\nAutomatic verification after your edits failed: `{command}` \
                         exited with {code}.\n{output}\nFix it and verify again: the same \
                         command runs after your next edits.\n{CLOSE}"
                    )))
                } else {
                    report(
                        VerificationStatus::Failed,
                        Some(code),
                        format!(
                            "auto-verification failed: `{command}` exited with {code}{}",
                            if max_retries == 0 {
                                String::new()
                            } else {
                                format!(" after {max_retries} automatic retries")
                            }
                        ),
                    );
                    Next::DoneWith(ChatMessage::user(format!(
                        "{OPEN}\nAutomatic verification after your edits failed again: \
                         `{command}` exited with {code}. No automatic retry is left; the \
                         person has been told.\n{output}\n{CLOSE}"
                    )))
                }
            }
        }
    }
}

/// The last [`OUTPUT_FOR_MODEL`] bytes of a report, cut at a character boundary.
fn tail(report: &str) -> &str {
    let mut start = report.len().saturating_sub(OUTPUT_FOR_MODEL);
    while !report.is_char_boundary(start) {
        start += 1;
    }
    report[start..].trim_end()
}

/// The files a unified diff changes: its `+++ b/…` (or `--- a/…` for a deletion) headers.
pub(crate) fn diff_paths(diff: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut from = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("--- a/") {
            from = Some(path);
        } else if let Some(to) = line.strip_prefix("+++ ") {
            let path = to.strip_prefix("b/").or(from.filter(|_| to == "/dev/null"));
            if let Some(path) = path {
                paths.push(path.to_owned());
            }
            from = None;
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plan_mode_never_verifies_even_when_asked() {
        let asked = Verifier::new(
            Workflow::default(),
            crate::verify::requested("change A and verify it"),
        );
        let unasked = Verifier::new(Workflow::default(), crate::verify::requested("change A"));
        assert!(!asked.mode_allows(Mode::Plan));
        assert!(asked.mode_allows(Mode::Default));
        assert!(!unasked.mode_allows(Mode::Default));
        for mode in [Mode::AutoEdit, Mode::Yolo] {
            assert!(unasked.mode_allows(mode));
        }
    }

    #[test]
    fn diff_headers_name_the_changed_files() {
        let diff = crate::tools::diff::unified_diff("src/a.rs", Some("x\n"), Some("y\n"))
            + &crate::tools::diff::unified_diff("new.md", None, Some("n\n"))
            + &crate::tools::diff::unified_diff("gone.py", Some("g\n"), None);
        assert_eq!(diff_paths(&diff), ["src/a.rs", "new.md", "gone.py"]);
    }

    #[test]
    fn the_tail_is_cut_at_a_character() {
        let long = "é".repeat(OUTPUT_FOR_MODEL);
        let cut = tail(&long);
        assert!(cut.len() <= OUTPUT_FOR_MODEL);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
