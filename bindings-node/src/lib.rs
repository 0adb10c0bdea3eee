//! coder's engine as a Node-API addon: a thin layer over `coder-core`.
//!
//! Each export converts its arguments, calls the engine, converts the result; errors are
//! mapped in one place ([`error`]). No agent logic lives here. Events leave through one
//! forwarding task ([`events`]) as JSON batches, in `seq` order. Every engine of the process
//! runs on a few engine threads ([`runtime`]). The TypeScript SDK in `ts/` builds the public API on
//! top of [`NativeEngine`].

mod events;
mod options;
mod runtime;

use std::sync::Mutex;

use coder_core::ErrorKind;
use coder_core::{ContextChange, ConversationSpec, Engine, EngineError};
use coder_protocol::methods::{CreateParams, SetContextParams, SteerResult};
use coder_protocol::{ConversationId, InputItem, PermissionDecision, SessionId, TaskId};
use std::future::Future;

use napi::bindgen_prelude::{Function, PromiseRaw, ToNapiValue};
use napi::{Env, JsValue};

use napi_derive::napi;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::events::Forwarder;
use coder_protocol::options::{EngineOptions, ModelOptions};

/// The build's profile, written into the binary as this exact text. Packaging
/// (`scripts/check-native.mjs`) refuses a `.node` that does not contain the release text,
/// so a debug build is never published; only one of the two texts is compiled in.
#[cfg(debug_assertions)]
const BUILD_PROFILE: &str = "coder-node-build-profile=debug";
#[cfg(not(debug_assertions))]
const BUILD_PROFILE: &str = "coder-node-build-profile=release";

/// How this addon was compiled: the marker text itself, ending in `=debug`
/// (`npm run build:native`) or `=release`. Returned whole so that the optimiser keeps every
/// byte of it in the binary, where the packaging check looks for it.
#[napi]
pub fn build_profile() -> &'static str {
    BUILD_PROFILE
}

/// A JavaScript error whose `code` is the engine's [`ErrorKind::code`] (`not_found`,
/// `invalid_params`, ...), so callers branch on the code, not on the message.
type Error = napi::Error<&'static str>;
type Result<T> = std::result::Result<T, Error>;

/// Every engine error crosses into JavaScript here.
fn error(err: EngineError) -> Error {
    Error::new(err.kind().code(), err.to_string())
}

/// Invalid input from JavaScript, refused before the engine is called.
fn invalid(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidParams.code(), message.to_string())
}

/// A failure of napi itself.
fn internal(err: napi::Error) -> Error {
    Error::new(ErrorKind::Internal.code(), err.reason.clone())
}

/// A promise that resolves with what `work` gives, or rejects with a JavaScript error whose
/// `code` is the engine's, as the synchronous exports throw. (napi's own async exports can
/// only reject with its status names, `InvalidArg` or `GenericFailure`.)
fn promise<T>(
    env: &Env,
    work: impl Future<Output = Result<T>> + Send + 'static,
) -> napi::Result<PromiseRaw<'_, T>>
where
    T: ToNapiValue + Send + 'static,
{
    env.spawn_future_with_callback(async move { Ok(work.await) }, |env, outcome| {
        outcome.map_err(|err| rejection(env, err))
    })
}

/// `err` as the JavaScript error a promise rejects with: its message, and the engine's
/// code as `code`.
fn rejection(env: &Env, err: Error) -> napi::Error {
    let code = err.status;
    let built = env
        .create_error(napi::Error::from_reason(err.reason.clone()))
        .and_then(|mut error| {
            error.set("code", code)?;
            Ok(error)
        });
    match built {
        Ok(error) => napi::Error::from(error.to_unknown()),
        // The environment is going away: nothing will read the reason.
        Err(failed) => failed,
    }
}

/// What a task spawned on the engine's thread gave, or why it stopped.
fn joined<T>(done: std::result::Result<Result<T>, tokio::task::JoinError>) -> Result<T> {
    done.map_err(|err| Error::new(ErrorKind::Internal.code(), format!("stopped: {err}")))?
}

/// `value` as `T`, or an `invalid_params` error naming `what`.
fn parse<T: DeserializeOwned>(what: &str, value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(|err| invalid(format!("invalid {what}: {err}")))
}

