//! `book-tools bench`: performance measurements on a real book store.
//!
//! `bench select` measures selection while leaves are in flight and results are
//! being inserted, the coordinator's steady state: after filling `--in-flight`
//! leaves, each step selects one leaf (timed) and, every `--batch` steps, the
//! oldest `--batch` in-flight leaves are thought by the pseudo-evaluator and
//! completed with one durable write. The book grows by `--count` nodes.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use stera_book::synthetic::PseudoEvaluator;
use stera_book::{LiveBook, NodeStore, Selector, SledStore};
use stera_service::select::SelectFlags;

#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand, Debug)]
enum What {
    /// Selection latency and throughput with leaves in flight (adds nodes to the book).
    Select(SelectArgs),
}

#[derive(ClapArgs, Debug)]
struct SelectArgs {
    /// Book store directory (e.g. made by `book-tools synth`).
    #[arg(long)]
    db: PathBuf,
    /// Timed selections. A root's first search in a process has no cached best
    /// moves and costs many times a later one: to time a long-running
    /// coordinator, time several rounds of turns (roots x leaves per turn each).
    #[arg(long, default_value_t = 2000)]
    count: usize,
    /// Leaves kept in flight while measuring; they are selected before the
    /// timing starts, so at least roots x leaves per turn (3,100 for the 31
    /// default roots at 100 leaves per turn) gives every root its first turn
    /// untimed.
    #[arg(long, default_value_t = 1000)]
    in_flight: usize,
    /// In-flight leaves completed together (one durable write per batch).
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// Seed of the pseudo-evaluator that thinks the leaves (the softmax sampling
    /// has its own, --select-seed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Override the stored leaves-per-turn (cache reuse span) for this run.
    /// Default: the store's own.
    #[arg(long, value_name = "N")]
    leaves_per_turn: Option<u32>,
    // `--select`, `--select-temperature`, `--select-seed`: the coordinator's flags, so
    // that the selection measured is the one a coordinator with them runs.
    #[command(flatten)]
    selection: SelectFlags,
    /// Former spelling of `--select softmax --select-temperature CP` (sampling with
    /// --seed, as it did), still accepted.
    #[arg(long, value_name = "CP", hide = true, conflicts_with_all = ["select", "temperature", "select_seed"])]
    softmax: Option<f64>,
}

