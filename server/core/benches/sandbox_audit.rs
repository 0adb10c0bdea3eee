//! What the sandbox's check for planted `.git` entries costs a confined command: the walk of
//! the workspace before and after each call ([`coder_core::CreationAudit`]), on a tree of
//! 50,000 files in 550 directories, against the floor of any command, starting `bash -c
//! true`. Medians of 7 runs after a warm-up (page cache warm).
//!
//! Run: `cargo bench -p coder-core --bench sandbox_audit`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use coder_testkit::bench::ms;
use std::process::Command;
use std::time::{Duration, Instant};

use coder_core::CreationAudit;

const RUNS: usize = 7;
const TOP: usize = 50;
const SUB: usize = 10;
const FILES: usize = 100;

fn main() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir(tree.path().join(".git")).unwrap();
    for top in 0..TOP {
        for sub in 0..SUB {
            let dir = tree.path().join(format!("d{top}/s{sub}"));
            std::fs::create_dir_all(&dir).unwrap();
            for file in 0..FILES {
                std::fs::write(dir.join(format!("f{file}.rs")), "x").unwrap();
            }
        }
    }
    let files = TOP * SUB * FILES;
    let audit = median(|| {
        let started = Instant::now();
        let note = CreationAudit::before(tree.path()).after();
        let elapsed = started.elapsed();
        assert_eq!(note, None);
        elapsed
    });
    let bash = median(|| {
        let started = Instant::now();
        let status = Command::new("bash").args(["-c", "true"]).status().unwrap();
        assert!(status.success());
        started.elapsed()
    });
    println!(
        "{files} files: audit before + after {:>7.1} ms   bash -c true {:>6.1} ms   ratio {:.1}x",
        ms(audit),
        ms(bash),
        audit.as_secs_f64() / bash.as_secs_f64()
    );
}

fn median(mut run: impl FnMut() -> Duration) -> Duration {
    run();
    let mut times: Vec<Duration> = (0..RUNS).map(|_| run()).collect();
    times.sort();
    times[RUNS / 2]
}
