//! Tool processes: what they inherit from coder and how long they live.
//!
//! - [`ToolEnv`]: the environment a tool's process gets: coder's own, without secrets (the
//!   provider key in use, and variables whose names mark them as secrets), except the names
//!   the person passes through.
//! - [`CallSession`]: each command runs in a session of its own, with no controlling
//!   terminal; when the call ends (or is dropped), everything left in that session is
//!   killed and reaped, and so is every process that left it with `setsid` and was handed
//!   to coder as an orphan (coder is a child subreaper, see [`become_subreaper`]).

mod env;
mod sessions;

pub use env::{ToolEnv, looks_secret};
pub use sessions::become_subreaper;
pub(crate) use sessions::{end_cancelled_calls, spawn_call};
