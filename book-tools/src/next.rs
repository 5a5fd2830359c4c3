//! `book-tools next N`: the positions the selector would hand out next, without
//! changing the store (what YaneuraOu's `makebook peta_shock_next` does for
//! BookMiner). An outside thinker can value them (`--think-file`) and the result
//! comes back with `book-tools import`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use stera_book::{DryRun, LiveBook, Selector};
use stera_service::select::SelectFlags;

use crate::common;

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory (not one a running coordinator holds: stop it, or
    /// use a backup).
    #[arg(long)]
    db: PathBuf,
    /// How many positions to list (at most 10,000: MAX_NEXT_COUNT; the selector
    /// holds every listed leaf in memory at once).
    #[arg(value_parser = clap::value_parser!(u64).range(1..=MAX_NEXT_COUNT as u64))]
    count: u64,
    /// Write the lines to this file instead of standard output (a position file for
    /// an outside thinker, e.g. YaneuraOu's `makebook think`); its book comes back
    /// with `book-tools import`. Default: standard output.
    #[arg(long, value_name = "FILE")]
    think_file: Option<PathBuf>,
    /// Write `sfen <root> moves ...` (the line from the run's root, so a thinker
    /// sees the repetition history) instead of the position's own `sfen ...`
    /// (the default).
    #[arg(long)]
    moves: bool,
    // `--select`, `--select-temperature`, `--select-seed`: the coordinator's flags, so
    // that `next` lists what a coordinator with the same flags hands out.
    #[command(flatten)]
    selection: SelectFlags,
    /// Former spelling of `--select softmax --select-temperature CP`, still accepted.
    #[arg(long, value_name = "CP", hide = true, conflicts_with_all = ["select", "temperature"])]
    softmax_temperature: Option<f64>,
}

/// The most positions one `book-tools next` lists (documented in
/// ARCHITECTURE.md, "Limits on input"); ask again after importing their values.
pub const MAX_NEXT_COUNT: usize = 10_000;

pub fn run(args: &Args) -> Result<()> {
    // Bound now: the file is written after the selection, into the directory
    // checked here.
    let think_file = args
        .think_file
        .as_ref()
        .map(|out| {
            stera_book::store_path::BoundTarget::open(out, Some(&args.db))
                .with_context(|| format!("bad --think-file `{}`", out.display()))
        })
        .transpose()?;
    let count = usize::try_from(args.count)
        .ok()
        .filter(|&n| n <= MAX_NEXT_COUNT)
        .with_context(|| {
            format!(
                "COUNT {} is above the limit of {MAX_NEXT_COUNT}",
                args.count
            )
        })?;
    let store = DryRun::new(common::open_for_reading(&args.db)?);
    let mut live = LiveBook::open(store, None)
        .with_context(|| format!("cannot load the book in {}", args.db.display()))?;
    live.set_leaf_discount(args.selection.leaf_discount);
    let mut selector = Selector::new();
    let mode = args
        .selection
        .with_former_softmax(args.softmax_temperature)
        .mode()?;
    selector
        .set_select_mode(mode)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let roots = live.config().roots.clone();
    let leaves = selector
        .select(&mut live, count)
        .context("selection over the book failed")?;
    let mut text = String::new();
    for leaf in &leaves {
        if args.moves {
            let root = roots.get(leaf.root).map_or("startpos", String::as_str);
            let root = if root == "startpos" || root.starts_with("sfen ") {
                root.to_owned()
            } else {
                format!("sfen {root}")
            };
            let moves: Vec<String> = leaf.path.iter().map(ToString::to_string).collect();
            if moves.is_empty() {
                text.push_str(&format!("{root}\n"));
            } else if root.contains(" moves ") {
                text.push_str(&format!("{root} {}\n", moves.join(" ")));
            } else {
                text.push_str(&format!("{root} moves {}\n", moves.join(" ")));
            }
        } else {
            text.push_str(&format!("sfen {}\n", leaf.sfen()));
        }
    }
    match &think_file {
        Some(target) => {
            let path = target.path();
            std::fs::write(target.write_path(), &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            crate::tell!(
                "next: {} of {} positions asked for written to {}",
                leaves.len(),
                args.count,
                path.display()
            );
        }
        None => {
            crate::common::to_stdout(|out| out.write_all(text.as_bytes()))?;
        }
    }
    if leaves.len() < count {
        crate::tell!(
            "next: the book offers only {} positions to think now (every other line ends in a position being thought, a ban, or mate)",
            leaves.len()
        );
    }
    Ok(())
}