fn parse_conversation(id: &str) -> Result<ConversationId> {
    id.parse()
        .map_err(|_| invalid(format!("`{id}` is not a conversation id")))
}

fn to_json(value: impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|err| Error::new(ErrorKind::Internal.code(), err.to_string()))
}

/// One engine session. Created with [`NativeEngine::create`]; ended with `dispose`.
#[napi]
pub struct NativeEngine {
    engine: Engine,
    forwarder: Mutex<Option<Forwarder>>,
    /// The engine thread's runtime this engine runs on.
    runtime: tokio::runtime::Handle,
}

/// An engine collected without `dispose` still ends its work (its task cancelled, saving
/// stopped, its temporary directory removed, [`Engine::shutdown_now`]), and its event
/// forwarder ends: nobody listens any more.
impl Drop for NativeEngine {
    fn drop(&mut self) {
        self.engine.shutdown_now();
        if let Some(forwarder) = self
            .forwarder
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            forwarder.abort();
        }
    }
}

#[napi]
impl NativeEngine {
    /// Starts a session. `onEvents` receives batches of engine events as a JSON array
    /// string, in `seq` order; it does not keep Node's event loop alive.
    #[napi(
        factory,
        ts_args_type = "options: import('../ts/protocol').EngineOptions, onEvents: (batch: string) => void"
    )]
    pub fn create(options: Value, on_events: Function<String, ()>) -> Result<Self> {
        let options: EngineOptions = parse("engine options", options)?;
        let config = options::config(&options).map_err(invalid)?;
        let runtime = runtime::next().map_err(|err| Error::new(ErrorKind::Internal.code(), err))?;
        let engine = {
            let _on_the_runtime = runtime.enter();
            Engine::new(config).map_err(error)?
        };
        let forwarder = Forwarder::start(&engine, on_events, &runtime).map_err(internal)?;
        Ok(Self {
            engine,
            forwarder: Mutex::new(Some(forwarder)),
            runtime,
        })
    }

    #[napi]
    pub fn session_id(&self) -> String {
        self.engine.session_id().to_string()
    }

    /// The sessions saved in the workspace, newest first.
    #[napi(ts_return_type = "import('../ts/protocol').SessionInfo[]")]
    pub fn saved_sessions(&self) -> Result<Value> {
        to_json(self.engine.saved_sessions())
    }

    /// Takes up a saved session; returns how many messages came back.
    #[napi]
    pub fn resume(&self, session_id: String) -> Result<u32> {
        let session: SessionId = session_id
            .parse()
            .map_err(|_| invalid(format!("`{session_id}` is not a session id")))?;
        let loaded = self.engine.resume(session).map_err(error)?;
        Ok(u32::try_from(loaded).unwrap_or(u32::MAX))
    }

    /// Deletes a saved session of the workspace; `false` when there was none.
    #[napi]
    pub fn delete_saved_session(&self, session_id: String) -> Result<bool> {
        let session: SessionId = session_id
            .parse()
            .map_err(|_| invalid(format!("`{session_id}` is not a session id")))?;
        self.engine.delete_saved_session(session).map_err(error)
    }

    /// Deletes every saved session of the workspace but the one running; returns how many.
    #[napi]
    pub fn delete_saved_sessions(&self) -> Result<u32> {
        let deleted = self.engine.delete_saved_sessions().map_err(error)?;
        Ok(u32::try_from(deleted).unwrap_or(u32::MAX))
    }

    /// The conversation's points (a person's inputs), oldest first.
    #[napi(ts_return_type = "import('../ts/protocol').RewindPoint[]")]
    pub fn rewind_points(&self, conversation_id: String) -> Result<Value> {
        let points = self
            .engine
            .rewind_points(parse_conversation(&conversation_id)?)
            .map_err(error)?;
        to_json(points)
    }

    /// Takes the conversation back to before `point` (its files and its history, or with
    /// `files` false its history alone); with `dryRun`, only says what it would do.
    #[napi(ts_return_type = "Promise<import('../ts/protocol').RewindResult>")]
    pub fn rewind<'env>(
        &self,
        env: &'env Env,
        conversation_id: String,
        point: u32,
        dry_run: bool,
        files: Option<bool>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        let engine = self.engine.clone();
        let conversation = parse_conversation(&conversation_id);
        // On the engine's thread, where its tasks run.
        let done = self.runtime.spawn(async move {
            let conversation = conversation?;
            let point = point as usize;
            let result = if files == Some(false) {
                engine.rewind_history(conversation, point, dry_run).await
            } else {
                engine.rewind(conversation, point, dry_run).await
            };
            to_json(result.map_err(error)?)
        });
        promise(env, async move { joined(done.await) })
    }

    /// Starts a new saved session from `point` of the conversation and goes on in it.
    #[napi(ts_return_type = "Promise<import('../ts/protocol').ForkResult>")]
    pub fn fork<'env>(
        &self,
        env: &'env Env,
        conversation_id: String,
        point: u32,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        let engine = self.engine.clone();
        let conversation = parse_conversation(&conversation_id);
        let done = self.runtime.spawn(async move {
            let result = engine.fork(conversation?, point as usize).await;
            to_json(result.map_err(error)?)
        });
        promise(env, async move { joined(done.await) })
    }

    #[napi]
    pub fn root_conversation(&self) -> String {
        self.engine.root_conversation().to_string()
    }

    /// `conversation/create` params; returns the new conversation's id.
    #[napi(ts_args_type = "params: import('../ts/protocol').CreateParams")]
    pub fn create_conversation(&self, params: Value) -> Result<String> {
        let params: CreateParams = parse("conversation params", params)?;
        let spec = ConversationSpec::from(params);
        let id = self.engine.conversation_create(spec).map_err(error)?;
        Ok(id.to_string())
    }

    /// Queues input for a conversation; returns the task's id at once.
    #[napi(ts_args_type = "conversationId: string, items: import('../ts/protocol').InputItem[]")]
    pub fn send(&self, conversation_id: String, items: Value) -> Result<String> {
        let items: Vec<InputItem> = parse("input items", items)?;
        let task = self
            .engine
            .send_items(parse_conversation(&conversation_id)?, items)
            .map_err(error)?;
        Ok(task.to_string())
    }

    /// Steers input into the conversation's running task: its model reads it at the next
    /// checkpoint; queued as `send` queues it when no task runs there (`conversation/steer`).
    #[napi(
        ts_args_type = "conversationId: string, items: import('../ts/protocol').InputItem[]",
        ts_return_type = "import('../ts/protocol').SteerResult"
    )]
    pub fn steer(&self, conversation_id: String, items: Value) -> Result<Value> {
        let items: Vec<InputItem> = parse("input items", items)?;
        let (input_id, steering) = self
            .engine
            .steer(parse_conversation(&conversation_id)?, items)
            .map_err(error)?;
        to_json(SteerResult { input_id, steering })
    }

    /// Withdraws input no model has read yet; whether there was such input.
    #[napi]
    pub fn withdraw_input(&self, input_id: String) -> Result<bool> {
        let input_id: TaskId = input_id
            .parse()
            .map_err(|_| invalid(format!("`{input_id}` is not an input id")))?;
        Ok(self.engine.withdraw_input(input_id))
    }

    /// Takes what a person typed: a built-in `/command` runs (its text, and the task or
    /// conversation it started); anything else is queued, and its task named.
    #[napi(
        ts_args_type = "conversationId: string, items: import('../ts/protocol').InputItem[]",
        ts_return_type = "import('../ts/protocol').CommandResult"
    )]
    pub fn input(&self, conversation_id: String, items: Value) -> Result<Value> {
        let items: Vec<InputItem> = parse("input items", items)?;
        let started = self
            .engine
            .input(parse_conversation(&conversation_id)?, items)
            .map_err(error)?;
        to_json(started)
    }

    #[napi(ts_return_type = "import('../ts/protocol').ConversationSummary[]")]
    pub fn list(&self) -> Result<Value> {
        to_json(self.engine.list_conversations())
    }

    /// The rules files the system prompt holds now, in its order (the nearest last).
    #[napi(ts_return_type = "import('../ts/protocol').RuleInfo[]")]
    pub fn rules(&self) -> Result<Value> {
        to_json(self.engine.rules())
    }

    /// The permission rules a person recorded with "always" for this project.
    #[napi(ts_return_type = "import('../ts/protocol').PermissionRule[]")]
    pub fn permission_rules(&self) -> Result<Value> {
        to_json(self.engine.permission_rules())
    }

    /// Removes one recorded permission rule; whether there was one of that id.
    #[napi]
    pub fn remove_permission_rule(&self, id: String) -> Result<bool> {
        self.engine.remove_permission_rule(&id).map_err(error)
    }

    /// The slash commands, built-in then custom, for completion.
    #[napi(ts_return_type = "import('../ts/protocol').CommandInfo[]")]
    pub fn commands(&self) -> Result<Value> {
        to_json(self.engine.commands())
    }

    /// Workspace paths matching what a person typed after `@`, best first.
    #[napi(ts_return_type = "import('../ts/protocol').PathMatch[]")]
    pub fn complete_paths(&self, query: String, limit: Option<u32>) -> Result<Value> {
        let limit = limit.map_or(coder_core::completion::DEFAULT_LIMIT, |limit| {
            limit as usize
        });
        to_json(self.engine.complete_paths(&query, limit))
    }

    /// The skills the model is told about.
    #[napi(ts_return_type = "import('../ts/protocol').SkillInfo[]")]
    pub fn skills(&self) -> Result<Value> {
        to_json(self.engine.skills())
    }

    #[napi(ts_return_type = "import('../ts/protocol').HistoryEntry[]")]
    pub fn history(&self, conversation_id: String, limit: Option<u32>) -> Result<Value> {
        let entries = self
            .engine
            .conversation_history(
                parse_conversation(&conversation_id)?,
                limit.map(|limit| limit as usize),
            )
            .map_err(error)?;
        to_json(entries)
    }

    /// The conversation's messages in OpenAI Chat Completions form, tool calls included.
    #[napi(ts_return_type = "import('../ts/protocol').ChatMessage[]")]
    pub fn messages(&self, conversation_id: String) -> Result<Value> {
        let messages = self
            .engine
            .history(parse_conversation(&conversation_id)?)
            .map_err(error)?;
        to_json(messages)
    }

    /// `{ ok: false, reason }` when the engine refuses (the root, an unknown id); throws
    /// only for an id that is not one.
    #[napi(ts_return_type = "import('../ts/protocol').DestroyResult")]
    pub fn destroy(&self, conversation_id: String) -> Result<Value> {
        let conversation = parse_conversation(&conversation_id)?;
        to_json(self.engine.conversation_destroy(conversation))
    }

    /// Runs a slash command in the conversation: its text, and the task or conversation
    /// it started.
    #[napi(ts_return_type = "import('../ts/protocol').CommandResult")]
    pub fn command(&self, conversation_id: String, command: String) -> Result<Value> {
        let result = self
            .engine
            .command(parse_conversation(&conversation_id)?, &command)
            .map_err(error)?;
        to_json(result)
    }

    /// Queues a task that compacts the conversation's history now; returns its id.
    #[napi]
    pub fn compact(&self, conversation_id: String) -> Result<String> {
        let task = self
            .engine
            .compact(parse_conversation(&conversation_id)?)
            .map_err(error)?;
        Ok(task.to_string())
    }

    /// What compactions of the conversation replaced, one segment per compaction.
    #[napi(ts_return_type = "import('../ts/protocol').ArchivedSegment[]")]
    pub fn archive(&self, conversation_id: String) -> Result<Value> {
        let segments = self
            .engine
            .archive(parse_conversation(&conversation_id)?)
            .map_err(error)?;
        to_json(segments)
    }

    /// Interrupts the conversation's running task; returns whether one was running.
    #[napi]
    pub fn interrupt(&self, conversation_id: String) -> Result<bool> {
        self.engine
            .interrupt(parse_conversation(&conversation_id)?)
            .map_err(error)
    }

    /// Interrupts the session's work, whatever conversation a handoff moved it to: the
    /// running task stops and the continuations its user input queued are dropped (their
    /// calls get a result saying so). Returns whether a task was running.
    #[napi]
    pub fn interrupt_session(&self) -> bool {
        self.engine.interrupt_session()
    }

    /// Answers a `permission_requested` event: `{ optionId, message? }` names one of the
    /// event's `options` (an id it did not offer denies, saying so); the older
    /// `{ decision: "allow_once" | "allow_always" | "deny", message? }` is read too. Anything
    /// else denies the request, then throws saying what was wrong.
    #[napi(
        ts_args_type = "requestId: string, decision: import('../ts/protocol').PermissionDecision"
    )]
    pub fn respond_permission(&self, request_id: String, decision: Value) -> Result<()> {
        match PermissionDecision::parse_answer(&decision) {
            Ok(decision) => self
                .engine
                .respond_permission(&request_id, decision)
                .map_err(error),
            Err(problem) => {
                // The request must not stay open: a malformed answer is a denial.
                let _ = self
                    .engine
                    .respond_permission(&request_id, PermissionDecision::malformed(&problem));
                Err(invalid(format!(
                    "invalid permission decision ({problem}); the request was denied"
                )))
            }
        }
    }

    /// Switches the session's model; tasks that start afterwards use it.
    #[napi(ts_args_type = "model: import('../ts/protocol').ModelOptions")]
    pub fn set_model(&self, model: Value) -> Result<()> {
        let model: ModelOptions = parse("model", model)?;
        let settings = options::model_settings(&model).map_err(invalid)?;
        self.engine.set_model(settings).map_err(error)
    }

    /// Sets the session's MCP servers by name (`McpServerOptions` each): servers not named
    /// stop, new or changed ones start; `mcp_server_status` events follow.
    #[napi(ts_args_type = "servers: Record<string, import('../ts/protocol').McpServerOptions>")]
    pub fn set_mcp_servers(&self, servers: Value) -> Result<()> {
        let servers = parse("MCP servers", servers)?;
        let _on_the_runtime = self.runtime.enter();
        self.engine.set_mcp_servers(servers);
        Ok(())
    }

    /// Stops an MCP server and starts it again; `false` when there is no such server.
    #[napi]
    pub fn restart_mcp_server(&self, name: String) -> bool {
        let _on_the_runtime = self.runtime.enter();
        self.engine.restart_mcp_server(&name)
    }

    /// The configured MCP servers: `{name, command?, args, url?, enabled, state, tools,
    /// error?}` each, `state` being `starting`, `ready`, `failed` or `disabled`.
    #[napi(
        ts_return_type = "Array<{ name: string; command?: string; args: string[]; url?: string; enabled: boolean; state: 'starting' | 'ready' | 'failed' | 'disabled'; tools: string[]; error?: string }>"
    )]
    pub fn mcp_servers(&self) -> Result<Value> {
        to_json(self.engine.mcp_servers())
    }

    /// Hides built-in tools (coder's names) from the tasks that start from now on.
    #[napi]
    pub fn set_disabled_tools(&self, names: Vec<String>) {
        self.engine.set_disabled_tools(names);
    }

    /// The built-in tools: `{name, description, offered}` each, in name order.
    #[napi(ts_return_type = "Array<{ name: string; description: string; offered: boolean }>")]
    pub fn builtin_tools(&self) -> Result<Value> {
        to_json(self.engine.builtin_tools())
    }

    #[napi(ts_args_type = "conversationId: string, mode: import('../ts/protocol').Mode")]
    pub fn set_mode(&self, conversation_id: String, mode: Value) -> Result<()> {
        let mode = parse("mode", mode)?;
        self.engine
            .set_mode(parse_conversation(&conversation_id)?, mode)
            .map_err(error)
    }

    /// `conversation/setContext` params: changes the conversation's context.
    #[napi(ts_args_type = "params: import('../ts/protocol').SetContextParams")]
    pub fn set_context(&self, params: Value) -> Result<()> {
        let params: SetContextParams = parse("context", params)?;
        let conversation = params.conversation_id;
        self.engine
            .set_context(conversation, ContextChange::from(params))
            .map_err(error)
    }

    /// A second listener from `fromSeq` (see [`Engine::subscribe_from`]): `onEvents` gets
    /// first the `session/subscribe` result as a JSON object (`{events}` or `{snapshot}`),
    /// then batches of live events as JSON arrays, as the engine's own listener does. A
    /// `fromSeq` past the next event's throws `invalid_params`.
    #[napi(ts_args_type = "fromSeq: number, onEvents: (batch: string) => void")]
    pub fn subscribe(
        &self,
        from_seq: f64,
        on_events: Function<String, ()>,
    ) -> Result<NativeSubscription> {
        let whole =
            from_seq >= 0.0 && from_seq.fract() == 0.0 && from_seq <= 9_007_199_254_740_991.0;
        if !whole {
            return Err(invalid(format!(
                "fromSeq must be a whole number, 0 or more: {from_seq}"
            )));
        }
        let (replay, events) = self.engine.subscribe_from(from_seq as u64).map_err(error)?;
        let first = serde_json::to_string(&replay.into_result())
            .map_err(|err| Error::new(ErrorKind::Internal.code(), err.to_string()))?;
        let forwarder = Forwarder::start_with(events, Some(first), on_events, &self.runtime)
            .map_err(internal)?;
        Ok(NativeSubscription {
            forwarder: Mutex::new(Some(forwarder)),
        })
    }

    /// The running task as `[conversationId, taskId]`, if any.
    #[napi]
    pub fn running_task(&self) -> Option<Vec<String>> {
        self.engine
            .running_task()
            .map(|(conversation, task)| vec![conversation.to_string(), task.to_string()])
    }

    /// Ends the session ([`Engine::shutdown`]: open permission requests denied, the running
    /// task interrupted, queued ones dropped, the snapshot saved, MCP servers stopped). The
    /// events up to the end are delivered before the promise resolves.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn dispose<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let engine = self.engine.clone();
        let forwarder = self
            .forwarder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        // On the engine's thread, where its tasks run.
        let ended = self.runtime.spawn(async move {
            engine.shutdown().await;
            if let Some(forwarder) = forwarder {
                forwarder.stop().await;
            }
        });
        promise(env, async move {
            ended.await.map_err(|err| {
                Error::new(
                    ErrorKind::Internal.code(),
                    format!("disposing the engine failed: {err}"),
                )
            })
        })
    }
}

