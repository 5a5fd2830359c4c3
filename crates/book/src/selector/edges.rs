//! What the moves of a thought node lead to, kept between selections.
//!
//! Every selection walks the principal variation again, and at each node of it
//! the search needs, per legal move, the child's key, its colour-flipped twin's
//! key and whether the book holds either. Finding that out (move generation,
//! two key updates and up to two probes of a hash index of millions of nodes
//! per move) was most of a selection's cost. It changes only when the book
//! grows, so a node's table is built once and, before each use, brought up to
//! date with the nodes added since: a move whose child (or twin) is among them
//! is probed again. A move's keys are computed and the book asked about it
//! the first time the search looks at it, not when the table is built: a
//! search cut off after the first move of a node does that for one move only,
//! as before. The in-flight set and the bans change with every leaf and are
//! asked anew at every use, as before.

use hashbrown::HashMap;
use stera_rules::{Key, Move, Position};

use crate::live_book::Reach;
use crate::{Book, LiveBook, NodeId, NodeStore};

/// No thought node behind a move (a leaf, unless in flight).
const NO_NODE: u32 = u32::MAX;

/// The book was not asked about the move yet.
const UNPROBED: u32 = u32::MAX - 1;

/// Not even the keys of the move's child are known yet.
const UNKEYED: u32 = u32::MAX - 2;

/// Edges kept at most (40 bytes each, 40 MB): tables not used for a while
/// are dropped and rebuilt when the search needs them again, so memory stays
/// bounded on any book. What a selection reuses is mostly what the last few
/// selections built; more tables (8M edges were tried) did not make selection
/// at 15M nodes faster and cost the first touches of their memory.
const MAX_EDGES: usize = 1 << 20;

/// Past this many nodes added since a table was last brought up to date, its
/// unresolved moves are probed again instead of compared with each new key.
const REPROBE_AFTER: usize = 64;

/// One legal move of a thought node and what it leads to in the book.
#[derive(Clone, Copy)]
pub(super) struct Edge {
    pub(super) mv: Move,
    /// The thought node the move leads to, [`NO_NODE`] if neither the child nor
    /// its twin is thought, [`UNPROBED`] if not known yet, [`UNKEYED`] if the
    /// keys are not known either.
    target: u32,
    /// `target` is the child's colour-flipped twin.
    twin: bool,
    /// `target` has no legal move (kept so that scoring the child does not
    /// read the book's tables for it at every visit).
    target_mated: bool,
    /// The child's key and its twin's, in halves: 8-byte alignment keeps an
    /// edge at 40 bytes.
    child_key: [u64; 2],
    twin_key: [u64; 2],
}

fn halves(key: Key) -> [u64; 2] {
    [key.0 as u64, (key.0 >> 64) as u64]
}

fn whole(halves: [u64; 2]) -> Key {
    Key(u128::from(halves[0]) | (u128::from(halves[1]) << 64))
}

impl Edge {
    fn new(mv: Move) -> Self {
        Self {
            mv,
            target: UNKEYED,
            twin: false,
            target_mated: false,
            child_key: [0; 2],
            twin_key: [0; 2],
        }
    }

    /// Whether the child's keys are known ([`Edge::set_keys`]).
    pub(super) fn keyed(&self) -> bool {
        self.target != UNKEYED
    }

    /// Computes the child's keys from `pos`, the position of the edge's node.
    pub(super) fn set_keys(&mut self, pos: &Position) {
        self.child_key = halves(pos.key_after(self.mv));
        self.twin_key = halves(pos.flipped_key_after(self.mv));
        self.target = UNPROBED;
    }

    /// Looks the child up, then its twin (the child itself wins, as in
    /// [`LiveBook::reach`]).
    fn probe(&mut self, book: &Book) {
        (self.target, self.twin) = match book.get_or_twin(self.child_key(), self.twin_key()) {
            Some((id, twin)) => (id.0, twin),
            None => (NO_NODE, false),
        };
        self.target_mated = self.target != NO_NODE && book.values(NodeId(self.target)).is_empty();
    }

    /// The child's key.
    pub(super) fn child_key(&self) -> Key {
        whole(self.child_key)
    }

    /// The key of the child's colour-flipped twin.
    pub(super) fn twin_key(&self) -> Key {
        whole(self.twin_key)
    }

    /// The thought node the move leads to has no legal move (asked after
    /// [`Edge::reach`] found it).
    pub(super) fn target_mated(&self) -> bool {
        self.target_mated
    }

    /// Whether a node added to the book can change what this move leads to: its
    /// child is not thought itself (a twin or a leaf may become the child).
    fn unresolved(&self) -> bool {
        self.target == NO_NODE || self.twin
    }

    /// What the move leads to now: [`LiveBook::reach`] with the book's part
    /// known once asked (same order of questions, so the same answer); sets
    /// `probed` when it asked the book.
    #[inline]
    pub(super) fn reach<S: NodeStore>(&mut self, live: &LiveBook<S>, probed: &mut bool) -> Reach {
        if live.in_flight_contains(self.child_key()) {
            return Reach::InFlight;
        }
        if self.target == UNPROBED {
            self.probe(live.book());
            *probed = true;
        }
        if self.target != NO_NODE && !self.twin {
            return Reach::Thought(NodeId(self.target), false);
        }
        if live.in_flight_contains(self.twin_key()) {
            return Reach::InFlight;
        }
        if self.target == NO_NODE {
            Reach::Leaf
        } else {
            Reach::Thought(NodeId(self.target), true)
        }
    }
}

/// Where a node's table lies in [`Arena::edges`].
#[derive(Clone, Copy)]
struct Table {
    start: u32,
    len: u16,
    /// The book's length when the table was last brought up to date.
    checked_at: u32,
}

