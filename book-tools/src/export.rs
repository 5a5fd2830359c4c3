//! `book-tools export`: the tera-shock minimax over the whole book, written as a
//! YaneuraOu DB2016 text book or a `.ybb` binary book. Also the shared helpers of
//! the read-only subcommands (load the book with its games, report progress).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use stera_book::store_path::BoundTarget;
use stera_book::terashock::{
    Backup, BookFormat, ExportOptions, ExportSummary, NodeExtras, Weights, export_book,
};
use stera_book::{Book, NodeStore, OpponentSelection};
use stera_service::export::{ExportFlags, OfflineExport};

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory (as created by the coordinator, `import` or `synth`).
    #[arg(long)]
    db: PathBuf,
    /// The book file to write (the coordinator's --export, the same concept);
    /// it appears only when complete (atomic rename). Its extension chooses the
    /// format unless --export-format says otherwise: `.ybb` a binary book,
    /// anything else YaneuraOu's text book. Not `-`: the book is a file, never
    /// standard output. Formerly `--out`.
    #[arg(long = "export", alias = "out", value_name = "FILE")]
    out: PathBuf,
    // `--export-format`, `--export-shrink`, `--export-propagation`... and
    // `--prior-games`: declared once for the three export front ends.
    #[command(flatten)]
    export: ExportFlags<OfflineExport>,
    /// Export only the first N thought positions: the book as it was when it had
    /// N positions. A running coordinator's export reports the N of its
    /// snapshot, so the same file can be made again offline. Default: every
    /// position. Formerly `--nodes`, which is a search budget in every other
    /// command.
    #[arg(long = "first-positions", alias = "nodes", value_name = "N")]
    nodes: Option<usize>,
}

pub fn run(args: &Args) -> Result<()> {
    let start = Instant::now();
    // `-` would otherwise name a file in the current directory: refused, since
    // the book is written beside its final name and renamed into place.
    if args.out.as_os_str() == "-" {
        anyhow::bail!(
            "--export -: export writes a file (complete or not at all), not standard output; give a path such as book.db"
        );
    }
    // Flags that contradict each other are refused before the store is read.
    let choice = args.export.checked()?;
    let format = choice.format_for(&args.out)?;
    // Bound now: the export writes minutes later, into the directory checked here.
    let target = stera_book::store_path::BoundTarget::open(&args.out, Some(&args.db))?;
    let learning = choice
        .options()
        .needs_learning()
        .then_some(&choice.opponents);
    let (book, extras) = load_with_games(
        &args.db,
        args.nodes,
        choice.raw,
        choice.options().needs_games(),
        learning,
    )?;
    crate::tell!(
        "loaded {} nodes, {} move values in {:.1} s",
        book.len(),
        book.value_count(),
        start.elapsed().as_secs_f64()
    );
    let options = choice.options();
    let (backup, weights) = (options.backup, options.weights);
    let summary = export_to(&book, &extras, &target, format, &options)?;
    let s = summary.solve;
    crate::say!(
        "nodes {} edges {} leaf edges {}",
        summary.nodes,
        summary.edges,
        summary.leaf_edges
    );
    if !choice.raw {
        crate::say!(
            "solved: {} acyclic, {} on or above cycles ({} evaluations), {} perpetual-check loops, {} unconverged",
            s.acyclic,
            s.cyclic,
            s.iterations,
            s.perpetual_loops,
            s.unconverged
        );
    }
    if weights == Weights::Ndf {
        crate::say!(
            "ndf weights: {} positions weighted by {} positions with games",
            summary.ndf_positions,
            extras.games.len()
        );
    }
    if choice.by_results {
        crate::say!(
            "valued by results: {} positions with learning games (opponents: {}), prior {} games",
            extras.learned.len(),
            choice.opponents,
            choice.prior_games
        );
    }
    if backup == Backup::Softmax {
        crate::say!(
            "softmax backup at T={}: {} unconverged",
            choice.temperature,
            summary.softmax_unconverged
        );
    }
    crate::say!(
        "wrote {} entries, {} moves to {}",
        summary.written.entries_written,
        summary.written.moves_written,
        args.out.display()
    );
    crate::say!(
        "time: graph {:.1} s, solve {:.1} s, write {:.1} s, total {:.1} s",
        summary.graph_time.as_secs_f64(),
        summary.solve_time.as_secs_f64(),
        summary.write_time.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The tera-shock export at `out` in `format`, with progress.
fn export_to(
    book: &Book,
    extras: &NodeExtras,
    out: &BoundTarget,
    format: BookFormat,
    options: &ExportOptions,
) -> Result<ExportSummary> {
    let mut progress = Reporter::new();
    let summary = export_book(
        book,
        extras,
        &out.write_path(),
        format,
        options,
        &mut |phase, done, total| {
            progress.report(phase, done, total);
        },
    )
    .map_err(|e| anyhow::anyhow!("{}", out.shown(&format!("{:#}", anyhow::Error::from(e)))))
    .with_context(|| format!("cannot export to `{}`", out.path().display()))?;
    progress.finish();
    Ok(summary)
}

/// Loads the book and its per-node extras with one scan (per-move depths when
/// `with_depths`, the self-play results per position when `with_games`, the
/// learning results of the `learning` opponents when given), then closes the
/// store (sled keeps its data resident: closing it before the analysis halves
/// the memory of a big export).
pub fn load_with_games(
    db: &Path,
    nodes: Option<usize>,
    with_depths: bool,
    with_games: bool,
    learning: Option<&OpponentSelection>,
) -> Result<(Book, NodeExtras)> {
    let store = crate::common::open_for_reading(db)?;
    let nodes = nodes.unwrap_or(usize::MAX);
    let (book, mut extras) = NodeExtras::load_first_with_book(&store, nodes, with_depths)
        .with_context(|| format!("cannot load the book in `{}`", db.display()))?;
    if with_games {
        extras
            .scan_games(|f| store.for_each_game_count(f), &book)
            .with_context(|| format!("cannot read the game results in `{}`", db.display()))?;
    }
    if let Some(selection) = learning {
        let opponents = crate::common::selected_opponents(&store, selection, db)?;
        for opponent in opponents {
            extras
                .scan_learning(|f| store.for_each_learning_count(opponent, f))
                .with_context(|| {
                    format!("cannot read the learning results in `{}`", db.display())
                })?;
        }
    }
    Ok((book, extras))
}

/// Progress of long phases: a bar on a terminal, a log line every 10 s otherwise.
pub struct Reporter {
    tty: bool,
    bar: Option<(indicatif::ProgressBar, &'static str)>,
    last_log: Instant,
}

impl Reporter {
    pub fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            bar: None,
            last_log: Instant::now(),
        }
    }

    pub fn report(&mut self, phase: &'static str, done: u64, total: u64) {
        if self.tty {
            if self.bar.as_ref().is_none_or(|(_, p)| *p != phase) {
                if let Some((bar, _)) = self.bar.take() {
                    bar.finish();
                }
                let bar = indicatif::ProgressBar::new(total);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{msg:>9} {bar:40} {pos}/{len} {per_sec} eta {eta}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                bar.set_message(phase);
                self.bar = Some((bar, phase));
            }
            if let Some((bar, _)) = &self.bar {
                bar.set_position(done);
            }
        } else if self.last_log.elapsed() >= Duration::from_secs(10) || done == total {
            self.last_log = Instant::now();
            crate::tell!("{phase}: {done}/{total}");
        }
    }

    pub fn finish(&mut self) {
        if let Some((bar, _)) = self.bar.take() {
            bar.finish();
        }
    }
}
