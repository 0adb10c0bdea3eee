//! Landlock, at the ABI this kernel offers: every file-system right of that ABI is handled
//! (so nothing is silently dropped, as a fixed ABI in best-effort mode would), reads are
//! allowed everywhere and writes only beneath the writable roots and a few devices.
//!
//! The ruleset is built in the parent and applied in the child just before `exec`
//! ([`restrict_self`]), after the namespaces are set up: a Landlock domain refuses every
//! mount operation, so it must come last.

use std::os::fd::{OwnedFd, RawFd};
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, path_beneath_rules,
};
use nix::libc;

/// Device files every command may write.
const WRITABLE_DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

/// The newest ABI the `landlock` crate knows; a newer kernel is used at this level.
const NEWEST_KNOWN: u32 = 10;

/// The Landlock ABI version this kernel offers; 0 when it has none (not built in, or not
/// enabled at boot).
pub(crate) fn kernel_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no attribute and returns a number or -1.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// The ABI coder uses on this kernel: the kernel's, capped at what the crate knows.
pub(crate) fn usable_abi() -> u32 {
    kernel_abi().min(NEWEST_KNOWN)
}

fn abi(version: u32) -> ABI {
    match version {
        0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        7 => ABI::V7,
        8 => ABI::V8,
        9 => ABI::V9,
        _ => ABI::V10,
    }
}

/// A ruleset at ABI `version` allowing reads everywhere and writes beneath `writable`;
/// `deny_tcp` also refuses every TCP bind and connect (ABI 4 and later). Building fails,
/// rather than dropping a right, when the kernel lacks part of that ABI.
pub(crate) fn ruleset(
    version: u32,
    writable: &[&Path],
    deny_tcp: bool,
) -> std::io::Result<OwnedFd> {
    build(abi(version), writable, deny_tcp)
        .map_err(std::io::Error::other)?
        .ok_or_else(|| std::io::Error::other("the kernel offers no Landlock"))
}

fn build(
    abi: ABI,
    writable: &[&Path],
    deny_tcp: bool,
) -> Result<Option<OwnedFd>, landlock::RulesetError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))?;
    if deny_tcp {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    let created = ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))?
        .add_rules(path_beneath_rules(
            WRITABLE_DEVICES,
            AccessFs::from_all(abi),
        ))?;
    Ok(created.into())
}

/// Applies `ruleset` to the calling process and everything it starts. Only system calls:
/// safe between fork and exec.
pub(crate) fn restrict_self(ruleset: RawFd) -> std::io::Result<()> {
    // SAFETY: plain system calls on integers.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
