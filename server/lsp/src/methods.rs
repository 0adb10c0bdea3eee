//! The `conversation/*` methods, the event notifications and permission requests.

use coder_core::{ConversationSpec, Engine};
use coder_protocol::{
    ConversationId, ConversationSummary, Event, EventMsg, HistoryEntry, InputItem, Mode,
    PermissionDecision, TaskId, ToolsPrefs,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

use crate::{Backend, engine_error};

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateParams {
    pub base_instructions: Option<String>,
    pub base_instructions_file: Option<String>,
    pub user_instructions: Option<String>,
    pub mcp_allowlist: Option<Vec<String>>,
    pub tools_prefs: Option<ToolsPrefs>,
    pub mode: Option<Mode>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateResult {
    pub conversation_id: ConversationId,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    pub conversation_id: ConversationId,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub items: Vec<InputItem>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    pub task_id: TaskId,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetParams {
    pub conversation_id: ConversationId,
}

/// `conversation/list` takes an empty object.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct ListParams {}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryParams {
    pub conversation_id: ConversationId,
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DestroyResult {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `conversation/event`: one engine event, unchanged.
#[derive(Debug, Deserialize, Serialize)]
pub struct EventParams {
    pub event: Event,
}

enum ConversationEvent {}

impl Notification for ConversationEvent {
    type Params = EventParams;
    const METHOD: &'static str = "conversation/event";
}

/// `permission/request`, server to client.
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionParams {
    pub request_id: String,
    pub conversation_id: ConversationId,
    pub task_id: Option<TaskId>,
    pub tool_name: String,
    pub arguments: Value,
    pub summary: String,
    pub options: Vec<String>,
}

/// The client's answer: `{ decision: "allow_once" | "allow_always" | "deny", message? }`.
pub type PermissionResult = PermissionDecision;

enum PermissionAsk {}

impl Request for PermissionAsk {
    type Params = PermissionParams;
    type Result = PermissionResult;
    const METHOD: &'static str = "permission/request";
}

impl Backend {
    pub(crate) async fn create(&self, params: CreateParams) -> Result<CreateResult> {
        let spec = ConversationSpec {
            base_instructions: params.base_instructions,
            base_instructions_file: params.base_instructions_file.map(Into::into),
            user_instructions: params.user_instructions,
            mcp_allowlist: params.mcp_allowlist,
            tools_prefs: params.tools_prefs,
            mode: params.mode,
            sandbox: None,
        };
        let conversation_id = self
            .engine
            .create_conversation(spec)
            .map_err(engine_error)?;
        Ok(CreateResult { conversation_id })
    }

    pub(crate) async fn send(&self, params: SendParams) -> Result<SendResult> {
        let mut items = Vec::new();
        if let Some(text) = params.text {
            items.push(InputItem::Text { text });
        }
        items.extend(params.items);
        if items.is_empty() {
            return Err(tower_lsp_server::jsonrpc::Error::invalid_params(
                "give `text`, `items`, or both",
            ));
        }
        let task_id = self
            .engine
            .send_items(params.conversation_id, items)
            .map_err(engine_error)?;
        Ok(SendResult { task_id })
    }

    pub(crate) async fn list(&self, _: ListParams) -> Result<Value> {
        let conversations: Vec<ConversationSummary> = self.engine.list_conversations();
        Ok(serde_json::json!({ "conversations": conversations }))
    }

    pub(crate) async fn history(&self, params: HistoryParams) -> Result<Value> {
        let entries: Vec<HistoryEntry> = self
            .engine
            .conversation_history(params.conversation_id, params.limit)
            .map_err(engine_error)?;
        Ok(serde_json::json!({ "entries": entries }))
    }

    pub(crate) async fn destroy(&self, params: TargetParams) -> Result<DestroyResult> {
        Ok(
            match self.engine.destroy_conversation(params.conversation_id) {
                Ok(()) => DestroyResult {
                    ok: true,
                    reason: None,
                },
                Err(err) => DestroyResult {
                    ok: false,
                    reason: Some(err.to_string()),
                },
            },
        )
    }

    pub(crate) async fn interrupt(&self, params: TargetParams) -> Result<Value> {
        self.engine
            .interrupt(params.conversation_id)
            .map_err(engine_error)?;
        Ok(serde_json::json!({}))
    }
}

/// Forwards every engine event as a notification, in order; permission asks also go out as
/// requests, each from a task of its own so forwarding never waits for a person.
pub(crate) async fn forward_events(
    client: Client,
    engine: Engine,
    mut events: coder_core::EventReceiver,
) {
    while let Some(event) = events.recv().await {
        if let EventMsg::PermissionRequested {
            request_id,
            tool_name,
            arguments,
            summary,
            options,
            ..
        } = &event.msg
        {
            let params = PermissionParams {
                request_id: request_id.clone(),
                conversation_id: event.conversation_id,
                task_id: event.task_id,
                tool_name: tool_name.clone(),
                arguments: arguments.clone(),
                summary: summary.clone(),
                options: options.clone(),
            };
            let (client, engine) = (client.clone(), engine.clone());
            tokio::spawn(async move {
                let request_id = params.request_id.clone();
                let decision = client
                    .send_request::<PermissionAsk>(params)
                    .await
                    .unwrap_or(PermissionDecision::Deny {
                        message: Some("the editor did not answer the permission request".into()),
                    });
                if let Err(err) = engine.respond_permission(&request_id, decision) {
                    tracing::warn!("permission answer not delivered: {err}");
                }
            });
        }
        client
            .send_notification::<ConversationEvent>(EventParams { event })
            .await;
    }
}
