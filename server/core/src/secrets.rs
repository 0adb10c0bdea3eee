//! Secrets taken out of text by value: the one rule for what coder records of the keys it
//! holds, whether a provider echoed one (`model/redact.rs`) or a tool printed one
//! (`process/env.rs`).

/// What a redacted secret is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// Keys shorter than this are not looked for in messages: a placeholder that a local
/// server ignores (`x`, `none`, `ollama`) matches ordinary text, and replacing it there
/// garbled the message (`http://e[redacted]ample.com` for the key `x`). Hosted providers'
/// keys are tens of characters long.
pub(crate) const SHORTEST_KEY: usize = 8;

/// `text` with each of `secrets` that is at least [`SHORTEST_KEY`] characters long
/// replaced by [`REDACTED`] wherever it appears.
pub(crate) fn redact_values<'a>(
    mut text: String,
    secrets: impl Iterator<Item = &'a str>,
) -> String {
    for secret in secrets.filter(|secret| secret.len() >= SHORTEST_KEY) {
        if text.contains(secret) {
            text = text.replace(secret, REDACTED);
        }
    }
    text
}
