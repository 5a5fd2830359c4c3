//! Merging colour-flipped twins in a store that holds both (`book-tools migrate`).
//!
//! A position and its colour-flipped twin are one situation for the side to move,
//! and the book treats them as one node: the analysis and the selectors reach a
//! thought twin through the other, the selector never hands out a position whose
//! twin is thought, and `import` skips an entry whose twin it has (ARCHITECTURE.md,
//! "Colour-flipped twins"). So a store grown or imported since holds one node per
//! pair. A store grown before may hold **both** twins, each with its own values:
//! it still works, but its export writes both and a move leads to its own child,
//! where YaneuraOu's `makebook peta_shock` keeps one.
//!
//! [`TwinPairs::find`] finds the pairs and [`write_merged`] writes a new store with
//! one node per pair: the twin reached first (the lower id) stays with its values;
//! the other is dropped, and the book reaches it through the first. What pointed
//! at a dropped node is carried over: its bans move to the kept twin with the
//! moves flipped, its game counters are added to the twin's (both count from the
//! side to move's view), and a kept node whose parent was dropped is rebuilt from
//! its SFEN instead. The source store is not changed.
//!
//! A store records whether it is known to hold one node per pair
//! ([`SledStore::twins_merged`]): new stores and written copies do, stores made
//! before the marker existed do not (the coordinator and `book-tools` say so when
//! they open one), `import --keep-twins` clears it.

use std::collections::HashMap;
use std::path::Path;

use stera_rules::Key;

use crate::sled_store::{PartialStore, SledStore};
use crate::terashock::{Progress, TeraShockError, walk_positions};
use crate::{Book, BookError, NodeId, NodeStore, Origin, ThoughtNode};

/// The new id of a node that is dropped.
const DROPPED: u32 = u32::MAX;

/// Nodes appended per batch to the new store.
const BATCH: usize = 65_536;

/// The twin pairs of a book and how the merged store renumbers its nodes.
#[derive(Debug)]
pub struct TwinPairs {
    /// Per node: its id in the merged store, or [`DROPPED`].
    new_id: Vec<u32>,
    /// Dropped node -> its kept twin (ids of the source book).
    kept_twin: HashMap<u32, u32>,
    /// Kept nodes whose parent is dropped -> their SFEN without ply.
    rerooted: HashMap<u32, String>,
}

impl TwinPairs {
    /// Finds every node whose colour-flipped twin is a node with a lower id.
    ///
    /// # Errors
    /// [`BookError::Corrupt`] for a node the walk over the book cannot rebuild.
    pub fn find(book: &Book, progress: Progress<'_>) -> Result<Self, BookError> {
        let n = book.len();
        let mut dropped = vec![false; n];
        let mut kept_twin = HashMap::new();
        let mut rerooted = HashMap::new();
        let visited = walk_positions(book, None, progress, &mut |id, pos| {
            if let Some(twin) = book.get(pos.flipped_key())
                && twin < id
            {
                dropped[id.index()] = true;
                kept_twin.insert(id.0, twin.0);
            } else if let Origin::Child { parent, .. } = book.origin(id)
                && dropped[parent.index()]
            {
                // The walk reaches a parent before its children.
                rerooted.insert(id.0, pos.to_sfen_without_ply());
            }
            Ok(())
        })
        .map_err(|e| match e {
            TeraShockError::Book(b) => b,
            other => BookError::Corrupt(other.to_string()),
        })?;
        if visited != n {
            return Err(BookError::Corrupt(format!(
                "{visited} of {n} positions could be rebuilt from their origins"
            )));
        }
        let mut next = 0u32;
        let new_id = dropped
            .iter()
            .map(|&d| {
                if d {
                    DROPPED
                } else {
                    next += 1;
                    next - 1
                }
            })
            .collect();
        Ok(Self {
            new_id,
            kept_twin,
            rerooted,
        })
    }

