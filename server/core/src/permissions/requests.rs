//! Permission requests: asking a person, remembering "allow always", approving without a
//! person.

use std::collections::HashMap;
use std::sync::Mutex;

use coder_protocol::{
    ConversationId, EngineState, EventMsg, PermissionDecision, PermissionOption, Preset, ToolKind,
    ToolLocation,
};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::lasting::LastingRules;
use super::options::Scope;
use super::{PermissionRules, Unattended};
use crate::events::TaskEvents;
use crate::sync::lock;
use crate::tools::shell_safety::CommandLine;
use coder_protocol::{PermissionRule, PolicyDecision};

/// What the model is told when a rule the person recorded denies a call.
const ALWAYS_DENIED: &str = "The user always denies this in this project (a rule they recorded; /permissions lists it); the call was not run.";

/// The session's permission state.
pub(crate) struct Permissions {
    pub preset: Mutex<Preset>,
    /// The configured rules, replaced whole when the configuration is read again.
    rules: Mutex<std::sync::Arc<PermissionRules>>,
    /// Asks are approved without a person (`autoApproveAsk`, `approval.interactive=false`).
    pub auto_approve: bool,
    /// Open requests, by id.
    pending: Mutex<HashMap<String, Open>>,
    /// Tools other than `bash` a person allowed for the rest of the session, each with the
    /// folder it covers (`None`: the whole tool).
    always: Mutex<Vec<(String, Option<String>)>>,
    /// The `bash` commands a person allowed for the rest of the session, by name and
    /// subcommand (`cargo test`); see [`CommandLine::covered_by`].
    always_commands: Mutex<Vec<String>>,
    /// The project's rules that last, when the person has a state file to keep them in;
    /// "always" then records there, else it lasts for the session.
    lasting: Option<LastingRules>,
}

/// An open request: where the answer goes, the options the request offered, and whether a
/// change of mode or preset decides it again (not a call only a person may allow, nor a
/// plan).
struct Open {
    reply: oneshot::Sender<Reply>,
    options: Vec<PermissionOption>,
    redecidable: bool,
    conversation: ConversationId,
    /// A question's request: its answer is the option chosen, kept as it is.
    question: bool,
}

/// What a person is asked about.
pub(crate) struct Request<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    /// What the call does, and the paths it reaches (the tool's own answer).
    pub kind: ToolKind,
    pub locations: Vec<ToolLocation>,
    /// The whole command line the call runs, for a tool that runs one.
    pub command: Option<String>,
    /// The plan a call that leaves plan mode puts to the person.
    pub plan: Option<String>,
    pub input: &'a Value,
    pub summary: &'a str,
    /// Why the person is asked.
    pub reason: &'a str,
    /// What the call would change, computed without changing it (a unified diff).
    pub diff: Option<String>,
    /// For a call on files, the folder under the workspace all its paths are in (empty for
    /// the top): "always" covers the tool's calls on files under it.
    pub folder: Option<String>,
    /// Each file it would change, its text now and after.
    pub changes: Vec<coder_protocol::FileDiff>,
    /// Only an explicit answer may allow it: no "allow always".
    pub human_required: bool,
    /// What the session does with it when it approves without a person.
    pub unattended: Unattended,
    /// For `bash`, the simple commands of the line.
    pub line: Option<&'a CommandLine>,
}

/// A request's title: the call's ([`crate::tools::title`]).
fn title_of(request: &Request<'_>) -> String {
    crate::tools::title(
        request.kind,
        request.tool,
        request.command.as_deref(),
        &request.locations,
    )
}

