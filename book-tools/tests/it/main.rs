//! Integration tests of `book-tools`: the built binary run on temporary books.
//!
//! One test binary for the crate: each former `tests/<name>.rs` is the module
//! `<name>` here, so `cargo test --test it -- <name>::` runs one file's tests.

// Tests and their helpers: a failed step is a failed test, reported by the panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../../crates/engine/tests/fixtures/engines.rs"]
mod engines;

mod book_cli;
mod cli_former;
mod cli_meanings;
mod cli_vocabulary;
mod damaged_store;
mod export_format;
mod export_front_ends;
mod export_paths;
mod full_disk;
mod game_results_cli;
mod hostile_input;
mod input_limits;
mod learn_cli;
mod match_cli;
mod match_opponent;
mod next_cli;
mod output_paths;
mod partial_outputs;
mod peta_shock_fixtures;
mod pipes;
mod progress_width;
mod read_only;
mod stats_learning;
mod status_document;
mod thinkers_cli;
mod ybb_cli;
