//! The engine's integration tests, run against the real mock model server.

mod suite;
