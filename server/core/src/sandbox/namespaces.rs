//! The read-only view of the file system a confined command runs in, made between fork and
//! exec, the way bubblewrap does it with Linux namespaces.
//!
//! In the child, before `exec`:
//! 1. `unshare(CLONE_NEWUSER | CLONE_NEWNS [| CLONE_NEWNET])`, mapping the caller's uid and
//!    gid to themselves, so the command sees the same owner on every file.
//! 2. Mounts become private (nothing propagates back), then every mount is made read-only
//!    (`mount_setattr` with `AT_RECURSIVE`, Linux 5.12 and later).
//! 3. The writable roots and the private temporary directory are bound over themselves and
//!    made writable again; `.git` directories are bound over themselves (so they cannot be
//!    renamed away) and the protected paths (`.coder/`, `.mcp.json`, `.git` files, and in
//!    each git directory `config`, `hooks/`, `commondir`, `config.worktree`) are bound over
//!    themselves read-only on top (see [`super::protected`]).
//! 4. With a new network namespace, its loopback is brought up (nothing else is in it).
//! 5. A second, nested user and mount namespace: the kernel locks every mount copied into a
//!    less privileged namespace, so the command cannot unmount or remount what step 2-3 made,
//!    even though it holds capabilities in its own namespace.
//! 6. The working directory is entered again (it pointed below the old mounts), and the
//!    Landlock ruleset made in the parent is applied as a second layer.
//!
//! Everything in the child runs between `fork` and `exec` of a multithreaded process, so it
//! only makes system calls on data prepared before the fork: no allocation, no locks.
//!
//! Where user namespaces are refused but coder runs as root (some containers), a mount
//! namespace alone is used and `CAP_SYS_ADMIN` is dropped from the command's bounding set,
//! so it cannot remount either. [`support`] finds out once per process which of these works.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::libc;

use super::protected::Mounts;

/// `mount_setattr(2)` flags and argument, not in the `libc` crate.
const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
/// From `linux/capability.h`.
const CAP_SYS_ADMIN: libc::c_ulong = 21;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Which namespaces this machine lets coder make for a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Support {
    /// A user namespace can be made, so the mounts can be locked (any uid).
    pub user: bool,
    /// A mount namespace with a read-only view can be made (with or without `user`).
    pub mount: bool,
    /// A network namespace can be made with it.
    pub network: bool,
}

impl Support {
    const NONE: Self = Self {
        user: false,
        mount: false,
        network: false,
    };
}

/// What this machine supports, probed once per process by running `/bin/sh -c :` in each
/// variant, best first.
pub(crate) fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(probe)
}

