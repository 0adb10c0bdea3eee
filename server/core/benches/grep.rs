//! The `grep` tool against ripgrep (`rg`) on the same large real tree, in the same run.
//!
//! The tree is the crate sources cargo downloaded (`$CARGO_HOME/registry/src`, about 16,000
//! files, about 500 MB here), which nobody in this project wrote. In each mode the tool and
//! `rg` run in turn (tool, rg, tool, rg, ...) after a warm-up of each, so both read from
//! the page cache and a busy stretch of the machine weighs on both; the ratio is the
//! median of the run-by-run ratios, beside each side's median time. Target: at or below
//! `rg` (1.0x).
//!
//! Run: `cargo bench -p coder-core --bench grep` (needs `rg`: `apt-get install ripgrep`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::{median, ms};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use coder_core::{Tool, ToolContext, tools::GrepTool};
use serde_json::json;

const RUNS: usize = 15;
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
        // Each side's wall time and CPU time (all its threads; for `rg`, the child's).
        let ours = || {
            let ctx = ToolContext::new(&tree);
            let (started, cpu) = (Instant::now(), cpu_ticks(Whose::Mine));
            let output = runtime
                .block_on(GrepTool.call(json!({"pattern": PATTERN, "output_mode": mode}), &ctx))
                .unwrap();
            let elapsed = (started.elapsed(), cpu_ticks(Whose::Mine) - cpu);
            assert!(!output.content.starts_with("No matches"));
            elapsed
        };
        let rg = || {
            let (started, cpu) = (Instant::now(), cpu_ticks(Whose::Children));
            let output = Command::new("rg")
                .args([flag, PATTERN])
                .current_dir(&tree)
                .output()
                .expect("rg is needed as the baseline: apt-get install ripgrep");
            let elapsed = (started.elapsed(), cpu_ticks(Whose::Children) - cpu);
            assert!(!output.stdout.is_empty());
            elapsed
        };
        ours();
        rg();
        let pairs: Vec<_> = (0..RUNS).map(|_| (ours(), rg())).collect();
        let wall = paired(
            pairs
                .iter()
                .map(|(a, b)| (a.0.as_secs_f64(), b.0.as_secs_f64())),
        );
        let cpu = paired(pairs.iter().map(|(a, b)| (a.1 as f64, b.1 as f64)));
        println!(
            "{mode:<20} grep tool {:>7.1} ms   rg {flag} {:>7.1} ms   wall ratio {:.2}x (run by run {:.2}x to {:.2}x)   CPU ratio {:.2}x (run by run {:.2}x to {:.2}x; target <= 1.0x)",
            ms(median(pairs.iter().map(|(a, _)| a.0).collect())),
            ms(median(pairs.iter().map(|(_, b)| b.0).collect())),
            wall.1,
            wall.0,
            wall.2,
            cpu.1,
            cpu.0,
            cpu.2,
        );
    }
}

/// The lowest, median and highest of the ratios of each pair.
fn paired(pairs: impl Iterator<Item = (f64, f64)>) -> (f64, f64, f64) {
    let mut ratios: Vec<f64> = pairs.map(|(a, b)| a / b.max(f64::MIN_POSITIVE)).collect();
    ratios.sort_by(f64::total_cmp);
    (
        ratios[0],
        ratios[ratios.len() / 2],
        ratios[ratios.len() - 1],
    )
}

enum Whose {
    Mine,
    /// The children waited for.
    Children,
}

/// CPU time in clock ticks (user and system) from `/proc/self/stat`.
fn cpu_ticks(whose: Whose) -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .map(|field| field.parse().unwrap_or(0))
        .collect();
    // After the name: state is field 3, so utime (14) is at index 11.
    match whose {
        Whose::Mine => fields[11] + fields[12],
        Whose::Children => fields[13] + fields[14],
    }
}
