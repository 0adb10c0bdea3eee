//! Fully-qualified MCP tool names: `server__tool`, sanitised to `^[a-zA-Z0-9_-]+$`, at most
//! 64 characters, with a deterministic hash suffix when cut short or colliding.

use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};

const MAX_LEN: usize = 64;

fn sanitize(part: &str) -> String {
    let cleaned: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

fn suffix(server: &str, tool: &str) -> String {
    let mut hasher = DefaultHasher::new();
    (server, tool).hash(&mut hasher);
    format!("{:08x}", hasher.finish() & 0xffff_ffff)
}

/// The plain form `server__tool`, before any shortening or collision suffix.
pub(crate) fn plain(server: &str, tool: &str) -> String {
    format!("{}__{}", sanitize(server), sanitize(tool))
}

/// The name for `tool` of `server`, unique among `taken` (which it joins).
pub(crate) fn qualified(server: &str, tool: &str, taken: &mut BTreeSet<String>) -> String {
    let plain = plain(server, tool);
    let name = if plain.len() <= MAX_LEN && !taken.contains(&plain) {
        plain
    } else {
        let tag = suffix(server, tool);
        let keep = MAX_LEN - tag.len() - 1;
        let mut cut = plain;
        cut.truncate(keep);
        format!("{cut}_{tag}")
    };
    taken.insert(name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_bounded_and_unique() {
        let mut taken = BTreeSet::new();
        assert_eq!(
            qualified("everything", "echo", &mut taken),
            "everything__echo"
        );
        assert_eq!(
            qualified("my server", "get.sum", &mut taken),
            "my_server__get_sum"
        );
        let collided = qualified("my_server", "get_sum", &mut taken);
        assert!(collided.starts_with("my_server__get_sum_") && collided != "my_server__get_sum");
        let long = qualified("s", &"x".repeat(100), &mut taken);
        assert_eq!(long.len(), 64);
        assert_eq!(long, qualified("s", &"x".repeat(100), &mut BTreeSet::new()));
    }
}
