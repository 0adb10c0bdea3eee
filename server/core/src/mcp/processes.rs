//! The processes of stdio servers. Each server starts as the leader of a process group of
//! its own (on Unix), so whatever it starts (a launcher's server in the background, a helper) can be
//! ended with it: stopping a server ends its group (on Linux), not only the process coder
//! started.
//! Signals go only to coder's own: a group is signalled while one of its processes is
//! still in coder's session (a group id is not given to a new process while any process
//! is in the group), and a pid only while it is coder's unreaped child.

use std::time::Duration;

/// How long the processes left in a stopped server's group get after SIGTERM before
/// SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(500);

/// Makes `command`'s process the leader of a new process group, so the terminal's Ctrl-C
/// (which interrupts a task, not the session) does not reach it. The group is ended with
/// the server on Linux ([`end_group`]).
pub(super) fn own_group(command: &mut tokio::process::Command) {
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(not(unix))]
    let _ = command;
}

/// Ends what is left of the process group led by `leader` once the server itself has
/// stopped: SIGTERM, then SIGKILL after [`TERM_GRACE`] to what remains.
pub(super) async fn end_group(leader: u32) {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::signal::Signal;
        if !signal_group(leader, Signal::SIGTERM).await {
            return;
        }
        let started = tokio::time::Instant::now();
        while started.elapsed() < TERM_GRACE {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if !in_session(leader).await {
                return;
            }
        }
        signal_group(leader, Signal::SIGKILL).await;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = leader;
}

/// SIGKILL to server process `pid` and its group, for a process about to exit that cannot
/// wait. The process is signalled only while it is this process's unreaped child in its
/// session; the group while that child (even exited, a zombie: its id is then still taken)
/// leads it, or while a process of the group is in this session.
pub(super) fn kill_now(pid: u32) {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::signal::{Signal, kill, killpg};
        use nix::unistd::Pid;

        let Ok(raw) = i32::try_from(pid) else { return };
        let ours = stat_of(raw).filter(|stat| {
            stat.ppid == std::process::id().to_string() && stat.session == my_session()
        });
        if let Some(stat) = &ours
            && stat.state != "Z"
        {
            let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
        }
        let leads = ours.is_some_and(|stat| stat.pgrp == stat.pid_text);
        if leads || group_in_session(pid) {
            let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}

#[cfg(target_os = "linux")]
struct Stat {
    pid_text: String,
    state: String,
    ppid: String,
    pgrp: String,
    session: String,
}

/// `pid (comm) state ppid pgrp session ...` of `/proc/<pid>/stat`, read after the last
/// `)` (a command name may hold anything).
#[cfg(target_os = "linux")]
fn stat_of(pid: i32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace().map(str::to_owned);
    Some(Stat {
        pid_text: pid.to_string(),
        state: fields.next()?,
        ppid: fields.next()?,
        pgrp: fields.next()?,
        session: fields.next()?,
    })
}

#[cfg(target_os = "linux")]
fn my_session() -> String {
    nix::unistd::getsid(None)
        .map_or(0, nix::unistd::Pid::as_raw)
        .to_string()
}

/// Whether a live process of group `leader` is in this process's session.
#[cfg(target_os = "linux")]
fn group_in_session(leader: u32) -> bool {
    let group = leader.to_string();
    let session = my_session();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat_of)
        .any(|stat| stat.pgrp == group && stat.session == session && stat.state != "Z")
}

/// [`group_in_session`] off the runtime's threads: it reads every process's `stat`.
#[cfg(target_os = "linux")]
async fn in_session(leader: u32) -> bool {
    tokio::task::spawn_blocking(move || group_in_session(leader))
        .await
        .unwrap_or(false)
}

/// Sends `signal` to group `leader` if a process of it is in this session; whether it did.
#[cfg(target_os = "linux")]
async fn signal_group(leader: u32, signal: nix::sys::signal::Signal) -> bool {
    let Ok(raw) = i32::try_from(leader) else {
        return false;
    };
    in_session(leader).await
        && nix::sys::signal::killpg(nix::unistd::Pid::from_raw(raw), signal).is_ok()
}
