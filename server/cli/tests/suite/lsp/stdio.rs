//! `coder lsp` over the kinds of stdio editors give it: Node (every VS Code extension) and
//! Neovim start their servers with Unix socket pairs, not pipes (libuv makes a child's
//! stdio that way), and some clients hand one socket for both directions. The server reads
//! and writes them as non-blocking streams of its runtime; a whole task streams over each.

use std::os::fd::OwnedFd;

use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Client, lsp_command};

/// The reply's 300 deltas.
fn words() -> Vec<String> {
    (0..300).map(|n| format!("w{n} ")).collect()
}

/// One end of a new socket pair for the child, the other as the test's stream.
pub(super) fn socket_pair() -> (OwnedFd, tokio::net::UnixStream) {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    (
        theirs.into(),
        tokio::net::UnixStream::from_std(ours).unwrap(),
    )
}

/// `coder lsp` in `workspace`, its provider `server`, with `child_in` and `child_out` as its
/// stdin and stdout.
pub(super) fn spawn_over(
    workspace: &std::path::Path,
    server: &MockModelServer,
    child_in: OwnedFd,
    child_out: OwnedFd,
) -> tokio::process::Child {
    let base_url = server.openai_base_url();
    let env = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "k"),
    ];
    lsp_command(workspace, &env)
        .stdin(child_in)
        .stdout(child_out)
        .spawn()
        .unwrap()
}

/// `coder lsp` whose stdin and stdout are `child_in` and `child_out`, the test writing
/// `output` and reading `input`: the handshake, a conversation, and one task whose reply
/// streams in 300 deltas, every delta's text arriving in order before `task_complete`;
/// then `shutdown` and `exit`, and the server ends with 0.
async fn one_task_over(
    (child_in, child_out): (OwnedFd, OwnedFd),
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin,
) {
    let workspace = tempfile::tempdir().unwrap();
    let reply = MockResponse::stream(words().iter().map(|word| Chunk::text(word)).collect());
    let server = MockModelServer::start(vec![reply]).await.unwrap();
    let child = spawn_over(workspace.path(), &server, child_in, child_out);
    let mut client = Client::over(child, output, input);
    let init = client.initialize(json!({})).await;
    assert!(init.get("result").is_some(), "{init}");
    let mut seen = Vec::new();
    let created = client
        .request("conversation/create", json!({}), &mut seen)
        .await;
    let conversation = created["result"]["conversationId"].as_str().unwrap();
    client.send_text(conversation, "go", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    let text: String = super::events(&seen)
        .filter(|event| event["type"] == "agent_message_delta")
        .map(|event| event["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, words().concat());
    let end = super::events(&seen)
        .find(|event| event["type"] == "task_complete")
        .unwrap();
    assert!(end["error"].is_null(), "{end}");
    client.stop().await;
}

#[tokio::test]
async fn a_task_streams_over_socket_pairs_as_node_and_neovim_connect_them() {
    let (child_in, ours_in) = socket_pair();
    let (child_out, ours_out) = socket_pair();
    one_task_over((child_in, child_out), ours_out, ours_in).await;
}

#[tokio::test]
async fn a_task_streams_over_one_socket_for_both_directions() {
    let (child_end, ours) = socket_pair();
    let child_out = child_end.try_clone().unwrap();
    let (read, write) = ours.into_split();
    one_task_over((child_end, child_out), read, write).await;
}

/// `coder lsp` in `workspace` with `child`'s pipes as its stdin and stdout, initialized;
/// the test writes and reads `ours`.
async fn initialized_over_pipes(
    workspace: &std::path::Path,
    child: (std::io::PipeReader, std::io::PipeWriter),
    ours: (std::io::PipeWriter, std::io::PipeReader),
) -> Client<tokio::net::unix::pipe::Sender, tokio::net::unix::pipe::Receiver> {
    let child = lsp_command(workspace, &[])
        .stdin(child.0)
        .stdout(child.1)
        .spawn()
        .unwrap();
    let output = tokio::net::unix::pipe::Sender::from_owned_fd(ours.0.into()).unwrap();
    let input = tokio::net::unix::pipe::Receiver::from_owned_fd(ours.1.into()).unwrap();
    let mut client = Client::over(child, output, input);
    let init = client.initialize(json!({})).await;
    assert!(init.get("result").is_some(), "{init}");
    client
}

/// Whether `fd`'s open file description is non-blocking.
fn non_blocking(fd: &impl std::os::fd::AsFd) -> bool {
    let flags = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
    nix::fcntl::OFlag::from_bits_truncate(flags).contains(nix::fcntl::OFlag::O_NONBLOCK)
}

/// A shell that runs `coder lsp` holds the same pipes (the same open file descriptions)
/// and reads or writes them after it; a non-blocking flag set on them would make its next
/// read or write fail with `EAGAIN`. coder reads and writes descriptions of its own.
#[tokio::test]
async fn the_inherited_pipes_stay_blocking_for_whoever_else_holds_them() {
    let (child_in, ours_in) = std::io::pipe().unwrap();
    let (ours_out, child_out) = std::io::pipe().unwrap();
    // What the shell keeps: the very descriptions coder's stdin and stdout are.
    let shells_in = child_in.try_clone().unwrap();
    let shells_out = child_out.try_clone().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client =
        initialized_over_pipes(workspace.path(), (child_in, child_out), (ours_in, ours_out)).await;
    let listed = client
        .request("conversation/list", json!({}), &mut Vec::new())
        .await;
    assert!(listed.get("result").is_some(), "{listed}");
    assert!(
        !non_blocking(&shells_in),
        "coder made its stdin pipe non-blocking for all"
    );
    assert!(
        !non_blocking(&shells_out),
        "coder made its stdout pipe non-blocking for all"
    );
    client.stop().await;
    assert!(!non_blocking(&shells_in) && !non_blocking(&shells_out));
}

/// A reply's end carries its whole text three times (`agent_message`, `reply_complete`,
/// `task_complete`): through a 64 KiB pipe that leaves 64 KiB per wake-up of the client.
/// coder widens its stdout pipe to 1 MiB where the system lets a process without
/// privileges do so (Linux's default ceiling), and leaves it as it is where it does not.
#[tokio::test]
async fn the_stdout_pipe_holds_a_megabyte() {
    fn pipe_size(fd: &impl std::os::fd::AsFd) -> usize {
        let size = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETPIPE_SZ).unwrap();
        usize::try_from(size).unwrap()
    }
    let (child_in, ours_in) = std::io::pipe().unwrap();
    let (ours_out, child_out) = std::io::pipe().unwrap();
    let given = pipe_size(&ours_out);
    let watched = ours_out.try_clone().unwrap();
    let ceiling: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let client =
        initialized_over_pipes(workspace.path(), (child_in, child_out), (ours_in, ours_out)).await;
    let expected = if ceiling >= 1 << 20 { 1 << 20 } else { given };
    assert_eq!(pipe_size(&watched), expected);
    client.stop().await;
}
