//! The `conversation/*` methods: each translates its params into one engine call.
//!
//! Every handler runs inside [`contained`], so a panic fails that one request with an
//! internal error and the server goes on serving.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use coder_core::{ContextChange, ConversationSpec, EngineError, ErrorKind};
use coder_protocol::InputItem;
use coder_protocol::methods::{
    ArchiveResult, COMMAND_LIST, CONVERSATION_ARCHIVE, CONVERSATION_COMMAND, CONVERSATION_COMPACT,
    CONVERSATION_CREATE, CONVERSATION_DESTROY, CONVERSATION_HISTORY, CONVERSATION_INTERRUPT,
    CONVERSATION_LIST, CONVERSATION_SEND, CONVERSATION_SET_CONTEXT, CONVERSATION_SET_MODE,
    CONVERSATION_STEER, CONVERSATION_WITHDRAW, CommandListParams, CommandListResult, CommandParams,
    CommandResult, CompactResult, CompletePathsParams, CompletePathsResult, CreateParams,
    CreateResult, DestroyResult, HistoryParams, HistoryResult, InterruptResult, ListParams,
    ListResult, PERMISSIONS_LIST, PERMISSIONS_REMOVE, PermissionsListParams, PermissionsListResult,
    PermissionsRemoveParams, PermissionsRemoveResult, RULE_LIST, RuleListParams, RuleListResult,
    SESSION_INTERRUPT, SESSION_LIST, SESSION_RESUME, SKILL_LIST, SendParams, SendResult,
    SessionInterruptParams, SessionListParams, SessionListResult, SessionResumeParams,
    SessionResumeResult, SetContextParams, SetContextResult, SetModeParams, SetModeResult,
    SkillListParams, SkillListResult, SteerResult, TargetParams, WORKSPACE_COMPLETE_PATHS,
    WithdrawParams, WithdrawResult,
};
use coder_protocol::methods::{
    CONVERSATION_POINTS, CONVERSATION_REWIND, ForkParams, ForkResult, PointsResult, RewindParams,
    RewindResult, SESSION_FORK,
};
use futures::FutureExt;
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};

use crate::{Backend, NO_PROVIDER, NO_PROVIDER_MESSAGE};

/// The one place engine errors become JSON-RPC errors: the kind picks the code, and its
/// stable name goes in `data.kind`.
pub(crate) fn engine_error(err: EngineError) -> Error {
    let kind = err.kind();
    let (code, message) = match kind {
        ErrorKind::NoProvider => (
            ErrorCode::ServerError(NO_PROVIDER),
            NO_PROVIDER_MESSAGE.to_owned(),
        ),
        kind if kind.is_caller_error() => (ErrorCode::InvalidParams, err.to_string()),
        _ => (ErrorCode::InternalError, err.to_string()),
    };
    Error {
        code,
        message: message.into(),
        data: Some(serde_json::json!({ "kind": kind.code() })),
    }
}

/// Runs one request's work; a panic becomes an internal error for that request alone.
async fn contained<T>(method: &str, work: impl Future<Output = Result<T>>) -> Result<T> {
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".to_owned());
            tracing::error!("{method} panicked: {what}");
            Err(Error {
                code: ErrorCode::InternalError,
                message: format!("{method} failed with an internal error: {what}").into(),
                data: None,
            })
        }
    }
}

impl Backend {
    pub(crate) async fn create(&self, params: CreateParams) -> Result<CreateResult> {
        contained(CONVERSATION_CREATE, async {
            let spec = ConversationSpec::from(params);
            let conversation_id = self
                .engine()?
                .conversation_create(spec)
                .map_err(engine_error)?;
            Ok(CreateResult { conversation_id })
        })
        .await
    }

    pub(crate) async fn send(&self, params: SendParams) -> Result<SendResult> {
        contained(CONVERSATION_SEND, async {
            // `text` is the first item; no input at all is the engine's error to give.
            let mut items = Vec::new();
            if let Some(text) = params.text {
                items.push(InputItem::Text { text });
            }
            items.extend(params.items);
            // What a person typed: a built-in `/command` runs, as at the terminal.
            let started = self
                .engine()?
                .input(params.conversation_id, items)
                .map_err(engine_error)?;
            Ok(SendResult::from(started))
        })
        .await
    }

