//! A seeded fuzz test of the parsers that read what a person types and what a repository
//! ships as prompt text: `@` references, slash commands, `$ARGUMENTS` expansion, the
//! frontmatter of command and skill files, and `@` path completion. Each must return, never
//! panic, and stay bounded.
//! The seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.

use crate::commands::{expand_within, slash_command};
use crate::references::parse::references;
use coder_testkit::fuzz::Rng;

/// Pieces a hostile input is made of: the syntax the parsers look for, broken forms of it,
/// multi-byte and control characters.
const PIECES: [&str; 28] = [
    "@",
    "@\"",
    "\"",
    "#L",
    "#L1-",
    "-",
    "99999999999999999999999",
    "/",
    "//",
    " ",
    "\n",
    "\t",
    "$",
    "$ARGUMENTS",
    "$1",
    "$9",
    "$0",
    "---",
    "---\n",
    ":",
    "name: x\n",
    "é",
    "漢",
    "\u{202e}",
    "\u{1b}[2J",
    "a",
    "../",
    ".git/",
];

fn hostile(rng: &mut Rng) -> String {
    (0..rng.index(40))
        .map(|_| PIECES[rng.index(PIECES.len())])
        .collect()
}

#[test]
fn hostile_input_to_the_input_parsers_returns_bounded_results() {
    let mut rng = Rng::seeded(0x5eed_cafe_u64);
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("a/é")).unwrap();
    std::fs::write(workspace.path().join("a/é/漢.rs"), "").unwrap();
    let paths = crate::completion::PathIndex::new(workspace.path().to_path_buf());
    for _ in 0..20_000 {
        let text = hostile(&mut rng);
        let found = references(&text);
        assert!(found.len() <= text.matches('@').count(), "{text:?}");
        if let Some((name, args)) = slash_command(&text) {
            assert!(text.contains(name) && text.contains(args), "{text:?}");
        }
        let args = hostile(&mut rng);
        let limit = 1 + rng.index(4096);
        if let Some(prompt) = expand_within(&text, &args, limit) {
            assert!(prompt.len() <= limit, "{text:?} {args:?}");
        }
        let _ = crate::frontmatter::parse::<serde_yaml_ng::Value>(&text);
        let found = crate::completion::complete(&paths, &text, limit);
        assert!(found.len() <= limit, "{text:?}");
        for found in found {
            assert!(
                ["a/", "a/é/", "a/é/漢.rs"].contains(&found.path.as_str()),
                "{text:?}"
            );
        }
    }
}
