//! `@` path completion (`coder_core::completion`) over a large real tree: the crate sources
//! cargo downloaded (`$CARGO_HOME/registry/src`), which nobody in this project wrote.
//!
//! For queries of 1, 3 and 8 characters it times the first call of a session (walk of the
//! tree plus match) and a warm call (the index already built), each the median of 7 runs
//! after a warm-up, so the tree is in the page cache. Target: under 50 ms per answer.
//!
//! Run: `cargo bench -p coder-core --bench complete_paths`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use coder_core::completion::{DEFAULT_LIMIT, PathIndex, complete, index};

const RUNS: usize = 7;
const QUERIES: [&str; 3] = ["r", "lib", "parse.rs"];

fn main() {
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let tree = home.join("registry").join("src");
    if !tree.is_dir() {
        println!(
            "skipped: no crate sources at {} (run `cargo fetch` in a project first)",
            tree.display()
        );
        return;
    }
    let walked = index::walk(&tree);
    let files = walked.entries.iter().filter(|e| !e.is_dir).count();
    println!("tree: {}", tree.display());
    println!(
        "paths: {} ({files} files, {} folders)",
        walked.entries.len(),
        walked.entries.len() - files
    );
    for query in QUERIES {
        let first = median(|| {
            let index = PathIndex::default();
            let started = Instant::now();
            let found = complete(&index, &tree, query, DEFAULT_LIMIT);
            let elapsed = started.elapsed();
            assert!(!found.is_empty(), "{query}");
            elapsed
        });
        let index = PathIndex::default();
        complete(&index, &tree, query, DEFAULT_LIMIT);
        let warm = median(|| {
            let started = Instant::now();
            let found = complete(&index, &tree, query, DEFAULT_LIMIT);
            let elapsed = started.elapsed();
            assert!(!found.is_empty(), "{query}");
            elapsed
        });
        println!(
            "query {:<10} ({} chars)  first call {:>7.1} ms   warm {:>7.1} ms   (target < 50 ms)",
            format!("{query:?}"),
            query.chars().count(),
            ms(first),
            ms(warm)
        );
    }
}

fn median(mut run: impl FnMut() -> Duration) -> Duration {
    run();
    let mut samples: Vec<Duration> = (0..RUNS).map(|_| run()).collect();
    samples.sort();
    samples[RUNS / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
