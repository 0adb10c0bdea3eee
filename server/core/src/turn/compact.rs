//! Compaction (seed 001): before a model call whose request would pass `compactThreshold`
//! of the context window, or when a person asks, the model summarises the history's older
//! part; the history becomes the summary followed by the most recent turns, kept whole.
//!
//! The summary request is a turn of its own: the compaction prompt replaces the system
//! prompt for it only (seed 003's per-turn override) and the older part goes as one
//! transcript in a user message, so it needs no tools and any provider takes it. A
//! transcript too long for the window loses its oldest turns first, before the request and
//! again when the provider still refuses it. The replaced messages are archived whole.

use coder_protocol::{
    ArchivedSegment, ChatMessage, CompactTrigger, ErrorKind, EventMsg, Role, TokenUsage,
};
use tokio_util::sync::CancellationToken;

use super::{Recorder, TurnModel, emit_usage};
use crate::error::EngineError;
use crate::events::TaskEvents;
use crate::model::{ModelRequest, StreamError};
use crate::prompt::{SUMMARY_CLOSE, SUMMARY_OPEN};
use crate::tokens::{ContextSize, count_each};

/// The most recent turns keep at most this share of the context window (and at most half
/// of the history, so a compaction always has something to summarise).
const KEEP_SHARE: f64 = 0.25;

/// The longest summary asked for, in tokens (less when the model's output limit is lower).
const SUMMARY_TOKENS: u32 = 4_096;

/// How often a summary request the provider found too long is sent again, shorter.
const SHORTER_ATTEMPTS: usize = 3;

/// What a compaction made of a history.
#[derive(Debug)]
pub(crate) struct Compaction {
    /// The summary message, then the turns kept.
    pub history: Vec<ChatMessage>,
    /// The messages replaced, in order.
    pub archived: Vec<ChatMessage>,
    pub summary: String,
    pub token_before: u64,
    pub token_compact: u64,
    /// The summary request's usage, when the provider reported it.
    pub usage: Option<TokenUsage>,
}

/// Why a history was not compacted.
#[derive(Debug)]
pub(crate) enum CompactError {
    /// The history has no older part to summarise (one turn, or none).
    Nothing(String),
    /// The task was stopped while the summary streamed.
    Cancelled,
    /// The summary request failed.
    Failed(EngineError),
}