fn probe() -> Support {
    let Ok(scratch) = tempfile::Builder::new().prefix("coder-probe-").tempdir() else {
        return Support::NONE;
    };
    let is_root = unsafe { libc::geteuid() } == 0;
    let candidates = [(true, true), (true, false), (false, true), (false, false)];
    for (user, network) in candidates {
        if !user && !is_root {
            break;
        }
        let support = Support {
            user,
            mount: true,
            network,
        };
        let mounts = Mounts {
            pinned: Vec::new(),
            read_only: Vec::new(),
        };
        let writable = [scratch.path().to_path_buf()];
        let plan = Plan::new(support, network, &writable, &mounts, None, None);
        let mut command = std::process::Command::new("/bin/sh");
        command
            .args(["-c", ":"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        plan.install(&mut command);
        if command.status().is_ok_and(|status| status.success()) {
            return support;
        }
    }
    Support::NONE
}

/// Everything the child needs, prepared before the fork.
pub(crate) struct Plan {
    user: bool,
    network: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    writable: Vec<CString>,
    pinned: Vec<CString>,
    protected: Vec<CString>,
    cwd: Option<CString>,
    ruleset: Option<OwnedFd>,
}

impl Plan {
    /// A plan for one command. `new_network` asks for a network namespace of its own (only
    /// loopback); paths that do not exist are left out.
    pub(crate) fn new(
        support: Support,
        new_network: bool,
        writable: &[PathBuf],
        mounts: &Mounts,
        cwd: Option<&Path>,
        ruleset: Option<OwnedFd>,
    ) -> Self {
        let uid = unsafe { libc::getuid() };
        let gid = unsafe { libc::getgid() };
        let mut writable: Vec<&PathBuf> = writable.iter().filter(|p| p.exists()).collect();
        // Parents first: a bind of a parent would otherwise cover a child bound before it.
        writable.sort_by_key(|p| p.components().count());
        Self {
            user: support.user,
            network: new_network && support.network,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            writable: writable.into_iter().filter_map(|p| c_path(p)).collect(),
            pinned: existing(&mounts.pinned),
            protected: existing(&mounts.read_only),
            cwd: cwd.and_then(c_path),
            ruleset,
        }
    }

    /// Runs the plan in the child of `command`, between fork and exec.
    pub(crate) fn install(self, command: &mut std::process::Command) {
        // SAFETY: `enter` only makes system calls on data prepared above; it allocates
        // nothing and takes no lock, so it is safe between fork and exec.
        unsafe {
            command.pre_exec(move || self.enter());
        }
    }

    fn enter(&self) -> std::io::Result<()> {
        let mut flags = libc::CLONE_NEWNS;
        if self.user {
            flags |= libc::CLONE_NEWUSER;
        }
        if self.network {
            flags |= libc::CLONE_NEWNET;
        }
        check(unsafe { libc::unshare(flags) })?;
        if self.user {
            self.map_ids()?;
        }
        check(unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        })?;
        set_read_only(c"/", true, libc::AT_RECURSIVE)?;
        if self.user {
            // The nested namespace below writes its id maps there; Landlock still refuses
            // writes to /proc to the command.
            set_read_only(c"/proc", false, 0)?;
        }
        for path in &self.writable {
            bind_over_itself(path)?;
            // A mount that was read-only outside stays so (the kernel refuses to clear a
            // locked flag): first the whole tree, else the root alone, else nothing, which
            // only keeps read-only what already was.
            if set_read_only(path, false, libc::AT_RECURSIVE).is_err() {
                let _ = set_read_only(path, false, 0);
            }
        }
        for path in &self.pinned {
            bind_over_itself(path)?;
        }
        for path in &self.protected {
            bind_over_itself(path)?;
            set_read_only(path, true, libc::AT_RECURSIVE)?;
        }
        if self.network {
            loopback_up()?;
        }
        if self.user {
            check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) })?;
            self.map_ids()?;
        } else {
            // Root without a user namespace: without CAP_SYS_ADMIN the command cannot
            // remount what was made read-only.
            check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) })?;
            check(unsafe {
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                )
            })?;
        }
        if let Some(cwd) = &self.cwd {
            check(unsafe { libc::chdir(cwd.as_ptr()) })?;
        }
        if let Some(ruleset) = &self.ruleset {
            super::landlock::restrict_self(ruleset.as_raw_fd())?;
        }
        Ok(())
    }

    /// Writes the id maps of the user namespace just made. coder is not dumpable (see
    /// `coder_core::process::make_undumpable`), which makes `/proc/self` root's and so
    /// unwritable here; the child is made dumpable for the three writes only, since until
    /// `exec` its memory is a copy of coder's (`exec` makes it dumpable again anyway).
    fn map_ids(&self) -> std::io::Result<()> {
        check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) })?;
        let written = (|| {
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/gid_map", &self.gid_map)
        })();
        let restored = check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) });
        written.and(restored)
    }
}

fn existing(paths: &[PathBuf]) -> Vec<CString> {
    paths
        .iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .filter_map(|p| c_path(p))
        .collect()
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

fn check(result: libc::c_int) -> std::io::Result<()> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn bind_over_itself(path: &CStr) -> std::io::Result<()> {
    check(unsafe {
        libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })
}

fn set_read_only(path: &CStr, read_only: bool, flags: libc::c_int) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn write_file(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    let written = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let error = std::io::Error::last_os_error();
    unsafe { libc::close(fd) };
    match usize::try_from(written) {
        Ok(n) if n == data.len() => Ok(()),
        Ok(_) => Err(std::io::Error::from_raw_os_error(libc::EIO)),
        Err(_) => Err(error),
    }
}

/// Brings up `lo` in a fresh network namespace, so local servers a command starts work.
fn loopback_up() -> std::io::Result<()> {
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    check(fd)?;
    // SAFETY: `ifreq` is plain data; all zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    request.ifr_name[0] = b'l' as libc::c_char;
    request.ifr_name[1] = b'o' as libc::c_char;
    let result = (|| {
        check(unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) })?;
        // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
        unsafe {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        }
        check(unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &request) })
    })();
    unsafe { libc::close(fd) };
    result
}
