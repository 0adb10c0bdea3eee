//! Counting a context's tokens locally, for providers that report no usage and for the
//! compaction check before each model call.
//!
//! The count uses the model family's tokenizer from `tiktoken-rs` (embedded, offline):
//! `o200k_base` for OpenAI's GPT-4o, GPT-4.1, GPT-5 and o-series models, `cl100k_base` for
//! every other model, whose own tokenizers are not public or not embedded; for those the
//! count is an approximation, close for English and code. A tokenizer is built the first
//! time it is needed (about 30 ms for `cl100k_base`, 100 ms for `o200k_base`), never at start.
//!
//! Counting is avoided where a bound will do: a byte-level BPE token holds at least one
//! byte, so a text of `n` bytes has at most `n` tokens ([`bound_message`]). The compaction
//! check counts only when the bound crosses its limit.

use coder_protocol::{ChatMessage, ToolCall};

use crate::model::ToolSpec;

/// What each message adds besides its text (role and separators), as OpenAI counts it.
const PER_MESSAGE: u64 = 4;

/// What an attached image counts for: images are priced by their size in tiles, not by
/// their base64 text; about what a 1024x1024 image costs at OpenAI's high detail.
pub(crate) const PER_IMAGE: u64 = 1_000;

/// The most text counted at once: the tokenizer's list of tokens stays small (about 64 KB)
/// whatever the size of the text.
const PIECE: usize = 16 * 1024;

/// Where the first piece of `text` ends: all of it when short, else before the last
/// whitespace of its first [`PIECE`] bytes (at a character boundary when there is none).
fn piece_end(text: &str) -> usize {
    if text.len() <= PIECE {
        return text.len();
    }
    let mut end = PIECE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind(char::is_whitespace) {
        Some(space) if space > 0 => space,
        _ => end,
    }
}

/// A tokenizer family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    O200k,
    Cl100k,
}

impl Encoding {
    /// The encoding of `model` (a router's `vendor/` prefix and case ignored).
    pub fn of(model: &str) -> Self {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let openai_o200k = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "chatgpt-4o",
            "o1",
            "o3",
            "o4",
        ];
        if openai_o200k.iter().any(|prefix| name.starts_with(prefix)) {
            Self::O200k
        } else {
            Self::Cl100k
        }
    }

    /// The tokens of `text`, counted a piece of at most [`PIECE`] bytes at a time (the
    /// tokenizer lists every token it finds), cut before a space so no word is split.
    pub fn count(self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        let bpe = match self {
            Self::O200k => tiktoken_rs::o200k_base_singleton(),
            Self::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        };
        let mut total = 0;
        let mut rest = text;
        while !rest.is_empty() {
            let end = piece_end(rest);
            total += bpe.count_ordinary(&rest[..end]) as u64;
            rest = &rest[end..];
        }
        total
    }

    /// The tokens `message` adds to a request. Reasoning is not counted: it is never sent
    /// back to a provider.
    pub fn count_message(self, message: &ChatMessage) -> u64 {
        let mut tokens = PER_MESSAGE + PER_IMAGE * message.attachments.len() as u64;
        tokens += self.count(message.content.as_deref().unwrap_or_default());
        for call in &message.tool_calls {
            tokens += self.count_call(call);
        }
        tokens
    }

    fn count_call(self, call: &ToolCall) -> u64 {
        PER_MESSAGE + self.count(&call.function.name) + self.count(&call.function.arguments)
    }

    /// The tokens of a request's system prompt and tool definitions.
    pub fn count_prompt(self, system: &str, tools: &[ToolSpec]) -> u64 {
        let mut tokens = PER_MESSAGE + self.count(system);
        for tool in tools {
            tokens += PER_MESSAGE
                + self.count(&tool.name)
                + self.count(&tool.description)
                + self.count(tool.parameters.json().get());
        }
        tokens
    }

    /// The tokens of a reply: its text and tool calls (the reasoning only when the provider
    /// said nothing of it, since it is output the model produced).
    pub fn count_reply(self, text: &str, reasoning: &str, calls: &[ToolCall]) -> u64 {
        self.count(text)
            + self.count(reasoning)
            + calls.iter().map(|call| self.count_call(call)).sum::<u64>()
    }
}

/// At least as many tokens as `message` adds ([`Encoding::count_message`]), without a
/// tokenizer: its bytes.
pub(crate) fn bound_message(message: &ChatMessage) -> u64 {
    let mut bytes = PER_MESSAGE + PER_IMAGE * message.attachments.len() as u64;
    bytes += message.content.as_deref().map_or(0, str::len) as u64;
    for call in &message.tool_calls {
        bytes += PER_MESSAGE + (call.function.name.len() + call.function.arguments.len()) as u64;
    }
    bytes
}

/// At least as many tokens as [`Encoding::count_prompt`], without a tokenizer.
pub(crate) fn bound_prompt(system: &str, tools: &[ToolSpec]) -> u64 {
    let mut bytes = PER_MESSAGE + system.len() as u64;
    for tool in tools {
        bytes += PER_MESSAGE
            + (tool.name.len() + tool.description.len() + tool.parameters.json().get().len())
                as u64;
    }
    bytes
}