/// Summarises the older part of `history` (which with the system prompt and tools holds
/// `token_before` tokens) with `model`; `focus` is what a person asked the summary to keep
/// or stress (`/compact <instructions>`).
pub(crate) async fn compact(
    model: &TurnModel,
    history: &[ChatMessage],
    token_before: u64,
    focus: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Compaction, CompactError> {
    let system = crate::prompt::compact_prompt(focus);
    let counts = count_each(model.encoding, history).await;
    let history_tokens: u64 = counts.iter().sum();
    let window = model
        .context_window
        .unwrap_or(crate::model::UNKNOWN_MODEL_LIMITS.context_window);
    let keep_budget = ((window as f64 * KEEP_SHARE) as u64).min(history_tokens / 2);
    let cut = split(history, &counts, keep_budget).ok_or_else(|| {
        CompactError::Nothing(format!(
            "nothing to compact: the history ({} messages) is a single exchange",
            history.len()
        ))
    })?;
    let prompt_tokens = token_before.saturating_sub(history_tokens);
    let summary_tokens = SUMMARY_TOKENS.min(model.max_output_tokens);
    let instructions = model.encoding.count(&system);
    // What the transcript may take: the window, less the instructions and the summary,
    // with a tenth to spare for the transcript's labels and the tokenizer's approximation.
    let room =
        (window.saturating_sub(instructions + u64::from(summary_tokens)) as f64 * 0.9) as u64;
    let older = &history[..cut];
    let mut start = 0;
    while start < cut && counts[start..cut].iter().sum::<u64>() > room {
        start = next_turn(older, start);
    }
    if start == cut {
        return Err(CompactError::Failed(EngineError::new(
            ErrorKind::ContextLengthExceeded,
            "the history's oldest turn alone is larger than a summary request may be",
        )));
    }
    let mut attempts = 0;
    let response = loop {
        let transcript = transcript(&older[start..], start);
        let messages = [ChatMessage::user(transcript)];
        let request = ModelRequest {
            model: &model.name,
            system: &system,
            lead: &[],
            messages: &messages,
            as_text: None,
            cache: None,
            tools: &[],
            max_output_tokens: summary_tokens,
            prompt_cache_key: None,
        };
        match model.client.stream(&request, cancel, &mut |_| {}).await {
            Ok(response) => break response,
            Err(StreamError::Cancelled { .. }) => return Err(CompactError::Cancelled),
            Err(StreamError::Failed(error))
                if error.kind() == ErrorKind::ContextLengthExceeded
                    && attempts < SHORTER_ATTEMPTS
                    && start < cut =>
            {
                attempts += 1;
                // Drop about a quarter of what is left, whole turns at a time.
                let target = start + (cut - start).div_ceil(4);
                while start < target {
                    start = next_turn(older, start);
                }
                if start == cut {
                    return Err(CompactError::Failed(error));
                }
            }
            Err(StreamError::Failed(error)) => return Err(CompactError::Failed(error)),
        }
    };
    let summary = response.text.trim().to_owned();
    if summary.is_empty() {
        return Err(CompactError::Failed(EngineError::new(
            ErrorKind::Provider,
            "the model answered the compaction request with an empty summary",
        )));
    }
    let unsummarised = if start > 0 {
        format!(
            "(The {start} oldest messages did not fit in one summary request and are not summarised; they are archived.)\n\n"
        )
    } else {
        String::new()
    };
    let message = ChatMessage::user(format!(
        "{SUMMARY_OPEN}{unsummarised}{summary}{SUMMARY_CLOSE}"
    ));
    let summary_message_tokens = model.encoding.count_message(&message);
    let kept_tokens: u64 = counts[cut..].iter().sum();
    let mut compacted = Vec::with_capacity(history.len() - cut + 1);
    compacted.push(message);
    compacted.extend_from_slice(&history[cut..]);
    Ok(Compaction {
        history: compacted,
        archived: history[..cut].to_vec(),
        summary,
        token_before,
        token_compact: prompt_tokens + summary_message_tokens + kept_tokens,
        usage: response.usage,
    })
}

/// Where a compaction runs: the model that summarises, where it records and reports, and
/// what stops it.
pub(crate) struct Compactor<'a> {
    pub model: &'a TurnModel,
    pub recorder: &'a dyn Recorder,
    pub events: &'a TaskEvents,
    pub cancel: &'a CancellationToken,
    /// What a person asked the summary to keep or stress; `None` for the prompt alone.
    pub focus: Option<&'a str>,
}

impl Compactor<'_> {
    /// Compacts `history` (of `token_before` tokens with the prompt), records the result
    /// and reports it (`compacted`, then `token_count`); `size` becomes the compacted
    /// history's.
    pub async fn run(
        &self,
        history: &[ChatMessage],
        size: &mut ContextSize,
        token_before: u64,
        trigger: CompactTrigger,
    ) -> Result<(), CompactError> {
        let compaction =
            compact(self.model, history, token_before, self.focus, self.cancel).await?;
        *size = ContextSize {
            tokens: compaction.token_compact,
            through: compaction.history.len(),
        };
        let archived_messages = compaction.archived.len();
        let summary = compaction.summary.clone();
        let (token_before, token_compact) = (compaction.token_before, compaction.token_compact);
        let usage = compaction.usage.unwrap_or_default();
        let (segment, now) = self.recorder.compacted(compaction, trigger, *size);
        self.events.emit(EventMsg::Compacted {
            trigger,
            token_before,
            token_compact,
            compact_rate: rate(token_compact, token_before),
            summary,
            archived_messages,
            segment,
        });
        emit_usage(self.events, usage, now, self.model.context_window);
        Ok(())
    }
}

/// `after / before`, to three decimals.
fn rate(after: u64, before: u64) -> f64 {
    if before == 0 {
        return 1.0;
    }
    ((after as f64 / before as f64) * 1000.0).round() / 1000.0
}

/// The archived segment a compaction leaves.
pub(crate) fn segment(
    index: usize,
    compaction: Compaction,
    trigger: CompactTrigger,
) -> ArchivedSegment {
    ArchivedSegment {
        index,
        archived_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        trigger,
        summary: compaction.summary,
        messages: compaction.archived,
    }
}