/// The folder under `workspace` all of a call's `locations` are in, relative, with `/`
/// between its parts (empty for the top): what "always" covers for a tool on files. `None`
/// for a call on no files or on one outside the workspace.
pub(crate) fn folder_of(locations: &[ToolLocation], workspace: &std::path::Path) -> Option<String> {
    let mut common: Option<Vec<String>> = None;
    for location in locations {
        let relative = std::path::Path::new(&location.path)
            .strip_prefix(workspace)
            .ok()?;
        let folder: Vec<String> = relative
            .parent()
            .into_iter()
            .flat_map(|parent| parent.components())
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        common = Some(match common {
            None => folder,
            Some(common) => common
                .into_iter()
                .zip(folder)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common.map(|parts| parts.join("/"))
}

/// What an "allow always" on `line` would remember: each remembered key in backquotes
/// (`` `cargo test` ``, line breaks shown as `\n`), or `None` when nothing would be.
fn always_covers(line: &CommandLine) -> Option<String> {
    let keys: Vec<String> = line
        .keys()
        .map(|key| format!("`{}`", key.replace('\n', "\\n")))
        .collect();
    if keys.is_empty() {
        return None;
    }
    Some(keys.join(", "))
}

/// What an "allow always" on this call would allow, or `None` when none is offered: a
/// call only a person may allow, a command line with nothing a rule could name.
fn always_offered(request: &Request<'_>) -> Option<String> {
    if request.human_required {
        return None;
    }
    match (request.line, request.folder.as_deref()) {
        (Some(line), _) => always_covers(line),
        (None, Some("")) => Some(format!("`{}` on any file", request.tool)),
        (None, Some(folder)) => Some(format!("`{}` on files under `{folder}/`", request.tool)),
        (None, None) => Some(format!("every `{}` call", request.tool)),
    }
}

/// What ends an open request: a person's decision, or the session withdrawing it with a
/// reason the model reads (see [`Permissions::withdraw_all`]).
enum Reply {
    Person(PermissionDecision),
    Withdrawn(String),
    /// The mode or preset changed: the call is to be decided again.
    Redecide,
}

/// What the model reads for a call whose request was open when the session ended.
pub(crate) const SESSION_ENDED: &str =
    "The session ended before anyone answered this permission request; the call was not run.";

/// What the model reads for a call whose request lost its asker.
const UNANSWERED: &str =
    "The permission request went unanswered (its asker went away); the call was not run.";

/// What the model reads for a call a person refused (SemaCore's `refuse`): the task ends.
const REFUSED: &str = "The user refused this call; it was not run, and the task stops here. \
                       Wait for the user to say how to go on.";

/// How a request ended.
pub(crate) enum Answer {
    Allowed,
    Denied(String),
    /// A person refused it and the task is to end (seed 001, checkpoint 4's `refuse`): the
    /// message is the call's result.
    Refused(String),
    /// The task was interrupted while waiting.
    Cancelled,
    /// The mode or preset changed while the request waited: the caller decides the call
    /// again, with the mode and preset in force now (it may be allowed, denied, or asked
    /// about anew).
    Redecide,
}

/// What a door is told when a request it shows ends without its answer.
const REDECIDED: &str = "the mode or permission preset changed; the call is decided again";
const INTERRUPTED: &str = "the task was interrupted";
const NOBODY: &str = "nobody can answer it now";

/// How the person answered an `exit_plan_mode` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PlanAnswer {
    StartEditing,
    /// The session approves without a person: the plan is approved as "start editing".
    StartEditingUnattended,
    ClearContextAndStart,
    /// Plan mode stays on; the person's feedback, if any.
    KeepPlanning(Option<String>),
    /// Plan mode stays on, and the task is to end (SemaCore's `refuse`).
    Refused,
    /// Nobody could answer (no person in this session, the asker went away, the session
    /// ended): the reason.
    Unanswered(String),
    /// The task was interrupted while waiting.
    Cancelled,
}

/// What became of a question put to a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QuestionAnswer {
    /// The choice at this place (from 0) of the question's.
    Choice(usize),
    /// An answer in the person's own words.
    Own(String),
    /// The person chose not to answer.
    NoAnswer,
    /// Nobody could answer: the reason.
    Unanswered(String),
    /// The task was interrupted while waiting.
    Cancelled,
}

/// What the model reads for a question in a session that approves without a person.
const NOBODY_TO_ASK: &str = "This session has no person to answer questions.";

/// The wire name of a decision, for a message.
fn decision_name(decision: &PermissionDecision) -> &'static str {
    match decision {
        PermissionDecision::AllowOnce => "allow_once",
        PermissionDecision::AllowAlways => "allow_always",
        PermissionDecision::Deny { .. } => "deny",
        PermissionDecision::RejectAlways { .. } => "reject_always",
        PermissionDecision::Refuse => "refuse",
        PermissionDecision::StartEditing => "start_editing",
        PermissionDecision::ClearContextAndStart => "clear_context_and_start",
        PermissionDecision::KeepPlanning { .. } => "keep_planning",
        PermissionDecision::Option { .. } => "option",
    }
}

