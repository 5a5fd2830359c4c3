//! `book-tools migrate`: a store that may hold both colour-flipped twins of a
//! position (grown before twins became one node, or imported with
//! `--keep-twins`) written as a new store with one node per pair (see
//! `stera_book::twins`). The old store is left as it was.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use stera_book::twins::{TwinPairs, write_merged};
use stera_book::{Book, NodeStore};

use crate::common;
use crate::export::Reporter;

#[derive(clap::Args)]
pub struct Args {
    /// The store to migrate (stopped: not one a running coordinator holds). It is
    /// not changed, except that a store found to hold no twin pairs is marked as
    /// merged.
    #[arg(long)]
    db: PathBuf,
    /// The new store, with one node per twin pair (the twin reached first is
    /// kept); must not exist. Written under a temporary name beside it and
    /// renamed when complete.
    /// Needed only when the store holds twin pairs: without it such a store is
    /// counted and refused, nothing is written.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Only find and count the twin pairs; write nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: &Args) -> Result<()> {
    let start = Instant::now();
    let out = args
        .out
        .as_ref()
        .map(|out| {
            if out.is_dir() {
                // The general message ("give a file name") does not fit: the
                // merged store is a directory, made here.
                anyhow::bail!(
                    "--out `{}` exists (a directory): give the path of the NEW merged store, which migrate makes (e.g. `{}`); an existing directory is never written into",
                    stera_rules::excerpt(&out.display().to_string()),
                    stera_rules::excerpt(&out.join("merged.db").display().to_string())
                );
            }
            stera_book::store_path::BoundTarget::open(out, Some(&args.db))
                .map_err(|e| anyhow::anyhow!("{e}"))
        })
        .transpose()?;
    let mut store = common::open_existing(&args.db)?;
    if store.twins_merged()? {
        crate::say!(
            "`{}` holds one node per colour-flipped twin pair already ({} positions): nothing to do",
            args.db.display(),
            store.len()
        );
        return Ok(());
    }
    let book = Book::load(&store)
        .with_context(|| format!("cannot load the book in `{}`", args.db.display()))?;
    let mut progress = Reporter::new();
    let pairs = TwinPairs::find(&book, &mut |phase, done, total| {
        progress.report(phase, done, total);
    })
    .with_context(|| format!("cannot walk the book in `{}`", args.db.display()))?;
    progress.finish();
    crate::say!(
        "positions {}, colour-flipped twin pairs {} ({} positions after merging, {} rebuilt from their SFEN)",
        book.len(),
        pairs.pairs(),
        pairs.nodes_after(),
        pairs.rerooted()
    );
    if args.dry_run {
        return Ok(());
    }
    if pairs.pairs() == 0 {
        store.set_twins_merged(true)?;
        crate::say!(
            "no twin pairs: `{}` is marked as one node per pair",
            args.db.display()
        );
        return Ok(());
    }
    let Some(out) = out else {
        bail!(
            "`{}` holds {} twin pairs; give --out NEW for the merged store",
            args.db.display(),
            pairs.pairs()
        );
    };
    let summary = write_merged(
        &store,
        &book,
        &pairs,
        &out.write_path(),
        &mut |phase, done, total| {
            progress.report(phase, done, total);
        },
    )
    .map_err(|e| anyhow::anyhow!("{}", out.shown(&format!("{e:#}"))))
    .with_context(|| format!("cannot write the merged store `{}`", out.path().display()))?;
    progress.finish();
    crate::say!(
        "merged: {} -> {} positions, {} twin pairs, {} rebuilt from their SFEN, {} bans moved to twins, {} game counters added to twins; {:.1} s ({})",
        summary.nodes_before,
        summary.nodes_after,
        summary.pairs,
        summary.rerooted,
        summary.bans_moved,
        summary.game_counters_merged,
        start.elapsed().as_secs_f64(),
        out.path().display()
    );
    crate::say!(
        "to use it: stop the coordinator, keep `{}` as a backup and put `{}` in its place",
        args.db.display(),
        out.path().display()
    );
    Ok(())
}
