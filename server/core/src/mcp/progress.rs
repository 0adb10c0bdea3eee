//! The progress an MCP server reports on a tool call, streamed as the call's live output.
//!
//! `rmcp` gives every request a `progressToken` of its own in `_meta` (a count per
//! connection, so each call has its own token), and a server that reports progress sends
//! `notifications/progress` for that token while it works. A call made through
//! [`call_tool`] with a [`CallProgress`] carries its live output in the request; the
//! connection's [`ProgressTap`] sees the request leave with its token, and from then on
//! turns each report for that token into one line of the `progress` stream ([`line`]).
//!
//! - Ordered: the tap reads the server's messages in the order they came, before `rmcp`
//!   handles them, so every report the server sent before the call's result is shown
//!   before the call ends, in the server's order.
//! - Nothing after the end: a [`CallProgress`] ends the call's live output when it is
//!   dropped (the call answered, failed, timed out or was interrupted); a later report is
//!   dropped, as is one for a token no call of coder's holds.
//! - Bounded, redacted and safe to print as every live output is ([`LiveOutput`]): 4 MiB
//!   per call, coder's secrets redacted; a report's control characters are shown, not
//!   obeyed, and its line breaks become spaces, so one report is one line.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use coder_protocol::OutputStream;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, JsonRpcNotification,
    ProgressNotificationParam, ProgressToken, RequestId, ServerNotification, ServerResult,
};
use rmcp::service::{
    Peer, PeerRequestOptions, RoleClient, RxJsonRpcMessage, ServiceError, TxJsonRpcMessage,
};
use rmcp::transport::Transport;

use crate::control_chars::neutralize;
use crate::tools::ToolContext;
use crate::tools::live_output::LiveOutput;

/// The live output of one tool call, for its server's progress reports; the output ends
/// when this is dropped.
pub(super) struct CallProgress(Arc<LiveOutput>);

impl CallProgress {
    /// Progress for the call of `ctx`, when its context streams live output.
    pub fn new(ctx: &ToolContext) -> Option<Self> {
        let sink = ctx.live_output.clone()?;
        Some(Self(LiveOutput::new(sink, ctx.env.clone())))
    }
}

impl Drop for CallProgress {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Calls a tool on `peer` as `rmcp`'s `call_tool` does, with its `progress` reported as the
/// call's live output. Dropped before the answer, it tells the server the call is
/// abandoned (`notifications/cancelled`).
pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    progress: Option<&CallProgress>,
) -> Result<CallToolResult, ServiceError> {
    let mut request = CallToolRequest::new(params);
    if let Some(progress) = progress {
        request
            .extensions_mut()
            .insert(Reported(Arc::downgrade(&progress.0)));
    }
    let handle = peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(request),
            PeerRequestOptions::no_options(),
        )
        .await?;
    let mut abandoned = Abandoned {
        peer,
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandoned.id = None;
    tool_result(answer?)
}

/// A connection's transport, with the progress of coder's tool calls taken from what the
/// server sends.
pub(super) struct ProgressTap<T> {
    inner: T,
    calls: Calls,
}

impl<T> ProgressTap<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            calls: Calls::default(),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && let Some(Reported(output)) = request.request.extensions().get::<Reported>()
            && let Some(token) = request.request.get_meta().get_progress_token()
        {
            self.calls.follow(token, output.clone());
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ProgressNotification(progress),
            ..
        })) = &message
        {
            self.calls.report(&progress.params);
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// A report as one line: its message and its progress (`Downloading (3/10)`), the progress
/// alone without a message (`3/10`), without a total the progress alone (`42`).
fn line(report: &ProgressNotificationParam) -> String {
    let progress = match report.total {
        Some(total) => format!("{}/{total}", report.progress),
        None => report.progress.to_string(),
    };
    let message = report.message.as_deref().map(one_line);
    match message.as_deref().map(str::trim) {
        Some(message) if !message.is_empty() => format!("{message} ({progress})\n"),
        _ => format!("{progress}\n"),
    }
}

/// `text` on one line, its line breaks made spaces and its other control characters shown.
fn one_line(text: &str) -> String {
    let flat = text.replace("\r\n", " ").replace(['\n', '\r'], " ");
    neutralize(&flat).into_owned()
}

/// The live output a call's request carries to the tap; weak, so a call that ended is not
/// kept alive by its route.
#[derive(Clone)]
struct Reported(Weak<LiveOutput>);

/// The calls under way on one connection, by their progress tokens.
#[derive(Default)]
struct Calls(HashMap<ProgressToken, Weak<LiveOutput>>);

impl Calls {
    /// Reports for `token` go to `output` from now on; the routes of calls that ended go.
    fn follow(&mut self, token: ProgressToken, output: Weak<LiveOutput>) {
        self.0.retain(|_, output| output.strong_count() > 0);
        self.0.insert(token, output);
    }

    /// Shows `report` as a line of its call's output; drops it when no call under way holds
    /// its token.
    fn report(&mut self, report: &ProgressNotificationParam) {
        let Some(output) = self.0.get(&report.progress_token) else {
            return;
        };
        match output.upgrade() {
            Some(output) => output.push(OutputStream::Progress, line(report).as_bytes()),
            None => {
                self.0.remove(&report.progress_token);
            }
        }
    }
}

/// A request awaited: dropped before its answer, it tells the server that nobody waits for
/// it any more, as `rmcp`'s own calls do.
struct Abandoned<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "request abandoned by the caller".to_owned();
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                .await;
        });
    }
}