impl Permissions {
    pub fn new(
        preset: Preset,
        rules: PermissionRules,
        auto_approve: bool,
        lasting: Option<LastingRules>,
    ) -> Self {
        Self {
            lasting,
            preset: Mutex::new(preset),
            rules: Mutex::new(std::sync::Arc::new(rules)),
            auto_approve,
            pending: Mutex::new(HashMap::new()),
            always: Mutex::new(Vec::new()),
            always_commands: Mutex::new(Vec::new()),
        }
    }

    pub fn preset(&self) -> Preset {
        *lock(&self.preset)
    }

    /// The configured rules in force.
    pub fn rules(&self) -> std::sync::Arc<PermissionRules> {
        lock(&self.rules).clone()
    }

    /// Puts `rules` in force from the next permission check; waiting requests are decided
    /// again.
    pub fn set_rules(&self, rules: PermissionRules) {
        *lock(&self.rules) = std::sync::Arc::new(rules);
        self.redecide(None);
    }

    /// Whether an earlier "allow always" covers the call. For `bash`, every simple command
    /// of the line must be read-only or one a person allowed always: allowing `cargo test`
    /// does not allow `cargo test && python3 -c ...`.
    fn always_allowed(&self, tool: &str, line: Option<&CommandLine>, folder: Option<&str>) -> bool {
        let lasting = self.lasting.as_ref();
        match line {
            Some(line) => {
                let mut keys = lock(&self.always_commands).clone();
                keys.extend(lasting.map_or_else(Vec::new, |rules| {
                    rules.commands(tool, PolicyDecision::Allow)
                }));
                line.covered_by(&keys)
            }
            None => {
                lock(&self.always).iter().any(|(allowed, ruled)| {
                    allowed == tool && super::lasting::covers_folder(ruled.as_deref(), folder)
                }) || lasting
                    .is_some_and(|rules| rules.covers_tool(tool, folder, PolicyDecision::Allow))
            }
        }
    }

    /// Whether a rule the person recorded with "always deny" covers the call: for `bash`,
    /// any simple command of the line that a rule names.
    fn always_denied(&self, tool: &str, line: Option<&CommandLine>, folder: Option<&str>) -> bool {
        let Some(rules) = &self.lasting else {
            return false;
        };
        match line {
            Some(line) => {
                let denied = rules.commands(tool, PolicyDecision::Deny);
                line.keys().any(|key| denied.contains(key))
            }
            None => rules.covers_tool(tool, folder, PolicyDecision::Deny),
        }
    }

    /// Why a call the policy allows is still not run: a rule the person recorded with
    /// "always deny" covers it. It holds in every mode and preset, yolo included, as it
    /// holds over approval without a person.
    pub fn recorded_denial(
        &self,
        tool: &str,
        line: Option<&CommandLine>,
        folder: Option<&str>,
    ) -> Option<String> {
        self.always_denied(tool, line, folder)
            .then(|| ALWAYS_DENIED.to_owned())
    }

    /// The project's recorded rules (none without a state file).
    pub fn lasting_rules(&self) -> Vec<PermissionRule> {
        self.lasting
            .as_ref()
            .map(LastingRules::list)
            .unwrap_or_default()
    }

    /// Removes the project's recorded rule `id`; whether there was one.
    pub fn remove_lasting_rule(&self, id: &str) -> Result<bool, String> {
        match &self.lasting {
            Some(rules) => rules.remove(id),
            None => Ok(false),
        }
    }

