//! `book-tools import`: a YaneuraOu DB2016 book becomes thought nodes.
//!
//! A thought node needs a value for every legal move, so an entry that lacks some
//! is skipped (counted and listed). The file is checked completely before anything
//! is stored: a malformed or illegal line stops the import with every problem
//! listed by line, and the store is left as it was (unless `--skip-bad`).

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use hashbrown::HashSet;
use stera_book::{Book, NodeStore, Origin, SledStore, ThoughtNode};
use stera_formats::db2016::{BookEntry, Db2016Reader};
use stera_rules::{Move, Position};

use crate::export::Reporter;

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory (created if missing).
    #[arg(long)]
    db: PathBuf,
    /// The DB2016 book to import.
    file: PathBuf,
    /// Import the good entries even if some lines are malformed or illegal
    /// (they are listed and skipped).
    #[arg(long)]
    skip_bad: bool,
    /// How many problems of each kind to list (all are counted).
    #[arg(long, default_value_t = 20)]
    list: usize,
}

/// Nodes appended to the store per write.
const BATCH: usize = 20_000;

/// An entry that does not value every legal move.
struct Incomplete {
    sfen: String,
    missing: usize,
    legal: usize,
}

/// Values and depths of every legal move, in canonical order.
type MoveValues = (Vec<i16>, Vec<u8>);

/// The values of every legal move of `pos` from `entry`, in canonical order;
/// `Err(missing count)` when some legal move has no line. `None` if a book move
/// is not legal (the checking pass reports those).
fn values_of(
    entry: &BookEntry,
    pos: &Position,
    legal: &mut Vec<Move>,
) -> Option<Result<MoveValues, usize>> {
    pos.legal_moves_into(legal);
    let mut values: Vec<Option<(i16, u8)>> = vec![None; legal.len()];
    for m in &entry.moves {
        let i = legal.binary_search_by_key(&m.mv.raw(), |l| l.raw()).ok()?;
        let v = i16::try_from(m.value.clamp(-32000, 32000)).unwrap_or(0);
        let d = u8::try_from(m.depth.clamp(0, 255)).unwrap_or(u8::MAX);
        values[i] = Some((v, d));
    }
    let missing = values.iter().filter(|v| v.is_none()).count();
    if missing > 0 {
        return Some(Err(missing));
    }
    Some(Ok(values.into_iter().flatten().unzip()))
}

pub fn run(args: &Args) -> Result<()> {
    let start = Instant::now();
    let name = args.file.display().to_string();
    let mut legal = Vec::with_capacity(600);

    // Pass 1: check everything, store nothing.
    let reader = Db2016Reader::open(&args.file)
        .with_context(|| format!("cannot import `{name}`"))?
        .with_legality_check(true);
    let mut bad = Vec::new();
    let mut incomplete = Vec::new();
    let mut entries = 0u64;
    for item in reader {
        match item {
            Ok(entry) => {
                entries += 1;
                let pos = entry.position()?;
                if let Some(Err(missing)) = values_of(&entry, &pos, &mut legal) {
                    incomplete.push(Incomplete {
                        sfen: entry.sfen().to_owned(),
                        missing,
                        legal: legal.len(),
                    });
                }
            }
            Err(e) if e.is_entry_error() => bad.push(e.to_string()),
            Err(e) => return Err(e).with_context(|| format!("cannot import `{name}`")),
        }
    }
    if !bad.is_empty() {
        let listed: Vec<&str> = bad.iter().take(args.list).map(String::as_str).collect();
        let more = bad.len().saturating_sub(args.list);
        let text = format!(
            "{} bad entries in `{name}`:\n  {}{}",
            bad.len(),
            listed.join("\n  "),
            if more > 0 {
                format!("\n  ... and {more} more")
            } else {
                String::new()
            }
        );
        if args.skip_bad {
            eprintln!("{text}\n(skipped: --skip-bad)");
        } else {
            bail!("{text}\nnothing was imported (use --skip-bad to import the good entries)");
        }
    }
    for inc in incomplete.iter().take(args.list) {
        println!(
            "incomplete, skipped: sfen {} ({} of {} legal moves have no value)",
            inc.sfen, inc.missing, inc.legal
        );
    }
    if incomplete.len() > args.list {
        println!(
            "... and {} more incomplete entries",
            incomplete.len() - args.list
        );
    }

    // Pass 2: store the complete entries.
    let mut store = SledStore::open(&args.db)
        .with_context(|| format!("cannot open the book store `{}`", args.db.display()))?;
    let existing = Book::load(&store).context("cannot load the existing book")?;
    let evaluator = format!(
        "import {}",
        args.file
            .file_name()
            .map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned())
    );
    let evaluator = store
        .intern_evaluator(&evaluator)
        .context("cannot store the evaluator identity")?;
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
    let mut seen: HashSet<u128> = HashSet::new();
    let (mut imported, mut already, mut duplicates) = (0u64, 0u64, 0u64);
    let mut batch: Vec<ThoughtNode> = Vec::with_capacity(BATCH);
    let mut progress = Reporter::new();
    let mut read = 0u64;
    for item in Db2016Reader::open(&args.file)? {
        let Ok(entry) = item else { continue };
        read += 1;
        if read.is_multiple_of(1 << 14) {
            progress.report("import", read, entries);
        }
        let pos = entry.position()?;
        let Some(Ok((values, depths))) = values_of(&entry, &pos, &mut legal) else {
            continue;
        };
        let key = pos.key();
        if existing.contains(key) {
            already += 1;
            continue;
        }
        if !seen.insert(key.0) {
            duplicates += 1;
            continue;
        }
        batch.push(ThoughtNode {
            key,
            origin: Origin::Sfen(pos.to_sfen_without_ply()),
            ply: u16::try_from(entry.ply()).unwrap_or(u16::MAX),
            values,
            depths: depths.iter().any(|&d| d != 0).then_some(depths),
            evaluator,
            timestamp,
        });
        if batch.len() >= BATCH {
            imported += flush(&mut store, &mut batch, &args.db)?;
        }
    }
    imported += flush(&mut store, &mut batch, &args.db)?;
    progress.finish();
    println!(
        "entries {entries}: imported {imported}, already in the book {already}, duplicate positions {duplicates}, incomplete {}, bad {}; {:.1} s",
        incomplete.len(),
        bad.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn flush(store: &mut SledStore, batch: &mut Vec<ThoughtNode>, db: &Path) -> Result<u64> {
    if batch.is_empty() {
        return Ok(0);
    }
    store
        .append(batch)
        .with_context(|| format!("cannot store nodes in `{}`", db.display()))?;
    let n = batch.len() as u64;
    batch.clear();
    Ok(n)
}
