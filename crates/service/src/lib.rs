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
pub mod engine_flags;
pub mod export;
pub mod logging;
pub mod opponent_flags;
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

/// An error with its causes, `outer: cause: root`, each said once: a cause
/// whose text its parent already ends with (hyper's `tcp connect error`
/// wraps an error of the same words) is left out, so that a user reads
/// `tcp connect error: Connection refused`, not `tcp connect error: tcp
/// connect error: ...`.
#[must_use]
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut last = text.clone();
    let mut cause = error.source();
    while let Some(e) = cause {
        let said = e.to_string();
        if !said.is_empty() && !last.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        last = said;
        cause = e.source();
    }
    // Whatever the causes quote (a 100 KB argument, a path of 400 KB), the
    // line a person reads quotes a few hundred bytes of it.
    stera_rules::excerpt_message(&text)
}

#[cfg(test)]
mod error_text_tests {
    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Layer {
        text: &'static str,
        #[source]
        source: Option<Box<Layer>>,
    }

    fn chain(texts: &[&'static str]) -> Layer {
        texts
            .iter()
            .rev()
            .fold(None, |source, &text| {
                Some(Layer {
                    text,
                    source: source.map(Box::new),
                })
            })
            .unwrap()
    }

    #[test]
    fn a_cause_is_said_once() {
        let e = chain(&[
            "cannot connect",
            "transport error",
            "tcp connect error",
            "tcp connect error",
            "Connection refused (os error 111)",
        ]);
        assert_eq!(
            super::error_text(&e),
            "cannot connect: transport error: tcp connect error: Connection refused (os error 111)"
        );
        assert_eq!(super::error_text(&chain(&["a", "b"])), "a: b");
    }
}
