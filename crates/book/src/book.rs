//! The in-memory book: every thought node's key and move values, laid out for
//! a book of tens of millions of nodes.
//!
//! Per node: 16 bytes of key, 4 bytes of value offset, 8 bytes of origin
//! (parent id + move) and about 9 bytes of hash index (an 8-byte slot holding the
//! id and 32 more key bits, plus hashbrown's control byte, at up to 7/8 load);
//! per move: 2 bytes of value. There is no per-node heap allocation.

use hashbrown::HashTable;
use stera_rules::{Key, Move, Position};

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
/// `Clone` gives a snapshot for analyses that run beside the live book (game
/// openings in the coordinator), at the cost of a copy of its tables.
#[derive(Clone, Default)]
pub struct Book {
    index: HashTable<Slot>,
    keys: Vec<u128>,
    /// `offsets[i]..offsets[i + 1]` are node `i`'s values.
    offsets: Vec<u32>,
    values: Vec<i16>,
    parents: Vec<u32>,
    /// The move from the parent (`None` for SFEN origins).
    moves: Vec<Option<Move>>,
    /// Origins given as SFEN (roots, imports): few, so a side table.
    sfen_origins: hashbrown::HashMap<u32, String>,
}

impl std::fmt::Debug for Book {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Book({} nodes, {} values)",
            self.len(),
            self.values.len()
        )
    }
}

impl Book {
    /// An empty book.
    #[must_use]
    pub fn new() -> Self {
        Self {
            offsets: vec![0],
            ..Self::default()
        }
    }

    /// An empty book with room for `nodes` nodes and `values` move values.
    #[must_use]
    pub fn with_capacity(nodes: usize, values: usize) -> Self {
        let mut offsets = Vec::with_capacity(nodes + 1);
        offsets.push(0);
        Self {
            index: HashTable::with_capacity(nodes),
            keys: Vec::with_capacity(nodes),
            offsets,
            values: Vec::with_capacity(values),
            parents: Vec::with_capacity(nodes),
            moves: Vec::with_capacity(nodes),
            sfen_origins: hashbrown::HashMap::new(),
        }
    }

    /// Loads every node of a store (the index rebuild on reopen).
    ///
    /// # Errors
    /// Storage errors, or a store that repeats a key.
    pub fn load(store: &dyn crate::NodeStore) -> Result<Self, BookError> {
        let n = store.len() as usize;
        // A guess of 48 moves per node; the vector grows if needed.
        let mut book = Self::with_capacity(n, n * 48);
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
        book.values.shrink_to_fit();
        Ok(book)
    }

    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True for a book without nodes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Total stored move values.
    #[must_use]
    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    /// The node with this key.
    #[inline]
    #[must_use]
    pub fn get(&self, key: Key) -> Option<NodeId> {
        let k = key.0;
        let fragment = fragment_of(k);
        self.index
            .find(hash_of(k), |s| {
                s.fragment == fragment && self.keys[s.id as usize] == k
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
        Key(self.keys[id.index()])
    }

    /// A node's move values in canonical move order.
    ///
    /// # Panics
    /// If `id` is not a node of this book.
    #[inline]
    #[must_use]
    pub fn values(&self, id: NodeId) -> &[i16] {
        let i = id.index();
        &self.values[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// How a node's position is rebuilt.
    ///
    /// # Panics
    /// If `id` is not a node of this book.
    #[must_use]
    pub fn origin(&self, id: NodeId) -> Origin {
        let i = id.index();
        match self.moves[i] {
            Some(mv) => Origin::Child {
                parent: NodeId(self.parents[i]),
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
        let id = u32::try_from(self.keys.len())
            .ok()
            .filter(|&i| i != NO_PARENT)
            .ok_or_else(|| BookError::Full("more than 2^32 - 1 nodes".into()))?;
        let end = u32::try_from(self.values.len() + node.values.len())
            .map_err(|_| BookError::Full("more than 2^32 move values".into()))?;
        let k = node.key.0;
        let keys = &self.keys;
        self.index.insert_unique(
            hash_of(k),
            Slot {
                id,
                fragment: fragment_of(k),
            },
            |s| hash_of(keys[s.id as usize]),
        );
        self.keys.push(k);
        self.values.extend_from_slice(&node.values);
        self.offsets.push(end);
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
            + self.keys.capacity() * 16
            + self.offsets.capacity() * 4
            + self.values.capacity() * 2
            + self.parents.capacity() * 4
            + self.moves.capacity() * std::mem::size_of::<Option<Move>>()
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
