//! What coder knows of common models: the context window (what one request may hold, in
//! tokens) and the most output tokens one reply may have. `contextWindow` and
//! `maxOutputTokens` in the configuration override both; a model this table does not know
//! gets [`UNKNOWN`], conservative, and its session a `warning` once.
//!
//! Names are matched after dropping a router's `vendor/` prefix (`openai/gpt-4o`) and
//! ignoring case, by the longest prefix that appears in the table, so dated and suffixed
//! releases (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`) find their family. Figures
//! are the providers' published limits.

/// A model's limits, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    pub context_window: u64,
    pub max_output_tokens: u32,
}

/// The limits assumed for a model the table does not know: small enough that compaction
/// starts before most models' real window fills, and the output every provider accepts.
pub const UNKNOWN: ModelLimits = ModelLimits {
    context_window: 32_768,
    max_output_tokens: crate::config::DEFAULT_MAX_OUTPUT_TOKENS,
};

const fn limits(context_window: u64, max_output_tokens: u32) -> ModelLimits {
    ModelLimits {
        context_window,
        max_output_tokens,
    }
}

/// Name prefixes and their limits; the longest matching prefix wins.
const TABLE: &[(&str, ModelLimits)] = &[
    // OpenAI
    ("gpt-5", limits(400_000, 128_000)),
    ("gpt-4.1", limits(1_047_576, 32_768)),
    ("gpt-4o", limits(128_000, 16_384)),
    ("chatgpt-4o", limits(128_000, 16_384)),
    ("gpt-4-turbo", limits(128_000, 4_096)),
    ("gpt-4-32k", limits(32_768, 8_192)),
    ("gpt-4", limits(8_192, 8_192)),
    ("gpt-3.5-turbo", limits(16_385, 4_096)),
    ("o1", limits(200_000, 100_000)),
    ("o1-mini", limits(128_000, 65_536)),
    ("o3", limits(200_000, 100_000)),
    ("o4-mini", limits(200_000, 100_000)),
    // Anthropic
    ("claude-opus-4-5", limits(200_000, 64_000)),
    ("claude-opus-4", limits(200_000, 32_000)),
    ("claude-sonnet-4", limits(200_000, 64_000)),
    ("claude-haiku-4", limits(200_000, 64_000)),
    ("claude-3-7-sonnet", limits(200_000, 64_000)),
    ("claude-3-5-sonnet", limits(200_000, 8_192)),
    ("claude-3-5-haiku", limits(200_000, 8_192)),
    ("claude-3-opus", limits(200_000, 4_096)),
    ("claude-3-haiku", limits(200_000, 4_096)),
    // Others with OpenAI-compatible APIs
    ("deepseek-chat", limits(128_000, 8_192)),
    ("deepseek-reasoner", limits(128_000, 65_536)),
    ("gemini-2.5", limits(1_048_576, 65_536)),
    ("gemini-2.0-flash", limits(1_048_576, 8_192)),
    ("kimi-k2", limits(131_072, 16_384)),
    ("qwen3-coder", limits(262_144, 65_536)),
    // Hugging Face's small models (the local model `scripts/run.sh` sets up serves SmolLM2
    // with its whole 8,192-token window).
    ("smollm2", limits(8_192, 2_048)),
];

/// Model names to offer a person choosing a model (`/model <Tab>`), by the wire format they
/// are reached with: the current releases of each family the table knows.
const OFFERED_OPENAI: &[&str] = &[
    "gpt-5",
    "gpt-5-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4o",
    "gpt-4o-mini",
    "o3",
    "o4-mini",
    "deepseek-chat",
    "deepseek-reasoner",
    "kimi-k2",
    "qwen3-coder",
];
const OFFERED_ANTHROPIC: &[&str] = &[
    "claude-opus-4-5",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-opus-4-1",
];

/// The known models a provider of `kind` is likely to serve, to offer when choosing one.
pub fn offered_models(kind: crate::config::ProviderKind) -> &'static [&'static str] {
    match kind {
        crate::config::ProviderKind::OpenAi => OFFERED_OPENAI,
        crate::config::ProviderKind::Anthropic => OFFERED_ANTHROPIC,
    }
}

/// The limits of `model`, when the table knows it.
pub fn known_limits(model: &str) -> Option<ModelLimits> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    TABLE
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, limits)| *limits)
}

/// Models that take tools only as text: small local models whose servers ignore native
/// `tools` (llama.cpp's Python server with SmolLM2, the model `scripts/run.sh` sets up).
const PROMPT_TOOLS: &[&str] = &["smollm"];

/// Whether `model` is called with tools described in the prompt by default.
pub fn prompt_tool_calling(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    PROMPT_TOOLS.iter().any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_offered_model_is_in_the_table() {
        for name in OFFERED_OPENAI.iter().chain(OFFERED_ANTHROPIC) {
            assert!(known_limits(name).is_some(), "{name}");
        }
    }

    #[test]
    fn dated_routed_and_cased_names_find_their_family() {
        assert_eq!(
            known_limits("gpt-4o-2024-08-06"),
            Some(limits(128_000, 16_384))
        );
        assert_eq!(
            known_limits("openai/GPT-4o-mini"),
            Some(limits(128_000, 16_384))
        );
        assert_eq!(
            known_limits("claude-sonnet-4-5-20250929"),
            Some(limits(200_000, 64_000))
        );
        // The longest prefix wins: not gpt-4's 8,192.
        assert_eq!(
            known_limits("gpt-4-turbo-preview"),
            Some(limits(128_000, 4_096))
        );
        assert_eq!(
            known_limits("gpt-4.1-mini"),
            Some(limits(1_047_576, 32_768))
        );
        assert_eq!(known_limits("o1-mini"), Some(limits(128_000, 65_536)));
        assert_eq!(known_limits("gpt-4"), Some(limits(8_192, 8_192)));
        assert_eq!(
            known_limits("SmolLM2-135M-Instruct"),
            Some(limits(8_192, 2_048))
        );
    }

    #[test]
    fn only_the_small_local_models_take_tools_through_the_prompt() {
        assert!(prompt_tool_calling("smollm2"));
        assert!(prompt_tool_calling("HuggingFaceTB/SmolLM2-135M-Instruct"));
        assert!(!prompt_tool_calling("gpt-4o"));
        assert!(!prompt_tool_calling("qwen3-coder"));
    }

    #[test]
    fn a_model_the_table_does_not_know_is_none() {
        assert_eq!(known_limits("my-local-model"), None);
        assert_eq!(known_limits("mock-model"), None);
        assert_eq!(known_limits(""), None);
    }
}
