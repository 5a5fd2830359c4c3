//! `book-tools import`: a YaneuraOu book, DB2016 text or `.ybb` binary (by the
//! file's extension), becomes thought nodes.
//!
//! A thought node needs a value for every legal move, so an entry that lacks some
//! is skipped (counted and listed). A move valued -32768 is "in the book, value
//! unknown" (YaneuraOu's convention for moves from game records): it counts as
//! lacking a value, never as a mate score. The file is checked completely before anything
//! is stored: a malformed or illegal line stops the import with every problem
//! listed by line, and the store is left as it was (unless `--skip-bad`).
//!
//! A position and its colour-flipped twin are one node, as in YaneuraOu's
//! `makebook peta_shock` (the book's analysis and the selector reach a twin
//! through the other): an entry whose twin is in the book or was read earlier is
//! skipped and counted, unless `--keep-twins` (the first read is kept; peta_shock
//! keeps the last).

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use hashbrown::{HashMap, HashSet};
use stera_book::{Book, NodeId, NodeStore, Origin, SledStore, ThoughtNode};
use stera_formats::db2016::{BookEntry, VALUE_UNKNOWN};
use stera_rules::{Key, Move, Position};

use crate::export::Reporter;
use crate::file_book::BookFile;

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory.
    #[arg(long)]
    db: PathBuf,
    /// Make the store when --db does not exist (without it, a missing store
    /// is an error: a typo must not start a new book).
    #[arg(long)]
    create: bool,
    /// The book to import: YaneuraOu DB2016 text, or `.ybb` binary when the
    /// name ends in `.ybb`; `-` is standard input (a stream is copied to a
    /// temporary file first, read whole, and taken as `.ybb` when it starts with
    /// the `.ybb` magic).
    file: PathBuf,
    /// Import the good entries even if some lines are malformed or illegal
    /// (they are listed and skipped).
    #[arg(long)]
    skip_bad: bool,
    /// How many problems of each kind to list (all are counted).
    #[arg(long, default_value_t = 20)]
    list: usize,
    /// Also import an entry whose colour-flipped twin is in the book or earlier
    /// in the file (by default it is skipped: the twin stands for it). Use it to
    /// read back a raw export of a store that holds both twins.
    #[arg(long)]
    keep_twins: bool,
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
        if m.value == VALUE_UNKNOWN {
            continue;
        }
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
    // A --db that holds no store, without --create, is the first thing said:
    // before a file is read (and nothing is made either way until it is).
    stera_book::store_path::must_create_store(&args.db, args.create)?;
    let input = crate::common::Rereadable::open(&args.file, stera_formats::ybb::MAGIC, "ybb")
        .with_context(|| format!("cannot import `{}`", args.file.display()))?;
    let input = input.path();
    let mut checked = check_file(args, input)?;
    if checked.entries == 0 && checked.bad.is_empty() {
        // A `.ybb` whose record count says 0, or a text book without entries:
        // most likely a broken or wrong file; importing it would change nothing
        // and exit 0, as if a book had been imported.
        bail!(
            "`{}` holds no book entries: an empty book is not imported",
            args.file.display()
        );
    }
    report_problems(args, &checked)?;
    if checked.complete.is_empty() {
        // Every entry bad (skipped) or incomplete: nothing can be imported, and
        // exiting 0 would say a book was (before, it also made the store).
        bail!(
            "`{}` has no complete entry to import ({} entries: {} incomplete, {} bad): nothing was imported",
            args.file.display(),
            checked.entries + checked.bad.len() as u64,
            checked.incomplete.len(),
            checked.bad.len()
        );
    }
    let mut store = crate::common::open_for_writing(&args.db, args.create)?;
    let existing = Book::load(&store).context("cannot load the existing book")?;
    let evaluator = store
        .intern_evaluator(&evaluator_name(&args.file))
        .context("cannot store the evaluator identity")?;
    let collected = collect_new_entries(args, input, &checked, &existing)?;
    drop(existing);
    checked.complete = HashSet::new();
    if args.keep_twins && collected.twins > 0 {
        // Before the first write: the store is no longer one node per twin pair.
        store
            .set_twins_merged(false)
            .context("cannot mark the store as holding both twins of a pair")?;
    }
    let links = collected.pending.link(&collected.edges);
    drop(collected.edges);
    let imported = store_linked(&mut store, args, &collected.pending, &links, evaluator)?;
    crate::say!(
        "entries {}: imported {imported} ({} linked to a parent, {} by SFEN), already in the book {}, duplicate positions {}, twins of other entries {}{}, incomplete {}, bad {}; {:.1} s",
        checked.entries,
        links.linked,
        imported.saturating_sub(links.linked),
        collected.already,
        collected.duplicates,
        collected.twins,
        if args.keep_twins { " (kept)" } else { "" },
        checked.incomplete.len(),
        checked.bad.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What the checking pass found.
struct Checked {
    /// Entries read whole (good or incomplete).
    entries: u64,
    /// Malformed or illegal entries, as messages with their lines.
    bad: Vec<String>,
    incomplete: Vec<Incomplete>,
    /// Keys of the complete entries: the collecting pass links entries that lead
    /// to them.
    complete: HashSet<u128>,
}

/// The reader both passes use: with the legality check, so that an entry the
/// check refuses (an illegal move or ponder) is refused by both, never stored.
fn reader(args: &Args, input: &Path) -> Result<BookFile> {
    BookFile::open(input, true).with_context(|| format!("cannot import `{}`", args.file.display()))
}

/// Pass 1: check everything, store nothing.
fn check_file(args: &Args, input: &Path) -> Result<Checked> {
    let mut legal = Vec::with_capacity(600);
    let mut checked = Checked {
        entries: 0,
        bad: Vec::new(),
        incomplete: Vec::new(),
        complete: HashSet::new(),
    };
    let mut file = reader(args, input)?;
    for item in file.by_ref() {
        match item {
            Ok(entry) => {
                checked.entries += 1;
                let pos = entry.position()?;
                match values_of(&entry, &pos, &mut legal) {
                    Some(Err(missing)) => checked.incomplete.push(Incomplete {
                        sfen: entry.sfen().to_owned(),
                        missing,
                        legal: legal.len(),
                    }),
                    Some(Ok(_)) => {
                        checked.complete.insert(pos.key().0);
                    }
                    None => {}
                }
            }
            Err(e) if e.is_entry_error() => checked.bad.push(e.to_string()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot import `{}`", args.file.display()));
            }
        }
    }
    warn_clamped(&file);
    Ok(checked)
}

/// Says which values were beyond ±32000 and imported as mate scores: a value of
/// 99999 in a book is more likely a mistake than a mate, and it changes.
fn warn_clamped(file: &BookFile) {
    let (first, count) = file.clamped_values();
    for c in first {
        crate::tell!(
            "warning: {}: value {} is beyond ±{} and is read as the mate score {}",
            c.at,
            c.value,
            stera_formats::db2016::VALUE_LIMIT,
            c.read
        );
    }
    if count > first.len() as u64 {
        crate::tell!(
            "warning: {} more values beyond ±{} imported as mate scores",
            count - first.len() as u64,
            stera_formats::db2016::VALUE_LIMIT
        );
    }
}

/// Lists bad and incomplete entries; bad ones stop the import unless `--skip-bad`.
fn report_problems(args: &Args, checked: &Checked) -> Result<()> {
    let name = args.file.display();
    if !checked.bad.is_empty() {
        let title = format!("{} bad entries in `{name}`", checked.bad.len());
        let text = crate::common::listing(&title, &checked.bad, args.list);
        if args.skip_bad {
            crate::tell!("{text}\n(skipped: --skip-bad)");
        } else {
            bail!("{text}\nnothing was imported (use --skip-bad to import the good entries)");
        }
    }
    for inc in checked.incomplete.iter().take(args.list) {
        crate::say!(
            "incomplete, skipped: sfen {} ({} of {} legal moves have no value or -32768, value unknown)",
            inc.sfen,
            inc.missing,
            inc.legal
        );
    }
    if checked.incomplete.len() > args.list {
        crate::say!(
            "... and {} more incomplete entries",
            checked.incomplete.len() - args.list
        );
    }
    Ok(())
}

/// The evaluator identity of imported nodes: `import <file name>` (no thinker,
/// `stera_games::thinker::is_engine`).
fn evaluator_name(file: &Path) -> String {
    format!(
        "{}{}",
        stera_games::thinker::IMPORTED_PREFIX,
        file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned()
        )
    )
}

