//! What the `coder` process does to itself at startup to keep its secrets from the commands
//! it runs.
//!
//! `prctl(PR_SET_DUMPABLE, 0)`: `/proc/<coder>/environ`, `mem`, `maps`, `fd/` and friends
//! become root's, and `ptrace` of coder is refused, to every process that lacks
//! `CAP_SYS_PTRACE` (so to same-user commands, sandboxed or not; root is not stopped). Without
//! it, a command run with the sandbox off reads the provider key with
//! `cat /proc/$PPID/environ`. Side effects: coder writes no core dump, and a debugger must
//! run as root. The commands coder starts are dumpable again (`exec` resets the flag).

/// Makes this process undumpable; a no-op on other systems than Linux.
pub fn make_undumpable() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_dumpable(false)?;
    Ok(())
}
