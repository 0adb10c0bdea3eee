//! One run of a program, timed from spawn to exit, with its peak memory: what a person
//! waits for, and what the run cost the machine at its largest.
//!
//! The peak is `ru_maxrss` of `wait4`, and Linux counts in it the resident set of the
//! process that started the program, as it was at the spawn: a program started by the bench
//! itself (tens of MiB, more after writing a large file) would show at least the bench's
//! size. So the program is started by a helper, this bench's own executable started afresh
//! with [`HELPER_ARG`], which spawns it, waits for it with `wait4` and writes the time and
//! the peak to a report file. What a program started by the helper cannot be seen to use
//! below the helper's own size is [`floor_kib`].

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The first argument that makes this bench's executable the helper:
/// `<bench> --coder-bench-timed <report> <program> [<argument>...]`.
pub const HELPER_ARG: &str = "--coder-bench-timed";

/// What one run took.
pub struct Timed {
    /// From just before the spawn to the exit being reaped, measured by the helper.
    pub wall: Duration,
    /// The largest resident set of the program, or of any process it waited for (git, the
    /// shell of a command), in KiB.
    pub peak_rss_kib: u64,
    pub status: ExitStatus,
    /// The run was killed at the deadline.
    pub timed_out: bool,
}

/// A command that runs `program` through the helper, which writes its report to `report`.
/// Arguments, environment, working directory and standard streams set on it are the
/// program's: the helper passes them on unchanged.
pub fn command(program: &Path, report: &Path) -> io::Result<Command> {
    let mut command = Command::new(std::env::current_exe()?);
    command.arg(HELPER_ARG).arg(report).arg(program);
    Ok(command)
}

/// Runs a command made by [`command`] in a process group of its own until it exits, killing
/// the group if it runs past `deadline`. Whatever the program left running in its group
/// (helpers it started in the background) is killed once it has exited.
pub fn run(mut command: Command, report: &Path, deadline: Duration) -> io::Result<Timed> {
    let _ = std::fs::remove_file(report);
    command.process_group(0);
    let mut helper = command.spawn()?;
    let pid = helper.id() as i32;
    let (done, wait_done) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let late = wait_done.recv_timeout(deadline).is_err();
        if late {
            // Fails harmlessly when the group has just ended.
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        late
    });
    let helper_status = helper.wait();
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    // Fails harmlessly when the group is already empty.
    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    let helper_status = helper_status?;
    let text = std::fs::read_to_string(report).map_err(|error| {
        io::Error::other(format!(
            "the timing helper wrote no report ({helper_status}): {error}"
        ))
    })?;
    let fields: Vec<i64> = text
        .split_whitespace()
        .map(|field| field.parse().map_err(io::Error::other))
        .collect::<io::Result<_>>()?;
    let [nanos, kib, status] = fields[..] else {
        return Err(io::Error::other(format!("a malformed report: {text:?}")));
    };
    Ok(Timed {
        wall: Duration::from_nanos(u64::try_from(nanos).unwrap_or(0)),
        peak_rss_kib: u64::try_from(kib).unwrap_or(0),
        status: ExitStatus::from_raw(i32::try_from(status).unwrap_or(-1)),
        timed_out,
    })
}

/// The helper's side: `args` are what follows [`HELPER_ARG`] (the report's path, the
/// program, its arguments). Runs the program with this process's streams, directory and
/// environment, writes `<nanoseconds> <peak KiB> <wait status>` to the report, and exits.
pub fn helper_main(mut args: impl Iterator<Item = std::ffi::OsString>) -> ! {
    let (Some(report), Some(program)) = (args.next(), args.next()) else {
        eprintln!("usage: {HELPER_ARG} <report> <program> [<argument>...]");
        std::process::exit(2);
    };
    let started = Instant::now();
    let child = match Command::new(&program).args(args).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("could not start {}: {error}", Path::new(&program).display());
            std::process::exit(127);
        }
    };
    let waited = wait4(child.id() as i32);
    let wall = started.elapsed();
    // The child was reaped by `wait4`: dropping its handle neither waits nor kills.
    drop(child);
    match waited {
        Ok((status, usage)) => {
            let line = format!("{} {} {status}\n", wall.as_nanos(), usage.ru_maxrss);
            if let Err(error) = std::fs::write(&report, line) {
                eprintln!("could not write the report: {error}");
                std::process::exit(1);
            }
            std::process::exit(0);
        }
        Err(error) => {
            eprintln!(
                "could not wait for {}: {error}",
                Path::new(&program).display()
            );
            std::process::exit(1);
        }
    }
}

/// The peak a program started by the helper shows however little it uses (`true`'s), in
/// KiB: the helper's own resident set at the spawn.
pub fn floor_kib(report: &Path) -> io::Result<u64> {
    let command = command(Path::new("true"), report)?;
    let run = run(command, report, Duration::from_secs(30))?;
    Ok(run.peak_rss_kib)
}

/// Waits for the child `pid` to end and returns its wait status and resource usage. The
/// standard library's `wait` does not return the usage, and neither nix nor rustix wraps
/// `wait4`.
#[allow(unsafe_code)]
fn wait4(pid: i32) -> io::Result<(i32, nix::libc::rusage)> {
    let mut status = 0;
    // SAFETY: `rusage` is plain integers and `timeval`s, for which all zeroes is a value.
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid for writes for the whole call, and `pid` is
        // a child of this process that nothing else waits for.
        let reaped = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            return Ok((status, usage));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}
