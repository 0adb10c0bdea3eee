//! The conversation tools, answered by the session: `conv_list`, `conv_history` and
//! `conv_destroy` at once; `conv_create` and `conv_send` checked and made ready as a
//! [`Handoff`], which ends the turn and which the driver runs.

use coder_protocol::{ChatMessage, ConversationId, InputItem, TaskId};
use serde_json::{Value, json};

use super::{Opener, Session};
use crate::conversation::ConversationSpec;
use crate::sync::lock;
use crate::tools::conversation::{ConversationCall, CreateArgs, SendArgs, failure};
use crate::turn::{CallAnswer, Closure, ConversationHost, Handoff};

impl ConversationHost for Session {
    fn handle(
        &self,
        caller: ConversationId,
        call_id: &str,
        call: ConversationCall,
        depth: u32,
    ) -> CallAnswer {
        let limit = self.config().max_interrupt_chain_depth;
        if call.hands_over() && depth >= limit {
            return CallAnswer::Result(failure(
                "success",
                format!(
                    "too many nested conversation handoffs (the limit is {limit}); do this work here instead"
                ),
            ));
        }
        let limit = self.config().max_handoffs_per_input;
        if call.hands_over() && self.driver.chain_handoffs() >= limit {
            // Each handoff queues its work ahead of later input: the bound keeps that input
            // from waiting without end.
            return CallAnswer::Result(failure(
                "success",
                format!(
                    "this request already handed work to other conversations {limit} times, the limit (maxHandoffsPerInput); finish the work here instead"
                ),
            ));
        }
        match call {
            ConversationCall::Create(args) => self.prepare_create(caller, call_id, args),
            ConversationCall::Send(args) => self.prepare_send(caller, call_id, args),
            ConversationCall::List => CallAnswer::Result(self.list_payload()),
            ConversationCall::History {
                conversation,
                limit,
            } => CallAnswer::Result(
                conversation
                    .and_then(|id| self.history_entries(id, limit).ok())
                    .map_or_else(
                        || failure("ok", "conversation not found"),
                        |entries| json!({"entries": entries}).to_string(),
                    ),
            ),
            ConversationCall::Destroy { conversation } => CallAnswer::Result(match conversation {
                Some(id) if self.is_root(id) => {
                    failure("ok", "the root conversation cannot be destroyed")
                }
                Some(id) if self.destroy_conversation(id).is_ok() => {
                    json!({"ok": true}).to_string()
                }
                _ => failure("ok", "conversation not found"),
            }),
        }
    }
}

impl Session {
    /// `conv_create`: opens the conversation now (inheriting from the caller), so a spec
    /// that cannot work fails the call; the task on it runs after the turn.
    fn prepare_create(
        &self,
        caller: ConversationId,
        call_id: &str,
        args: CreateArgs,
    ) -> CallAnswer {
        let mut input = Vec::new();
        if let Some(text) = &args.user_instruction {
            input.push(InputItem::Text { text: text.clone() });
        }
        input.extend(args.items.iter().cloned());
        // Checked before the conversation opens: input it could not take opens nothing.
        if let Err(err) = self.check_input(&input, 0) {
            return CallAnswer::Result(failure("success", err.to_string()));
        }
        let spec = ConversationSpec {
            base_instructions: args.base_instruction_text,
            base_instructions_file: args.base_instruction_file.map(Into::into),
            user_instructions: None,
            mcp_allowlist: args.mcp_allowlist,
            tools_prefs: args.internal_tools,
            mode: None,
            model: None,
        };
        let target = match self.open_conversation(spec, Opener::Conversation(caller)) {
            Ok(id) => id,
            Err(err) => return CallAnswer::Result(failure("success", err.to_string())),
        };
        let closure = Closure {
            call_id: call_id.to_owned(),
            tool_name: "conv_create".to_owned(),
            target,
            first_user_message: args.user_instruction,
            first_items_count: (!args.items.is_empty()).then_some(args.items.len()),
        };
        CallAnswer::HandOver(Handoff {
            continuation: TaskId::new(),
            target,
            input,
            closure,
        })
    }

