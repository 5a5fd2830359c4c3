//! The book as a graph: for every node, its edges to thought children and the
//! best of its leaf moves.

use crate::bitset::BitSet;
use stera_rules::{Key, Move, Position};

use super::key_filter::KeyFilter;
use super::walk::{ParallelVisitor, WalkNode, walk_in_parallel};
use super::{Progress, TeraShockError};
use crate::{Book, BookError, NodeId};

/// "No such move" in per-node move index tables.
pub(crate) const NO_MOVE: u16 = u16::MAX;

/// An edge from a node to a thought child (or to the thought colour-flipped twin
/// of a child that is not thought itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// The move's index in the node's canonical move order (its stored value's index).
    pub index: u16,
    /// The move.
    pub mv: Move,
    /// The thought position the move leads to.
    pub child: NodeId,
    /// `child` is the colour-flipped twin of the move's child: its moves are
    /// on the twin's board (flip them to play them after `mv`).
    pub twin: bool,
}

/// The bit of a stored edge index that marks an edge into a twin (indices are
/// below 600, the most legal moves a position has).
const TWIN_EDGE: u16 = 1 << 15;

/// Every node's edges to thought children, its best leaf move and whether its
/// side to move is in check: what the retrograde analysis needs, without
/// positions. About 20 bytes per node and 8 per edge.
#[derive(Debug, Default)]
pub struct BookGraph {
    edge_start: Vec<u32>,
    edge_len: Vec<u16>,
    edge_child: Vec<u32>,
    edge_move: Vec<u16>,
    edge_index: Vec<u16>,
    move_count: Vec<u16>,
    leaf_best_value: Vec<i16>,
    leaf_best_index: Vec<u16>,
    leaf_best_move: Vec<u16>,
    in_check: BitSet,
    leaf_edges: u64,
    leaf_discount: i16,
}

/// The id of the node at index `i` of the graph's tables.
pub(crate) fn node(i: usize) -> NodeId {
    NodeId(u32::try_from(i).unwrap_or(u32::MAX))
}

/// What [`BookGraph::expansion_drop`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpansionDrop {
    /// Moves into thought positions measured (mates left out).
    pub moves: usize,
    /// Mean drop in centipawns (`None` without such moves).
    pub mean: Option<f64>,
    /// Median drop in centipawns.
    pub median: Option<i32>,
}

/// A stored value in the book's range (±32000).
#[inline]
pub(crate) fn clamp_stored(v: i16) -> i16 {
    v.clamp(
        -(stera_rules::value::MATE as i16),
        stera_rules::value::MATE as i16,
    )
}

impl BookGraph {
    /// Builds the graph of `book` (one walk over every position).
    ///
    /// # Errors
    /// [`BookError::Corrupt`] for a broken origin chain or a node whose value
    /// count differs from its legal move count.
    pub fn build(book: &Book, progress: Progress<'_>) -> Result<Self, TeraShockError> {
        Self::build_visiting(book, None, progress, &|| (), &|(), _| Ok(()), &mut |()| {
            Ok(())
        })
    }

