//! The soak's command line.

use std::path::PathBuf;

use clap::Parser;
use rand::Rng;
use rand::rngs::StdRng;

/// Command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "soak",
    about = "Soak a coordinator process with a churning fleet of fake workers"
)]
pub(crate) struct Args {
    /// Existing book store to soak (copied first unless --in-place).
    #[arg(long)]
    pub(crate) db: PathBuf,
    /// Length of the run in minutes (fractions allowed).
    #[arg(long, default_value_t = 60.0)]
    pub(crate) minutes: f64,
    /// Simulated workers (members of the fleet).
    #[arg(long, default_value_t = 200)]
    pub(crate) workers: usize,
    /// Samples as TSV; beside it OUT.acked (acknowledged results) and
    /// OUT.coordinator.log.
    #[arg(long, default_value = "soak.tsv")]
    pub(crate) out: PathBuf,
    /// Directory for the copy of --db (must not exist). Default: DB.soak-PID.
    #[arg(long)]
    pub(crate) copy_to: Option<PathBuf>,
    /// Run on --db itself: the book grows by what the fleet thinks.
    #[arg(long, conflicts_with = "copy_to")]
    pub(crate) in_place: bool,
    /// Keep the copy after a run whose checks pass (kept anyway when one fails).
    #[arg(long)]
    pub(crate) keep_copy: bool,
    /// The coordinator executable. Default: `coordinator` in the target directory
    /// this tool was built in.
    #[arg(long)]
    pub(crate) coordinator: Option<PathBuf>,
    /// Slots of each simulated worker, uniform in LO-HI.
    #[arg(long, default_value = "1-4", value_parser = parse_span)]
    pub(crate) slots: Span,
    /// Milliseconds each fake evaluation (or game) takes, uniform in LO-HI.
    #[arg(long, default_value = "20000-100000", value_parser = parse_span)]
    pub(crate) think_ms: Span,
    /// Mean seconds a worker stays connected (exponential distribution).
    #[arg(long, default_value_t = 180.0)]
    pub(crate) session_secs: f64,
    /// Seconds between a departure and the next connection, uniform in LO-HI.
    #[arg(long, default_value = "1-10", value_parser = parse_span)]
    pub(crate) pause_secs: Span,
    /// Share of departures that are kills (new id afterwards).
    #[arg(long, default_value_t = 0.3)]
    pub(crate) kill_share: f64,
    /// Share of departures that drop the connection (results resent later).
    #[arg(long, default_value_t = 0.2)]
    pub(crate) drop_share: f64,
    /// Share of departures that hang (silent for 1.5 x --lease-secs, then killed).
    #[arg(long, default_value_t = 0.05)]
    pub(crate) hang_share: f64,
    /// The coordinator's --lease-secs.
    #[arg(long, default_value_t = 60)]
    pub(crate) lease_secs: u64,
    /// The coordinator's --play-share (0: think jobs only).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) play_share: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 10)]
    pub(crate) sample_secs: u64,
    /// Minutes excluded from the checks at the start. Default: 10 % of the run.
    #[arg(long)]
    pub(crate) warmup_mins: Option<f64>,
    /// Allowed RSS spread after the warm-up (max/min - 1), book growth deducted.
    #[arg(long, default_value_t = 0.05)]
    pub(crate) rss_tolerance: f64,
    /// Bytes of RSS a node added to the book may legitimately cost (the book's
    /// growth is deducted at this rate). Default: the idle coordinator's RSS per
    /// node of the book it loaded.
    #[arg(long)]
    pub(crate) bytes_per_node: Option<f64>,
    /// Seed of the fleet's random choices.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// One more coordinator argument (repeatable), e.g. --coordinator-arg=--select=softmax.
    #[arg(long = "coordinator-arg", allow_hyphen_values = true)]
    pub(crate) coordinator_args: Vec<String>,
}

/// An inclusive range `LO-HI` (or a single number).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub(crate) lo: u64,
    pub(crate) hi: u64,
}

impl Span {
    pub(crate) fn draw(self, rng: &mut StdRng) -> u64 {
        rng.random_range(self.lo..=self.hi)
    }
}

pub(crate) fn parse_span(s: &str) -> Result<Span, String> {
    let (lo, hi) = s.split_once('-').unwrap_or((s, s));
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|e| format!("`{t}` in `{s}`: {e}"))
    };
    let (lo, hi) = (num(lo)?, num(hi)?);
    if lo > hi {
        return Err(format!("`{s}`: the low end is above the high end"));
    }
    Ok(Span { lo, hi })
}
