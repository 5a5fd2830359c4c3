//! `book-tools synth`: grow a realistic book quickly for benchmarks, through the
//! real selector and a deterministic pseudo-evaluator (material + hash noise).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use stera_book::synthetic::{GrowOptions, GrowProgress, PseudoEvaluator, grow};
use stera_book::{LiveBook, NodeStore, RunConfig, Selector, SledStore};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Book store directory (created if missing; an existing book is grown further).
    #[arg(long)]
    db: PathBuf,
    /// Thought positions the book is grown to. Formerly `--nodes`, which is a
    /// search budget in every other command.
    #[arg(long = "positions", alias = "nodes", value_name = "N")]
    nodes: usize,
    /// Seed of the pseudo-evaluator's noise.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Leaves selected and completed per durable write.
    #[arg(long, default_value_t = 4096)]
    batch: usize,
    /// Leaves taken from one root before the next root's turn (cache reuse span).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    leaves_per_turn: u32,
    /// With every searched leaf, also hand out up to this many siblings within
    /// `--sibling-margin` of its value (PV-guided batches; 0 = search every leaf).
    #[arg(long, default_value_t = 8)]
    siblings: usize,
    /// Value window (cp) for `--siblings`.
    #[arg(long, default_value_t = 150)]
    sibling_margin: i32,
}

/// Runs the subcommand.
pub fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let store = SledStore::open(&args.db)
        .with_context(|| format!("opening book store {}", args.db.display()))?;
    let existing = store.len();
    let config = RunConfig {
        leaves_per_turn: args.leaves_per_turn,
        ..store.config()?.unwrap_or_default()
    };
    let mut live = LiveBook::open(store, Some(config))
        .with_context(|| format!("loading book {}", args.db.display()))?;
    let mut selector = Selector::new();
    crate::tell!(
        "opened {} with {existing} nodes in {:.1}s",
        args.db.display(),
        started.elapsed().as_secs_f64()
    );
    let eval = PseudoEvaluator::new(args.seed);
    let tty = std::io::stderr().is_terminal();
    let bar = if tty {
        let bar = indicatif::ProgressBar::new(args.nodes as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} nodes {per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let grow_started = Instant::now();
    let mut last_log = Instant::now();
    let mut on_progress = |p: GrowProgress| {
        bar.set_position(p.nodes as u64);
        if !tty && last_log.elapsed() >= Duration::from_secs(10) {
            last_log = Instant::now();
            let rate =
                (p.nodes as f64 - f64::from(existing)) / grow_started.elapsed().as_secs_f64();
            crate::tell!(
                "synth: {} / {} nodes, {rate:.0} nodes/s, rss {} MB",
                p.nodes,
                args.nodes,
                crate::bench::rss_mb()
            );
        }
    };
    let reached = grow(
        &mut live,
        &mut selector,
        &eval,
        args.nodes,
        GrowOptions {
            batch: args.batch,
            siblings: args.siblings,
            sibling_margin: args.sibling_margin,
        },
        &mut on_progress,
    )
    .context("growing the book")?;
    bar.finish_and_clear();
    let secs = grow_started.elapsed().as_secs_f64();
    let added = reached.saturating_sub(existing as usize);
    let stats = selector.stats();
    crate::tell!(
        "synth: {reached} nodes ({added} added in {secs:.1}s, {:.0} nodes/s), {} moves stored, \
         {:.1} book nodes visited per selection, {} bans, book tables {} MB, disk {} MB, rss {} MB",
        added as f64 / secs.max(1e-9),
        live.book().value_count(),
        stats.nodes_visited as f64 / stats.leaves.max(1) as f64,
        stats.bans,
        live.book().memory_bytes() >> 20,
        live.store().size_on_disk()? >> 20,
        crate::bench::rss_mb()
    );
    if reached < args.nodes {
        anyhow::bail!(
            "no selectable leaf left at {reached} nodes (asked for {})",
            args.nodes
        );
    }
    crate::say!("synth nodes={reached} added={added} seconds={secs:.1}");
    Ok(())
}