    /// [`BookGraph::build`] that also hands every node's position (plies
    /// counted from `root_plies`, see [`super::walk_positions`]) and its legal moves in
    /// canonical order to `visit`: what else the caller needs from the walk,
    /// so it is done once. The walk runs on every core ([`walk_in_parallel`]):
    /// `visit` fills states made by `new_state`, which go to `merge` in an
    /// order that does not depend on the threads.
    ///
    /// # Errors
    /// As [`BookGraph::build`], and any error `visit` or `merge` returns.
    pub(crate) fn build_visiting<S: Send>(
        book: &Book,
        root_plies: Option<&[u16]>,
        progress: Progress<'_>,
        new_state: &(dyn Fn() -> S + Sync),
        visit: ParallelVisitor<'_, S>,
        merge: &mut dyn FnMut(S) -> Result<(), TeraShockError>,
    ) -> Result<Self, TeraShockError> {
        let n = book.len();
        let mut g = Self {
            edge_start: vec![0; n],
            edge_len: vec![0; n],
            move_count: vec![0; n],
            leaf_best_value: vec![0; n],
            leaf_best_index: vec![NO_MOVE; n],
            leaf_best_move: vec![0; n],
            in_check: BitSet::with_len(n),
            // Most nodes have one thought child or two; the vectors grow if needed.
            edge_child: Vec::with_capacity(n * 2),
            edge_move: Vec::with_capacity(n * 2),
            edge_index: Vec::with_capacity(n * 2),
            leaf_edges: 0,
            leaf_discount: 0,
        };
        let filter = KeyFilter::of_book(book);
        walk_in_parallel(
            book,
            root_plies,
            progress,
            &|| (GraphPart::default(), new_state()),
            &|(part, state), node| {
                part.add_node(book, &filter, node)?;
                visit(state, node)
            },
            &mut |(part, state)| {
                g.merge(part)?;
                merge(state)
            },
        )?;
        g.edge_child.shrink_to_fit();
        g.edge_move.shrink_to_fit();
        g.edge_index.shrink_to_fit();
        Ok(g)
    }