    /// Twin pairs found (nodes the merge drops).
    #[must_use]
    pub fn pairs(&self) -> usize {
        self.kept_twin.len()
    }

    /// Nodes of the merged store.
    #[must_use]
    pub fn nodes_after(&self) -> usize {
        self.new_id.len() - self.kept_twin.len()
    }

    /// Kept nodes whose parent is dropped, rebuilt from their SFEN.
    #[must_use]
    pub fn rerooted(&self) -> usize {
        self.rerooted.len()
    }

    fn new_id(&self, id: NodeId) -> Option<NodeId> {
        match self.new_id.get(id.index()) {
            Some(&DROPPED) | None => None,
            Some(&i) => Some(NodeId(i)),
        }
    }

    /// The merged store's node for an old one (a dropped node maps to its twin)
    /// and whether it is the twin.
    fn target(&self, id: NodeId) -> Result<(NodeId, bool), BookError> {
        if let Some(new) = self.new_id(id) {
            return Ok((new, false));
        }
        self.kept_twin
            .get(&id.0)
            .and_then(|&t| self.new_id(NodeId(t)))
            .map(|t| (t, true))
            .ok_or_else(|| BookError::Corrupt(format!("node {id} is not in the book")))
    }

    fn origin(&self, id: NodeId, origin: Origin) -> Result<Origin, BookError> {
        match origin {
            Origin::Sfen(s) => Ok(Origin::Sfen(s)),
            Origin::Child { parent, mv } => match self.new_id(parent) {
                Some(parent) => Ok(Origin::Child { parent, mv }),
                None => self
                    .rerooted
                    .get(&id.0)
                    .map(|s| Origin::Sfen(s.clone()))
                    .ok_or_else(|| {
                        BookError::Corrupt(format!("{id}: parent {parent} dropped, no SFEN"))
                    }),
            },
        }
    }
}

/// What [`write_merged`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeSummary {
    pub nodes_before: u32,
    pub nodes_after: u32,
    /// Twin pairs merged.
    pub pairs: usize,
    /// Kept nodes whose parent was dropped, now rebuilt from their SFEN.
    pub rerooted: usize,
    /// Bans of dropped nodes moved to their twins.
    pub bans_moved: usize,
    /// Positions whose game counters were added to their twin's.
    pub game_counters_merged: usize,
}

/// The tables [`write_merged`] copies, each by its own rule below. A store
/// with a table not listed here is refused rather than copied without it (test
/// `twins_merge::migrate_copies_every_table`).
const MIGRATED_TABLES: [&str; 7] = [
    "nodes",
    "bans",
    "quarantine",
    "kifu",
    "meta",
    "games",
    "learning",
];

/// The keys of `meta` that [`write_merged`] carries over (each by its own rule:
/// the format marker and the record key are the new store's own, evaluators and
/// the configuration are copied, the twins marker is set; the export ledger
/// and the lease secret are left behind: the new store has written no book
/// file and issued no lease), by prefix.
const MIGRATED_META: [&[u8]; 8] = [
    b"format",
    b"opponent",
    b"config",
    b"evaluator",
    b"twins merged",
    b"whole record",
    crate::sled_store::EXPORT_PREFIX,
    crate::sled_store::LEASE_SECRET,
];

/// Refuses a store holding a table or a `meta` key that [`write_merged`] does
/// not know: copied without it, the new store would silently lose it.
fn refuse_unknown_tables(store: &SledStore) -> Result<(), BookError> {
    for name in store.table_names()? {
        if !MIGRATED_TABLES.contains(&name.as_str()) {
            return Err(BookError::Invalid(format!(
                "the store has a table `{name}` that migrate does not copy; it would be lost (this migrate is older than the store?)"
            )));
        }
    }
    for key in store.meta_keys()? {
        if !MIGRATED_META.iter().any(|k| key.starts_with(k)) {
            return Err(BookError::Invalid(format!(
                "the store's `meta` holds `{}`, which migrate does not copy; it would be lost (this migrate is older than the store?)",
                String::from_utf8_lossy(&key)
            )));
        }
    }
    Ok(())
}