/// Resident set size of this process in MB (0 where /proc is unavailable).
pub fn rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// Runs the subcommand.
pub fn run(args: &Args) -> Result<()> {
    match &args.what {
        What::Select(a) => select(a),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

fn select(args: &SelectArgs) -> Result<()> {
    if !args.db.exists() {
        bail!(
            "book store {} does not exist (make one with `book-tools synth`)",
            args.db.display()
        );
    }
    let t = Instant::now();
    // Read only: the store is left as it is (the time includes its copy).
    let store = SledStore::open_read_only(&args.db)
        .with_context(|| format!("opening book store {}", args.db.display()))?;
    let open_s = t.elapsed().as_secs_f64();
    let config = match args.leaves_per_turn {
        Some(n) => {
            let mut c = store.config()?.unwrap_or_default();
            c.leaves_per_turn = n;
            Some(c)
        }
        None => None,
    };
    let mut live = LiveBook::open(store, config)
        .with_context(|| format!("loading book {}", args.db.display()))?;
    live.set_leaf_discount(args.selection.leaf_discount);
    let mut selector = Selector::new();
    let selection = match args.softmax {
        // The former spelling sampled with --seed: its runs give the same figures.
        Some(_) => SelectFlags {
            select_seed: args.seed,
            ..args.selection
        },
        None => args.selection,
    }
    .with_former_softmax(args.softmax);
    let mode = selection.mode()?;
    selector
        .set_select_mode(mode)
        .context("bad selection flags")?;
    if let stera_book::SelectMode::Softmax(s) = mode {
        crate::tell!("selection: softmax T={} seed={}", s.temperature, s.seed);
    }
    let reopen_s = t.elapsed().as_secs_f64();
    crate::tell!(
        "reopen_s={reopen_s:.2} (sled open {open_s:.2}s, index rebuild {:.2}s) nodes={} moves={} \
         book_tables_mb={} rss_mb={}",
        reopen_s - open_s,
        live.book().len(),
        live.book().value_count(),
        live.book().memory_bytes() >> 20,
        rss_mb()
    );
    let eval = PseudoEvaluator::new(args.seed);
    let fill = Instant::now();
    let mut queue: VecDeque<_> = selector.select(&mut live, args.in_flight)?.into();
    crate::tell!(
        "filled {} in flight in {:.2}s",
        queue.len(),
        fill.elapsed().as_secs_f64()
    );
    let tty = std::io::stderr().is_terminal();
    let bar = if tty {
        indicatif::ProgressBar::new(args.count as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut latencies = Vec::with_capacity(args.count);
    // Per selection: book nodes visited, tables built.
    let mut work: Vec<(u64, u64)> = Vec::with_capacity(args.count);
    let before = selector.stats();
    let mut last_log = Instant::now();
    let started = Instant::now();
    let mut moves = Vec::new();
    for i in 0..args.count {
        let t = Instant::now();
        let stats_before = selector.stats();
        let leaves = selector.select(&mut live, 1)?;
        latencies.push(t.elapsed());
        let stats_after = selector.stats();
        work.push((
            stats_after.nodes_visited - stats_before.nodes_visited,
            stats_after.tables_built - stats_before.tables_built,
        ));
        if leaves.is_empty() {
            bail!("no selectable leaf after {i} selections");
        }
        queue.extend(leaves);
        if (i + 1) % args.batch.max(1) == 0 {
            let mut items = Vec::with_capacity(args.batch);
            while items.len() < args.batch.max(1)
                && queue.len() > args.in_flight.saturating_sub(args.batch)
            {
                let Some(leaf) = queue.pop_front() else { break };
                let mut values = Vec::new();
                eval.evaluate_into(&leaf.position, &mut moves, &mut values);
                let thought = stera_book::Thought {
                    values,
                    depths: None,
                    evaluator: eval.identity(),
                    timestamp: 1_700_000_000,
                };
                items.push((leaf, thought));
            }
            live.complete_batch(items)?;
        }
        bar.inc(1);
        if !tty && last_log.elapsed() >= Duration::from_secs(10) {
            last_log = Instant::now();
            crate::tell!("bench select: {}/{}", i + 1, args.count);
        }
    }
    let wall = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    // Selections by latency, fastest first.
    let mut by_latency: Vec<usize> = (0..latencies.len()).collect();
    by_latency.sort_unstable_by_key(|&i| latencies[i]);
    let sorted: Vec<Duration> = by_latency.iter().map(|&i| latencies[i]).collect();
    let select_s: f64 = latencies.iter().map(Duration::as_secs_f64).sum();
    // Where the time goes: the slowest selections search far more of the book
    // than the rest (a root's first search in the process, or a search that
    // must prove another line best through nodes without a bound of its turn);
    // the rest follow the cache.
    let slowest = sorted.len().div_ceil(100);
    let slow = &by_latency[by_latency.len() - slowest..];
    let slowest_s: f64 = slow.iter().map(|&i| latencies[i].as_secs_f64()).sum();
    let (slow_nodes, slow_tables) = slow
        .iter()
        .fold((0, 0), |(n, t), &i| (n + work[i].0, t + work[i].1));
    let after = selector.stats();
    let per_selection = |n: u64| n as f64 / args.count.max(1) as f64;
    crate::tell!(
        "select-only rate {:.0}/s, {:.0} book nodes visited per selection ({:.1} with their \
         moves generated), max {:.1} ms, slowest 1% {:.0}% of the time ({:.0} nodes visited, \
         {:.0} generated, each), in flight at end {}, disk {} MB",
        args.count as f64 / select_s.max(1e-9),
        per_selection(after.nodes_visited - before.nodes_visited),
        per_selection(after.tables_built - before.tables_built),
        percentile(&sorted, 1.0),
        100.0 * slowest_s / select_s.max(1e-9),
        slow_nodes as f64 / slowest.max(1) as f64,
        slow_tables as f64 / slowest.max(1) as f64,
        live.in_flight(),
        live.store().size_on_disk()? >> 20
    );
    crate::say!(
        "select p50_ms={:.3} p99_ms={:.3} per_s={:.0} rss_mb={} nodes={}",
        percentile(&sorted, 0.5),
        percentile(&sorted, 0.99),
        args.count as f64 / wall.max(1e-9),
        rss_mb(),
        live.book().len()
    );
    Ok(())
}