    /// Records "always" for the call as a rule of the project, with `decision`; a warning
    /// for the task when the file cannot be written (the session still remembers an allow).
    fn record(
        &self,
        request: &Request<'_>,
        covers: &str,
        decision: PolicyDecision,
    ) -> Option<String> {
        let rules = self.lasting.as_ref()?;
        let (tool, line) = (request.tool, request.line);
        let shapes: Vec<Option<String>> = match line {
            Some(line) => line.keys().cloned().map(Some).collect(),
            None => vec![None],
        };
        for shape in shapes {
            let (covers, folder) = match &shape {
                Some(command) => (
                    format!("`{}` in this project", command.replace('\n', "\\n")),
                    None,
                ),
                None => (
                    format!("{covers} in this project"),
                    request.folder.as_deref(),
                ),
            };
            if let Err(problem) = rules.add(tool, shape.as_deref(), folder, decision, &covers) {
                return Some(format!("the rule could not be recorded: {problem}"));
            }
        }
        None
    }

    /// Remembers an "allow always": the tool, or for `bash` each simple command of the line
    /// that needed approval (a person saw all of them).
    fn remember(&self, tool: &str, line: Option<&CommandLine>, folder: Option<&str>) {
        match line {
            Some(line) => {
                let mut commands = lock(&self.always_commands);
                for key in line.keys() {
                    if !commands.contains(key) {
                        commands.push(key.clone());
                    }
                }
            }
            None => lock(&self.always).push((tool.to_owned(), folder.map(str::to_owned))),
        }
    }

    /// Asks for permission for a call the policy said `ask` about, unless an earlier
    /// "allow always" covers it. A session that approves without a person answers itself,
    /// as the request's [`Unattended`] says.
    pub async fn ask(
        &self,
        request: Request<'_>,
        events: &TaskEvents,
        cancel: &CancellationToken,
    ) -> Answer {
        let (tool, summary, human_required, line) = (
            request.tool,
            request.summary,
            request.human_required,
            request.line,
        );
        let folder = request.folder.as_deref();
        // A person's "always deny" holds over approval without a person too.
        if self.always_denied(tool, line, folder) {
            return Answer::Denied(ALWAYS_DENIED.to_owned());
        }
        if self.auto_approve {
            return match request.unattended {
                Unattended::Approve => Answer::Allowed,
                Unattended::Refuse(unconfined) => Answer::Denied(unconfined.message(summary)),
            };
        }
        if !human_required && self.always_allowed(tool, line, folder) {
            return Answer::Allowed;
        }
        let always = always_offered(&request);
        let offers_always = always.is_some();
        let scope = match self.lasting {
            Some(_) => Scope::Project,
            None => Scope::Session,
        };
        let options = super::options::for_call(always.clone(), scope);
        let always = always.unwrap_or_default();
        let answer = match self
            .ask_person(&request, summary.to_owned(), options, None, events, cancel)
            .await
        {
            Some(answer) => answer,
            None => return Answer::Cancelled,
        };
        let answer = match answer {
            Some(Reply::Withdrawn(reason)) => return Answer::Denied(reason),
            Some(Reply::Redecide) => return Answer::Redecide,
            Some(Reply::Person(decision)) => Some(decision),
            None => None,
        };
        match answer {
            Some(PermissionDecision::AllowOnce) => Answer::Allowed,
            Some(PermissionDecision::AllowAlways) if offers_always => {
                self.remember(tool, line, folder);
                if let Some(problem) = self.record(&request, &always, PolicyDecision::Allow) {
                    events.warning(problem);
                }
                Answer::Allowed
            }
            Some(PermissionDecision::RejectAlways { message }) => {
                if offers_always
                    && let Some(problem) = self.record(&request, &always, PolicyDecision::Deny)
                {
                    events.warning(problem);
                }
                Answer::Denied(match message {
                    Some(message) => format!(
                        "The user denied this call, and calls like it from now on: {message}"
                    ),
                    None => "The user denied this call, and calls like it from now on.".to_owned(),
                })
            }
            // A client that names decisions rather than options: once.
            Some(PermissionDecision::AllowAlways) => Answer::Allowed,
            Some(PermissionDecision::Refuse) => Answer::Refused(REFUSED.to_owned()),
            Some(PermissionDecision::Deny { message }) => Answer::Denied(match message {
                Some(message) => format!("The user denied this call: {message}"),
                None => "The user denied this call.".to_owned(),
            }),
            Some(
                decision @ (PermissionDecision::StartEditing
                | PermissionDecision::ClearContextAndStart
                | PermissionDecision::KeepPlanning { .. }
                | PermissionDecision::Option { .. }),
            ) => Answer::Denied(format!(
                "The answer to the permission request ({}) answers only a plan; the call was denied.",
                decision_name(&decision)
            )),
            None => Answer::Denied(UNANSWERED.to_owned()),
        }
    }