/// How big a conversation's context is, as far as it was measured: the last request and
/// its reply, as the provider reported them (or as they were counted), and how much of the
/// history that covers. Messages recorded since (tool results, new input) are measured
/// when the next request is: each once, never the whole history again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ContextSize {
    pub tokens: u64,
    /// How many history messages `tokens` covers.
    pub through: usize,
}

impl ContextSize {
    /// The messages of `history` not yet measured; all of them when the history was
    /// replaced since (it is then shorter than what was measured).
    fn unmeasured(self, history: &[ChatMessage]) -> (u64, &[ChatMessage]) {
        match history.get(self.through..) {
            Some(rest) if self.tokens > 0 => (self.tokens, rest),
            _ => (0, history),
        }
    }

    /// At least the tokens the next request holds, without a tokenizer. The system prompt
    /// and tools are in `tokens` once a request was measured (a task's changes to them are
    /// small); before that they are added.
    pub fn bound(self, system: &str, tools: &[ToolSpec], history: &[ChatMessage]) -> u64 {
        let (known, rest) = self.unmeasured(history);
        let prompt = if known == 0 {
            bound_prompt(system, tools)
        } else {
            0
        };
        known + prompt + rest.iter().map(bound_message).sum::<u64>()
    }

    /// The tokens the next request holds, counted with `encoding` off the async threads;
    /// only what was not measured yet is counted.
    pub async fn count(
        self,
        encoding: Encoding,
        system: &str,
        tools: &[ToolSpec],
        history: &[ChatMessage],
    ) -> u64 {
        let (known, rest) = self.unmeasured(history);
        let prompt = (known == 0).then(|| (system.to_owned(), tools.to_vec()));
        let rest = rest.to_vec();
        let counted = tokio::task::spawn_blocking(move || {
            let prompt = prompt.map_or(0, |(system, tools)| encoding.count_prompt(&system, &tools));
            prompt + rest.iter().map(|m| encoding.count_message(m)).sum::<u64>()
        })
        .await;
        // The count fails only if the tokenizer panics; the bound is then the answer.
        counted.map_or_else(
            |_| self.bound(system, tools, history),
            |counted| known + counted,
        )
    }
}

/// Each message's tokens, counted off the async threads.
pub(crate) async fn count_each(encoding: Encoding, messages: &[ChatMessage]) -> Vec<u64> {
    let owned = messages.to_vec();
    tokio::task::spawn_blocking(move || owned.iter().map(|m| encoding.count_message(m)).collect())
        .await
        .unwrap_or_else(|_| messages.iter().map(bound_message).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_use_o200k_and_others_cl100k() {
        assert_eq!(Encoding::of("gpt-4o-mini"), Encoding::O200k);
        assert_eq!(Encoding::of("openai/GPT-5"), Encoding::O200k);
        assert_eq!(Encoding::of("o3-mini"), Encoding::O200k);
        assert_eq!(Encoding::of("gpt-4-turbo"), Encoding::Cl100k);
        assert_eq!(Encoding::of("claude-sonnet-4-5"), Encoding::Cl100k);
        assert_eq!(Encoding::of("smollm2-135m"), Encoding::Cl100k);
    }

    #[test]
    fn counts_are_real_tokens_and_bounded_by_bytes() {
        // "hello world" is two tokens in both encodings.
        assert_eq!(Encoding::O200k.count("hello world"), 2);
        assert_eq!(Encoding::Cl100k.count("hello world"), 2);
        let message = ChatMessage::user("fn main() { println!(\"hello\"); }\n".repeat(50));
        for encoding in [Encoding::O200k, Encoding::Cl100k] {
            let tokens = encoding.count_message(&message);
            assert!(tokens > 50 && tokens <= bound_message(&message), "{tokens}");
        }
    }

    #[test]
    fn long_texts_count_as_one_piece_would() {
        let text = "fn main() { println!(\"hello\"); }\n".repeat(5_000);
        assert!(text.len() > 4 * PIECE);
        for encoding in [Encoding::O200k, Encoding::Cl100k] {
            let bpe = match encoding {
                Encoding::O200k => tiktoken_rs::o200k_base_singleton(),
                Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton(),
            };
            let whole = bpe.count_ordinary(&text) as u64;
            let pieces = encoding.count(&text);
            assert!(pieces.abs_diff(whole) <= 8, "{pieces} against {whole}");
        }
        // No whitespace at all, and multi-byte characters across the cut.
        let dense = "é".repeat(3 * PIECE);
        assert!(Encoding::Cl100k.count(&dense) > 0);
    }

    #[test]
    fn images_count_by_size_not_base64() {
        let mut message = ChatMessage::user("look");
        message
            .attachments
            .push(coder_protocol::Attachment::Inline {
                media_type: "image/png".into(),
                data: "A".repeat(100_000),
            });
        assert_eq!(
            Encoding::Cl100k.count_message(&message),
            PER_MESSAGE + PER_IMAGE + 1
        );
        assert!(bound_message(&message) < 2_000);
    }
}
