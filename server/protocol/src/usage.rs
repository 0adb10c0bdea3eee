//! Token usage as reported by model providers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Tokens spent by one model response, or a running total of several.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: u64,
    /// Part of `input_tokens` served from the provider's prompt cache.
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    /// Part of `output_tokens` spent on reasoning, when the provider says so.
    pub reasoning_output_tokens: u64,
    pub total_tokens: u64,
    /// The provider reported no usage, so these figures are the engine's own estimate.
    #[serde(default)]
    pub estimated: bool,
}

impl TokenUsage {
    /// Adds `other` to this total.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_output_tokens += other.reasoning_output_tokens;
        self.total_tokens += other.total_tokens;
        self.estimated |= other.estimated;
    }
}