    /// Puts the plan of an `exit_plan_mode` call to a person, with the plan's options
    /// (`allow_always` is not an answer to a plan). A session that approves without a
    /// person approves it as "start editing" (seed 004 section 5).
    pub async fn ask_plan_exit(
        &self,
        request: Request<'_>,
        events: &TaskEvents,
        cancel: &CancellationToken,
    ) -> PlanAnswer {
        if self.auto_approve {
            return PlanAnswer::StartEditingUnattended;
        }
        let options = super::options::for_plan();
        let summary = request.summary.to_owned();
        let answer = match self
            .ask_person(&request, summary, options, None, events, cancel)
            .await
        {
            Some(answer) => answer,
            None => return PlanAnswer::Cancelled,
        };
        match answer {
            Some(Reply::Person(
                PermissionDecision::AllowOnce | PermissionDecision::StartEditing,
            )) => PlanAnswer::StartEditing,
            Some(Reply::Person(PermissionDecision::ClearContextAndStart)) => {
                PlanAnswer::ClearContextAndStart
            }
            Some(Reply::Person(
                PermissionDecision::Deny { message } | PermissionDecision::KeepPlanning { message },
            )) => PlanAnswer::KeepPlanning(message),
            Some(Reply::Person(PermissionDecision::Refuse)) => PlanAnswer::Refused,
            Some(Reply::Person(
                decision @ (PermissionDecision::AllowAlways
                | PermissionDecision::RejectAlways { .. }
                | PermissionDecision::Option { .. }),
            )) => PlanAnswer::KeepPlanning(Some(format!(
                "the answer was {}, which does not answer a plan; the plan was not approved",
                decision_name(&decision)
            ))),
            Some(Reply::Withdrawn(reason)) => PlanAnswer::Unanswered(reason),
            // A plan is never decided again: only a person answers it.
            Some(Reply::Redecide) | None => PlanAnswer::Unanswered(UNANSWERED.to_owned()),
        }
    }

    /// Puts one question of an `ask_user` call to a person, its choices as the options. A
    /// session that approves without a person has nobody to answer it.
    pub async fn ask_question(
        &self,
        request: Request<'_>,
        question: &coder_protocol::Question,
        events: &TaskEvents,
        cancel: &CancellationToken,
    ) -> QuestionAnswer {
        if self.auto_approve {
            return QuestionAnswer::Unanswered(NOBODY_TO_ASK.to_owned());
        }
        let options = super::options::for_question(question);
        let summary = request.summary.to_owned();
        match self
            .ask_person(
                &request,
                summary,
                options.clone(),
                Some(Box::new(question.clone())),
                events,
                cancel,
            )
            .await
        {
            None => QuestionAnswer::Cancelled,
            Some(Some(Reply::Person(decision))) => {
                super::options::question_answer(&options, decision)
            }
            Some(Some(Reply::Withdrawn(reason))) => QuestionAnswer::Unanswered(reason),
            Some(Some(Reply::Redecide) | None) => QuestionAnswer::Unanswered(UNANSWERED.to_owned()),
        }
    }

