//! stdin and stdout as the runtime's own non-blocking I/O when they are pipes or sockets,
//! as an editor connects them: a pipe from most programs, a Unix socket from Node (libuv
//! makes a child's stdio of socket pairs, so every VS Code extension's server gets
//! sockets).
//!
//! tokio's `stdin()` and `stdout()` hand every read and write to a blocking thread and wait
//! for it to come back: a thread hop and two wake-ups for each request that arrives and
//! each batch that leaves. Read and written as the runtime's own I/O, a request is read by
//! the thread its readiness woke and a batch leaves from the thread that made it. Anything
//! else (a file, a terminal) keeps tokio's blocking streams.
//!
//! Non-blocking is a flag of the open file description, shared by every process holding
//! it: set on an inherited pipe, it would stay with the shell that runs coder and reads or
//! writes after it (which then fails with `EAGAIN`). A pipe is therefore opened again
//! through `/proc` (a description of coder's own, non-blocking from the start). A socket
//! cannot be opened again; its description gets the flag (Node and Neovim hand each child
//! sockets of its own).
//!
//! A stdout pipe is widened to 1 MiB (`F_SETPIPE_SZ`): a reply's end, its text three times
//! over, then goes out in one write rather than 64 KiB per wake-up of the client.

use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) type Input = Box<dyn AsyncRead + Unpin + Send>;
pub(crate) type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// The process's stdin.
pub(crate) fn input() -> Input {
    #[cfg(unix)]
    if let Some(input) = unix::input() {
        return input;
    }
    Box::new(tokio::io::stdin())
}

/// The process's stdout.
pub(crate) fn output() -> Output {
    #[cfg(unix)]
    if let Some(output) = unix::output() {
        return output;
    }
    Box::new(tokio::io::stdout())
}

#[cfg(unix)]
mod unix {
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    use tokio::net::unix::pipe;

    use super::{Input, Output};

    enum Kind {
        Pipe,
        Socket,
    }

    /// A descriptor of its own for `fd`, and whether it is a pipe or a socket.
    fn own(fd: BorrowedFd<'_>) -> Option<(OwnedFd, Kind)> {
        let fd = fd.try_clone_to_owned().ok()?;
        let file = std::fs::File::from(fd);
        let kind = file.metadata().ok()?.file_type();
        let kind = if kind.is_fifo() {
            Kind::Pipe
        } else if kind.is_socket() {
            Kind::Socket
        } else {
            return None;
        };
        Some((file.into(), kind))
    }

    /// A description of its own for the pipe at `fd`, opened again through `/proc`,
    /// non-blocking from the start. `None` off Linux, without `/proc`, or when the pipe has
    /// no reader (its write end cannot be opened then): the inherited description is used.
    fn private_pipe(fd: BorrowedFd<'_>, write: bool) -> Option<OwnedFd> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .ok()?;
        Some(file.into())
    }

    /// What coder asks its stdout pipe to hold: Linux's default ceiling for a process
    /// without privileges (`/proc/sys/fs/pipe-max-size`).
    const PIPE_BYTES: usize = 1 << 20;

    /// Lets the stdout pipe hold [`PIPE_BYTES`] instead of 64 KiB, so a burst (the reply's
    /// whole text in `agent_message`, `reply_complete` and `task_complete`, a batch of
    /// deltas) leaves in one write instead of 64 KiB at a time, each waiting for the client
    /// to read the last. Pages are only taken as they fill. Where the system refuses (a
    /// lower ceiling, the user's pipe pages spent), the pipe keeps its size.
    fn widen(fd: &OwnedFd) {
        #[cfg(target_os = "linux")]
        if let Ok(bytes) = i32::try_from(PIPE_BYTES) {
            let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETPIPE_SZ(bytes));
        }
        #[cfg(not(target_os = "linux"))]
        let _ = fd;
    }

    /// A socket as a non-blocking stream of the runtime. Only `read` and `write` are used,
    /// which any stream socket answers.
    fn stream(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    }

    pub(super) fn input() -> Option<Input> {
        let stdin = std::io::stdin();
        Some(match own(stdin.as_fd())? {
            (fd, Kind::Pipe) => {
                let fd = private_pipe(stdin.as_fd(), false).unwrap_or(fd);
                Box::new(pipe::Receiver::from_owned_fd(fd).ok()?)
            }
            (fd, Kind::Socket) => Box::new(stream(fd)?),
        })
    }

    pub(super) fn output() -> Option<Output> {
        let stdout = std::io::stdout();
        Some(match own(stdout.as_fd())? {
            (fd, Kind::Pipe) => {
                let fd = private_pipe(stdout.as_fd(), true).unwrap_or(fd);
                widen(&fd);
                Box::new(pipe::Sender::from_owned_fd(fd).ok()?)
            }
            (fd, Kind::Socket) => Box::new(stream(fd)?),
        })
    }
}
