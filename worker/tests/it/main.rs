//! Integration tests of the worker.
//!
//! One test binary for the crate: each former `tests/<name>.rs` is the module
//! `<name>` here, so `cargo test --test it -- <name>::` runs one file's tests.

// Tests and their helpers: a failed step is a failed test, reported by the panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod input_limits;
mod usi_game;
