//! The session's task runner: turns a [`TaskPlan`] into a [`TurnContext`], runs the turn,
//! and reports how the task ended (`task_started` ... `task_complete` or `turn_aborted`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use coder_protocol::{
    AbortReason, ChatMessage, CompactTrigger, ConversationId, EventMsg, Mode, ModeChangeReason,
    ShellMode, TokenUsage,
};
use futures::future::BoxFuture;

use super::Session;
use super::driver::{TaskPlan, TaskRunner};
use crate::config::ToolCalling;
use crate::conversation::Conversation;
use crate::error::EngineError;
use crate::events::TaskEvents;
use crate::mcp::ToolChanges;
use crate::model::ActiveModel;
use crate::model::ToolSpec;
use crate::process::ToolEnv;
use crate::prompt::rules::RuleFile;
use crate::prompt::{Environment, PatchInstructions, PromptInputs, PromptShape, system_prompt};
use crate::reminders::plan_handoff;
use crate::sync::lock;
use crate::tokens::{ContextSize, Encoding};
use crate::tool_prompt::PromptedTools;
use crate::tools::{
    APPLY_PATCH, ASK_USER, BASH, EXIT_PLAN_MODE, TODO_WRITE, ToolContext, ToolRegistry,
};
use crate::turn::compact::{CompactError, Compaction, Compactor};
use crate::turn::{
    ContextBuilder, INTERRUPT_MESSAGE, Rebuilt, Recorder, TaskControl, TurnContext, TurnModel,
    TurnOutcome, TurnTools, UsageNow, Verifier, interrupted, run_turn,
};

/// What a task of a conversation is told and offered ([`Session::task_prompt`]).
struct TaskPrompt {
    system: String,
    /// Tools not offered.
    hidden: Vec<String>,
    /// `bash` applies patches for the `apply_patch` the conversation left out.
    patch_through_shell: bool,
}

/// The driver's [`TaskRunner`] for a real session.
pub(super) struct SessionRunner {
    session: Weak<Session>,
}

impl SessionRunner {
    pub fn new(session: Weak<Session>) -> Self {
        Self { session }
    }
}

impl TaskRunner for SessionRunner {
    fn run(&self, plan: TaskPlan, control: TaskControl) -> BoxFuture<'static, TurnOutcome> {
        let session = self.session.upgrade();
        Box::pin(async move {
            match session {
                Some(session) => session.run_task(plan, control).await,
                // The engine was dropped: nobody is left to see the task.
                None => TurnOutcome::Aborted(AbortReason::Interrupted),
            }
        })
    }

    fn turn_ended(&self) -> BoxFuture<'static, ()> {
        let session = self.session.upgrade();
        Box::pin(async move {
            if let Some(session) = session {
                // The turn is over: what it changed is read for `/undo` (a cost in
                // proportion to that), before the person (or the next task) can change
                // anything.
                session.services.checkpoints.end_turn().await;
            }
        })
    }

    fn save(&self, conversation: ConversationId, idle: bool) -> BoxFuture<'static, ()> {
        let session = self.session.upgrade();
        Box::pin(async move {
            if let Some(session) = session {
                session.save_if_due(conversation, idle).await;
            }
        })
    }

    fn dropped(&self, plan: TaskPlan, why: &str) {
        if let (Some(session), Some(closure)) = (self.session.upgrade(), &plan.closure) {
            session.close_dropped(plan.conversation_id, closure, why);
        }
    }
}

/// A conversation records a turn's history as it happens, each change written to the
/// session journal before the turn goes on.
pub(super) struct Recording {
    pub conversation: Arc<Mutex<Conversation>>,
    pub session: Arc<Session>,
}

impl Recording {
    fn change<R>(&self, change: impl FnOnce(&mut Conversation) -> R) -> R {
        self.session.change(&self.conversation, change)
    }
}

impl Recorder for Recording {
    fn record(&self, messages: Vec<ChatMessage>) {
        self.change(|conversation| conversation.record(messages));
    }

    fn history(&self) -> Arc<Vec<ChatMessage>> {
        Arc::clone(&lock(&self.conversation).history)
    }

    fn append_to_last(&self, text: &str) {
        self.change(|conversation| conversation.append_to_last(text));
    }