    /// Emits `permission_requested` for `request` and waits for the answer: `None` when the
    /// task was interrupted meanwhile, `Some(None)` when the asker went away.
    async fn ask_person(
        &self,
        request: &Request<'_>,
        summary: String,
        options: Vec<PermissionOption>,
        question: Option<Box<coder_protocol::Question>>,
        events: &TaskEvents,
        cancel: &CancellationToken,
    ) -> Option<Option<Reply>> {
        let request_id = Uuid::now_v7().to_string();
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(
            request_id.clone(),
            Open {
                reply: tx,
                options: options.clone(),
                redecidable: !request.human_required && request.kind != ToolKind::SwitchMode,
                conversation: events.conversation_id,
                question: question.is_some(),
            },
        );
        let input = request.input;
        events.emit(EventMsg::PermissionRequested {
            request_id: request_id.clone(),
            call_id: request.call_id.to_owned(),
            tool_name: request.tool.to_owned(),
            arguments: input.clone(),
            kind: request.kind,
            locations: request.locations.clone(),
            title: title_of(request),
            reason: request.reason.to_owned(),
            summary,
            options,
            human_required: request.human_required,
            command: request.command.clone(),
            plan: request.plan.clone(),
            changes: request.changes.clone(),
            diff: request.diff.clone(),
            question,
        });
        events.emit(EventMsg::StateChanged {
            state: EngineState::WaitingForPermission,
        });
        let answer = tokio::select! {
            // An answer given together with the task's interruption (shutdown denies open
            // requests, then interrupts) is what the model reads.
            biased;
            answer = rx => answer.ok(),
            () = cancel.cancelled() => {
                lock(&self.pending).remove(&request_id);
                events.emit(EventMsg::PermissionWithdrawn {
                    request_id,
                    reason: INTERRUPTED.to_owned(),
                });
                return None;
            }
        };
        // A request that ended without its door's answer: the door closes its prompt.
        let closed = match &answer {
            Some(Reply::Person(_)) => None,
            Some(Reply::Withdrawn(reason)) => Some(reason.clone()),
            Some(Reply::Redecide) => Some(REDECIDED.to_owned()),
            None => Some(NOBODY.to_owned()),
        };
        if let Some(reason) = closed {
            events.emit(EventMsg::PermissionWithdrawn {
                request_id: request_id.clone(),
                reason,
            });
        }
        events.emit(EventMsg::StateChanged {
            state: EngineState::Running,
        });
        Some(answer)
    }

    /// Delivers a person's answer. Returns false for an unknown or already answered id.
    pub fn respond(&self, request_id: &str, decision: PermissionDecision) -> bool {
        match lock(&self.pending).remove(request_id) {
            Some(open) => {
                let decision = if open.question {
                    decision
                } else {
                    super::options::decision_of(&open.options, decision)
                };
                open.reply.send(Reply::Person(decision)).is_ok()
            }
            None => false,
        }
    }

    /// Ends an open request with `reason`, which the model reads: nobody could answer it.
    /// Returns false for an unknown or already answered id.
    pub fn withdraw(&self, request_id: &str, reason: &str) -> bool {
        match lock(&self.pending).remove(request_id) {
            Some(open) => open.reply.send(Reply::Withdrawn(reason.to_owned())).is_ok(),
            None => false,
        }
    }

    /// Denies every open request (the asker went away).
    pub fn deny_all(&self) {
        lock(&self.pending).clear();
    }

    /// Denies every open request with `reason`, which the model reads as the call's result
    /// (the session is ending).
    pub fn withdraw_all(&self, reason: &str) {
        let open: Vec<_> = lock(&self.pending).drain().collect();
        for (_, open) in open {
            let _ = open.reply.send(Reply::Withdrawn(reason.to_owned()));
        }
    }

    /// Ends every open request a mode or preset decides (not one only a person may allow,
    /// nor a plan), of `conversation` or of every conversation, so its call is decided
    /// again with what is in force now: a change takes effect for a call already waiting,
    /// as for the next one.
    pub fn redecide(&self, conversation: Option<ConversationId>) {
        let redecided: Vec<Open> = {
            let mut pending = lock(&self.pending);
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, open)| {
                    open.redecidable && conversation.is_none_or(|id| id == open.conversation)
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| pending.remove(id)).collect()
        };
        for open in redecided {
            let _ = open.reply.send(Reply::Redecide);
        }
    }

    /// Switches the session's preset; waiting requests are decided again.
    pub fn set_preset(&self, preset: Preset) {
        *lock(&self.preset) = preset;
        self.redecide(None);
    }
}
