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

    /// A socket as a non-blocking stream of the runtime. Only `read` and `write` are used,
    /// which any stream socket answers.
    fn stream(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    }

    pub(super) fn input() -> Option<Input> {
        Some(match own(std::io::stdin().as_fd())? {
            (fd, Kind::Pipe) => Box::new(pipe::Receiver::from_owned_fd(fd).ok()?),
            (fd, Kind::Socket) => Box::new(stream(fd)?),
        })
    }

    pub(super) fn output() -> Option<Output> {
        Some(match own(std::io::stdout().as_fd())? {
            (fd, Kind::Pipe) => Box::new(pipe::Sender::from_owned_fd(fd).ok()?),
            (fd, Kind::Socket) => Box::new(stream(fd)?),
        })
    }
}