    fn mode(&self) -> Mode {
        lock(&self.conversation).mode
    }

    fn add_usage(&self, usage: &TokenUsage, size: ContextSize) -> UsageNow {
        self.change(|conversation| {
            conversation.total_usage.add(usage);
            conversation.size = size;
            usage_now(conversation)
        })
    }

    fn usage(&self) -> UsageNow {
        usage_now(&lock(&self.conversation))
    }

    fn compacted(
        &self,
        compaction: Compaction,
        trigger: CompactTrigger,
        size: ContextSize,
    ) -> (usize, UsageNow) {
        self.change(|conversation| {
            if let Some(usage) = &compaction.usage {
                conversation.total_usage.add(usage);
            }
            // The summary, then the turns kept whole (whose points stay).
            let kept = compaction.history.len().saturating_sub(1);
            conversation.compacted_to(compaction.history.clone(), kept);
            conversation.size = size;
            let index = conversation.archive.len();
            conversation
                .archive
                .push(crate::turn::compact::segment(index, compaction, trigger));
            (index, usage_now(conversation))
        })
    }
}

fn usage_now(conversation: &Conversation) -> UsageNow {
    UsageNow {
        total: conversation.total_usage,
        context_tokens: conversation.size.tokens,
        reported: !conversation.worker,
    }
}

impl Session {
    /// Runs one task to its end, emitting its events.
    async fn run_task(self: Arc<Self>, plan: TaskPlan, control: TaskControl) -> TurnOutcome {
        let events = TaskEvents {
            hub: self.services.hub.clone(),
            conversation_id: plan.conversation_id,
            task_id: plan.task_id,
        };
        let conversation_id = plan.conversation_id;
        let outcome = self.start_task(plan, control, &events).await;
        if matches!(
            outcome,
            TurnOutcome::Completed { .. } | TurnOutcome::Failed { .. }
        ) && let Ok(conversation) = self.conversation(conversation_id)
        {
            // Seed 000: a conversation is active when it records history and when a task
            // of it completes.
            lock(&conversation).last_active_at = std::time::SystemTime::now();
        }
        match &outcome {
            TurnOutcome::Completed {
                last_agent_message,
                step_limit,
            } => events.emit(EventMsg::TaskComplete {
                last_agent_message: last_agent_message.clone(),
                step_limit: *step_limit,
                error: None,
            }),
            TurnOutcome::Failed {
                last_agent_message,
                error,
            } => events.emit(EventMsg::TaskComplete {
                last_agent_message: last_agent_message.clone(),
                step_limit: None,
                error: Some(error.kind()),
            }),
            TurnOutcome::Aborted(reason) => events.emit(EventMsg::TurnAborted {
                reason: *reason,
                continuation: None,
                replaced_by: None,
            }),
            TurnOutcome::HandedOver(handoff) => events.emit(EventMsg::TurnAborted {
                reason: AbortReason::Replaced,
                continuation: Some(handoff.continuation),
                replaced_by: Some(coder_protocol::Replacement {
                    tool_name: handoff.closure.tool_name.clone(),
                    conversation_id: handoff.target,
                }),
            }),
        }
        outcome
    }

    /// Reports the task's start, then prepares and runs its turn.
    async fn start_task(
        self: &Arc<Self>,
        plan: TaskPlan,
        control: TaskControl,
        events: &TaskEvents,
    ) -> TurnOutcome {
        let input = crate::conversation::input_text(&plan.input);
        if let Some(command) = &plan.shell {
            // A person's `!command`: no model.
            events.emit(EventMsg::TaskStarted {
                model: String::new(),
                input: Some(format!("!{command}")),
            });
            return match self.conversation(plan.conversation_id) {
                Ok(conversation) => {
                    self.shell_now(&conversation, command, control, events)
                        .await
                }
                Err(err) => failed(events, err),
            };
        }
        // The task keeps the model it starts with, whatever is switched meanwhile.
        let active = match self.require_model() {
            Ok(active) => active,
            Err(err) => {
                events.emit(EventMsg::TaskStarted {
                    model: String::new(),
                    input,
                });
                return failed(events, err);
            }
        };
        let conversation = self.conversation(plan.conversation_id);
        let model = plan
            .model_override
            .clone()
            .or_else(|| {
                conversation
                    .as_ref()
                    .ok()
                    .and_then(|conversation| lock(conversation).context.model.clone())
            })
            .unwrap_or_else(|| active.settings.model.clone());
        events.emit(EventMsg::TaskStarted {
            model: model.clone(),
            input,
        });
        let (sandbox_warning, config_warnings) = {
            let mut state = self.state();
            (
                state.sandbox_warning.take(),
                std::mem::take(&mut state.config_warnings),
            )
        };
        for warning in sandbox_warning.into_iter().chain(config_warnings) {
            events.warning(warning);
        }
        match conversation {
            Ok(conversation) if plan.compact.is_some() => {
                let focus = plan.compact.and_then(|compact| compact.focus);
                self.compact_now(&conversation, control, events, model, &active, focus)
                    .await
            }
            Ok(conversation) => {
                self.prepare_and_run(&conversation, plan, control, events, model, &active)
                    .await
            }
            Err(err) => failed(events, err),
        }
    }