    /// `conv_send`: to an existing conversation other than the caller and not waiting for a
    /// continuation.
    fn prepare_send(&self, caller: ConversationId, call_id: &str, args: SendArgs) -> CallAnswer {
        let Some(target) = args
            .conversation
            .filter(|id| self.conversation(*id).is_ok())
        else {
            return CallAnswer::Result(failure("success", "conversation not found"));
        };
        if target == caller {
            return CallAnswer::Result(failure("success", "a conversation cannot send to itself"));
        }
        if self.driver.awaits_continuation(target) {
            // Its history ends with a tool call that this chain answers later: a message now
            // would come before that answer and make its next request invalid.
            return CallAnswer::Result(failure(
                "success",
                format!(
                    "conversation {target} is waiting for the result of its own conv_create/conv_send call, which this chain of conversations answers; it cannot take a message now. Reply with your answer instead: it becomes that result"
                ),
            ));
        }
        let mut input = Vec::new();
        if let Some(text) = args.text {
            input.push(InputItem::Text { text });
        }
        input.extend(args.items);
        let held = self
            .conversation(target)
            .map(|conv| crate::conversation::image_bytes_of(&lock(&conv).history))
            .unwrap_or_default();
        if let Err(err) = self.check_input(&input, held) {
            return CallAnswer::Result(failure("success", err.to_string()));
        }
        // It runs at most in the caller's mode, from now on: narrowing needs nobody.
        if let Ok(ceiling) = self.mode(caller) {
            self.narrow_to_caller(target, ceiling);
        }
        let closure = Closure {
            call_id: call_id.to_owned(),
            tool_name: "conv_send".to_owned(),
            target,
            first_user_message: None,
            first_items_count: None,
        };
        CallAnswer::HandOver(Handoff {
            continuation: TaskId::new(),
            target,
            input,
            closure,
        })
    }

    fn list_payload(&self) -> String {
        let conversations: Vec<Value> = self
            .list_conversations()
            .into_iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "message_count": c.message_count,
                    "last_active_at": c.last_active_at,
                })
            })
            .collect();
        json!({"conversations": conversations}).to_string()
    }

    /// Answers the call of a continuation that will not run (`why` says what happened), so
    /// the caller's history stays a valid request.
    pub(super) fn close_dropped(&self, caller: ConversationId, closure: &Closure, why: &str) {
        let Ok(conversation) = self.conversation(caller) else {
            return;
        };
        let output = json!({
            "conversation_id": closure.target,
            "finished": false,
            "reason": why,
        })
        .to_string();
        self.change(&conversation, |conversation| {
            conversation.record([ChatMessage::tool_result(
                &closure.call_id,
                &closure.tool_name,
                output,
            )])
        });
    }

    /// The result a continuation task injects for its closure: the target's last assistant
    /// message, and for `conv_create` the first input it gave.
    /// The handed-over call's line for people: which conversation answered, and the first
    /// line of its answer (the payload itself is JSON, for the model).
    pub(super) fn closure_summary(&self, closure: &Closure) -> String {
        let last = self
            .conversation(closure.target)
            .ok()
            .and_then(|conv| lock(&conv).last_assistant_text())
            .unwrap_or_default();
        let answer = if last.trim().is_empty() {
            "no answer".to_owned()
        } else {
            format!(
                "answered: {}",
                last.trim().lines().next().unwrap_or_default()
            )
        };
        crate::turn::summary::completed(&format!("conversation {}", closure.target), &answer)
    }

    pub(super) fn closure_payload(&self, closure: &Closure) -> String {
        let last = self
            .conversation(closure.target)
            .ok()
            .and_then(|conv| lock(&conv).last_assistant_text())
            .unwrap_or_default();
        let mut payload = json!({
            "conversation_id": closure.target,
            "last_assistant_message": last,
        });
        if closure.tool_name == "conv_create" {
            if let Some(first) = &closure.first_user_message {
                payload["first_user_message"] = json!(first);
            }
            if let Some(count) = closure.first_items_count {
                payload["first_items_count"] = json!(count);
            }
        }
        payload.to_string()
    }
}