/// The complete new entries and the moves between them.
struct Collected {
    pending: Pending,
    /// (parent, move, child) between pending entries.
    edges: Vec<(u32, u16, u32)>,
    already: u64,
    duplicates: u64,
    /// Entries whose colour-flipped twin is in the book or read earlier: skipped
    /// (the twin stands for them), or kept with `--keep-twins`.
    twins: u64,
}

/// Pass 2: read the complete entries not yet in the book into memory and find
/// which of them lead to one another.
fn collect_new_entries(
    args: &Args,
    input: &Path,
    checked: &Checked,
    existing: &Book,
) -> Result<Collected> {
    let mut legal = Vec::with_capacity(600);
    let mut pending = Pending::default();
    let mut edges_by_key: Vec<(u32, u16, u128)> = Vec::new();
    let (mut already, mut duplicates, mut twins) = (0u64, 0u64, 0u64);
    let mut progress = Reporter::new();
    let mut read = 0u64;
    let mut sfen = String::with_capacity(160);
    for item in reader(args, input)? {
        // Errors were reported by the checking pass.
        let Ok(entry) = item else { continue };
        read += 1;
        if read.is_multiple_of(1 << 14) {
            progress.report("read", read, checked.entries);
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
        if pending.index.contains_key(&key.0) {
            duplicates += 1;
            continue;
        }
        let twin = pos.flipped_key();
        if existing.contains(twin) || pending.index.contains_key(&twin.0) {
            twins += 1;
            if !args.keep_twins {
                continue;
            }
        }
        let parent = u32::try_from(pending.len()).unwrap_or(u32::MAX);
        for &mv in &legal {
            let child = pos.key_after(mv).0;
            if checked.complete.contains(&child) {
                edges_by_key.push((parent, mv.raw(), child));
            }
        }
        sfen.clear();
        sfen.push_str(&pos.to_sfen_without_ply());
        let ply = u16::try_from(entry.ply()).unwrap_or(u16::MAX);
        pending.push(key, &sfen, ply, &values, &depths);
    }
    progress.finish();
    // Children already in the book, or skipped as duplicates, are not pending.
    let edges = edges_by_key
        .into_iter()
        .filter_map(|(p, mv, child)| pending.index.get(&child).map(|&c| (p, mv, c)))
        .collect();
    Ok(Collected {
        pending,
        edges,
        already,
        duplicates,
        twins,
    })
}

/// Pass 3: store the entries parents first, each linked one as "parent + move".
fn store_linked(
    store: &mut SledStore,
    args: &Args,
    pending: &Pending,
    links: &Links,
    evaluator: u16,
) -> Result<u64> {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
    let base = store.len();
    let mut progress = Reporter::new();
    let mut batch: Vec<ThoughtNode> = Vec::with_capacity(BATCH);
    let mut imported = 0u64;
    let total = links.order.len() as u64;
    for (rank, &i) in links.order.iter().enumerate() {
        let i = i as usize;
        let origin = match links.parent[i] {
            Some((parent, mv)) => Origin::Child {
                parent: NodeId(base + links.rank[parent as usize]),
                mv,
            },
            None => Origin::Sfen(pending.sfen(i).to_owned()),
        };
        let depths = pending.depths(i);
        batch.push(ThoughtNode {
            key: pending.keys[i],
            origin,
            ply: pending.plies[i],
            values: pending.values(i).to_vec(),
            depths: depths.iter().any(|&d| d != 0).then(|| depths.to_vec()),
            evaluator,
            timestamp,
        });
        if batch.len() >= BATCH {
            imported += flush(store, &mut batch, &args.db)?;
            progress.report("store", rank as u64 + 1, total);
        }
    }
    imported += flush(store, &mut batch, &args.db)?;
    progress.finish();
    Ok(imported)
}

/// The complete new entries of the file, in file order, in flat tables.
#[derive(Default)]
struct Pending {
    keys: Vec<Key>,
    index: HashMap<u128, u32>,
    plies: Vec<u16>,
    sfen_start: Vec<usize>,
    sfens: String,
    value_start: Vec<usize>,
    values: Vec<i16>,
    depths: Vec<u8>,
}

impl Pending {
    fn push(&mut self, key: Key, sfen: &str, ply: u16, values: &[i16], depths: &[u8]) {
        let i = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        self.index.insert(key.0, i);
        self.keys.push(key);
        self.plies.push(ply);
        self.sfen_start.push(self.sfens.len());
        self.sfens.push_str(sfen);
        self.value_start.push(self.values.len());
        self.values.extend_from_slice(values);
        self.depths.extend_from_slice(depths);
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn sfen(&self, i: usize) -> &str {
        let end = self
            .sfen_start
            .get(i + 1)
            .copied()
            .unwrap_or(self.sfens.len());
        &self.sfens[self.sfen_start[i]..end]
    }

    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let end = self
            .value_start
            .get(i + 1)
            .copied()
            .unwrap_or(self.values.len());
        self.value_start[i]..end
    }

    fn values(&self, i: usize) -> &[i16] {
        &self.values[self.range(i)]
    }

    fn depths(&self, i: usize) -> &[u8] {
        &self.depths[self.range(i)]
    }

    /// Decides which entries are stored as "parent + move" (2 bytes) instead of
    /// their SFEN (about 70 bytes, resident in sled and in the coordinator's
    /// memory): a breadth-first search over the moves between entries, started
    /// from every entry no other entry leads to, in file order, then from the
    /// entry of smallest ply not yet reached, and so on. Parents are thus always stored
    /// before their children and the origin chains cannot loop.
    fn link(&self, edges: &[(u32, u16, u32)]) -> Links {
        let n = self.len();
        // CSR of the edges by parent.
        let mut start = vec![0usize; n + 1];
        let mut has_parent = vec![false; n];
        for &(p, _, c) in edges {
            start[p as usize + 1] += 1;
            has_parent[c as usize] = true;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut out = vec![(0u16, 0u32); edges.len()];
        for &(p, mv, c) in edges {
            out[fill[p as usize]] = (mv, c);
            fill[p as usize] += 1;
        }
        let mut links = Links {
            order: Vec::with_capacity(n),
            rank: vec![u32::MAX; n],
            parent: vec![None; n],
            linked: 0,
        };
        let mut queue = std::collections::VecDeque::new();
        let mut visit = |root: usize, links: &mut Links| {
            if links.rank[root] != u32::MAX {
                return;
            }
            links.rank[root] = links.order.len() as u32;
            links.order.push(root as u32);
            queue.push_back(root);
            while let Some(p) = queue.pop_front() {
                for &(mv, c) in &out[start[p]..start[p + 1]] {
                    let c = c as usize;
                    if links.rank[c] == u32::MAX
                        && let Some(mv) = Move::from_raw(mv)
                    {
                        links.rank[c] = links.order.len() as u32;
                        links.order.push(c as u32);
                        links.parent[c] = Some((p as u32, mv));
                        links.linked += 1;
                        queue.push_back(c);
                    }
                }
            }
        };
        for root in (0..n).filter(|&i| !has_parent[i]) {
            visit(root, &mut links);
        }
        // Entries on cycles only (the start position when a rook shuffle leads
        // back to it): the smallest ply first, so lines grow from their start.
        let mut rest: Vec<usize> = (0..n).filter(|&i| links.rank[i] == u32::MAX).collect();
        rest.sort_by_key(|&i| (self.plies[i], i));
        for i in rest {
            visit(i, &mut links);
        }
        links
    }
}

/// Where each pending entry goes: storing order, rank in it, parent and move.
struct Links {
    order: Vec<u32>,
    rank: Vec<u32>,
    parent: Vec<Option<(u32, Move)>>,
    linked: u64,
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