/// Writes `store` (whose book is `book`, as loaded) merged by `pairs` as a new
/// store at `out`: nodes in their order without the dropped twins, bans and
/// quarantine records (moved to the kept twin), kifu positions, evaluators, run
/// configuration and games: every table (a store with a table this does not
/// know is refused). Written under a temporary name and renamed when complete,
/// so `out` is never a half-written store.
///
/// # Errors
/// `out` exists, a storage failure on either side, a table this does not know,
/// or a book that does not match the store.
pub fn write_merged(
    store: &SledStore,
    book: &Book,
    pairs: &TwinPairs,
    out: &Path,
    progress: Progress<'_>,
) -> Result<MergeSummary, BookError> {
    if pairs.new_id.len() != book.len() || book.len() != store.len() as usize {
        return Err(BookError::Invalid(format!(
            "twin pairs of {} nodes, book of {}, store of {}",
            pairs.new_id.len(),
            book.len(),
            store.len()
        )));
    }
    refuse_unknown_tables(store)?;
    let partial = PartialStore::create(out)?;
    let mut target = SledStore::open_partial(&partial)?;
    for (i, identity) in store.evaluators()?.iter().enumerate() {
        let id = target.intern_evaluator(identity)?;
        if usize::from(id) != i {
            return Err(BookError::Corrupt(format!(
                "evaluator `{identity}` listed twice"
            )));
        }
    }
    if let Some(config) = store.config()? {
        target.save_config(&config)?;
    }

    let total = u64::from(store.len());
    let mut batch: Vec<ThoughtNode> = Vec::with_capacity(BATCH);
    let mut done = 0u64;
    store.for_each_node(&mut |id, mut node| {
        done += 1;
        if done.is_multiple_of(100_000) || done == total {
            progress("merge", done, total);
        }
        if pairs.new_id(id).is_none() {
            return Ok(());
        }
        node.origin = pairs.origin(id, node.origin)?;
        batch.push(node);
        if batch.len() == BATCH {
            target.append(&batch)?;
            batch.clear();
        }
        Ok(())
    })?;
    target.append(&batch)?;
    if target.len() as usize != pairs.nodes_after() {
        return Err(BookError::Corrupt(format!(
            "{} positions written, {} expected",
            target.len(),
            pairs.nodes_after()
        )));
    }

    let mut bans_moved = 0;
    for (node, mv) in store.bans()? {
        let (to, twin) = pairs.target(node)?;
        if twin {
            bans_moved += 1;
            target.ban(to, mv.flipped())?;
        } else {
            target.ban(to, mv)?;
        }
    }
    // Quarantine records follow their bans (the note, SFEN and reason, as it was).
    for (node, mv, note) in store.quarantined()? {
        let (to, twin) = pairs.target(node)?;
        let mv = if twin { mv.flipped() } else { mv };
        target.record_quarantine(to, mv, &note)?;
    }
    target.add_kifu_keys(&store.kifu_keys()?)?;
    let merge: HashMap<Key, Key> = pairs
        .kept_twin
        .iter()
        .map(|(&dropped, &kept)| (book.key(NodeId(dropped)), book.key(NodeId(kept))))
        .collect();
    let game_counters_merged = target.copy_games_merging(store, &merge)?;
    target.copy_learning_merging(store, &merge)?;
    target.set_twins_merged(true)?;
    target.flush()?;
    drop(target);
    partial.publish()?;
    Ok(MergeSummary {
        nodes_before: store.len(),
        nodes_after: u32::try_from(pairs.nodes_after()).unwrap_or(u32::MAX),
        pairs: pairs.pairs(),
        rerooted: pairs.rerooted(),
        bans_moved,
        game_counters_merged,
    })
}