    /// Records what the plan brings (the closed call, the input), builds the turn's context
    /// and runs it.
    async fn prepare_and_run(
        self: &Arc<Self>,
        conversation: &Arc<Mutex<Conversation>>,
        plan: TaskPlan,
        control: TaskControl,
        events: &TaskEvents,
        model: String,
        active: &Arc<ActiveModel>,
    ) -> TurnOutcome {
        let config = self.config();
        let config = &*config;
        let (limits, guessed) = active.settings.limits_of(&model);
        if guessed && self.state().guessed_windows.insert(model.clone()) {
            events.warning(format!(
                "the context window of model `{model}` is not known: coder assumes {} tokens \
                 and replies of up to {} tokens; set `contextWindow` (and `maxOutputTokens`) \
                 in .coder/config.json to its real limits",
                limits.context_window, limits.max_output_tokens
            ));
        }
        let context_window = Some(limits.context_window);
        // A continuation first answers the tool call that handed the turn over.
        if let Some(closure) = &plan.closure {
            let output = self.closure_payload(closure);
            events.emit(EventMsg::ToolCallCompleted {
                call_id: closure.call_id.clone(),
                tool_name: closure.tool_name.clone(),
                summary: self.closure_summary(closure),
                output: output.clone(),
                duration_ms: 0,
                diff: None,
            });
            self.change(conversation, |conversation| {
                conversation.record([ChatMessage::tool_result(
                    &closure.call_id,
                    &closure.tool_name,
                    output,
                )])
            });
        }
        // User instructions changed since the last task come before the input, then what
        // the person's commands changed meanwhile.
        let pending = {
            let conversation = lock(conversation);
            conversation.pending_instructions.is_some() || !conversation.pending_notes.is_empty()
        };
        if pending {
            self.change(conversation, |conversation| {
                if let Some(text) = conversation.pending_instructions.take() {
                    conversation.record([ChatMessage::user(text)]);
                }
                let notes = std::mem::take(&mut conversation.pending_notes);
                conversation.record(notes);
            });
        }
        // A person's input is a point of the conversation and starts a turn for `/undo`
        // and rewinds, in the background; only tools that may change files wait for it.
        // What the model sends another conversation, a continuation and a handoff's
        // target belong to the turn that led to them.
        let point = (plan.depth == 0 && plan.closure.is_none() && !plan.input.is_empty())
            .then(|| lock(conversation).inputs_recorded);
        let checkpoint = match point {
            Some(point) => self
                .services
                .checkpoints
                .begin_turn(crate::undo::TurnOwner {
                    conversation: plan.conversation_id,
                    point,
                }),
            None => self.services.checkpoints.within_turn(),
        };
        let files = self.workspace_files();
        let rules = &files.rules;
        for warning in &rules.warnings {
            events.warning(warning.clone());
        }
        let base_override = plan.base_instructions_override.clone();
        let tools_in_prompt = active.settings.tool_calling_of(&model) == ToolCalling::Prompt;
        let TaskPrompt {
            system,
            hidden,
            patch_through_shell,
        } = self.task_prompt(
            &lock(conversation),
            base_override.as_deref(),
            &rules.files,
            tools_in_prompt,
        );
        let rule_paths: Vec<PathBuf> = rules.files.iter().map(|rule| rule.path.clone()).collect();
        self.record_input(
            conversation,
            &plan.input,
            point.is_some(),
            self.todo_offered(&hidden),
            rule_paths,
            events,
        )
        .await;
        let Some((mcp_view, mcp_changes)) = self.mcp_view(conversation, &control, events).await
        else {
            let recording = Recording {
                conversation: conversation.clone(),
                session: self.clone(),
            };
            recording.record(vec![ChatMessage::user(INTERRUPT_MESSAGE)]);
            return interrupted(&recording, events, context_window);
        };
        let offered = self.offered_tools(conversation, &system, &hidden, &mcp_view);
        let prompt_cache_key = config
            .prompt_cache_key
            .then(|| prompt_cache_key(&system, &offered, &model));
        let (prompted, _) = self.announce_tools(
            conversation,
            &offered,
            mcp_changes.unwrap_or_default(),
            tools_in_prompt,
        );
        let (todos, seen, wire, size, worker) = {
            let conv = lock(conversation);
            (
                conv.todos.clone(),
                conv.seen.clone(),
                conv.wire.clone(),
                conv.size,
                conv.worker,
            )
        };
        let base = ToolContext {
            workspace: config.workspace.clone(),
            conversation_id: plan.conversation_id,
            call_id: String::new(),
            cancel: control.cancel.clone(),
            sandbox: self.services.sandbox.clone(),
            env: Arc::new(
                ToolEnv::for_config(config).and_key(active.settings.provider.api_key.as_ref()),
            ),
            todos,
            documents: self.state().documents.clone(),
            approved_diff: None,
            seen,
            changes: Some(self.services.checkpoints.clone()),
            live_output: None,
        };
        let model_name = model.clone();
        let mcp_view_of_task = mcp_view.clone();
        // What the person asked decides whether `default` mode verifies, and with what.
        let verifier = (!worker).then(|| {
            let input = crate::conversation::input_text(&plan.input).unwrap_or_default();
            Verifier::new(config.workflow.clone(), crate::verify::requested(&input))
        });
        let ctx = TurnContext {
            model: TurnModel {
                encoding: Encoding::of(&model),
                name: model,
                client: active.clone(),
                context_window,
                max_output_tokens: limits.max_output_tokens,
                prompt_cache_key,
                compact_threshold: (!worker).then_some(config.compact_threshold),
            },
            system,
            offered,
            wire,
            size,
            prompted,
            max_steps: config.max_steps,
            tools: TurnTools {
                registry: self.services.tools.clone(),
                mcp: mcp_view.clone(),
                permissions: self.services.permissions.clone(),
                hidden,
                patch_through_shell,
                home: self.services.home.clone(),
                base,
                checkpoint: checkpoint.clone(),
            },
            control,
            events: events.clone(),
            recorder: Arc::new(Recording {
                conversation: conversation.clone(),
                session: self.clone(),
            }),
            conversations: self.clone(),
            context: Arc::new(TaskRebuilder {
                session: self.clone(),
                conversation: conversation.clone(),
                base_override,
                rules: rules.files.clone(),
                model: model_name,
                mcp: mcp_view_of_task,
                tools_in_prompt,
            }),
            verifier,
        };
        run_turn(ctx).await
    }

