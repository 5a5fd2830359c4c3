//! The in-memory book: every thought node's key and move values, laid out for
//! a book of tens of millions of nodes.
//!
//! Per node: 16 bytes of key, 6 bytes of value offset and count, 8 bytes of
//! origin (parent id + move) and about 9 bytes of hash index (an 8-byte slot
//! holding the id and 32 more key bits, plus hashbrown's control byte, at up to
//! 7/8 load); per move: 2 bytes of value. There is no per-node heap allocation.
//! The tables are [`Column`]s of shared chunks and the hash index is shared
//! too (nodes added while a snapshot holds it go to a small side index), so a
//! clone (a snapshot) copies nearly nothing.

use std::sync::Arc;

use hashbrown::HashTable;
use rayon::prelude::*;
use stera_rules::{Key, Move, Position};

use crate::columns::{CHUNK, Column};
use crate::{BookError, NodeId, Origin, ThoughtNode};

/// One slot of the key index: the node id and key bits 64..96, so that a probe
/// for an absent key is nearly always rejected without touching `keys`.
#[derive(Clone, Copy)]
struct Slot {
    id: u32,
    fragment: u32,
}

const NO_PARENT: u32 = u32::MAX;

/// The id a new node gets (the book holds `nodes` ids and `values` value
/// slots) and its value count, or why it cannot be added.
fn checked_id_and_count(
    nodes: usize,
    values: usize,
    node: &ThoughtNode,
) -> Result<(u32, u16), BookError> {
    let id = u32::try_from(nodes)
        .ok()
        .filter(|&i| i != NO_PARENT)
        .ok_or_else(|| BookError::Full("more than 2^32 - 1 nodes".into()))?;
    let count = u16::try_from(node.values.len())
        .ok()
        .filter(|&n| usize::from(n) <= CHUNK)
        .ok_or_else(|| {
            BookError::Corrupt(format!(
                "node {} has {} move values",
                node.key,
                node.values.len()
            ))
        })?;
    // A run may start a new chunk: the start must fit after that gap too.
    u32::try_from(values + CHUNK + node.values.len())
        .map_err(|_| BookError::Full("more than 2^32 move values".into()))?;
    Ok((id, count))
}

#[inline]
fn hash_of(key: u128) -> u64 {
    // Zobrist keys are uniformly random: their low bits are a good hash already.
    key as u64
}

#[inline]
fn fragment_of(key: u128) -> u32 {
    (key >> 64) as u32
}

/// The thought positions and their move values, indexed by key.
///
/// ```
/// use stera_book::{Book, Origin, ThoughtNode};
/// use stera_rules::Position;
/// let pos = Position::startpos();
/// let mut book = Book::new();
/// let id = book
///     .insert(&ThoughtNode {
///         key: pos.key(),
///         origin: Origin::Sfen(pos.to_sfen_without_ply()),
///         ply: 1,
///         values: vec![0; 30],
///         depths: None,
///         evaluator: 0,
///         timestamp: 0,
///     })
///     .unwrap();
/// assert_eq!(book.get(pos.key()), Some(id));
/// assert_eq!(book.values(id).len(), 30);
/// ```
/// `Clone` gives a snapshot for work that runs beside the live book (exports,
/// game openings in the coordinator): the node tables are shared chunks and the
/// hash index is shared, so a clone copies nothing per node; the live book's
/// next insert copies the last chunk of each table once, and while a snapshot
/// shares the index, new nodes go to a side index (`recent`), merged into the
/// main one once no snapshot holds it (or copied with it when the side index
/// has grown to a quarter of it).
#[derive(Clone, Default)]
pub struct Book {
    /// The key index, shared with snapshots (never changed while shared).
    index: Arc<HashTable<Slot>>,
    /// Nodes added while `index` was shared.
    recent: HashTable<Slot>,
    keys: Column<u128>,
    /// Node `i`'s values are `values.run(value_start[i], value_len[i])`.
    value_start: Column<u32>,
    value_len: Column<u16>,
    values: Column<i16>,
    /// Values held (the values column also counts the gaps at chunk ends).
    value_count: usize,
    parents: Column<u32>,
    /// The move from the parent (`None` for SFEN origins).
    moves: Column<Option<Move>>,
    /// Origins given as SFEN (roots, imports): few, so a side table.
    sfen_origins: hashbrown::HashMap<u32, String>,
}

