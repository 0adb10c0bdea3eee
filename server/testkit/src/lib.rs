//! A scripted model server for tests and benchmarks: real HTTP on 127.0.0.1, real SSE.
//!
//! Each request pops the next [`MockResponse`] from a FIFO script. A response written once
//! as [`Chunk`]s is rendered in the wire format the request asks for: OpenAI Chat
//! Completions for paths ending in `/chat/completions`, OpenAI Responses for paths ending in
//! `/responses` (the API Codex speaks), Anthropic Messages for paths ending in `/messages`. Every request is recorded for assertions, including whether the client
//! read the stream to the end or went away early.
//!
//! The same server runs as the `coder-mock-model` binary for tests in other languages.
//! [`PlainServer`] answers with pre-rendered replies and nothing else: the streaming
//! benches' floor. [`mcp`] holds small MCP servers a test scripts in JavaScript.
//! [`workspaces`] makes the three workspaces the benchmarks time turns in: a plain folder,
//! a git repository, and one with a large untracked file.

pub mod bench;
pub mod fuzz;
pub mod mcp;
mod plain;
mod render;
mod script;
mod server;
pub mod workspaces;

pub use plain::{PageAligned, PlainReply, PlainServer};
pub use script::{Chunk, MockResponse, StreamFault};
pub use server::{MockModelServer, RecordedRequest};