    /// A compaction task: summarises the conversation's older history now (`compacted`,
    /// `token_count`), keeping or stressing `focus` when a person gave it. A history with
    /// nothing older than its last turn is left as it is, with a `warning`.
    async fn compact_now(
        self: &Arc<Self>,
        conversation: &Arc<Mutex<Conversation>>,
        control: TaskControl,
        events: &TaskEvents,
        model: String,
        active: &Arc<ActiveModel>,
        focus: Option<String>,
    ) -> TurnOutcome {
        let (limits, _) = active.settings.limits_of(&model);
        let turn_model = TurnModel {
            encoding: Encoding::of(&model),
            name: model,
            client: active.clone(),
            context_window: Some(limits.context_window),
            max_output_tokens: limits.max_output_tokens,
            prompt_cache_key: None,
            compact_threshold: None,
        };
        let (history, mut size, shape) = {
            let conv = lock(conversation);
            (conv.history.clone(), conv.size, conv.prompt.clone())
        };
        let (system, tools) = shape
            .as_deref()
            .map_or((String::new(), Vec::new()), |shape| {
                (shape.system.clone(), shape.tools.clone())
            });
        let before = size
            .count(turn_model.encoding, &system, &tools, &history)
            .await;
        let recording = Recording {
            conversation: conversation.clone(),
            session: self.clone(),
        };
        let compactor = Compactor {
            model: &turn_model,
            recorder: &recording,
            events,
            cancel: &control.cancel,
            focus: focus.as_deref(),
        };
        let compacted = compactor
            .run(&history, &mut size, before, CompactTrigger::Manual)
            .await;
        match compacted {
            Ok(()) => {}
            Err(CompactError::Nothing(why)) => events.warning(why),
            Err(CompactError::Cancelled) => {
                return TurnOutcome::Aborted(AbortReason::Interrupted);
            }
            Err(CompactError::Failed(error)) => return failed(events, error),
        }
        TurnOutcome::Completed {
            last_agent_message: None,
            step_limit: None,
        }
    }

