//! The in-memory book: every thought node's key and move values, laid out for
//! a book of tens of millions of nodes.
//!
//! Per node: 16 bytes of key, 6 bytes of value offset and count, 8 bytes of
//! origin (parent id + move) and about 9 bytes of hash index (an 8-byte slot
//! holding the id and 32 more key bits, plus hashbrown's control byte, at up to
//! 7/8 load); per move: 2 bytes of value. There is no per-node heap allocation.
//! The tables are [`Column`]s of shared chunks, so a clone (a snapshot) copies
//! only the hash index.

use hashbrown::HashTable;
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

#[inline]
fn hash_of(key: u128) -> u64 {
    // Zobrist keys are uniformly random: their low bits are a good hash already.
    #[allow(clippy::cast_possible_truncation)]
    let low = key as u64;
    low
}

#[inline]
#[allow(clippy::cast_possible_truncation)]
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
/// game openings in the coordinator): the node tables are shared chunks, so a
/// clone copies the hash index (about 9 bytes per node) and nothing else; the
/// live book's next insert copies the last chunk of each table once.
#[derive(Clone, Default)]
pub struct Book {
    index: HashTable<Slot>,
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
            index: HashTable::with_capacity(nodes),
            ..Self::default()
        }
    }

    /// Loads every node of a store (the index rebuild on reopen).
    ///
    /// # Errors
    /// Storage errors, or a store that repeats a key.
    pub fn load(store: &dyn crate::NodeStore) -> Result<Self, BookError> {
        let n = store.len() as usize;
        let mut book = Self::with_capacity(n);
        store.for_each_node(&mut |id, node| {
            let got = book.insert(&node)?;
            if got != id {
                return Err(BookError::Corrupt(format!(
                    "node {id} loaded as {got} (duplicate key {})",
                    node.key
                )));
            }
            Ok(())
        })?;
        Ok(book)
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
        let fragment = fragment_of(k);
        self.index
            .find(hash_of(k), |s| {
                s.fragment == fragment && *self.keys.get(s.id as usize) == k
            })
            .map(|s| NodeId(s.id))
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
        if let Some(id) = self.get(node.key) {
            return Ok(id);
        }
        let id = u32::try_from(self.keys.end())
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
        let full = || BookError::Full("more than 2^32 move values".into());
        // A run may start a new chunk: the start must fit after that gap too.
        u32::try_from(self.values.end() + CHUNK + node.values.len()).map_err(|_| full())?;
        let k = node.key.0;
        let keys = &self.keys;
        self.index.insert_unique(
            hash_of(k),
            Slot {
                id,
                fragment: fragment_of(k),
            },
            |s| hash_of(*keys.get(s.id as usize)),
        );
        self.keys.push(k);
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

    /// Bytes held by the book's tables (capacity, not just length).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.index.capacity() * (std::mem::size_of::<Slot>() + 1)
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
