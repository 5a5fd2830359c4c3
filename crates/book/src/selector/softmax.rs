//! MC Softmax selection (see `book-quality.md`, "MC Softmax"): instead of always
//! handing out the leaf at the end of the principal variation, descend from a root
//! by *sampling* a move at every thought node from
//! π(a) ∝ exp(q(a) / T), where q(a) is the move's value from the side to move's
//! view, until the sampled move is a leaf edge; its child is the leaf.
//!
//! What q(a) is, move by move, is exactly what the alpha-beta selector uses:
//!
//! * a leaf move (child not thought): its stored value, plus the kifu bonus when
//!   the child or its colour-flipped twin is a kifu position (same rule and clamp
//!   as the alpha-beta search);
//! * a move into a thought child: minus the child's value from the selector's own
//!   alpha-beta search with a full window (exact, not a bound), which is the
//!   minimax value of the child over the book with in-flight children and banned
//!   moves skipped;
//! * a move into a thought child that needs no search (a repetition of a position
//!   of the current line, past the ply limit, no legal move): the draw / mate score
//!   the alpha-beta search gives it.
//!
//! Moves are skipped exactly as in the alpha-beta search: banned (node, move)
//! pairs, children in flight, and thought children whose every move is skipped.
//!
//! Repetitions (cycles): the descent keeps the game history from the root, so a
//! move back into a position of the current line is scored as a repetition. When
//! such an edge (or any thought child scored without search) is *sampled*, there
//! is nothing to think; as the alpha-beta selector does when its PV ends on such
//! an edge, the (node, move) pair is banned (persistently, counted in
//! [`SelectStats::bans`](super::SelectStats)) and the sample starts again from the
//! root, since the values above the ban changed.
//!
//! Cache: as in alpha-beta mode, cached search bounds are reused within a turn
//! (a new generation starts with every turn of [`crate::RunConfig::leaves_per_turn`]
//! leaves, and here also after a ban), so values deep below a node may predate
//! leaves marked in flight since the turn began (the reference's speed shortcut;
//! the in-flight and ban checks on the sampled edges themselves are always exact).
//! With [`Selector::set_cache_enabled`]`(false)` every value is exact.
//!
//! Cost: every node on the sampled path searches each of its thought children
//! with a full window, and a full-window search walks the child's whole
//! principal variation (a PV node is never cut by the cache), so one sample
//! costs about (path length × thought children) principal-variation searches
//! instead of one: on the 15M-node synthetic book 13,500 nodes visited per leaf
//! against 573, about 20 times alpha-beta's time per leaf (BENCHMARKS.md, issue
//! 46). Coming within a few times alpha-beta's cost would take the children's
//! values from the turn's cached exact bounds instead of searching them: values
//! that lag the leaves handed out since the turn began, and other leaves than
//! these.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::value::INFINITE;
use stera_rules::{Move, Position};

use super::alpha_beta::from_node_relative;
use super::edges::Edge;
use super::{EdgeKind, Leaf, Selector, moves_on_real_board};
use crate::live_book::{Reach, RootStart};
use crate::{BookError, LiveBook, NodeId, NodeStore};

/// Default seed of the softmax sampling (runs are reproducible unless told
/// otherwise).
pub const DEFAULT_SELECT_SEED: u64 = 0;

/// Settings of softmax selection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoftmaxSelect {
    /// Temperature in centipawns: finite and > 0. Small values follow the
    /// minimax line almost always; large ones sample almost uniformly.
    pub temperature: f64,
    /// Seed of the sampling RNG (same book, same calls, same seed: same leaves).
    pub seed: u64,
}

/// How [`Selector::select`] picks leaves.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SelectMode {
    /// The Super Tera-Shock selection: the leaf ending the principal variation of
    /// an alpha-beta search (the default).
    #[default]
    AlphaBeta,
    /// MC Softmax: descend by sampling moves from a softmax of their values.
    Softmax(SoftmaxSelect),
}

/// Softmax mode with its RNG (the selector holds one while in that mode).
pub(super) struct SoftmaxState {
    config: SoftmaxSelect,
    rng: StdRng,
}

/// One selectable move of a descent node.
#[derive(Clone, Copy)]
struct Candidate {
    mv: Move,
    /// Value from the node's side to move, the search's root-relative scale.
    q: i32,
    kind: EdgeKind,
    child: Option<NodeId>,
    /// The child is not thought but its colour-flipped twin (`child`) is.
    twin: bool,
}