/// Tables of nodes, their edges end to end.
#[derive(Default)]
struct Arena {
    tables: HashMap<u32, Table>,
    edges: Vec<Edge>,
}

impl Arena {
    /// Empties the arena, keeping its memory.
    fn clear(&mut self) {
        self.tables.clear();
        self.edges.clear();
    }

    /// The table of `node` brought up to date with `book`, if kept here.
    fn get(&mut self, book: &Book, node: NodeId) -> Option<&[Edge]> {
        let table = self.tables.get_mut(&node.0)?;
        let start = table.start as usize;
        let edges = &mut self.edges[start..start + usize::from(table.len)];
        let (checked_at, now) = (table.checked_at as usize, book.len());
        if checked_at < now {
            if now - checked_at > REPROBE_AFTER {
                edges
                    .iter_mut()
                    .filter(|e| e.unresolved())
                    .for_each(|e| e.probe(book));
            } else {
                for id in checked_at..now {
                    let key = halves(book.key(NodeId(u32::try_from(id).unwrap_or(u32::MAX))));
                    for e in edges.iter_mut() {
                        if e.unresolved() && (e.child_key == key || e.twin_key == key) {
                            e.probe(book);
                        }
                    }
                }
            }
            table.checked_at = u32::try_from(now).unwrap_or(u32::MAX);
        }
        Some(edges)
    }

    /// Keeps `edges` as `node`'s table, up to date at `book_len`; false when
    /// the arena has no room for them.
    fn put(&mut self, node: NodeId, edges: &[Edge], book_len: usize) -> bool {
        if self.edges.len() + edges.len() > MAX_EDGES / 2 {
            return false;
        }
        let (Ok(start), Ok(len), Ok(checked_at)) = (
            u32::try_from(self.edges.len()),
            u16::try_from(edges.len()),
            u32::try_from(book_len),
        ) else {
            return true;
        };
        self.edges.extend_from_slice(edges);
        self.tables.insert(
            node.0,
            Table {
                start,
                len,
                checked_at,
            },
        );
        true
    }
}

/// The tables of the nodes the search expanded, bounded by [`MAX_EDGES`] in
/// two generations: when the newer is full, the older is dropped and the newer
/// takes its place, and a table found in the older is copied into the newer,
/// so the tables in use stay and the others go.
#[derive(Default)]
pub(super) struct EdgeTables {
    newer: Arena,
    older: Arena,
    moves: Vec<Move>,
    /// The book's length last seen: a shorter book is another book.
    book_len: usize,
}

impl EdgeTables {
    /// Drops every table when `book` is not the book they were built on.
    pub(super) fn fit(&mut self, book: &Book) {
        if book.len() < self.book_len {
            self.newer = Arena::default();
            self.older = Arena::default();
        }
        self.book_len = book.len();
    }

    /// The edges of thought node `node` in canonical move order, into `out`,
    /// from its table brought up to date; false (and `out` empty) when no table
    /// of it is kept.
    pub(super) fn kept_into(&mut self, book: &Book, node: NodeId, out: &mut Vec<Edge>) -> bool {
        out.clear();
        if let Some(edges) = self.newer.get(book, node) {
            out.extend_from_slice(edges);
            return true;
        }
        let Some(edges) = self.older.get(book, node) else {
            return false;
        };
        out.extend_from_slice(edges);
        self.keep(book, node, out);
        true
    }

    /// The edges of thought node `node`, whose position is `pos`, computed
    /// into `out` and kept as its table.
    pub(super) fn build_into(
        &mut self,
        book: &Book,
        node: NodeId,
        pos: &Position,
        out: &mut Vec<Edge>,
    ) {
        pos.legal_moves_into(&mut self.moves);
        out.clear();
        out.extend(self.moves.iter().map(|&mv| Edge::new(mv)));
        self.keep(book, node, out);
    }

    /// [`EdgeTables::kept_into`], else [`EdgeTables::build_into`] (then true).
    pub(super) fn edges_into(
        &mut self,
        book: &Book,
        node: NodeId,
        pos: &Position,
        out: &mut Vec<Edge>,
    ) -> bool {
        if self.kept_into(book, node, out) {
            return false;
        }
        self.build_into(book, node, pos, out);
        true
    }

    /// Writes back the edges of `node`'s table after a search probed some.
    pub(super) fn write_back(&mut self, node: NodeId, edges: &[Edge]) {
        if let Some(table) = self.newer.tables.get(&node.0)
            && usize::from(table.len) == edges.len()
        {
            let start = table.start as usize;
            self.newer.edges[start..start + edges.len()].copy_from_slice(edges);
        }
    }

    fn keep(&mut self, book: &Book, node: NodeId, edges: &[Edge]) {
        if !self.newer.put(node, edges, book.len()) {
            std::mem::swap(&mut self.older, &mut self.newer);
            self.newer.clear();
            self.newer.put(node, edges, book.len());
        }
    }
}

/// The edges of the node at `pos`, every move probed anew (what the tables
/// save): the reference the tables are checked against.
#[cfg(test)]
pub(super) fn computed_into(book: &Book, pos: &Position, out: &mut Vec<Edge>) {
    out.clear();
    out.extend(pos.legal_moves().iter().map(|&mv| {
        let mut edge = Edge::new(mv);
        edge.set_keys(pos);
        edge.probe(book);
        edge
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_is_40_bytes_and_keeps_its_keys() {
        assert_eq!(std::mem::size_of::<Edge>(), 40);
        let key = Key(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        assert_eq!(whole(halves(key)), key);
    }
}
