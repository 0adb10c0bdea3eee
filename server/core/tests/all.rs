//! The engine's integration tests, run against the real mock model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
