//! End-to-end tests of the `coder` binary against the mock model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