/// A listener attached with [`NativeEngine::subscribe`]; it ends with `close`, or when the
/// engine ends.
#[napi]
pub struct NativeSubscription {
    forwarder: Mutex<Option<Forwarder>>,
}

#[napi]
impl NativeSubscription {
    /// Stops delivering events to this listener at once.
    #[napi]
    pub fn close(&self) {
        if let Some(forwarder) = self
            .forwarder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            forwarder.abort();
        }
    }
}

impl Drop for NativeSubscription {
    fn drop(&mut self) {
        self.close();
    }
}

/// A connection test of a model (one short request, no retries); resolves with the reply,
/// rejects with why the model cannot be used: `code` `invalid_params` for settings that
/// cannot work, `provider` (or another engine code) for a model that does not answer.
#[napi(
    ts_args_type = "model: import('../ts/protocol').ModelOptions",
    ts_return_type = "Promise<string>"
)]
pub fn check_model(env: &Env, model: Value) -> napi::Result<PromiseRaw<'_, String>> {
    promise(env, async move {
        let model: ModelOptions = parse("model", model)?;
        let settings = options::model_settings(&model).map_err(invalid)?;
        coder_core::model::check_connection(&settings)
            .await
            .map_err(error)
    })
}

/// The models a provider lists (`GET /models`): `{id, ownedBy?, displayName?}` each.
/// `model.model` is not used (any name will do).
#[napi(
    ts_args_type = "model: import('../ts/protocol').ModelOptions",
    ts_return_type = "Promise<Array<{ id: string; ownedBy?: string; displayName?: string }>>"
)]
pub fn list_models(env: &Env, model: Value) -> napi::Result<PromiseRaw<'_, Value>> {
    promise(env, async move {
        let model: ModelOptions = parse("model", model)?;
        let settings = options::model_settings(&model).map_err(invalid)?;
        let models = coder_core::model::list_models(&settings)
            .await
            .map_err(error)?;
        to_json(models)
    })
}

/// coder's built-in tools: `{name, description}` each, in name order.
#[napi(ts_return_type = "Array<{ name: string; description: string }>")]
pub fn builtin_tool_list() -> Result<Value> {
    let tools: Vec<Value> = coder_core::tools::ToolRegistry::builtin()
        .iter()
        .map(|tool| serde_json::json!({"name": tool.name(), "description": tool.description()}))
        .collect();
    Ok(Value::Array(tools))
}

/// How many tasks the engine threads hold now, shared by every engine of the process: 0
/// once every engine is disposed (a diagnostic; nothing to act on).
#[napi]
pub fn runtime_tasks() -> u32 {
    u32::try_from(runtime::alive_tasks()).unwrap_or(u32::MAX)
}

/// coder's built-in system prompt (what a conversation without base instructions gets).
#[napi]
pub fn built_in_prompt() -> String {
    coder_core::built_in_prompt().to_owned()
}