    /// The system prompt of a task of `conv` and the tools hidden from it: the one place
    /// that decides both, at a task's start and when an approved plan rebuilds them.
    /// `prompted`: the model reads its tools in the prompt (seed 002).
    fn task_prompt(
        &self,
        conv: &Conversation,
        base_override: Option<&str>,
        rules: &[RuleFile],
        prompted: bool,
    ) -> TaskPrompt {
        let config = self.config();
        let base = base_override.or(conv.context.base_instructions.as_deref());
        let mut hidden: Vec<String> = config.disabled_tools.clone();
        let tools = &conv.context.tools;
        if !tools.include_apply_patch_tool {
            hidden.push(APPLY_PATCH.to_owned());
        }
        if tools.shell(self.shell_ceiling()) == ShellMode::Off {
            hidden.push(BASH.to_owned());
        }
        // Plan mode plans in the plan it hands to exit_plan_mode, not in a todo list; the
        // todo list comes back with the mode the plan leads to.
        if !tools.include_plan_tool || conv.mode == Mode::Plan {
            hidden.push(TODO_WRITE.to_owned());
        }
        if conv.mode != Mode::Plan {
            hidden.push(EXIT_PLAN_MODE.to_owned());
        }
        // Questions need a person to answer them.
        if config.auto_approve {
            hidden.push(ASK_USER.to_owned());
        }
        let offered = |tool: &str| !hidden.iter().any(|name| name == tool);
        // `bash` applies the patches of a conversation that left `apply_patch` out, unless
        // the session disabled the tool: policies only narrow.
        let patch_through_shell = !offered(APPLY_PATCH)
            && offered(BASH)
            && !config.disabled_tools.iter().any(|name| name == APPLY_PATCH);
        // Seed 003: the apply_patch instructions follow the built-in prompt only (no
        // override, no base instructions of the conversation), when the tools lack
        // `apply_patch` or the model needs them (its tools in the prompt, one line each).
        let patch = match () {
            _ if base.is_some() => None,
            _ if patch_through_shell => Some(PatchInstructions::ThroughShell),
            _ if !offered(APPLY_PATCH) => Some(PatchInstructions::NotAvailable),
            _ if prompted => Some(PatchInstructions::ThroughTool),
            _ => None,
        };
        let environment = Environment::current(&config.workspace, config.started_in.as_deref());
        // Skills are named only to a conversation that may load them.
        let skills = offered(crate::tools::SKILL)
            .then(|| crate::skills::skills_section(&self.workspace_files().skills))
            .flatten();
        let system = system_prompt(&PromptInputs {
            base,
            patch,
            environment: &environment,
            mode: conv.mode,
            rules,
            skills: skills.as_deref(),
        });
        TaskPrompt {
            system,
            hidden,
            patch_through_shell,
        }
    }

    /// Whether `todo_write` is offered when `hidden` is hidden.
    fn todo_offered(&self, hidden: &[String]) -> bool {
        !hidden.iter().any(|name| name == TODO_WRITE)
            && self.services.tools.get(TODO_WRITE).is_some()
    }