    /// Takes in the nodes of one part of the walk.
    fn merge(&mut self, part: GraphPart) -> Result<(), TeraShockError> {
        let mut next = u32::try_from(self.edge_child.len())
            .ok()
            .filter(|base| base.checked_add(part.edges.len() as u32).is_some())
            .ok_or_else(|| TeraShockError::Invalid("more than 2^32 book edges".into()))?;
        for (k, &id) in part.ids.iter().enumerate() {
            let i = id as usize;
            let node = &part.nodes[k];
            self.edge_start[i] = next;
            next += u32::from(node.edge_len);
            self.edge_len[i] = node.edge_len;
            self.move_count[i] = node.move_count;
            if node.in_check {
                self.in_check.insert(i);
            }
            if let Some((v, index, raw)) = node.leaf_best {
                self.leaf_best_value[i] = v;
                self.leaf_best_index[i] = index;
                self.leaf_best_move[i] = raw;
            }
        }
        for &(child, mv, index) in &part.edges {
            self.edge_child.push(child);
            self.edge_move.push(mv);
            self.edge_index.push(index);
        }
        self.leaf_edges += part.leaf_edges;
        Ok(())
    }

    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.edge_len.len()
    }

    /// True for the graph of an empty book.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.edge_len.is_empty()
    }

    /// Edges to thought children in all.
    #[must_use]
    pub fn edge_count(&self) -> usize {
        self.edge_child.len()
    }

    /// Moves whose child is not thought (leaf edges) in all.
    #[must_use]
    pub fn leaf_edge_count(&self) -> u64 {
        self.leaf_edges
    }

    /// Number of legal moves of a node.
    #[must_use]
    pub fn move_count(&self, id: NodeId) -> usize {
        usize::from(self.move_count[id.index()])
    }

    /// True if the side to move of a node is in check.
    #[must_use]
    pub fn in_check(&self, id: NodeId) -> bool {
        self.in_check.contains(id.index())
    }

    /// The edges of a node to thought children, in canonical move order.
    pub fn edges(&self, id: NodeId) -> impl Iterator<Item = Edge> + '_ {
        let range = self.edge_range(id);
        range.filter_map(move |e| {
            Some(Edge {
                index: self.edge_index[e] & !TWIN_EDGE,
                mv: Move::from_raw(self.edge_move[e])?,
                child: NodeId(self.edge_child[e]),
                twin: self.edge_index[e] & TWIN_EDGE != 0,
            })
        })
    }

    pub(crate) fn edge_range(&self, id: NodeId) -> std::ops::Range<usize> {
        let i = id.index();
        let s = self.edge_start[i] as usize;
        s..s + usize::from(self.edge_len[i])
    }

    pub(crate) fn edge_child(&self, e: usize) -> u32 {
        self.edge_child[e]
    }

    pub(crate) fn edge_index(&self, e: usize) -> u16 {
        self.edge_index[e] & !TWIN_EDGE
    }

    pub(crate) fn edge_move(&self, e: usize) -> u16 {
        self.edge_move[e]
    }

    /// Values every leaf move (a move into a position the book has not thought)
    /// `cp` centipawns below its stored evaluation, mates excepted, from here on.
    ///
    /// Thinking a position lowers, on average, the value of the move into it:
    /// the mover's stored evaluation of the move is compared with the best of
    /// the replies, each evaluated as deeply, and the best of many noisy
    /// estimates is biased up (measured: BENCHMARKS.md "Moves nobody thought").
    /// Unthought moves then look better than thought ones for no reason but
    /// that nobody looked. A discount of half the mean drop puts the two on
    /// one footing: the reply's leaves are discounted for the other side too.
    /// 0 (the default) is YaneuraOu's `peta_shock`.
    pub fn set_leaf_discount(&mut self, cp: i16) {
        self.leaf_discount = cp;
    }

    /// The value a leaf move with stored evaluation `stored` counts for.
    #[must_use]
    pub fn leaf_value(&self, stored: i16) -> i16 {
        let v = i32::from(clamp_stored(stored));
        stera_rules::value::clamp_to_i16(stera_rules::value::shift_non_mate(
            v,
            -i32::from(self.leaf_discount),
        ))
    }

    /// The best leaf move of a node: (value, canonical index, raw move), if it
    /// has a leaf move.
    pub(crate) fn leaf_best(&self, id: NodeId) -> Option<(i16, u16, u16)> {
        let i = id.index();
        (self.leaf_best_index[i] != NO_MOVE).then(|| {
            (
                self.leaf_value(self.leaf_best_value[i]),
                self.leaf_best_index[i],
                self.leaf_best_move[i],
            )
        })
    }

    /// How much thinking a position lowered the moves into it: for every move
    /// into a thought position, its stored value minus its value after one
    /// more ply (minus the child's best stored value), mates left out. Positive
    /// on average when an evaluator's best of many replies is biased up; half
    /// the mean is the leaf discount ([`BookGraph::set_leaf_discount`]) that
    /// makes thought and unthought moves comparable.
    #[must_use]
    pub fn expansion_drop(&self, book: &Book) -> ExpansionDrop {
        let mut drops: Vec<i32> = Vec::new();
        let not_mate = |v: i16| !stera_rules::value::is_mate(i32::from(v));
        for i in 0..self.len() {
            let id = node(i);
            let values = book.values(id);
            for e in self.edges(id) {
                let Some(&before) = values.get(usize::from(e.index)) else {
                    continue;
                };
                let Some(&reply) = book.values(e.child).iter().max() else {
                    continue;
                };
                let (before, reply) = (clamp_stored(before), clamp_stored(reply));
                if not_mate(before) && not_mate(reply) {
                    drops.push(i32::from(before) + i32::from(reply));
                }
            }
        }
        drops.sort_unstable();
        let moves = drops.len();
        ExpansionDrop {
            moves,
            mean: (moves > 0)
                .then(|| drops.iter().map(|&d| f64::from(d)).sum::<f64>() / moves as f64),
            median: drops.get(moves / 2).copied(),
        }
    }

    /// Bytes held by the graph's tables.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.len() * (4 + 2 + 2 + 2 + 2 + 2) + self.in_check.memory_bytes() + self.edge_count() * 8
    }
}

/// What one part of the walk found about its nodes, merged into the graph in
/// the walk's order.
#[derive(Default)]
struct GraphPart {
    ids: Vec<u32>,
    nodes: Vec<PartNode>,
    /// (child, move, index) of each edge.
    edges: Vec<(u32, u16, u16)>,
    leaf_edges: u64,
    /// The children's keys and their twins' (scratch).
    keys: Vec<Key>,
    /// The filter's answer for each of `keys` (scratch).
    passed: Vec<bool>,
}

