//! Alpha-beta selection: the Super Tera-Shock rule. A fail-soft PVS search from a
//! root over the thought nodes of the [`LiveBook`]; the leaf at the end of the
//! principal variation is handed out. Results are cached per node (value, bound,
//! best move) within a generation (a turn of a root), the reference's speed
//! shortcut.
//!
//! The search is the reference's node for node (`reference` keeps today's code
//! to compare with); what it no longer redoes at every selection is finding
//! out what each move leads to (`edges`) and playing moves on a position to
//! ask about repetitions and depth (`line`).

use stera_rules::value::{INFINITE, MATE_IN_MAX_PLY, mate_in, mated_in};
use stera_rules::{Position, Repetition};

use super::edges::Edge;
use super::line::Line;
use super::{EdgeKind, Leaf, PvEdge, Selector, moves_on_real_board};
use crate::live_book::{Reach, RootStart};
use crate::{BookError, LiveBook, NodeId, NodeStore};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Bound {
    Upper = 1,
    Lower = 2,
    Exact = 3,
}

/// Cached search result of one node: value (relative to the node for mate
/// scores), bound, best move index, generation. 8 bytes.
#[derive(Clone, Copy, Default)]
pub(super) struct CacheEntry {
    pub(super) generation: u32,
    pub(super) value: i16,
    /// Bits 0..14: best move index (`NO_BEST` if none); bits 14..16: bound.
    pub(super) best_and_bound: u16,
}

pub(super) const NO_BEST: u16 = 0x3fff;

impl CacheEntry {
    pub(super) fn best(self) -> Option<usize> {
        let b = self.best_and_bound & 0x3fff;
        (b != NO_BEST).then_some(usize::from(b))
    }
    pub(super) fn bound(self) -> Option<Bound> {
        match self.best_and_bound >> 14 {
            1 => Some(Bound::Upper),
            2 => Some(Bound::Lower),
            3 => Some(Bound::Exact),
            _ => None,
        }
    }
}

/// Converts a node-relative move value to the search's root-relative scale.
#[inline]
pub(super) fn from_node_relative(v: i32, ply: usize) -> i32 {
    let ply = i32::try_from(ply).unwrap_or(i32::MAX / 2);
    if v >= MATE_IN_MAX_PLY {
        v - ply
    } else if v <= -MATE_IN_MAX_PLY {
        v + ply
    } else {
        v
    }
}

/// Inverse of [`from_node_relative`] (what the cache stores).
#[inline]
pub(super) fn to_node_relative(v: i32, ply: usize) -> i32 {
    let ply = i32::try_from(ply).unwrap_or(i32::MAX / 2);
    if v >= MATE_IN_MAX_PLY {
        v + ply
    } else if v <= -MATE_IN_MAX_PLY {
        v - ply
    } else {
        v
    }
}

#[inline]
pub(super) fn ply_i32(ply: usize) -> i32 {
    i32::try_from(ply).unwrap_or(i32::MAX / 2)
}