    pub(crate) async fn steer(&self, params: SendParams) -> Result<SteerResult> {
        contained(CONVERSATION_STEER, async {
            let mut items = Vec::new();
            if let Some(text) = params.text {
                items.push(InputItem::Text { text });
            }
            items.extend(params.items);
            let (input_id, steering) = self
                .engine()?
                .steer(params.conversation_id, items)
                .map_err(engine_error)?;
            Ok(SteerResult { input_id, steering })
        })
        .await
    }

    pub(crate) async fn withdraw(&self, params: WithdrawParams) -> Result<WithdrawResult> {
        contained(CONVERSATION_WITHDRAW, async {
            Ok(WithdrawResult {
                withdrawn: self.engine()?.withdraw_input(params.input_id),
            })
        })
        .await
    }

    /// Takes `{}`; the framing guard supplies it when the client sends no params.
    pub(crate) async fn list(&self, _: ListParams) -> Result<ListResult> {
        contained(CONVERSATION_LIST, async {
            Ok(ListResult {
                conversations: self.engine()?.list_conversations(),
            })
        })
        .await
    }

    /// The slash commands, built-in then custom, for completion.
    pub(crate) async fn commands(&self, _: CommandListParams) -> Result<CommandListResult> {
        contained(COMMAND_LIST, async {
            Ok(CommandListResult {
                commands: self.engine()?.commands(),
            })
        })
        .await
    }

    /// Workspace paths for an `@` completion menu, best first.
    pub(crate) async fn complete_paths(
        &self,
        params: CompletePathsParams,
    ) -> Result<CompletePathsResult> {
        contained(WORKSPACE_COMPLETE_PATHS, async {
            let limit = params
                .limit
                .map_or(coder_core::completion::DEFAULT_LIMIT, |limit| {
                    limit as usize
                });
            Ok(CompletePathsResult {
                matches: self.engine()?.complete_paths(&params.query, limit),
            })
        })
        .await
    }

    /// The skills the model is told about.
    pub(crate) async fn skills(&self, _: SkillListParams) -> Result<SkillListResult> {
        contained(SKILL_LIST, async {
            Ok(SkillListResult {
                skills: self.engine()?.skills(),
            })
        })
        .await
    }

    pub(crate) async fn history(&self, params: HistoryParams) -> Result<HistoryResult> {
        contained(CONVERSATION_HISTORY, async {
            let entries = self
                .engine()?
                .conversation_history(params.conversation_id, params.limit)
                .map_err(engine_error)?;
            Ok(HistoryResult { entries })
        })
        .await
    }

    pub(crate) async fn command(&self, params: CommandParams) -> Result<CommandResult> {
        contained(CONVERSATION_COMMAND, async {
            self.engine()?
                .command(params.conversation_id, &params.command)
                .map_err(engine_error)
        })
        .await
    }

    pub(crate) async fn compact(&self, params: TargetParams) -> Result<CompactResult> {
        contained(CONVERSATION_COMPACT, async {
            let task_id = self
                .engine()?
                .compact(params.conversation_id)
                .map_err(engine_error)?;
            Ok(CompactResult { task_id })
        })
        .await
    }

    pub(crate) async fn archive(&self, params: TargetParams) -> Result<ArchiveResult> {
        contained(CONVERSATION_ARCHIVE, async {
            let segments = self
                .engine()?
                .archive(params.conversation_id)
                .map_err(engine_error)?;
            Ok(ArchiveResult { segments })
        })
        .await
    }

    pub(crate) async fn sessions(&self, _: SessionListParams) -> Result<SessionListResult> {
        contained(SESSION_LIST, async {
            Ok(SessionListResult {
                sessions: self.engine()?.saved_sessions(),
            })
        })
        .await
    }

    pub(crate) async fn resume(&self, params: SessionResumeParams) -> Result<SessionResumeResult> {
        contained(SESSION_RESUME, async {
            let messages = self
                .engine()?
                .resume(params.session_id)
                .map_err(engine_error)?;
            Ok(SessionResumeResult {
                session_id: params.session_id,
                messages,
            })
        })
        .await
    }