/// One node of a [`GraphPart`].
struct PartNode {
    edge_len: u16,
    move_count: u16,
    in_check: bool,
    /// (value, canonical index, raw move) of the best leaf move.
    leaf_best: Option<(i16, u16, u16)>,
}

impl GraphPart {
    fn add_node(
        &mut self,
        book: &Book,
        filter: &KeyFilter,
        node: &WalkNode<'_>,
    ) -> Result<(), TeraShockError> {
        let WalkNode { id, pos, moves, .. } = *node;
        let values = book.values(id);
        check_value_count(id, pos, moves.len(), values.len())?;
        let mut best: Option<(i16, u16, u16)> = None;
        let mut edges = 0u16;
        // Every child's key and its twin's first, then the filter's answers for
        // all of them: probes that do not wait for each other (see
        // `key_filter.rs`); the book's index only for keys the filter passes.
        self.keys.clear();
        for &mv in moves {
            self.keys.push(pos.key_after(mv));
            self.keys.push(pos.flipped_key_after(mv));
        }
        filter.may_hold_each(&self.keys, &mut self.passed);
        let held = |k: usize| self.passed[k].then(|| book.get(self.keys[k])).flatten();
        for (index, (&mv, &stored)) in moves.iter().zip(values).enumerate() {
            // A child that is not thought but whose colour-flipped twin is, is the
            // twin: the same situation for the side to move, with the same values
            // (peta_shock's flip-normalised nodes; YaneuraOu's FlippedBook probe
            // finds the twin in play). A child the walk reaches from here is
            // the child (the walk checks its key), without a look-up.
            let origin_child = node
                .child_moves
                .iter()
                .position(|&raw| raw == mv.raw())
                .map(|k| NodeId(node.children[k]));
            let child = match origin_child.or_else(|| held(2 * index)) {
                Some(child) => Some((child, 0)),
                None => held(2 * index + 1).map(|c| (c, TWIN_EDGE)),
            };
            let index = u16::try_from(index).unwrap_or(NO_MOVE);
            if let Some((child, twin)) = child {
                self.edges.push((child.0, mv.raw(), index | twin));
                edges += 1;
            } else {
                self.leaf_edges += 1;
                let v = clamp_stored(stored);
                // Strictly better only: ties keep the earlier move (canonical order).
                if best.is_none_or(|(b, _, _)| v > b) {
                    best = Some((v, index, mv.raw()));
                }
            }
        }
        self.ids.push(id.0);
        self.nodes.push(PartNode {
            edge_len: edges,
            move_count: u16::try_from(moves.len()).unwrap_or(u16::MAX),
            in_check: pos.in_check(),
            leaf_best: best,
        });
        Ok(())
    }
}

/// [`BookError::Corrupt`] unless node `id` (position `pos`) has one stored
/// value per legal move.
fn check_value_count(
    id: NodeId,
    pos: &Position,
    moves: usize,
    values: usize,
) -> Result<(), TeraShockError> {
    if values == moves {
        return Ok(());
    }
    Err(BookError::Corrupt(format!(
        "node {id} has {values} values but `{}` has {moves} legal moves",
        pos.to_sfen()
    ))
    .into())
}

/// Fills `moves` with the legal moves of node `id` (position `pos`) and returns its
/// stored values, checking that there is one value per legal move.
///
/// # Errors
/// [`BookError::Corrupt`] when the counts differ.
pub(super) fn node_moves<'b>(
    book: &'b Book,
    id: NodeId,
    pos: &Position,
    moves: &mut Vec<Move>,
) -> Result<&'b [i16], TeraShockError> {
    pos.legal_moves_into(moves);
    let values = book.values(id);
    check_value_count(id, pos, moves.len(), values.len())?;
    Ok(values)
}
