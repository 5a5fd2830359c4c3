//! `book-tools evaluate`: every legal move's value from the built-in engine or an
//! external USI engine, as the worker would compute it.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use stera_rules::Position;
use stera_service::engine_flags::{EngineFlags, LimitArgs};

/// How often a non-interactive run reports that it is still searching.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(10);

#[derive(clap::Args)]
pub struct Args {
    /// `startpos`, an SFEN (with or without a leading `sfen `, ply optional), or a
    /// position command such as `startpos moves 7g7f 3c3d`.
    position: String,
    #[command(flatten)]
    engine: EngineFlags,
    #[command(flatten)]
    limits: LimitArgs,
}

pub fn run(args: &Args) -> Result<()> {
    let position = Position::from_position_command(&args.position)
        .with_context(|| format!("cannot read position `{}`", args.position))?;
    let limits = args.limits.limits();
    let mut evaluator = args
        .engine
        .choice()
        .start()
        .context("cannot start the evaluator")?;
    crate::tell!("engine: {}", evaluator.identity());
    let evaluation = with_progress(|| evaluator.evaluate(&position, &limits))
        .with_context(|| format!("evaluating `{}`", position.to_sfen()))?;
    crate::common::to_stdout(|out| {
        for m in &evaluation.moves {
            writeln!(out, "{} {} {}", m.mv, m.value, m.depth)?;
        }
        writeln!(out, "moves {}", evaluation.moves.len())
    })?;
    crate::tell!(
        "nodes {}, time {:.3} s",
        evaluation.nodes,
        evaluation.elapsed.as_secs_f64()
    );
    Ok(())
}

/// Runs `work`, telling a watching user that the search goes on: a spinner on a
/// terminal, a log line every [`PROGRESS_INTERVAL`] otherwise.
fn with_progress<T>(work: impl FnOnce() -> T) -> T {
    if std::io::stderr().is_terminal() {
        let spinner = indicatif::ProgressBar::new_spinner().with_message("evaluating");
        spinner.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        spinner.enable_steady_tick(Duration::from_millis(120));
        let result = work();
        spinner.finish_and_clear();
        return result;
    }
    let (done, finished) = mpsc::channel::<()>();
    let start = Instant::now();
    let reporter = thread::spawn(move || {
        while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(PROGRESS_INTERVAL) {
            crate::tell!("evaluating... {:.0} s", start.elapsed().as_secs_f64());
        }
    });
    let result = work();
    drop(done);
    let _ = reporter.join();
    result
}
