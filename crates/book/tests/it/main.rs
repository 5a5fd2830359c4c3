//! Integration tests of `stera-book`.
//!
//! One test binary for the crate: each former `tests/<name>.rs` is the module
//! `<name>` here, so `cargo test --test it -- <name>::` runs one file's tests.

// Tests and their helpers: a failed step is a failed test, reported by the panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kill_child;

mod backup;
mod crash_durability;
mod game_results;
mod game_results_crash;
mod selector_twins;
mod selector_vs_minimax;
mod softmax_select;
mod store_open;
mod store_reopen;
mod store_whole;
mod twins_merge;
