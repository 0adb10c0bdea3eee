//! Shared setup: an engine pointed at a mock server, and event collection.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use coder_core::{
    ApiKey, Config, Engine, EventReceiver, ProviderConfig, ProviderKind, RetryConfig, Tool,
    ToolContext, ToolOutput,
};
use coder_protocol::{ConversationId, EngineState, Event, EventMsg, PermissionDecision, TaskId};
use coder_testkit::MockModelServer;
use serde_json::{Value, json};

pub const BOTH: [ProviderKind; 2] = [ProviderKind::OpenAi, ProviderKind::Anthropic];

pub fn config(server: &MockModelServer, kind: ProviderKind, workspace: &Path) -> Config {
    let base_url = match kind {
        ProviderKind::OpenAi => server.openai_base_url(),
        ProviderKind::Anthropic => server.anthropic_base_url(),
    };
    let provider = ProviderConfig {
        kind,
        base_url,
        api_key: Some(ApiKey::new("test-key-123")),
    };
    let mut config = Config::new(workspace, provider, "mock-model");
    config.retry = RetryConfig {
        max_retries: 2,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    };
    config.stream_idle_timeout = Duration::from_millis(500);
    // Tests outside permissions.rs are about the loop, not about asking.
    config.preset = coder_protocol::Preset::Yolo;
    // The mock model is not in the table of known models: its window is configured, as a
    // person running an unknown model would (models.rs tests the warning without it).
    config.context_window = Some(32_000);
    config
}

/// An engine on a fresh temporary workspace, subscribed before anything runs.
pub struct Harness {
    pub engine: Engine,
    pub events: EventReceiver,
    pub workspace: tempfile::TempDir,
    pub root: ConversationId,
    /// The `input_receipt` events [`Harness::until_end`] and [`until_idle`] read: kept
    /// apart, so the other tests see a task's own events in order.
    pub receipts: Vec<Event>,
}

impl Harness {
    pub fn new(server: &MockModelServer, kind: ProviderKind) -> Self {
        Self::with(server, kind, |_| {}, Vec::new())
    }

    pub fn with(
        server: &MockModelServer,
        kind: ProviderKind,
        adjust: impl FnOnce(&mut Config),
        tools: Vec<Arc<dyn Tool>>,
    ) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let mut config = config(server, kind, workspace.path());
        adjust(&mut config);
        let engine = Engine::with_tools(config, tools).unwrap();
        let events = engine.subscribe();
        let root = engine.root_conversation();
        Self {
            engine,
            events,
            workspace,
            root,
            receipts: Vec::new(),
        }
    }

    pub fn write(&self, name: &str, content: &str) {
        let path = self.workspace.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Sends `text` to the root conversation and returns the task's events up to its end.
    pub async fn run(&mut self, text: &str) -> Vec<Event> {
        let task = self.engine.send(self.root, text).unwrap();
        self.until_end(task).await
    }

    /// Events up to and including the end of `task` (and the `idle` that may follow).
    pub async fn until_end(&mut self, task: TaskId) -> Vec<Event> {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .expect("the task did not end within 20 s")
                .expect("event stream closed");
            if matches!(event.msg, EventMsg::InputReceipt { .. }) {
                self.receipts.push(event);
                continue;
            }
            let ended = event.task_id == Some(task)
                && matches!(
                    event.msg,
                    EventMsg::TaskComplete { .. } | EventMsg::TurnAborted { .. }
                );
            seen.push(event);
            if ended {
                return seen;
            }
        }
    }
}

