//! `book-tools check`: a stopped store read through (every table), compared
//! with its record of what it must hold; says what is missing and exits
//! non-zero when anything is.

use std::path::PathBuf;

use anyhow::{Result, bail};
use stera_book::{Holdings, SledStore};

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory (stopped: not one a running coordinator holds).
    /// Nothing is written to it; a store made before stores kept a record of
    /// what they hold is read through all the same.
    #[arg(long)]
    db: PathBuf,
}

pub fn run(args: &Args) -> Result<()> {
    let report = SledStore::check(&args.db).map_err(anyhow::Error::new)?;
    let f = &report.found;
    crate::say!("store `{}`", args.db.display());
    crate::say!(
        "  positions {} in {} chunks, kifu batches {}, evaluators {}, run configuration {}, games {} ({} positions counted), bans {}, quarantined {}",
        f.nodes,
        report.chunks,
        f.kifu_batches,
        f.evaluators,
        if f.config { "saved" } else { "none" },
        f.games,
        report.counted_positions,
        report.bans,
        report.quarantined
    );
    match &report.recorded {
        Some(r) => crate::say!(
            "  its record (`{}`) says it must hold: {}",
            stera_book::RECORD_FILE,
            holdings(r)
        ),
        None if report.is_whole() => crate::say!(
            "  no record of what it must hold (`{}`): a store made before stores kept one, so what was stored cannot be compared; the next command that writes to it begins it",
            stera_book::RECORD_FILE
        ),
        None => crate::say!(
            "  no record of what it must hold (`{}`)",
            stera_book::RECORD_FILE
        ),
    }
    if report.is_whole() {
        crate::say!("whole: every table reads, nothing is missing");
        return Ok(());
    }
    crate::tell!("damaged: {} problems", report.problem_count);
    for p in &report.problems {
        crate::tell!("  {p}");
    }
    if report.problem_count > report.problems.len() as u64 {
        crate::tell!(
            "  ... and {} more",
            report.problem_count - report.problems.len() as u64
        );
    }
    bail!(
        "the book store `{}` is damaged; restore it from a backup (deploy/README.md, \"Back up and restore the store\")",
        args.db.display()
    )
}

fn holdings(h: &Holdings) -> String {
    format!(
        "positions {}, kifu batches {}, evaluators {}, run configuration {}, games {}",
        h.nodes,
        h.kifu_batches,
        h.evaluators,
        if h.config { "saved" } else { "none" },
        h.games
    )
}