/// Where the kept part of `history` starts: the earliest turn boundary whose suffix holds
/// at most `budget` tokens, a user message rather than an assistant one; the last boundary
/// when even that suffix is larger. A boundary is never a tool result, so a call keeps its
/// result. `None` when the history has no boundary after its first two messages.
fn split(history: &[ChatMessage], counts: &[u64], budget: u64) -> Option<usize> {
    // The older part holds at least a question and what answered it.
    let boundaries: Vec<usize> = (2..history.len())
        .filter(|&index| history[index].role != Role::Tool)
        .collect();
    let last = *boundaries.last()?;
    let suffix = |index: usize| counts[index..].iter().sum::<u64>();
    let fits = |index: &&usize| suffix(**index) <= budget;
    boundaries
        .iter()
        .filter(|index| history[**index].role == Role::User)
        .find(fits)
        .or_else(|| boundaries.iter().find(fits))
        .copied()
        .or(Some(last))
}

/// The start of the turn after the one at `start` (a user message), or of the next message
/// that is not a tool result when no user message follows.
fn next_turn(history: &[ChatMessage], start: usize) -> usize {
    let after = start + 1;
    history[after.min(history.len())..]
        .iter()
        .position(|message| message.role == Role::User)
        .or_else(|| {
            history[after.min(history.len())..]
                .iter()
                .position(|message| message.role != Role::Tool)
        })
        .map_or(history.len(), |offset| after + offset)
}

/// The messages as a transcript the summary request carries; `first` is the index of the
/// first one in the history.
fn transcript(messages: &[ChatMessage], first: usize) -> String {
    let mut out = String::new();
    if first > 0 {
        out.push_str(&format!(
            "[The {first} oldest messages are left out: they did not fit.]\n\n"
        ));
    }
    for message in messages {
        let content = message.content.as_deref().unwrap_or_default();
        match message.role {
            Role::System => out.push_str(&format!("## System\n{content}\n\n")),
            Role::User => out.push_str(&format!("## User\n{content}\n")),
            Role::Assistant => {
                out.push_str("## Assistant\n");
                if !content.is_empty() {
                    out.push_str(content);
                    out.push('\n');
                }
                for call in &message.tool_calls {
                    out.push_str(&format!(
                        "[calls {} with {}]\n",
                        call.function.name, call.function.arguments
                    ));
                }
            }
            Role::Tool => out.push_str(&format!(
                "## Result of {}\n{content}\n",
                message.name.as_deref().unwrap_or("a tool")
            )),
        }
        for _ in &message.attachments {
            out.push_str("[an image]\n");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::ToolCall;

    fn turn(n: usize) -> Vec<ChatMessage> {
        let call = ToolCall::function(format!("c{n}"), "read".into(), "{}".into());
        vec![
            ChatMessage::user(format!("ask {n}")),
            ChatMessage::assistant(String::new(), String::new(), vec![call]),
            ChatMessage::tool_result(&format!("c{n}"), "read", "out"),
            ChatMessage::assistant(format!("answer {n}"), String::new(), Vec::new()),
        ]
    }

    #[test]
    fn the_kept_part_starts_at_a_user_message_and_never_splits_a_call_from_its_result() {
        let history: Vec<ChatMessage> = (0..4).flat_map(turn).collect();
        let counts = vec![10; history.len()];
        // 40 tokens keep the last turn whole.
        assert_eq!(split(&history, &counts, 40), Some(12));
        assert_eq!(split(&history, &counts, 85), Some(8));
        // Less than a turn: an assistant boundary inside the last turn, never a result.
        let cut = split(&history, &counts, 15).unwrap();
        assert_eq!(cut, 15);
        assert_ne!(history[cut].role, Role::Tool);
        // One message: nothing to summarise.
        assert_eq!(split(&history[..1], &counts[..1], 100), None);
    }

    #[test]
    fn dropping_the_oldest_goes_a_turn_at_a_time() {
        let history: Vec<ChatMessage> = (0..3).flat_map(turn).collect();
        assert_eq!(next_turn(&history, 0), 4);
        assert_eq!(next_turn(&history, 4), 8);
        assert_eq!(next_turn(&history, 8), 9);
        assert_eq!(next_turn(&history, 11), 12);
    }

    #[test]
    fn the_transcript_names_roles_calls_and_results() {
        let text = transcript(&turn(1), 0);
        assert!(text.contains("## User\nask 1"), "{text}");
        assert!(text.contains("[calls read with {}]"), "{text}");
        assert!(text.contains("## Result of read\nout"), "{text}");
        assert!(text.contains("## Assistant\nanswer 1"), "{text}");
        assert!(transcript(&turn(1), 4).starts_with("[The 4 oldest"));
    }
}
