//! Log set-up shared by the binaries: `RUST_LOG`-style filters, text or JSON.

use tracing_subscriber::EnvFilter;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (for log collectors).
    Json,
}

/// Installs the global subscriber. The filter comes from `RUST_LOG` (default `info`).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour codes only for a person at a terminal, never into log files or pipes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        // Records go around the status line a terminal may show (see `terminal`).
        .with_writer(crate::terminal::StderrWriter)
        // A record that cannot be written (stderr closed: `2>&1 | head`, a
        // supervisor gone) is dropped; reporting that failure would itself
        // write to the closed stderr and panic.
        .log_internal_errors(false);
    // A second init (tests, a re-exec) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
