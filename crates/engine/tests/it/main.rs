//! Integration tests of `stera-engine`.
//!
//! One test binary for the crate: each former `tests/<name>.rs` is the module
//! `<name>` here, so `cargo test --test it -- <name>::` runs one file's tests.

// Tests and their helpers: a failed step is a failed test, reported by the panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../fixtures/engines.rs"]
mod engines;
#[path = "../fixtures/nnue_net.rs"]
mod net;
#[path = "../fixtures/rng.rs"]
mod rng;

mod builtin_games;
mod builtin_search;
mod builtin_usi;
mod nnue_eval;
mod nnue_file;
mod players;
mod usi_engines;
mod usi_fake;
mod usi_flood;
mod usi_overhead;
mod usi_yaneuraou;
