//! How the process's allocator gives memory back.
//!
//! glibc serves a block of 128 KiB or more with its own `mmap` and unmaps it on free, but
//! each such free raises the threshold to that block's size (up to 32 MiB). After one 10 MB
//! message, `coder lsp` then took every later block under 10 MB from its heaps, which keep
//! what was freed: 20,000 hostile messages left it 30 to 45 MB above where it started (see
//! the fuzz test in `tests/suite/lsp/fuzz.rs`). Setting the threshold once fixes it where
//! it is, so large blocks always go back to the system when freed.

/// glibc's initial threshold, kept for the life of the process.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 128 * 1024;

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
    }
}