/// Index into `qs` sampled from π(i) ∝ exp(qs\[i\] / T), given `u` uniform in
/// [0, 1). Computed with the maximum subtracted, so mate scores cannot overflow.
fn sample_index(qs: impl Iterator<Item = i32> + Clone, temperature: f64, u: f64) -> usize {
    let max = qs.clone().max().unwrap_or(0);
    let weight = |q: i32| (f64::from(q - max) / temperature).exp();
    let total: f64 = qs.clone().map(weight).sum();
    let mut target = u * total;
    let mut last = 0;
    for (i, q) in qs.enumerate() {
        let w = weight(q);
        if target < w {
            return i;
        }
        target -= w;
        if w > 0.0 {
            last = i;
        }
    }
    // Rounding left `target` just above the sum: the last move with weight.
    last
}

impl Selector {
    /// Chooses how [`Selector::select`] picks leaves. Setting softmax mode (again)
    /// reseeds its RNG from [`SoftmaxSelect::seed`].
    ///
    /// # Errors
    /// [`BookError::Invalid`] when the temperature is not a finite number > 0.
    pub fn set_select_mode(&mut self, mode: SelectMode) -> Result<(), BookError> {
        self.softmax = match mode {
            SelectMode::AlphaBeta => None,
            SelectMode::Softmax(config) => {
                if !(config.temperature.is_finite() && config.temperature > 0.0) {
                    return Err(BookError::Invalid(format!(
                        "softmax temperature must be a finite number > 0, not {}",
                        config.temperature
                    )));
                }
                Some(SoftmaxState {
                    config,
                    rng: StdRng::seed_from_u64(config.seed),
                })
            }
        };
        Ok(())
    }

    /// The selection mode in force.
    #[must_use]
    pub fn select_mode(&self) -> SelectMode {
        self.softmax
            .as_ref()
            .map_or(SelectMode::AlphaBeta, |s| SelectMode::Softmax(s.config))
    }

