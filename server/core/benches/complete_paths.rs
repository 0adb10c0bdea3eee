//! `@` path completion (`coder_core::completion`) over a large real tree: the crate sources
//! cargo downloaded (`$CARGO_HOME/registry/src`), which nobody in this project wrote.
//!
//! What a client sees, for queries of 1, 3 and 8 characters, each the median of 7 runs
//! after a warm-up (so the tree is in the page cache):
//! - `at start`: a call made the moment the session starts (the index made and its
//!   background walk started, as `Session::new` does): time from the session's start to
//!   the answer, and whether that answer held every match (it answers from the paths walked
//!   so far after `FIRST_WALK_WAIT`);
//! - `first`: the session's first call once its background walk ended (a person types `@`
//!   later than the walk takes);
//! - `warm`: a later call;
//! - `stale`: the first call after the index went stale (it answers from the last walk and
//!   starts a background walk).
//!
//! It also prints the walk alone. Target: under 50 ms per answer.
//!
//! Run: `cargo bench -p coder-core --bench complete_paths`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::ms;
use std::path::{Path, PathBuf};
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
    let walk = median(|| {
        let started = Instant::now();
        index::walk(&tree);
        started.elapsed()
    });
    println!(
        "walk alone (background since session start): {:.1} ms",
        ms(walk)
    );
    for query in QUERIES {
        let full = complete(&walked_index(&tree), query, DEFAULT_LIMIT);
        let mut partial = 0;
        let at_start = median(|| {
            let started = Instant::now();
            let index = PathIndex::new(tree.clone());
            index.refresh();
            let found = complete(&index, query, DEFAULT_LIMIT);
            let elapsed = started.elapsed();
            if found != full {
                partial += 1;
            }
            index.stop();
            elapsed
        });
        let first = median(|| {
            let index = walked_index(&tree);
            let started = Instant::now();
            let found = complete(&index, query, DEFAULT_LIMIT);
            let elapsed = started.elapsed();
            assert_eq!(found, full, "{query}");
            elapsed
        });
        let index = walked_index(&tree);
        let warm = median(|| {
            let started = Instant::now();
            let found = complete(&index, query, DEFAULT_LIMIT);
            let elapsed = started.elapsed();
            assert_eq!(found, full, "{query}");
            elapsed
        });
        // Trusting a walk for no time at all, every call finds the index stale.
        let stale_index = PathIndex::with_refresh_after(tree.clone(), Duration::ZERO);
        stale_index.refresh();
        stale_index.until_walked();
        let stale = median(|| {
            let started = Instant::now();
            let found = complete(&stale_index, query, DEFAULT_LIMIT);
            let elapsed = started.elapsed();
            assert_eq!(found, full, "{query}");
            stale_index.until_walked();
            elapsed
        });
        stale_index.stop();
        println!(
            "query {:<10} ({} chars)  at start {:>6.1} ms ({partial}/{} partial)   first {:>6.1} ms   \
             warm {:>6.1} ms   stale {:>6.1} ms   (target < 50 ms)",
            format!("{query:?}"),
            query.chars().count(),
            ms(at_start),
            RUNS + 1,
            ms(first),
            ms(warm),
            ms(stale)
        );
    }
}

/// An index of `tree` whose background walk has ended.
fn walked_index(tree: &Path) -> PathIndex {
    let index = PathIndex::new(tree.to_path_buf());
    index.refresh();
    index.until_walked();
    index
}

fn median(mut run: impl FnMut() -> Duration) -> Duration {
    run();
    let mut samples: Vec<Duration> = (0..RUNS).map(|_| run()).collect();
    samples.sort();
    samples[RUNS / 2]
}