    pub(crate) async fn points(&self, params: TargetParams) -> Result<PointsResult> {
        contained(CONVERSATION_POINTS, async {
            let points = self
                .engine()?
                .rewind_points(params.conversation_id)
                .map_err(engine_error)?;
            Ok(PointsResult { points })
        })
        .await
    }

    pub(crate) async fn rewind(&self, params: RewindParams) -> Result<RewindResult> {
        contained(CONVERSATION_REWIND, async {
            let engine = self.engine()?;
            let rewound = if params.files == Some(false) {
                engine
                    .rewind_history(params.conversation_id, params.point, params.dry_run)
                    .await
            } else {
                engine
                    .rewind(params.conversation_id, params.point, params.dry_run)
                    .await
            };
            rewound.map_err(engine_error)
        })
        .await
    }

    /// The connection goes on in the fork, as after `session/resume`.
    pub(crate) async fn fork(&self, params: ForkParams) -> Result<ForkResult> {
        contained(SESSION_FORK, async {
            self.engine()?
                .fork(params.conversation_id, params.point)
                .await
                .map_err(engine_error)
        })
        .await
    }

    pub(crate) async fn destroy(&self, params: TargetParams) -> Result<DestroyResult> {
        contained(CONVERSATION_DESTROY, async {
            Ok(self.engine()?.conversation_destroy(params.conversation_id))
        })
        .await
    }

    pub(crate) async fn interrupt(&self, params: TargetParams) -> Result<InterruptResult> {
        contained(CONVERSATION_INTERRUPT, async {
            self.engine()?
                .interrupt(params.conversation_id)
                .map_err(engine_error)?;
            Ok(InterruptResult {})
        })
        .await
    }

    pub(crate) async fn set_mode(&self, params: SetModeParams) -> Result<SetModeResult> {
        contained(CONVERSATION_SET_MODE, async {
            self.engine()?
                .set_mode(params.conversation_id, params.mode)
                .map_err(engine_error)?;
            Ok(SetModeResult {})
        })
        .await
    }

    pub(crate) async fn set_context(&self, params: SetContextParams) -> Result<SetContextResult> {
        contained(CONVERSATION_SET_CONTEXT, async {
            let conversation = params.conversation_id;
            self.engine()?
                .set_context(conversation, ContextChange::from(params))
                .map_err(engine_error)?;
            Ok(SetContextResult {})
        })
        .await
    }

    pub(crate) async fn interrupt_session(
        &self,
        _: SessionInterruptParams,
    ) -> Result<InterruptResult> {
        contained(SESSION_INTERRUPT, async {
            self.engine()?.interrupt_session();
            Ok(InterruptResult {})
        })
        .await
    }

    pub(crate) async fn rules(&self, _: RuleListParams) -> Result<RuleListResult> {
        contained(RULE_LIST, async {
            Ok(RuleListResult {
                rules: self.engine()?.rules(),
            })
        })
        .await
    }

    pub(crate) async fn permission_rules(
        &self,
        _: PermissionsListParams,
    ) -> Result<PermissionsListResult> {
        contained(PERMISSIONS_LIST, async {
            Ok(PermissionsListResult {
                rules: self.engine()?.permission_rules(),
            })
        })
        .await
    }

    pub(crate) async fn remove_permission_rule(
        &self,
        params: PermissionsRemoveParams,
    ) -> Result<PermissionsRemoveResult> {
        contained(PERMISSIONS_REMOVE, async {
            let removed = self
                .engine()?
                .remove_permission_rule(&params.id)
                .map_err(engine_error)?;
            Ok(PermissionsRemoveResult { removed })
        })
        .await
    }

    /// `coder/test/panic`, offered only with `CODER_LSP_TEST_HOOKS=1`: proves that a panic
    /// inside a request is contained to that request.
    pub(crate) async fn test_panic(&self, _: Value) -> Result<Value> {
        contained("coder/test/panic", async {
            if self.engine()?.queued_tasks() < usize::MAX {
                panic!("a deliberate panic for the containment test");
            }
            Ok(Value::Null)
        })
        .await
    }
}
