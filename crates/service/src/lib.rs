//! Service plumbing shared by the two long-running binaries, the coordinator and
//! the worker, so that neither reaches into the other for it:
//!
//! * [`logging`]: `RUST_LOG` filters, `--log-format text|json`.
//! * [`telemetry`]: the Prometheus recorder, histogram buckets, `stera_build_info`
//!   and the `/metrics` HTTP server.
//! * [`runtime`]: the multi-threaded tokio runtime a binary's `main` runs on.
//! * [`signals`]: Ctrl-C and SIGTERM, in two stages (finish, then abort).
//! * [`terminal`]: the one live status line on a terminal, and the log writer
//!   that keeps records off it.
//! * [`token`]: the bearer token from a file or `STERA_TOKEN`.
//! * [`export`]: the export choice (backup, weights, temperature, format) of the
//!   three export front ends, as one set of flags and its protocol request.
//! * [`select`]: the selection flags (`--select`, `--temperature`,
//!   `--select-seed`) of the coordinator, `book-tools next` and `bench select`.
//! * [`convert`]: the protocol's messages to and from the domain types (game
//!   rules and results, search limits, think results), so that both ends of the
//!   wire read and write them the same way.
//! * [`status`]: the status document, one JSON schema for the coordinator's
//!   `/api/status` and `book-tools remote status --json`.
//!
//! Tokio lives here on purpose: this is the async edge of the system. The rules,
//! book and games crates stay free of it.

pub mod convert;
pub mod deprecated;
pub mod export;
pub mod logging;
pub mod runtime;
pub mod select;
pub mod signals;
pub mod status;
pub mod telemetry;
pub mod terminal;

/// The bearer token a worker or tool presents and a coordinator expects (the
/// protocol crate owns the rules; re-exported so that binaries find all of their
/// plumbing in one place).
pub mod token {
    pub use stera_proto::token::{TokenError, read_token};
}

pub use runtime::block_on_main;
