//! The file tools against a racer: another process swaps a directory of the workspace for a
//! link out of it, over and over, while the tools write and read through that directory.
//! Nothing may land outside, and nothing outside may be read.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use coder_core::tools::{ApplyPatchTool, EditTool, ReadTool, Tool, ToolContext, WriteTool};
use serde_json::json;

/// Calls per tool.
const CALLS: usize = 500;
/// What the file outside the workspace holds; a read that returns it escaped.
const SECRET: &str = "SECRET-OUTSIDE";

/// Swaps `<workspace>/d` between a real directory and a link to `outside` until dropped.
pub struct Racer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<u64>>,
}

impl Racer {
    pub fn start(workspace: &Path, outside: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let d = workspace.join("d");
        let parked = workspace.join("d.parked");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("secret"), "inside\n").unwrap();
        let outside = outside.to_path_buf();
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut swaps = 0;
            while !flag.load(Ordering::Relaxed) {
                // The directory steps aside and a link out takes its place, then back.
                let _ = std::fs::rename(&d, &parked);
                let _ = std::os::unix::fs::symlink(&outside, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::rename(&parked, &d);
                std::thread::yield_now();
                swaps += 1;
            }
            swaps
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops the racer and returns how many swaps it made.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().map_or(0, |h| h.join().unwrap())
    }
}

impl Drop for Racer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    super::support::entries_under(dir)
        .into_iter()
        .filter(|path| std::fs::symlink_metadata(path).is_ok_and(|meta| !meta.is_dir()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_and_reads_cannot_be_raced_out_of_the_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), format!("{SECRET}\n")).unwrap();
    let ctx = ToolContext::new(workspace.path());
    let racer = Racer::start(workspace.path(), outside.path());
    let mut landed_inside = 0;
    let mut leaked_reads = 0;
    for i in 0..CALLS {
        let write = WriteTool
            .call(
                json!({"path": format!("d/w{i}.txt"), "content": "x\n"}),
                &ctx,
            )
            .await;
        let patch = format!("*** Begin Patch\n*** Add File: d/p{i}.txt\n+x\n*** End Patch");
        let patched = ApplyPatchTool.call(json!({"patch": patch}), &ctx).await;
        let edit = EditTool
            .call(
                json!({"path": "d/secret", "old_string": SECRET, "new_string": "overwritten"}),
                &ctx,
            )
            .await;
        let read = ReadTool.call(json!({"path": "d/secret"}), &ctx).await;
        landed_inside += usize::from(write.is_ok()) + usize::from(patched.is_ok());
        if read.is_ok_and(|output| output.content.contains(SECRET)) || edit.is_ok() {
            leaked_reads += 1;
        }
    }
    let swaps = racer.stop();
    let escaped = files_under(outside.path());
    assert_eq!(
        (escaped.len(), leaked_reads),
        (1, 0),
        "writes outside: {escaped:?}; reads of the outside file: {leaked_reads} \
         ({landed_inside} writes succeeded, {swaps} swaps)"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        format!("{SECRET}\n")
    );
    // The racer really raced: some calls got through while the directory was in place.
    assert!(landed_inside > 0 && swaps > 0, "{landed_inside} {swaps}");
}