    /// One sample from root `root`: `None` when the descent meets a node with no
    /// selectable move (at the root: nothing to select from this root now).
    pub(super) fn sample_from_root<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        root: usize,
    ) -> Result<Option<Leaf>, BookError> {
        if root >= live.roots().len() {
            return Ok(None);
        }
        let mut candidates: Vec<Candidate> = Vec::new();
        'sample: loop {
            let (mut node, mut pos, root_twin) = match live.root_start(root) {
                RootStart::Node { id, pos, twin } => (id, pos, twin),
                RootStart::Leaf(leaf) => return Ok(Some(leaf)),
                RootStart::InFlight => return Ok(None),
            };
            self.stats.searches += 1;
            let mut path: Vec<Move> = Vec::new();
            // Twins entered by this descent (see `Selector::twin_stack`); an odd
            // number of them (counting a root searched as its twin) puts the
            // descent on a twin's board.
            self.twin_stack.clear();
            let mut on_twin = root_twin;
            loop {
                self.stats.nodes_visited += 1;
                let ply = path.len();
                let line = self.softmax_candidates(live, &mut pos, node, ply, &mut candidates);
                if let Some(mut line) = line {
                    if root_twin {
                        // Found on the twin's board: played on the root's.
                        line.0.iter_mut().for_each(|mv| *mv = mv.flipped());
                    }
                    self.set_root_line(live.roots().len(), root, line);
                }
                if candidates.is_empty() {
                    return Ok(None);
                }
                let Some(state) = self.softmax.as_mut() else {
                    return Ok(None);
                };
                let u: f64 = state.rng.random();
                let i = sample_index(candidates.iter().map(|c| c.q), state.config.temperature, u);
                let chosen = candidates[i];
                // The move as played on the root's board.
                let played = if on_twin {
                    chosen.mv.flipped()
                } else {
                    chosen.mv
                };
                match (chosen.kind, chosen.child) {
                    (EdgeKind::Leaf, _) => {
                        let key = pos.key_after(chosen.mv);
                        pos.do_move(chosen.mv);
                        path.push(played);
                        return Ok(Some(Leaf {
                            root,
                            path,
                            parent: Some((node, chosen.mv)),
                            key,
                            position: pos,
                        }));
                    }
                    (EdgeKind::Node, Some(child)) => {
                        pos.do_move(chosen.mv);
                        path.push(played);
                        if chosen.twin {
                            // On into the twin, on its board.
                            pos = pos.flipped();
                            self.twin_stack.push(child);
                            on_twin = !on_twin;
                        }
                        node = child;
                    }
                    // Nothing to think below this edge: ban it, as the alpha-beta
                    // selector does when its PV ends there, and sample again.
                    // The ban changed the values above it: no cached bound from
                    // before it may cut the next searches.
                    _ => {
                        self.ban(live, node, chosen.mv)?;
                        self.new_generation();
                        continue 'sample;
                    }
                }
            }
        }
    }

    /// The value of thought child `child` of the descent's node at `pos` (the
    /// start of `self.line`) by `edge`: a full-window search.
    fn score_child<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        pos: &mut Position,
        edge: &Edge,
        child: NodeId,
        twin: bool,
        ply: usize,
    ) -> Option<(i32, EdgeKind)> {
        #[cfg(test)]
        if self.reference {
            return self.reference_score_thought_child(
                live, pos, edge.mv, child, twin, -INFINITE, INFINITE, ply, true, 0,
            );
        }
        let _ = pos;
        self.score_thought_child(live, edge, child, twin, -INFINITE, INFINITE, ply, true, 0)
    }

    /// The selectable moves of thought node `node` (`pos` is its position with the
    /// line's history, `ply` its distance from the root) with their values q, into
    /// `out`. At the root (`ply` 0) also returns the root's minimax line and value
    /// among those moves (what [`Selector::root_lines`] reports).
    fn softmax_candidates<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        pos: &mut Position,
        node: NodeId,
        ply: usize,
        out: &mut Vec<Candidate>,
    ) -> Option<(Vec<Move>, i32)> {
        out.clear();
        let mut edges = Vec::new();
        #[cfg(test)]
        if self.reference {
            // Every move probed anew, as before edge tables.
            super::edges::computed_into(live.book(), pos, &mut edges);
        }
        if edges.is_empty()
            && self
                .edge_tables
                .edges_into(live.book(), node, pos, &mut edges)
        {
            self.stats.tables_built += 1;
        }
        self.line.restart(pos.clone());
        if live.book().values(node).len() != edges.len() {
            // Cannot happen for nodes that passed `complete`; skip rather than misread.
            return None;
        }
        let mut best_line: Option<(Vec<Move>, i32)> = None;
        let mut probed = false;
        for (i, edge) in edges.iter_mut().enumerate() {
            let mv = edge.mv;
            if live.skipped_by_ban(node, mv) {
                continue;
            }
            // As in the alpha-beta search (see `LiveBook::reach`).
            if !edge.keyed() {
                edge.set_keys(pos);
                probed = true;
            }
            let reach = edge.reach(live, &mut probed);
            let edge = *edge;
            let (thought, twin) = match reach {
                Reach::InFlight => continue,
                Reach::Leaf => (None, false),
                Reach::Thought(child, twin) => (Some(child), twin),
            };
            let candidate = match thought {
                None => {
                    // The alpha-beta search's leaf value, kifu bonus included.
                    let v = live.leaf_value(
                        node,
                        i,
                        edge.child_key(),
                        || edge.twin_key(),
                        |v| from_node_relative(v, ply),
                    );
                    Candidate {
                        mv,
                        q: v,
                        kind: EdgeKind::Leaf,
                        child: None,
                        twin: false,
                    }
                }
                Some(child) => {
                    let scored = self.score_child(live, pos, &edge, child, twin, ply);
                    let Some((q, kind)) = scored else { continue };
                    Candidate {
                        mv,
                        q,
                        kind,
                        child: Some(child),
                        twin,
                    }
                }
            };
            if ply == 0 && best_line.as_ref().is_none_or(|(_, v)| candidate.q > *v) {
                let mut line = vec![mv];
                if candidate.kind == EdgeKind::Node
                    && let Some(tail) = self.pv.get(1)
                {
                    line.extend(moves_on_real_board(
                        candidate.twin,
                        tail.iter().map(|e| (e.mv, e.twin)),
                    ));
                }
                best_line = Some((line, candidate.q));
            }
            out.push(candidate);
        }
        if probed {
            self.edge_tables.write_back(node, &edges);
        }
        best_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::softmax_policy;

    #[test]
    fn sampling_follows_the_cumulative_weights() {
        // Values 0, 0, -inf-ish: the first two split [0, 1) evenly.
        let qs = [0, 0, -30000];
        assert_eq!(sample_index(qs.iter().copied(), 50.0, 0.0), 0);
        assert_eq!(sample_index(qs.iter().copied(), 50.0, 0.49), 0);
        assert_eq!(sample_index(qs.iter().copied(), 50.0, 0.51), 1);
        assert_eq!(sample_index(qs.iter().copied(), 50.0, 0.999_999), 1);
        let p = softmax_policy(&qs, 50.0);
        assert!((p[0] - 0.5).abs() < 1e-12 && p[2] < 1e-200);
    }

    #[test]
    fn mate_scores_do_not_overflow() {
        let p = softmax_policy(&[31990, -31990, 0], 1.0);
        assert!(p.iter().all(|x| x.is_finite()));
        assert!((p[0] - 1.0).abs() < 1e-12);
    }
}