/// The session's snapshot once it holds everything: written (a session saves once it has
/// stayed idle a moment) and its journal folded into it. Bounded: a guard against a hang.
pub async fn until_saved(engine: &coder_core::Engine) -> Vec<u8> {
    let path = engine.snapshot_path().expect("saving is on");
    let journal = path.with_extension("jsonl");
    let wait = async {
        while !path.exists() || journal.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the snapshot was not written within 10 s of idle");
    std::fs::read(&path).unwrap()
}

/// Events until the session is idle again (the snapshot is written just before).
pub async fn until_idle(h: &mut Harness) -> Vec<Event> {
    let mut seen = Vec::new();
    loop {
        let Ok(event) = tokio::time::timeout(Duration::from_secs(20), h.events.recv()).await else {
            panic!("the session did not go idle within 20 s; seen: {seen:#?}");
        };
        let event = event.unwrap();
        if matches!(event.msg, EventMsg::InputReceipt { .. }) {
            h.receipts.push(event);
            continue;
        }
        let idle = event.msg
            == EventMsg::StateChanged {
                state: EngineState::Idle,
            };
        seen.push(event);
        if idle {
            return seen;
        }
    }
}

/// Stops the session before the workspace goes, so no late snapshot or temporary directory
/// is left behind.
impl Drop for Harness {
    fn drop(&mut self) {
        self.engine.shutdown_now();
    }
}

/// The `type` tags of `events`, for order assertions.
pub fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            serde_json::to_value(&event.msg).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

pub fn text_deltas(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::AgentMessageDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The messages of the `warning` events among `events`.
pub fn warnings(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            // A retry is told by its own event, with the same words.
            EventMsg::Warning { message } | EventMsg::Retrying { message, .. } => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect()
}

/// Every assistant tool call in `history` has a matching tool result after it.
pub fn assert_history_valid(history: &[coder_protocol::ChatMessage]) {
    for (index, message) in history.iter().enumerate() {
        for call in &message.tool_calls {
            let answered = history[index + 1..]
                .iter()
                .any(|later| later.tool_call_id.as_deref() == Some(call.id.as_str()));
            assert!(
                answered,
                "tool call {} has no result in {history:#?}",
                call.id
            );
        }
    }
}

/// A tool that runs for `millis`, or until cancelled: `slow_read` (read-only) or
/// `slow_write`.
pub struct SlowTool {
    pub millis: u64,
    pub read_only: bool,
}

#[async_trait]
impl Tool for SlowTool {
    fn name(&self) -> &str {
        if self.read_only {
            "slow_read"
        } else {
            "slow_write"
        }
    }

    fn description(&self) -> &str {
        "Pretends to write for a while."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Other
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(self.millis)) => {}
            () = ctx.cancel.cancelled() => return Err("cancelled".into()),
        }
        Ok(ToolOutput::text(format!("wrote {}", input["label"])))
    }
}

/// Answers every permission request with `decision`, recording the requests.
pub fn answer_with(engine: &Engine, decision: PermissionDecision) -> Arc<Mutex<Vec<Event>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let handle = engine.clone();
    engine.on_event(move |event| {
        if let EventMsg::PermissionRequested { request_id, .. } = &event.msg {
            record.lock().unwrap().push(event.clone());
            handle
                .respond_permission(request_id, decision.clone())
                .unwrap();
        }
    });
    seen
}

/// What the model was last told by a tool: the last tool message of the last request.
pub fn last_tool_result(server: &MockModelServer) -> String {
    let requests = server.requests();
    let messages = requests.last().unwrap().body["messages"].clone();
    messages
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap()
}

/// `history` without the reminders the engine records after an input (the first input's
/// todo reminder), for tests about other things.
pub fn without_reminders(
    history: Vec<coder_protocol::ChatMessage>,
) -> Vec<coder_protocol::ChatMessage> {
    history
        .into_iter()
        .filter(|m| {
            !m.content
                .as_deref()
                .is_some_and(|text| text.starts_with("<system-reminder>"))
        })
        .collect()
}

/// Every file and directory under `dir`, recursively; none when `dir` does not exist.
pub fn entries_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        found.push(path.clone());
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            found.extend(entries_under(&path));
        }
    }
    found
}

/// The JSON a tool call `call_id` returned, as the model received it in request `index`.
pub fn tool_payload(server: &MockModelServer, index: usize, call_id: &str) -> Value {
    let messages = server.requests()[index].body["messages"].clone();
    let content = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no result for {call_id} in request {index}"))["content"]
        .as_str()
        .unwrap()
        .to_owned();
    serde_json::from_str(&content).unwrap()
}

/// The system prompt of request `index` (its first message).
pub fn system_of(server: &MockModelServer, index: usize) -> String {
    server.requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A git repository in `dir` with one committed file, `tracked.txt` ("original").
pub fn repository_with_tracked_txt(dir: &std::path::Path) {
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("tracked.txt"), "original").unwrap();
    git(dir, &["add", "tracked.txt"]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

/// Runs git in `dir` as a person would, asserting it succeeds.
pub fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}
