//! How the process's allocator gives memory back.
//!
//! glibc serves a block of 128 KiB or more with its own `mmap` and unmaps it on free, but
//! each such free raises the threshold to that block's size (up to 32 MiB). After one 10 MB
//! message, `coder lsp` then took every later block under 10 MB from its heaps, which keep
//! what was freed: 20,000 hostile messages left it 30 to 45 MB above where it started (see
//! the fuzz test in `tests/suite/lsp/fuzz.rs`). Setting the threshold once fixes it where
//! it is, so large blocks always go back to the system when freed.
//!
//! The threshold is 1 MiB, not glibc's initial 128 KiB: a streamed reply's buffers (its
//! text, the joined deltas, a batch of output frames) are a few hundred kilobytes, and at
//! 128 KiB each was mapped and unmapped again for every reply, its pages faulted in anew
//! (12% of `coder lsp`'s time streaming 80,000 deltas; 10 to 15% faster at 1 MiB, with the
//! fuzz test's memory where it was, docs/benchmarks.md).
//!
//! Fixing that threshold also fixes the trim threshold at glibc's initial 128 KiB: free
//! memory at the top of a heap past it is handed back at once. A streamed reply's chunks
//! (the HTTP client reads up to 400 KiB at a time, into a new block while the last one is
//! still being read) then came back as fresh pages every time: two thirds of `coder lsp`'s
//! page faults streaming 80,000 deltas, and 20 to 35% of its time at every size. A heap now
//! keeps up to 4 MiB free at its top; the fuzz test's bound (10 MB) still holds.

/// Blocks this large or larger are mapped on their own and unmapped when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 1024 * 1024;

/// Free memory a heap keeps at its top before handing it back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 4 * 1024 * 1024;

/// Keeps large allocations returning to the system when freed (glibc only; other
/// allocators do not raise a threshold).
pub fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets an allocator parameter; it is called before any other
        // thread exists, with a parameter and value glibc documents.
        #[allow(unsafe_code)]
        let done = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
        if done != 1 {
            tracing::warn!("could not fix the allocator's mmap threshold");
        }
        // SAFETY: as above.
        #[allow(unsafe_code)]
        let done = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) };
        if done != 1 {
            tracing::warn!("could not fix the allocator's trim threshold");
        }
    }
}
