//! Fully-qualified MCP tool names: `server__tool`, sanitised to `^[a-zA-Z0-9_-]+$`, at most
//! 64 characters, with a hash suffix when cut short or colliding. The suffix is a hash of
//! the server's and the tool's names that never changes between runs or builds (FNV-1a,
//! written here), so the same servers give the same names every time (seed 003: a
//! contract, pinned by a snapshot test).

use std::collections::BTreeSet;

/// The longest tool name a provider takes.
pub(crate) const MAX_LEN: usize = 64;

/// Whether `part` is non-empty and only letters, digits, `_` and `-`.
pub(crate) fn is_name_part(part: &str) -> bool {
    !part.is_empty()
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

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

/// 32 bits of FNV-1a over `parts`, each followed by a 0 byte, as 8 hex digits.
fn stable_hash(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{:08x}", hash & 0xffff_ffff)
}

/// What every tool name of `server` starts with: `server__`, sanitised.
pub(crate) fn prefix(server: &str) -> String {
    format!("{}__", sanitize(server))
}

/// The plain form `server__tool`, before any shortening or collision suffix.
pub(crate) fn plain(server: &str, tool: &str) -> String {
    format!("{}__{}", sanitize(server), sanitize(tool))
}

/// The name for `tool` of `server`, unique among `taken` (which it joins): the plain form
/// when it is short enough and free, else its start and a hash suffix (with a count folded
/// in, in the rare case that is taken too).
pub(crate) fn qualified(server: &str, tool: &str, taken: &mut BTreeSet<String>) -> String {
    let plain = plain(server, tool);
    let mut name = plain.clone();
    let mut attempt = 0u32;
    while name.len() > MAX_LEN || taken.contains(&name) {
        let count = attempt.to_string();
        let tag = if attempt == 0 {
            stable_hash(&[server, tool])
        } else {
            stable_hash(&[server, tool, &count])
        };
        let keep = MAX_LEN - tag.len() - 1;
        let mut cut = plain.clone();
        cut.truncate(keep);
        name = format!("{cut}_{tag}");
        attempt += 1;
    }
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
        assert_eq!(collided, "my_server__get_sum_d177d8e9");
        let long = qualified("s", &"x".repeat(100), &mut taken);
        assert_eq!(long.len(), 64);
        assert_eq!(long, qualified("s", &"x".repeat(100), &mut BTreeSet::new()));
        // The same tool listed three times still gets three names.
        let again = qualified("my_server", "get_sum", &mut taken);
        assert!(again != collided && again.len() <= MAX_LEN, "{again}");
        assert_eq!(taken.len(), 5);
    }
}
