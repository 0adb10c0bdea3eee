//! How long tool processes live: each command runs in a session of its own, and when its
//! call ends everything the call started is killed and reaped.
//!
//! A command is started with `setsid` (by the tool, in `pre_exec`): it has no controlling
//! terminal, so it cannot open `/dev/tty` or push keystrokes into the person's terminal, and
//! its session id (its pid) names every process it starts, background ones included
//! (`cmd &`, `nohup cmd &`, a double fork), since a process can only leave its session by
//! starting a new one. When the call ends, [`CallSession::end`] kills what is left in the
//! session.
//!
//! A process that left with `setsid` is found another way: the `coder` binary is a child
//! subreaper ([`become_subreaper`]), so when its parent exits the kernel hands it to coder
//! rather than to init. At the end of a call, every child of coder in a session other than
//! coder's own and other than a still-running call's is such an escapee: it is killed with
//! its whole session. Zombies among them are reaped (only by pid, never with `waitpid(-1)`,
//! so the runtime keeps the exit status of the children it waits for).
//!
//! Children coder starts itself (MCP servers) stay in coder's session and are never touched.
//! An embedder (the Node addon) does not make its process a subreaper: there, processes
//! that left their session are not found.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

/// Whether this process is a child subreaper, so escaped processes come back to it.
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// The sessions of commands still running, with the cancellation of the task that runs
/// each. Held while a command is spawned and while a sweep picks its targets, so a sweep
/// never takes a just-started command for an escapee.
static RUNNING: Mutex<BTreeMap<i32, CancellationToken>> = Mutex::new(BTreeMap::new());

/// How many times a sweep looks again for processes to kill: a process may fork while the
/// sweep kills its siblings, and an escapee's children come back to coder only once their
/// parent is dead.
const SWEEPS: usize = 200;

/// Makes this process a child subreaper: orphans among its descendants are handed to it
/// instead of to init, so the processes a tool call started cannot escape by double
/// forking. For a program that runs the engine as its main job (the `coder` binary); an
/// embedder whose process has children of its own should not call it.
pub fn become_subreaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true)?;
        SUBREAPER.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Spawns a command that starts a session of its own (`setsid` in its `pre_exec`) for a
/// task cancelled by `cancel`, and returns it with the guard that ends the session.
pub(crate) fn spawn_call(
    cancel: &CancellationToken,
    spawn: impl FnOnce() -> std::io::Result<tokio::process::Child>,
) -> std::io::Result<(tokio::process::Child, CallSession)> {
    let mut running = crate::sync::lock(&RUNNING);
    let child = spawn()?;
    let sid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| std::io::Error::other("the command has no process id"))?;
    running.insert(sid, cancel.clone());
    Ok((child, CallSession { sid, ended: false }))
}

/// Kills and reaps, now, the processes of every command whose task was cancelled (and,
/// in a subreaper, every escapee), without waiting for the calls to notice: for a process
/// about to exit, whose futures will not run again ([`crate::Engine::shutdown_now`]).
/// Commands of tasks not cancelled (another engine's, in an embedder) are left alone.
pub(crate) fn end_cancelled_calls() {
    let cancelled: Vec<i32> = {
        let mut running = crate::sync::lock(&RUNNING);
        let sids: Vec<i32> = running
            .iter()
            .filter(|(_, cancel)| cancel.is_cancelled())
            .map(|(sid, _)| *sid)
            .collect();
        for sid in &sids {
            running.remove(sid);
        }
        sids
    };
    for sid in cancelled {
        sweep(sid);
    }
}

/// The session of one running command. Ending it (or dropping it) kills and reaps
/// everything the command started, and any process that escaped a finished call.
pub(crate) struct CallSession {
    /// The session id: the pid of the command's first process, which the caller owns and
    /// reaps (it is killed here, never waited for).
    sid: i32,
    ended: bool,
}

impl CallSession {
    /// Kills everything left in the session and every escaped process, and reaps them.
    pub(crate) fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        crate::sync::lock(&RUNNING).remove(&self.sid);
        sweep(self.sid);
    }
}

impl Drop for CallSession {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(target_os = "linux")]
fn sweep(sid: i32) {
    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::Pid;

    let me = std::process::id() as i32;
    let my_session = nix::unistd::getsid(None).map_or(0, Pid::as_raw);
    let subreaper = SUBREAPER.load(Ordering::SeqCst);
    for _ in 0..SWEEPS {
        let targets: Vec<ProcStat> = {
            let running = crate::sync::lock(&RUNNING);
            let all = proc_stats();
            let mut doomed = BTreeSet::from([sid]);
            if subreaper {
                doomed.extend(
                    all.iter()
                        .filter(|p| p.ppid == me && p.sid != my_session)
                        .filter(|p| !running.contains_key(&p.sid))
                        .map(|p| p.sid),
                );
            }
            all.into_iter()
                .filter(|p| doomed.contains(&p.sid) && p.pid != me)
                // A zombie is only ours to reap when it is our child; the command's first
                // process is reaped by its owner.
                .filter(|p| !p.zombie || (p.ppid == me && p.pid != sid))
                .collect()
        };
        if targets.is_empty() {
            return;
        }
        for target in &targets {
            let pid = Pid::from_raw(target.pid);
            if !target.zombie {
                // Gone already is fine.
                let _ = kill(pid, Signal::SIGKILL);
            } else {
                let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    tracing::warn!("processes of a finished command are still running after {SWEEPS} sweeps");
}

#[cfg(not(target_os = "linux"))]
fn sweep(sid: i32) {
    // Without /proc, the session's process group is what can be found.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(sid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// What a sweep reads of a process in `/proc/<pid>/stat`.
#[cfg(target_os = "linux")]
struct ProcStat {
    pid: i32,
    ppid: i32,
    sid: i32,
    zombie: bool,
}

/// Every process this one can see. Processes that end while they are read are skipped.
#[cfg(target_os = "linux")]
fn proc_stats() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// Parses `pid (comm) state ppid pgrp session ...`; `comm` may hold spaces and parentheses,
/// so the fields are read after the last `)`.
#[cfg(target_os = "linux")]
fn parse_stat(pid: i32, stat: &str) -> Option<ProcStat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let _pgrp = fields.next()?;
    let sid = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        sid,
        zombie: state == "Z" || state == "X",
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_a_strange_command_name_is_read_after_the_last_parenthesis() {
        let stat = parse_stat(42, "42 (a) b (c) S 7 42 41 0 -1").unwrap();
        assert_eq!(
            (stat.pid, stat.ppid, stat.sid, stat.zombie),
            (42, 7, 41, false)
        );
        assert!(parse_stat(9, "9 (z) Z 1 9 9").unwrap().zombie);
    }
}