/// A `tools/call` answer as a result, as `rmcp`'s `call_tool` takes it: an answer without
/// `content` (which the untagged [`ServerResult`] reads as another kind of result) is a
/// result without content.
fn tool_result(answer: ServerResult) -> Result<CallToolResult, ServiceError> {
    match answer {
        ServerResult::CallToolResult(result) => Ok(result),
        ServerResult::EmptyResult(_) | ServerResult::TaskAckResult(_) => {
            Ok(CallToolResult::default())
        }
        ServerResult::CustomResult(custom)
            if custom
                .0
                .as_object()
                .is_some_and(|fields| fields.keys().all(|key| key == "_meta")) =>
        {
            Ok(CallToolResult::default())
        }
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use rmcp::model::NumberOrString;

    use super::*;
    use crate::process::ToolEnv;
    use crate::sync::lock;
    use crate::tools::live_output::OutputSink;

    fn report(
        token: i64,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> ProgressNotificationParam {
        let mut report =
            ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress);
        report.total = total;
        report.message = message.map(str::to_owned);
        report
    }

    #[test]
    fn a_report_is_one_line_of_its_message_and_progress() {
        let check = |total, message, expected: &str| {
            assert_eq!(
                line(&report(1, 3.0, total, message)),
                expected,
                "{message:?}"
            );
        };
        check(Some(10.0), Some("Downloading"), "Downloading (3/10)\n");
        check(Some(10.0), None, "3/10\n");
        check(None, None, "3\n");
        check(None, Some("Indexing"), "Indexing (3)\n");
        check(Some(10.0), Some("  "), "3/10\n");
        check(
            Some(4.0),
            Some("\x1b[2Jwiped\r\nnext\rover\u{202e}"),
            "^[[2Jwiped next over\\u{202e} (3/4)\n",
        );
        assert_eq!(line(&report(1, 0.25, Some(1.5), None)), "0.25/1.5\n");
    }

    type Seen = Arc<Mutex<Vec<(OutputStream, String)>>>;

    /// A call's live output that records its deltas, with `secret` redacted.
    fn recorded(secret: &str) -> (Arc<LiveOutput>, Seen) {
        let seen = Seen::default();
        let sink = seen.clone();
        let output = LiveOutput::new(
            OutputSink::new(move |stream, delta| lock(&sink).push((stream, delta))),
            Arc::new(ToolEnv::new(Vec::new(), vec![secret.to_owned()])),
        );
        (output, seen)
    }

    #[test]
    fn reports_go_to_the_call_of_their_token_and_others_are_dropped() {
        let secret = "sk-live-0123456789abcdef";
        let (first, first_seen) = recorded(secret);
        let (second, second_seen) = recorded(secret);
        let mut calls = Calls::default();
        let token = |n| ProgressToken(NumberOrString::Number(n));
        calls.follow(token(1), Arc::downgrade(&first));
        calls.follow(token(2), Arc::downgrade(&second));
        calls.report(&report(7, 1.0, None, Some("nobody's")));
        calls.report(&report(1, 1.0, Some(2.0), Some(&format!("key {secret}"))));
        calls.report(&report(2, 5.0, None, None));
        // The first call ends: its output is finished and dropped; a late report for it
        // goes nowhere, and its route is gone.
        first.finish();
        drop(first);
        calls.report(&report(1, 2.0, Some(2.0), None));
        assert_eq!(calls.0.len(), 1);
        assert_eq!(
            *lock(&first_seen),
            vec![(OutputStream::Progress, "key [redacted] (1/2)\n".to_owned())]
        );
        assert_eq!(
            *lock(&second_seen),
            vec![(OutputStream::Progress, "5\n".to_owned())]
        );
    }
}