impl std::fmt::Debug for Book {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Book({} nodes, {} values)", self.len(), self.value_count)
    }
}

/// A book loaded from a store, whose nodes come in id order: their tables are
/// filled as they come and the key index is built once at the end, slot by
/// slot in the index's order, instead of one random probe per node (most of
/// the time of loading a large store).
pub struct BookLoader {
    book: Book,
}

impl BookLoader {
    /// A loader for about `nodes` nodes.
    #[must_use]
    pub fn new(nodes: usize) -> Self {
        Self {
            book: Book::with_capacity(nodes),
        }
    }

    /// Adds the node with id `id` in the store (the next id).
    ///
    /// # Errors
    /// [`BookError::Corrupt`] for a node out of order or a book too large
    /// ([`Book::insert`]).
    pub fn push_as(&mut self, id: NodeId, node: &ThoughtNode) -> Result<(), BookError> {
        let book = &mut self.book;
        let (next, count) = checked_id_and_count(book.keys.end(), book.values.end(), node)?;
        if next != id.0 {
            return Err(BookError::Corrupt(format!(
                "node {id} loaded as {} (duplicate key {})",
                NodeId(next),
                node.key
            )));
        }
        book.keys.push(node.key.0);
        book.push_node(next, count, node)?;
        Ok(())
    }

    /// The book, its key index built.
    ///
    /// # Errors
    /// [`BookError::Corrupt`] when two nodes have one key (the first such
    /// node in id order is named, as [`Book::insert`] would have).
    pub fn finish(mut self) -> Result<Book, BookError> {
        let book = &mut self.book;
        let n = book.keys.end();
        // The index's slots are chosen by the low bits of the hash: keys
        // inserted in that order touch the table from one end to the other.
        let buckets = (n.saturating_mul(8) / 7).next_power_of_two().max(1);
        let mask = (buckets - 1) as u64;
        let keys = &book.keys;
        // Truncating the slot only blurs the order (8 bytes a node for the sort).
        let mut order: Vec<(u32, u32)> = (0..n)
            .into_par_iter()
            .map(|i| {
                let slot = hash_of(*keys.get(i)) & mask;
                (slot as u32, u32::try_from(i).unwrap_or(u32::MAX))
            })
            .collect();
        order.par_sort_unstable();
        let index = Arc::get_mut(&mut book.index)
            .ok_or_else(|| BookError::Corrupt("a loading book's index is shared".into()))?;
        index.reserve(n, |s| hash_of(*keys.get(s.id as usize)));
        // (later node, earlier node) of the first repeated key in id order.
        let mut repeated: Option<(u32, u32)> = None;
        for (_, id) in order {
            let k = *keys.get(id as usize);
            let fragment = fragment_of(k);
            match index.entry(
                hash_of(k),
                |s| s.fragment == fragment && *keys.get(s.id as usize) == k,
                |s| hash_of(*keys.get(s.id as usize)),
            ) {
                hashbrown::hash_table::Entry::Occupied(e) => {
                    let pair = (id.max(e.get().id), id.min(e.get().id));
                    if repeated.is_none_or(|r| pair.0 < r.0) {
                        repeated = Some(pair);
                    }
                }
                hashbrown::hash_table::Entry::Vacant(v) => {
                    v.insert(Slot { id, fragment });
                }
            }
        }
        if let Some((later, earlier)) = repeated {
            return Err(BookError::Corrupt(format!(
                "node {} loaded as {} (duplicate key {})",
                NodeId(later),
                NodeId(earlier),
                Key(*keys.get(later as usize))
            )));
        }
        Ok(self.book)
    }
}

