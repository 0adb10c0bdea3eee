//! The `grep` tool against ripgrep (`rg`) on the same large real tree, in the same run.
//!
//! The tree is the crate sources cargo downloaded (`$CARGO_HOME/registry/src`, about 16,000
//! files here), which nobody in this project wrote. Each mode is timed as the median of 7
//! runs after a warm-up, so both read from the page cache. Target: within 1.3x of `rg`.
//!
//! Run: `cargo bench -p coder-core --bench grep` (needs `rg`: `apt-get install ripgrep`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use coder_core::{Tool, ToolContext, tools::GrepTool};
use serde_json::json;

const RUNS: usize = 7;
const PATTERN: &str = r"fn [a-z_]+_unchecked\(";

fn main() {
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let tree = home.join("registry").join("src");
    assert!(tree.is_dir(), "no crate sources at {}", tree.display());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!("tree: {}", tree.display());
    println!("pattern: {PATTERN}");
    for (mode, flag) in [("files_with_matches", "-l"), ("count", "-c")] {
        let ours = median(|| {
            let ctx = ToolContext::new(&tree);
            let started = Instant::now();
            let output = runtime
                .block_on(GrepTool.call(json!({"pattern": PATTERN, "output_mode": mode}), &ctx))
                .unwrap();
            let elapsed = started.elapsed();
            assert!(!output.content.starts_with("No matches"));
            elapsed
        });
        let rg = median(|| {
            let started = Instant::now();
            let output = Command::new("rg")
                .args([flag, PATTERN])
                .current_dir(&tree)
                .output()
                .expect("rg is needed as the baseline: apt-get install ripgrep");
            let elapsed = started.elapsed();
            assert!(!output.stdout.is_empty());
            elapsed
        });
        println!(
            "{mode:<20} grep tool {:>7.1} ms   rg {flag} {:>7.1} ms   ratio {:.2}x (target <= 1.3x)",
            ms(ours),
            ms(rg),
            ours.as_secs_f64() / rg.as_secs_f64()
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