impl Selector {
    pub(super) fn select_from_root<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        root: usize,
    ) -> Result<Option<Leaf>, BookError> {
        if root >= live.roots().len() {
            return Ok(None);
        }
        loop {
            let (id, pos, root_twin) = match live.root_start(root) {
                RootStart::Node { id, pos, twin } => (id, pos, twin),
                RootStart::Leaf(leaf) => return Ok(Some(leaf)),
                RootStart::InFlight => return Ok(None),
            };
            self.stats.searches += 1;
            if self.pv.is_empty() {
                self.pv.push(Vec::new());
            }
            let Some(value) = self.search_from(live, pos, id) else {
                return Ok(None);
            };
            let line = moves_on_real_board(root_twin, self.pv[0].iter().map(|e| (e.mv, e.twin)));
            self.set_root_line(live.roots().len(), root, (line.clone(), value));
            let Some(last) = self.pv[0].last().copied() else {
                return Ok(None);
            };
            match last.kind {
                EdgeKind::Leaf => {
                    // On the board of the node the search began at.
                    let mut position = if root_twin {
                        live.roots()[root].flipped()
                    } else {
                        live.roots()[root].clone()
                    };
                    let path = line;
                    for e in &self.pv[0] {
                        position.do_move(e.mv);
                        if e.twin {
                            position = position.flipped();
                        }
                    }
                    return Ok(Some(Leaf {
                        root,
                        path,
                        parent: Some((last.node, last.mv)),
                        key: position.key(),
                        position,
                    }));
                }
                EdgeKind::Ends => {
                    self.ban(live, last.node, last.mv)?;
                }
                // A PV cut short (possible only with stale cached bounds): nothing
                // sound to hand out from this root in this turn.
                EdgeKind::Node => return Ok(None),
            }
        }
    }

    /// The full-window search of thought node `node` at `pos`, the start of a
    /// line (a root), into `self.pv[0]`.
    pub(super) fn search_from<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        pos: Position,
        node: NodeId,
    ) -> Option<i32> {
        if self.pv.is_empty() {
            self.pv.push(Vec::new());
        }
        self.pv[0].clear();
        self.twin_stack.clear();
        #[cfg(test)]
        if self.reference {
            let mut pos = pos;
            return self.reference_search(live, &mut pos, node, -INFINITE, INFINITE, 0, true);
        }
        self.line.restart(pos);
        self.search(live, node, -INFINITE, INFINITE, 0, true)
    }

    /// Scores a thought child that needs no search (repetition, ply limit, no legal
    /// move), from the child's side, root-relative; the child ends `line`.
    fn score_without_search<S: NodeStore>(
        live: &LiveBook<S>,
        line: &mut Line,
        child_mated: bool,
        ply: usize,
    ) -> Option<i32> {
        if let Some(rep) = line.repetition() {
            return Some(match rep {
                Repetition::Draw => 0,
                Repetition::OpponentPerpetualCheck => mate_in(ply_i32(ply)),
                Repetition::OwnPerpetualCheck => mated_in(ply_i32(ply)),
            });
        }
        if line.ply() > live.config().ply_limit {
            return Some(0);
        }
        if child_mated {
            return Some(mated_in(ply_i32(ply)));
        }
        None
    }

    /// Alpha-beta (fail-soft PVS) at thought node `node`, the end of `self.line`;
    /// `ply` is the distance from the root. `None` when every move is skipped.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn search<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        node: NodeId,
        mut alpha: i32,
        mut beta: i32,
        ply: usize,
        pv_node: bool,
    ) -> Option<i32> {
        self.stats.nodes_visited += 1;
        let alpha_orig = alpha;
        // Any generation's best move orders the moves (it stays a good guess as the
        // book grows); only the current generation's bounds cut the search.
        let entry = self
            .cache
            .get(node.index())
            .copied()
            .filter(|e| self.use_cache && e.generation != 0);
        let cached = entry.filter(|e| e.generation == self.generation);
        if !pv_node {
            // Mate-distance pruning: no line from here beats mate at this ply.
            alpha = alpha.max(mated_in(ply_i32(ply)));
            beta = beta.min(mate_in(ply_i32(ply) + 1));
            if alpha >= beta {
                return Some(alpha);
            }
            if let Some(e) = cached {
                let v = from_node_relative(i32::from(e.value), ply);
                match e.bound() {
                    Some(Bound::Exact) => return Some(v),
                    Some(Bound::Lower) if v >= beta => return Some(v),
                    Some(Bound::Upper) if v <= alpha => return Some(v),
                    _ => {}
                }
            }
        }
        while self.edge_buffers.len() <= ply {
            self.edge_buffers.push(Vec::new());
        }
        while self.pv.len() <= ply + 1 {
            self.pv.push(Vec::new());
        }
        if pv_node {
            self.pv[ply].clear();
        }
        let mut edges = std::mem::take(&mut self.edge_buffers[ply]);
        if !self.edge_tables.kept_into(live.book(), node, &mut edges) {
            let pos = self.line.position();
            self.edge_tables
                .build_into(live.book(), node, pos, &mut edges);
            self.stats.tables_built += 1;
        }
        let values = live.book().values(node);
        if values.len() != edges.len() {
            // Cannot happen for nodes that passed `complete`; skip rather than misread.
            self.edge_buffers[ply] = edges;
            return None;
        }
        // Best move first: the cached best, else the best stored value.
        let first = entry
            .and_then(CacheEntry::best)
            .filter(|&i| i < edges.len())
            .or_else(|| {
                values
                    .iter()
                    .enumerate()
                    .max_by_key(|(_, v)| **v)
                    .map(|(i, _)| i)
            })
            .unwrap_or(0);
        let mut best = -INFINITE;
        let mut best_index: Option<usize> = None;
        let mut searched = 0usize;
        let mut probed = false;
        for k in 0..=edges.len() {
            let i = if k == 0 {
                first
            } else if k - 1 == first {
                continue;
            } else {
                k - 1
            };
            let Some(edge) = edges.get_mut(i) else {
                continue;
            };
            let mv = edge.mv;
            if live.skipped_by_ban(node, mv) {
                continue;
            }
            if !edge.keyed() {
                edge.set_keys(self.line.position());
                probed = true;
            }
            let reach = edge.reach(live, &mut probed);
            let edge = *edge;
            let (thought, twin) = match reach {
                Reach::InFlight if !self.count_in_flight => continue,
                Reach::InFlight | Reach::Leaf => (None, false),
                Reach::Thought(child, twin) => (Some(child), twin),
            };
            let (value, kind) = match thought {
                None => (
                    live.leaf_value(
                        node,
                        i,
                        edge.child_key(),
                        || edge.twin_key(),
                        |v| from_node_relative(v, ply),
                    ),
                    EdgeKind::Leaf,
                ),
                Some(child) => {
                    let scored = self.score_thought_child(
                        live, &edge, child, twin, alpha, beta, ply, pv_node, searched,
                    );
                    match scored {
                        Some(r) => r,
                        None => continue,
                    }
                }
            };
            searched += 1;
            if value > best {
                best = value;
                best_index = Some(i);
                if value > alpha {
                    if pv_node {
                        let (head, tail) = self.pv.split_at_mut(ply + 1);
                        let line = &mut head[ply];
                        line.clear();
                        line.push(PvEdge {
                            node,
                            mv,
                            kind,
                            twin,
                        });
                        if kind == EdgeKind::Node {
                            line.extend_from_slice(&tail[0]);
                        }
                    }
                    if value >= beta {
                        break;
                    }
                    alpha = value;
                }
            }
        }
        if probed {
            self.edge_tables.write_back(node, &edges);
        }
        self.edge_buffers[ply] = edges;
        let best_index = best_index?;
        if self.use_cache
            && let Some(slot) = self.cache.get_mut(node.index())
        {
            let bound = if best >= beta {
                Bound::Lower
            } else if pv_node && best > alpha_orig {
                Bound::Exact
            } else {
                Bound::Upper
            };
            let idx = u16::try_from(best_index).unwrap_or(NO_BEST).min(NO_BEST);
            *slot = CacheEntry {
                generation: self.generation,
                value: stera_rules::value::clamp_to_i16(to_node_relative(best, ply)),
                best_and_bound: idx | ((bound as u16) << 14),
            };
        }
        Some(best)
    }

    /// Scores the thought node `child` that `edge` from the end of `self.line`
    /// leads to (its twin when `twin`), for the search at `ply` of that node:
    /// without search when the line ends there, else by a (PVS) search; the
    /// value is the node's view. A twin is searched on its own board; entering
    /// a twin the line already went through is a repetition.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn score_thought_child<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        edge: &Edge,
        child: NodeId,
        twin: bool,
        alpha: i32,
        beta: i32,
        ply: usize,
        pv_node: bool,
        searched: usize,
    ) -> Option<(i32, EdgeKind)> {
        if twin && self.twin_stack.contains(&child) {
            return Some((0, EdgeKind::Ends));
        }
        let key = if twin {
            edge.twin_key()
        } else {
            edge.child_key()
        };
        self.line.push(edge.mv, twin, key);
        if twin {
            self.twin_stack.push(child);
        }
        let scored = if let Some(v) =
            Self::score_without_search(live, &mut self.line, edge.target_mated(), ply + 1)
        {
            Some((-v, EdgeKind::Ends))
        } else if !pv_node || searched == 0 {
            self.search(live, child, -beta, -alpha, ply + 1, pv_node)
                .map(|v| (-v, EdgeKind::Node))
        } else {
            match self.search(live, child, -alpha - 1, -alpha, ply + 1, false) {
                Some(v) if -v > alpha => self
                    .search(live, child, -beta, -alpha, ply + 1, true)
                    .map(|v| (-v, EdgeKind::Node)),
                other => other.map(|v| (-v, EdgeKind::Node)),
            }
        };
        if twin {
            self.twin_stack.pop();
        }
        self.line.pop();
        scored
    }
}