    /// The tools offered (built-in and MCP, sorted by name), kept as the conversation's
    /// prompt shape for the session snapshot.
    fn offered_tools(
        &self,
        conversation: &Mutex<Conversation>,
        system: &str,
        hidden: &[String],
        mcp_view: &ToolRegistry,
    ) -> Vec<ToolSpec> {
        let offered = self.offered(hidden, mcp_view);
        lock(conversation).prompt = Some(self.services.prompt_shapes.share(system, &offered));
        offered
    }

    /// The tools offered when `hidden` are hidden: built-in and MCP, sorted by name.
    fn offered(&self, hidden: &[String], mcp_view: &ToolRegistry) -> Vec<ToolSpec> {
        let hidden_names: Vec<&str> = hidden.iter().map(String::as_str).collect();
        let mut offered = self.services.tools.offered(&hidden_names);
        offered.extend(mcp_view.specs().iter().cloned());
        offered.sort_by(|a, b| a.name.cmp(&b.name));
        offered
    }

    /// The system prompt and tools the next task of `conv` would send besides its history,
    /// as far as they are known without waiting (the MCP servers' tools as they are now),
    /// with `active` the session's model: what the snapshot holds for a conversation that
    /// has sent nothing yet. Changes nothing.
    pub(super) fn next_prompt(
        &self,
        conv: &Conversation,
        active: Option<&ActiveModel>,
    ) -> Arc<PromptShape> {
        let prompted = active.is_some_and(|active| {
            let model = conv
                .context
                .model
                .as_deref()
                .unwrap_or(&active.settings.model);
            active.settings.tool_calling_of(model) == ToolCalling::Prompt
        });
        let files = self.workspace_files();
        let TaskPrompt { system, hidden, .. } =
            self.task_prompt(conv, None, &files.rules.files, prompted);
        let offered = self.offered(&hidden, &conv.context.mcp_view.tools());
        self.services.prompt_shapes.share(&system, &offered)
    }

    /// The conversation's MCP tools for a task, once the servers have settled: its view,
    /// built again when the servers' tools changed since (its new problems become
    /// warnings), and how the tools differ from those its model was last offered. `None`
    /// when the task was interrupted while waiting for the servers.
    async fn mcp_view(
        &self,
        conversation: &Mutex<Conversation>,
        control: &TaskControl,
        events: &TaskEvents,
    ) -> Option<(Arc<ToolRegistry>, Option<ToolChanges>)> {
        let mcp = &self.services.mcp;
        tokio::select! {
            () = mcp.settled() => {}
            () = control.cancel.cancelled() => return None,
        }
        let (tools, changes, problems) = {
            let mut conversation = lock(conversation);
            let view = &mut conversation.context.mcp_view;
            if !view.is_current(mcp) {
                view.rebuild(mcp);
            }
            (view.tools(), view.offer(), view.take_problems())
        };
        for problem in crate::mcp::at_most(problems) {
            events.warning(problem);
        }
        Some((tools, changes))
    }

    /// Tells the model of the tools it gained and lost (seed 002's dynamic tools: an
    /// ordinary message of the history, recorded here), when its context is built (a task's
    /// start, an approved plan's rebuild): the MCP tools that changed and, when tools are
    /// described in the prompt, every tool it was not told of yet. Returns the initial tools
    /// to describe, when they are described in the prompt (the first context's tools are
    /// the initial ones), and the announcement, if any.
    fn announce_tools(
        &self,
        conversation: &Mutex<Conversation>,
        offered: &[ToolSpec],
        mcp: ToolChanges,
        in_prompt: bool,
    ) -> (Option<Vec<ToolSpec>>, Option<ChatMessage>) {
        let ToolChanges { mut added, removed } = mcp;
        if !in_prompt && added.is_empty() && removed.is_empty() {
            return (None, None);
        }
        self.change(conversation, |conversation| {
            if in_prompt {
                for tool in PromptedTools::update(&mut conversation.prompted_tools, offered) {
                    if !added.iter().any(|known| known.name == tool.name) {
                        added.push(tool);
                    }
                }
                added.sort_by(|a, b| a.name.cmp(&b.name));
            }
            let announcement = crate::tool_prompt::announcement(&added, &removed);
            if let Some(announcement) = &announcement {
                conversation.record([announcement.clone()]);
            }
            let initial = in_prompt.then(|| {
                conversation
                    .prompted_tools
                    .as_ref()
                    .map(|known| known.initial(offered))
                    .unwrap_or_default()
            });
            (initial, announcement)
        })
    }
}