impl Book {
    /// An empty book.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty book whose index has room for `nodes` nodes (the tables grow by
    /// chunks and need no hint).
    #[must_use]
    pub fn with_capacity(nodes: usize) -> Self {
        Self {
            index: Arc::new(HashTable::with_capacity(nodes)),
            ..Self::default()
        }
    }

    /// Loads every node of a store (the index rebuild on reopen).
    ///
    /// # Errors
    /// Storage errors, or a store that repeats a key.
    pub fn load(store: &dyn crate::NodeStore) -> Result<Self, BookError> {
        let mut loader = BookLoader::new(store.len() as usize);
        store.for_each_node(&mut |id, node| loader.push_as(id, &node))?;
        loader.finish()
    }

    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.end()
    }

    /// True for a book without nodes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.end() == 0
    }

    /// Total stored move values.
    #[must_use]
    pub fn value_count(&self) -> usize {
        self.value_count
    }

    /// The node with this key.
    #[inline]
    #[must_use]
    pub fn get(&self, key: Key) -> Option<NodeId> {
        let k = key.0;
        let (hash, fragment) = (hash_of(k), fragment_of(k));
        let eq = |s: &Slot| s.fragment == fragment && *self.keys.get(s.id as usize) == k;
        self.index
            .find(hash, eq)
            .or_else(|| {
                if self.recent.is_empty() {
                    None
                } else {
                    self.recent.find(hash, eq)
                }
            })
            .map(|s| NodeId(s.id))
    }

    /// The node of a position with key `key` whose colour-flipped twin has key
    /// `twin_key`: the position's own node, or (`true`) its twin's, which stands
    /// for it (the same situation for the side to move).
    #[must_use]
    pub fn get_or_twin(&self, key: Key, twin_key: Key) -> Option<(NodeId, bool)> {
        self.get(key)
            .map(|id| (id, false))
            .or_else(|| self.get(twin_key).map(|id| (id, true)))
    }

    /// The key the game counters of a position with `key` and colour-flipped
    /// `twin_key` are kept under: the key the book holds it by (its own, else its
    /// twin's); for a position the book holds in neither colour, the smaller of
    /// the two, so that both colours of it count together.
    ///
    /// ```
    /// use stera_book::Book;
    /// use stera_rules::Key;
    /// let book = Book::new();
    /// assert_eq!(book.count_key(Key(7), Key(3)), Key(3));
    /// ```
    #[must_use]
    pub fn count_key(&self, key: Key, twin_key: Key) -> Key {
        match self.get_or_twin(key, twin_key) {
            Some((_, false)) => key,
            Some((_, true)) => twin_key,
            None => key.min(twin_key),
        }
    }

    /// True if a node has this key.
    #[must_use]
    pub fn contains(&self, key: Key) -> bool {
        self.get(key).is_some()
    }

    /// The key of a node.
    ///
    /// # Panics
    /// If `id` is not a node of this book.
    #[must_use]
    pub fn key(&self, id: NodeId) -> Key {
        Key(*self.keys.get(id.index()))
    }

    /// A node's move values in canonical move order.
    ///
    /// # Panics
    /// If `id` is not a node of this book.
    #[inline]
    #[must_use]
    pub fn values(&self, id: NodeId) -> &[i16] {
        let i = id.index();
        self.values.run(
            *self.value_start.get(i) as usize,
            usize::from(*self.value_len.get(i)),
        )
    }

    /// How a node's position is rebuilt.
    ///
    /// # Panics
    /// If `id` is not a node of this book.
    #[must_use]
    pub fn origin(&self, id: NodeId) -> Origin {
        let i = id.index();
        match *self.moves.get(i) {
            Some(mv) => Origin::Child {
                parent: NodeId(*self.parents.get(i)),
                mv,
            },
            None => Origin::Sfen(self.sfen_origins.get(&id.0).cloned().unwrap_or_default()),
        }
    }

    /// Rebuilds a node's position by following its origins (without game history).
    ///
    /// # Errors
    /// [`BookError::Corrupt`] for a broken origin chain.
    pub fn position_of(&self, id: NodeId) -> Result<Position, BookError> {
        let mut moves = Vec::new();
        let mut cur = id;
        loop {
            if moves.len() > self.len() {
                return Err(BookError::Corrupt(format!("origin chain of {id} loops")));
            }
            match self.origin(cur) {
                Origin::Child { parent, mv } => {
                    if parent.index() >= self.len() {
                        return Err(BookError::Corrupt(format!("{cur} has parent {parent}")));
                    }
                    moves.push(mv);
                    cur = parent;
                }
                Origin::Sfen(s) => {
                    let mut pos = Position::from_sfen(&s)
                        .map_err(|e| BookError::Corrupt(format!("origin of {cur}: {e}")))?;
                    for mv in moves.iter().rev() {
                        if !pos.is_legal(*mv) {
                            return Err(BookError::Corrupt(format!(
                                "origin chain of {id}: {mv} illegal in {}",
                                pos.to_sfen()
                            )));
                        }
                        pos.do_move(*mv);
                    }
                    return Ok(pos);
                }
            }
        }
    }

    /// Adds a node; returns its id (the next dense id), or the existing id if the
    /// key is already in the book (nodes are immutable: the old values stay).
    ///
    /// # Errors
    /// [`BookError::Full`] past 2^32 values or nodes.
    pub fn insert(&mut self, node: &ThoughtNode) -> Result<NodeId, BookError> {
        let k = node.key.0;
        if self.recent.is_empty()
            && let Some(index) = Arc::get_mut(&mut self.index)
        {
            // No snapshot shares the index (loading a store, most inserts): one
            // probe finds the key or the place for it; two random reads of a
            // large index were a third of loading a store.
            let keys = &self.keys;
            let fragment = fragment_of(k);
            let entry = index.entry(
                hash_of(k),
                |s| s.fragment == fragment && *keys.get(s.id as usize) == k,
                |s| hash_of(*keys.get(s.id as usize)),
            );
            let vacant = match entry {
                hashbrown::hash_table::Entry::Occupied(e) => return Ok(NodeId(e.get().id)),
                hashbrown::hash_table::Entry::Vacant(v) => v,
            };
            let (id, count) = checked_id_and_count(self.keys.end(), self.values.end(), node)?;
            vacant.insert(Slot { id, fragment });
            self.keys.push(k);
            return self.push_node(id, count, node);
        }
        if let Some(id) = self.get(node.key) {
            return Ok(id);
        }
        let (id, count) = checked_id_and_count(self.keys.end(), self.values.end(), node)?;
        self.keys.push(k);
        self.index_insert(Slot {
            id,
            fragment: fragment_of(k),
        });
        self.push_node(id, count, node)
    }

    /// Stores the values and origin of node `id` (key and index done).
    fn push_node(&mut self, id: u32, count: u16, node: &ThoughtNode) -> Result<NodeId, BookError> {
        let full = || BookError::Full("more than 2^32 move values".into());
        let start = u32::try_from(self.values.push_run(&node.values)).map_err(|_| full())?;
        self.value_start.push(start);
        self.value_len.push(count);
        self.value_count += node.values.len();
        match &node.origin {
            Origin::Child { parent, mv } => {
                self.parents.push(parent.0);
                self.moves.push(Some(*mv));
            }
            Origin::Sfen(s) => {
                self.parents.push(NO_PARENT);
                self.moves.push(None);
                self.sfen_origins.insert(id, s.clone());
            }
        }
        Ok(NodeId(id))
    }

    /// Adds a node (whose key is pushed already) to the key index: the main one
    /// when no snapshot shares it (after merging what was added while one did),
    /// else the side index.
    fn index_insert(&mut self, slot: Slot) {
        let keys = &self.keys;
        let hasher = |s: &Slot| hash_of(*keys.get(s.id as usize));
        if let Some(index) = Arc::get_mut(&mut self.index) {
            for s in self.recent.drain() {
                index.insert_unique(hasher(&s), s, hasher);
            }
            index.insert_unique(hasher(&slot), slot, hasher);
            return;
        }
        self.recent.insert_unique(hasher(&slot), slot, hasher);
        if self.recent.len() > self.index.len() / 4 + 1024 {
            // A snapshot that lives on (game openings): stop probing two big
            // indices; the snapshot keeps the old one.
            let mut merged = (*self.index).clone();
            merged.reserve(self.recent.len(), hasher);
            for s in self.recent.drain() {
                merged.insert_unique(hasher(&s), s, hasher);
            }
            self.recent.shrink_to_fit(hasher);
            self.index = Arc::new(merged);
        }
    }

    /// Bytes held by the book's tables (capacity, not just length; the key
    /// index counts whole even when a snapshot shares it).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        (self.index.capacity() + self.recent.capacity()) * (std::mem::size_of::<Slot>() + 1)
            + self.keys.memory_bytes()
            + self.value_start.memory_bytes()
            + self.value_len.memory_bytes()
            + self.values.memory_bytes()
            + self.parents.memory_bytes()
            + self.moves.memory_bytes()
            + self.sfen_origins.len() * 96
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_for(pos: &Position, origin: Origin, seed: i16) -> ThoughtNode {
        let n = pos.legal_move_count();
        ThoughtNode {
            key: pos.key(),
            origin,
            ply: 1,
            values: (0..n).map(|i| seed + i16::try_from(i).unwrap()).collect(),
            depths: None,
            evaluator: 0,
            timestamp: 0,
        }
    }

    #[test]
    fn insert_lookup_and_rebuild_positions() {
        let mut book = Book::new();
        let root = Position::startpos();
        let rid = book
            .insert(&node_for(
                &root,
                Origin::Sfen(root.to_sfen_without_ply()),
                0,
            ))
            .unwrap();
        let mut ids = Vec::new();
        for mv in root.legal_moves() {
            let mut p = root.clone();
            p.do_move(mv);
            let id = book
                .insert(&node_for(&p, Origin::Child { parent: rid, mv }, 100))
                .unwrap();
            ids.push((id, p));
        }
        assert_eq!(book.len(), 31);
        for (id, p) in &ids {
            assert_eq!(book.get(p.key()), Some(*id));
            assert_eq!(book.values(*id)[0], 100);
            assert_eq!(book.values(*id).len(), p.legal_move_count());
            assert_eq!(book.position_of(*id).unwrap().key(), p.key());
        }
        assert_eq!(book.get(Key(12345)), None);
        // Re-inserting a key keeps the first node.
        let again = book
            .insert(&node_for(&root, Origin::Sfen(String::new()), 7))
            .unwrap();
        assert_eq!(again, rid);
        assert_eq!(book.values(rid)[0], 0);
        assert_eq!(book.len(), 31);
    }

    #[test]
    fn a_clone_is_a_snapshot_that_the_live_book_does_not_change() {
        let root = Position::startpos();
        let mut book = Book::new();
        let rid = book
            .insert(&node_for(
                &root,
                Origin::Sfen(root.to_sfen_without_ply()),
                0,
            ))
            .unwrap();
        let snapshot = book.clone();
        let mut later = Vec::new();
        for mv in root.legal_moves() {
            let mut p = root.clone();
            p.do_move(mv);
            book.insert(&node_for(&p, Origin::Child { parent: rid, mv }, 5))
                .unwrap();
            later.push(p);
        }
        assert_eq!((snapshot.len(), book.len()), (1, 31));
        assert_eq!(snapshot.value_count(), 30);
        assert_eq!(snapshot.values(rid), book.values(rid));
        for p in &later {
            assert_eq!(snapshot.get(p.key()), None);
            assert!(book.get(p.key()).is_some());
        }
    }

    fn keyed(i: u64) -> ThoughtNode {
        // Spread keys (splitmix64) with the low bits of the hash varied.
        let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ThoughtNode {
            key: Key(u128::from(z ^ (z >> 31)) << 64 | u128::from(i)),
            origin: Origin::Sfen(String::new()),
            ply: 1,
            values: vec![],
            depths: None,
            evaluator: 0,
            timestamp: 0,
        }
    }

    /// Every key up to `n` is found at its id, none beyond.
    fn check_keys(book: &Book, n: u64) {
        assert_eq!(book.len() as u64, n);
        for i in 0..n + 100 {
            let want = (i < n).then(|| NodeId(u32::try_from(i).unwrap()));
            assert_eq!(book.get(keyed(i).key), want, "key {i}");
        }
    }

    #[test]
    fn snapshots_share_the_key_index_and_the_live_book_merges_it_back() {
        let mut book = Book::new();
        for i in 0..5_000 {
            book.insert(&keyed(i)).unwrap();
        }
        let snapshot = book.clone();
        assert!(
            Arc::ptr_eq(&snapshot.index, &book.index),
            "no copy of the index"
        );
        for i in 5_000..6_000 {
            book.insert(&keyed(i)).unwrap();
        }
        assert_eq!(book.recent.len(), 1_000);
        check_keys(&snapshot, 5_000);
        check_keys(&book, 6_000);
        // A snapshot of the live book now: the shared index and a copy of the side one.
        let second = book.clone();
        drop(snapshot);
        book.insert(&keyed(6_000)).unwrap();
        check_keys(&second, 6_000);
        drop(second);
        // Nothing shares the index: the next insert merges the side index.
        book.insert(&keyed(6_001)).unwrap();
        assert!(book.recent.is_empty());
        check_keys(&book, 6_002);
        // Re-inserting an existing key finds it wherever it is indexed.
        let snapshot = book.clone();
        book.insert(&keyed(6_002)).unwrap();
        assert_eq!(book.insert(&keyed(6_002)).unwrap(), NodeId(6_002));
        assert_eq!(book.insert(&keyed(17)).unwrap(), NodeId(17));
        check_keys(&book, 6_003);
        check_keys(&snapshot, 6_002);
    }

    #[test]
    fn a_snapshot_that_lives_on_gets_the_old_index_when_the_side_one_grows() {
        let mut book = Book::new();
        for i in 0..8_000 {
            book.insert(&keyed(i)).unwrap();
        }
        let snapshot = book.clone();
        // A quarter of 8,000 + 1,024 new nodes: the live book takes its own index.
        for i in 8_000..11_100 {
            book.insert(&keyed(i)).unwrap();
        }
        assert!(!Arc::ptr_eq(&snapshot.index, &book.index));
        assert!(book.recent.len() < 100, "{}", book.recent.len());
        check_keys(&book, 11_100);
        check_keys(&snapshot, 8_000);
    }

    #[test]
    fn keys_sharing_low_bits_are_told_apart() {
        let mut book = Book::new();
        let base = ThoughtNode {
            key: Key(0),
            origin: Origin::Sfen(String::new()),
            ply: 1,
            values: vec![],
            depths: None,
            evaluator: 0,
            timestamp: 0,
        };
        // Same hash (low 64 bits) and same fragment, differing only in the top bits.
        for top in 0..50u128 {
            let mut n = base.clone();
            n.key = Key((top << 100) | 7);
            assert_eq!(
                book.insert(&n).unwrap(),
                NodeId(u32::try_from(top).unwrap())
            );
        }
        for top in 0..50u128 {
            assert_eq!(
                book.get(Key((top << 100) | 7)),
                Some(NodeId(u32::try_from(top).unwrap()))
            );
        }
        assert_eq!(book.get(Key((60u128 << 100) | 7)), None);
    }
}
