//! Today's alpha-beta search before edge tables, kept verbatim as the reference
//! the selector's leaves are compared with turn by turn (`tests`): the same
//! search over positions, computing every move's keys and probing the book
//! for each, at every node of every selection.

use stera_rules::value::{INFINITE, mate_in, mated_in};
use stera_rules::{Position, Repetition};

use super::alpha_beta::{
    Bound, CacheEntry, NO_BEST, from_node_relative, ply_i32, to_node_relative,
};
use super::{EdgeKind, PvEdge, Selector};
use crate::live_book::Reach;
use crate::{LiveBook, NodeId, NodeStore};

impl Selector {
    /// Scores a thought child that needs no search (repetition, ply limit, no legal
    /// move), from the child's side, root-relative; `pos` is at the child.
    fn reference_score_without_search<S: NodeStore>(
        live: &LiveBook<S>,
        pos: &Position,
        child: NodeId,
        ply: usize,
    ) -> Option<i32> {
        if let Some(rep) = pos.search_repetition(usize::MAX) {
            return Some(match rep {
                Repetition::Draw => 0,
                Repetition::OpponentPerpetualCheck => mate_in(ply_i32(ply)),
                Repetition::OwnPerpetualCheck => mated_in(ply_i32(ply)),
            });
        }
        if pos.ply() > live.config().ply_limit {
            return Some(0);
        }
        if live.book().values(child).is_empty() {
            return Some(mated_in(ply_i32(ply)));
        }
        None
    }

    /// Alpha-beta (fail-soft PVS) at thought node `node`; `pos` is its position,
    /// `ply` the distance from the root. `None` when every move is skipped.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reference_search<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        pos: &mut Position,
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
        while self.reference_moves.len() <= ply {
            self.reference_moves.push(Vec::new());
        }
        while self.pv.len() <= ply + 1 {
            self.pv.push(Vec::new());
        }
        if pv_node {
            self.pv[ply].clear();
        }
        let mut moves = std::mem::take(&mut self.reference_moves[ply]);
        pos.legal_moves_into(&mut moves);
        let values = live.book().values(node);
        if values.len() != moves.len() {
            // Cannot happen for nodes that passed `complete`; skip rather than misread.
            self.reference_moves[ply] = moves;
            return None;
        }
        // Best move first: the cached best, else the best stored value.
        let first = entry
            .and_then(CacheEntry::best)
            .filter(|&i| i < moves.len())
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
        for k in 0..=moves.len() {
            let i = if k == 0 {
                first
            } else if k - 1 == first {
                continue;
            } else {
                k - 1
            };
            let Some(&mv) = moves.get(i) else { continue };
            if live.skipped_by_ban(node, mv) {
                continue;
            }
            let child_key = pos.key_after(mv);
            let (thought, twin) = match live.reach(pos, mv, child_key) {
                Reach::InFlight if !self.count_in_flight => continue,
                Reach::InFlight | Reach::Leaf => (None, false),
                Reach::Thought(child, twin) => (Some(child), twin),
            };
            let (value, kind) = match thought {
                None => (
                    live.leaf_value(
                        node,
                        i,
                        child_key,
                        || pos.flipped_key_after(mv),
                        |v| from_node_relative(v, ply),
                    ),
                    EdgeKind::Leaf,
                ),
                Some(child) => {
                    let scored = self.reference_score_thought_child(
                        live, pos, mv, child, twin, alpha, beta, ply, pv_node, searched,
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
        self.reference_moves[ply] = moves;
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

    /// Scores the thought node `child` that `mv` from `pos` leads to (its twin
    /// when `twin`), for the search at `ply` of `pos`'s node: without search when
    /// the line ends there, else by a (PVS) search; the value is `pos`'s view.
    /// A twin is searched on its own board; entering a twin the line already
    /// went through is a repetition.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reference_score_thought_child<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        pos: &mut Position,
        mv: stera_rules::Move,
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
        pos.do_move(mv);
        let mut twin_pos = None;
        if twin {
            twin_pos = Some(pos.flipped());
            let _ = pos.undo_move();
            self.twin_stack.push(child);
        }
        let at = twin_pos.as_mut().unwrap_or(pos);
        let scored = if let Some(v) = Self::reference_score_without_search(live, at, child, ply + 1)
        {
            Some((-v, EdgeKind::Ends))
        } else if !pv_node || searched == 0 {
            self.reference_search(live, at, child, -beta, -alpha, ply + 1, pv_node)
                .map(|v| (-v, EdgeKind::Node))
        } else {
            match self.reference_search(live, at, child, -alpha - 1, -alpha, ply + 1, false) {
                Some(v) if -v > alpha => self
                    .reference_search(live, at, child, -beta, -alpha, ply + 1, true)
                    .map(|v| (-v, EdgeKind::Node)),
                other => other.map(|v| (-v, EdgeKind::Node)),
            }
        };
        if twin {
            self.twin_stack.pop();
        } else {
            let _ = pos.undo_move();
        }
        scored
    }
}
