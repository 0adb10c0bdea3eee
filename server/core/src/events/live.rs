//! What a snapshot of the session needs from the event stream, kept as the events pass: the
//! engine's state, the permission requests still waiting and the tool calls still running.
//!
//! It is read from the events themselves, under the hub's lock, so it always agrees with the
//! `seq` the snapshot names. A request stops waiting when it is withdrawn, or its call
//! starts, fails or completes, or its task ends; a call stops running when it completes or
//! fails, or its task ends.

use std::sync::Arc;

use coder_protocol::{EngineState, Event, EventMsg};

/// The state the events told so far.
pub(crate) struct Live {
    pub state: EngineState,
    /// `permission_requested` events not answered yet, oldest first.
    pub permission_requests: Vec<Arc<Event>>,
    /// `tool_call_started` events of calls not ended yet, oldest first.
    pub running_tools: Vec<Arc<Event>>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            state: EngineState::Idle,
            permission_requests: Vec::new(),
            running_tools: Vec::new(),
        }
    }
}

impl Live {
    /// Takes `event` into account.
    pub fn apply(&mut self, event: &Event) {
        match &event.msg {
            EventMsg::StateChanged { state } => self.state = *state,
            EventMsg::PermissionRequested { .. } => {
                self.permission_requests.push(Arc::new(event.clone()));
            }
            // A request that ended without an answer (the mode changed, the task was
            // interrupted) waits no longer.
            EventMsg::PermissionWithdrawn { request_id, .. } => {
                self.permission_requests.retain(|asked| {
                    !matches!(&asked.msg, EventMsg::PermissionRequested { request_id: kept, .. } if kept == request_id)
                });
            }
            EventMsg::ToolCallStarted { call_id, .. } => {
                self.permission_requests
                    .retain(|asked| !same_call(asked, event, call_id));
                self.running_tools.push(Arc::new(event.clone()));
            }
            EventMsg::ToolCallCompleted { call_id, .. }
            | EventMsg::ToolCallFailed { call_id, .. } => {
                self.permission_requests
                    .retain(|asked| !same_call(asked, event, call_id));
                self.running_tools
                    .retain(|started| !same_call(started, event, call_id));
            }
            msg if msg.task_end().is_some() => {
                let ended = |kept: &Arc<Event>| {
                    kept.conversation_id == event.conversation_id && kept.task_id == event.task_id
                };
                self.permission_requests.retain(|asked| !ended(asked));
                self.running_tools.retain(|started| !ended(started));
            }
            _ => {}
        }
    }
}

/// Whether `kept` is about the call `call_id` of `event`'s conversation.
fn same_call(kept: &Event, event: &Event, call_id: &str) -> bool {
    if kept.conversation_id != event.conversation_id {
        return false;
    }
    match &kept.msg {
        EventMsg::PermissionRequested { call_id: kept, .. }
        | EventMsg::ToolCallStarted { call_id: kept, .. } => kept == call_id,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::{ConversationId, TaskId, ToolKind};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    struct Stream {
        conversation: ConversationId,
        task: TaskId,
        seq: u64,
        live: Live,
    }

    impl Stream {
        fn new() -> Self {
            Self {
                conversation: ConversationId::new(),
                task: TaskId::new(),
                seq: 0,
                live: Live::default(),
            }
        }

        fn emit(&mut self, msg: EventMsg) {
            let event = Event {
                seq: self.seq,
                conversation_id: self.conversation,
                task_id: Some(self.task),
                msg,
            };
            self.seq += 1;
            self.live.apply(&event);
        }

        fn asked(&self) -> Vec<u64> {
            self.live
                .permission_requests
                .iter()
                .map(|e| e.seq)
                .collect()
        }

        fn running(&self) -> Vec<u64> {
            self.live.running_tools.iter().map(|e| e.seq).collect()
        }
    }

    fn asked(call_id: &str) -> EventMsg {
        EventMsg::PermissionRequested {
            request_id: format!("r-{call_id}"),
            call_id: call_id.to_owned(),
            tool_name: "bash".to_owned(),
            arguments: json!({}),
            kind: ToolKind::Execute,
            locations: Vec::new(),
            title: String::new(),
            reason: String::new(),
            summary: String::new(),
            options: Vec::new(),
            human_required: false,
            command: None,
            diff: None,
            plan: None,
            changes: Vec::new(),
            question: None,
        }
    }

    fn started(call_id: &str) -> EventMsg {
        EventMsg::ToolCallStarted {
            call_id: call_id.to_owned(),
            tool_name: "bash".to_owned(),
            arguments: json!({}),
            kind: ToolKind::Execute,
            locations: Vec::new(),
            title: String::new(),
        }
    }

    fn failed(call_id: &str) -> EventMsg {
        EventMsg::ToolCallFailed {
            call_id: call_id.to_owned(),
            tool_name: "bash".to_owned(),
            error: String::new(),
            summary: String::new(),
            duration_ms: 0,
        }
    }

    #[test]
    fn a_request_waits_until_its_call_starts_or_fails_and_a_call_runs_until_it_ends() {
        let mut stream = Stream::new();
        stream.emit(EventMsg::StateChanged {
            state: EngineState::WaitingForPermission,
        });
        stream.emit(asked("a"));
        stream.emit(asked("b"));
        assert_eq!(stream.live.state, EngineState::WaitingForPermission);
        assert_eq!(stream.asked(), [1, 2]);
        stream.emit(started("a"));
        assert_eq!(stream.asked(), [2]);
        assert_eq!(stream.running(), [3]);
        stream.emit(failed("b"));
        assert_eq!(stream.asked(), Vec::<u64>::new());
        stream.emit(EventMsg::ToolCallCompleted {
            call_id: "a".to_owned(),
            tool_name: "bash".to_owned(),
            output: String::new(),
            summary: String::new(),
            duration_ms: 0,
            diff: None,
        });
        assert_eq!(stream.running(), Vec::<u64>::new());
    }

    #[test]
    fn the_end_of_a_task_ends_its_requests_and_calls() {
        let mut stream = Stream::new();
        stream.emit(started("a"));
        stream.emit(asked("b"));
        stream.emit(EventMsg::TurnAborted {
            reason: coder_protocol::AbortReason::Interrupted,
            continuation: None,
            replaced_by: None,
        });
        assert_eq!(stream.asked(), Vec::<u64>::new());
        assert_eq!(stream.running(), Vec::<u64>::new());
    }
}
