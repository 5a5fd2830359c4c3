//! Integration tests of the coordinator: real coordinator processes on loopback,
//! fake and real workers.
//!
//! One test binary for the crate: each former `tests/<name>.rs` is the module
//! `<name>` here, so `cargo test --test it -- <name>::` runs one file's tests.

// Tests and their helpers: a failed step is a failed test, reported by the panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../../crates/engine/tests/fixtures/engines.rs"]
mod engines;
mod web;

mod backup;
mod blame;
mod caller_mistakes;
mod clean_shutdown;
mod compaction;
mod connection_logs;
mod dashboard;
mod durable_ack;
mod export_backup_age;
mod export_live;
mod export_owner;
mod export_ybb;
mod full_disk;
mod games;
mod games_real;
mod hostile;
mod input_limits;
mod learning;
mod learning_visible;
mod metrics;
mod mixed_engines;
mod no_progress;
mod output_paths;
mod prometheus_queries;
mod restart_leases;
mod restore;
mod search;
mod second_signal;
mod service;
mod status_line;
mod unread_stderr;
mod validate_fuzz;