/// Rebuilds a running task's context when the person approves a plan, with the code that
/// built it when the task started ([`Session::task_prompt`], [`Session::offered_tools`]).
struct TaskRebuilder {
    session: Arc<Session>,
    conversation: Arc<Mutex<Conversation>>,
    /// The task's own base instructions, when its plan overrides the conversation's.
    base_override: Option<String>,
    /// The rules files the task started with.
    rules: Vec<RuleFile>,
    model: String,
    /// The MCP tools the task started with (its calls go to them).
    mcp: Arc<ToolRegistry>,
    /// The model reads its tools in the prompt (seed 002).
    tools_in_prompt: bool,
}

impl ContextBuilder for TaskRebuilder {
    fn rebuild(
        &self,
        reason: ModeChangeReason,
        rebuild_message: Option<&str>,
        events: &TaskEvents,
    ) -> Rebuilt {
        let session = &self.session;
        let conversation = &self.conversation;
        // A person approving a plan may always go on in `default`: a session configured in
        // plan mode leaves it there.
        let ceiling = super::looser(session.config().mode, Mode::Default);
        let (mode, previous, prompt, clamped) = {
            let mut conv = lock(conversation);
            // Never above what trusted configuration set: whatever a saved session said, the
            // person approved a plan, not a mode.
            let after = conv.mode_after_plan();
            let mode = super::narrower(after, ceiling);
            let previous = conv.switch_mode(mode);
            let prompt = session.task_prompt(
                &conv,
                self.base_override.as_deref(),
                &self.rules,
                self.tools_in_prompt,
            );
            let clamped = (after != mode).then_some(after);
            (mode, previous, prompt, clamped)
        };
        let TaskPrompt {
            system,
            hidden,
            patch_through_shell,
        } = prompt;
        if let Some(after) = clamped {
            events.warning(format!(
                "leaving plan mode for {} would be looser than the session's {}; the conversation uses {}",
                after.as_str(),
                ceiling.as_str(),
                mode.as_str()
            ));
        }
        events.emit(EventMsg::ModeChanged {
            mode,
            previous,
            reason,
        });
        let offered = session.offered_tools(conversation, &system, &hidden, &self.mcp);
        // "Clear the context and start": a new batch that opens with the plan.
        if let Some(plan) = rebuild_message {
            let rules: Vec<PathBuf> = self.rules.iter().map(|rule| rule.path.clone()).collect();
            let history = vec![plan_handoff(plan, session.todo_offered(&hidden), &rules)];
            session.change(conversation, |conversation| {
                conversation.start_batch(history);
            });
        }
        // The MCP tools are the task's own, so only what the plan's mode changed is new.
        let (prompted, _) = session.announce_tools(
            conversation,
            &offered,
            ToolChanges::default(),
            self.tools_in_prompt,
        );
        let prompt_cache_key = session
            .config()
            .prompt_cache_key
            .then(|| prompt_cache_key(&system, &offered, &self.model));
        Rebuilt {
            system,
            offered,
            hidden,
            patch_through_shell,
            prompt_cache_key,
            prompted,
            new_batch: rebuild_message.is_some(),
        }
    }
}

/// Reports an error that ends the task before its turn ran.
fn failed(events: &TaskEvents, error: EngineError) -> TurnOutcome {
    events.emit(EventMsg::Error {
        message: error.to_string(),
        kind: error.kind(),
    });
    TurnOutcome::Failed {
        error,
        last_agent_message: None,
    }
}

/// A key that stays the same while a conversation's instructions, tools and model family do,
/// so a provider can reuse its prompt cache across turns.
fn prompt_cache_key(system: &str, tools: &[crate::model::ToolSpec], model: &str) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    system.hash(&mut hasher);
    for tool in tools {
        tool.name.hash(&mut hasher);
    }
    model
        .split(['-', '.'])
        .next()
        .unwrap_or(model)
        .hash(&mut hasher);
    format!("coder-{:016x}", hasher.finish())
}
