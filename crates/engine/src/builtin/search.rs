//! Iterative-deepening principal-variation search over the backend position.
//!
//! The root scores the best `multipv` moves exactly (every move, for the book) with
//! per-move aspiration windows; the remaining moves get a null-window test against
//! the k-th best value and are re-searched exactly only if they beat it.
//!
//! Below the root: PVS with a transposition table, mate-distance pruning,
//! repetition detection along the searched line (perpetual check loses for the
//! checker), null-move pruning, late-move reductions, check extensions, and a
//! quiescence search over captures and promotions (all evasions when in check).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use stera_rules::backend::board::{
    CapturePlusPro, Legal, Move32Sink, Position as Board, generate_moves_move32_into,
};
use stera_rules::backend::types::{Move32, PieceType, RepetitionState};
use stera_rules::value::{DRAW, INFINITE, MATE_IN_MAX_PLY, is_mate, mate_in, mated_in};

use super::eval::{BOARD_VALUE, capture_gain, evaluate};
use super::tt::{Bound, TranspositionTable};
use crate::nnue::features::Change;
use crate::nnue::{AccumulatorStack, Backend, Network, NnueConfig};

/// The deepest line the search follows (plies from the root, extensions included).
pub const MAX_PLY: usize = 128;
/// The deepest nominal iteration.
pub const MAX_DEPTH: u32 = 64;

/// Half-width of the first aspiration window around a move's previous value.
const ASPIRATION: i32 = 50;

/// Quiescence plies after which only recaptures on the last destination are tried.
const QS_RECAPTURE_DEPTH: u32 = 4;
/// Quiescence plies after which a check is no longer answered with all evasions.
const QS_EVASION_DEPTH: u32 = 6;
/// Quiescence plies after which the static evaluation is final.
const QS_MAX_DEPTH: u32 = 16;

const TT_MOVE_SCORE: i32 = 10_000_000;
const CAPTURE_SCORE: i32 = 1_000_000;
const PROMOTION_SCORE: i32 = 900_000;
const KILLER_SCORE: i32 = 800_000;
const HISTORY_MAX: i32 = 700_000;

/// When a search must stop. Unset fields are unlimited.
#[derive(Debug, Clone, Default)]
pub struct SearchLimits {
    /// Total nodes (search and quiescence nodes together).
    pub nodes: Option<u64>,
    /// Nominal depth of the last iteration.
    pub depth: Option<u32>,
    /// Wall-clock deadline.
    pub deadline: Option<Instant>,
    /// Set from outside (USI `stop`) to end the search.
    pub stop: Option<Arc<AtomicBool>>,
}

/// One root move and what the search knows about it.
#[derive(Debug, Clone)]
pub struct RootMove {
    pub mv: Move32,
    /// Value from the mover's point of view (exact when `exact`, else an upper bound).
    pub value: i32,
    pub exact: bool,
    /// Depth of the last completed iteration that scored this move (0 = not yet).
    pub depth: u32,
    /// Principal variation starting with `mv`.
    pub pv: Vec<Move32>,
}

/// What the search reports after each completed iteration.
pub struct Iteration<'a> {
    pub depth: u32,
    pub seldepth: usize,
    pub nodes: u64,
    pub elapsed: Duration,
    /// Root moves, best first (exact values before bounds).
    pub moves: &'a [RootMove],
}

#[derive(Clone, Copy)]
struct ScoredMove {
    mv: Move32,
    score: i32,
}

/// Collects generated moves into a reusable heap buffer (keeps deep recursion off
/// the stack, which matters in worker threads with small stacks).
struct Collect<'a>(&'a mut Vec<ScoredMove>);

impl Move32Sink for Collect<'_> {
    fn push_move32(&mut self, mv: Move32) {
        self.0.push(ScoredMove { mv, score: 0 });
    }

    fn retain_unordered<F>(&mut self, mut f: F)
    where
        F: FnMut(Move32) -> bool,
    {
        self.0.retain(|m| f(m.mv));
    }
}

/// A single-threaded searcher over one root position.
pub struct Searcher<'t> {
    board: Board,
    tt: &'t mut TranspositionTable,
    limits: SearchLimits,
    started: Instant,
    nodes: u64,
    seldepth: usize,
    /// Limits are ignored until the first iteration is complete, so every root move
    /// always gets a value.
    enforce_limits: bool,
    aborted: bool,
    /// Set when the backend refused an undo (an internal invariant broke).
    failure: Option<String>,
    root_depth: i32,
    killers: Vec<[u16; 2]>,
    /// History of quiet moves that caused cut-offs, by moved piece (after the move)
    /// and destination.
    history: Vec<[i32; 81]>,
    move_buffers: Vec<Vec<ScoredMove>>,
    pv: Vec<Vec<Move32>>,
    /// The NNUE evaluation with its accumulators along the current line; `None`
    /// evaluates with the hand-crafted evaluation.
    nnue: Option<NnueSearch>,
}

/// NNUE state of one search: the shared network and this search's accumulators,
/// pushed and popped with every move made and undone.
struct NnueSearch {
    network: Arc<Network>,
    stack: AccumulatorStack,
    fv_scale: i32,
}

impl<'t> Searcher<'t> {
    /// A searcher for `board`, using (and starting a new generation in) `tt`.
    pub fn new(board: Board, tt: &'t mut TranspositionTable, limits: SearchLimits) -> Self {
        tt.new_search();
        Self {
            board,
            tt,
            limits,
            started: Instant::now(),
            nodes: 0,
            seldepth: 0,
            enforce_limits: false,
            aborted: false,
            failure: None,
            root_depth: 1,
            killers: vec![[0; 2]; MAX_PLY + 2],
            history: vec![[0; 81]; 32],
            move_buffers: (0..MAX_PLY + 2).map(|_| Vec::with_capacity(128)).collect(),
            pv: (0..MAX_PLY + 2).map(|_| Vec::with_capacity(32)).collect(),
            nnue: None,
        }
    }

    /// Evaluates with `nnue` instead of the hand-crafted evaluation. A root
    /// without both kings (HalfKP needs them) keeps the hand-crafted evaluation.
    #[must_use]
    pub fn with_nnue(mut self, nnue: Option<&NnueConfig>) -> Self {
        self.nnue = nnue.and_then(|config| {
            let mut stack = AccumulatorStack::new(Backend::detect());
            stack
                .reset(&config.network, &self.board)
                .then(|| NnueSearch {
                    network: Arc::clone(&config.network),
                    stack,
                    fv_scale: config.fv_scale,
                })
        });
        self
    }

    /// The static value of the current position for the side to move. NNUE
    /// values are kept clear of the mate range, which only the search may reach.
    fn static_eval(&mut self) -> i32 {
        match &mut self.nnue {
            Some(n) => n
                .stack
                .evaluate(&n.network, &self.board, n.fv_scale)
                .clamp(-MATE_IN_MAX_PLY + 1, MATE_IN_MAX_PLY - 1),
            None => evaluate(&self.board),
        }
    }

    /// Plays `mv`, recording its feature change for the NNUE accumulators.
    fn make_move(&mut self, mv: Move32, gives_check: bool) {
        if let Some(n) = &mut self.nnue {
            n.stack.push(Change::of_move(&self.board, mv));
        }
        self.board.apply_move32_with_gives_check(mv, gives_check);
    }

    /// Nodes searched so far.
    #[must_use]
    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    /// The reason the search broke, if an internal invariant failed.
    #[must_use]
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Iterative deepening over `root` (which must hold legal moves of the root
    /// position). The best `multipv` moves get exact values; with `multipv >=
    /// root.len()` every move does. Returns the depth of the last complete iteration;
    /// `root` then holds that iteration's values, best first. An iteration cut short
    /// by the limits is discarded, so all moves share one depth. The first iteration
    /// always completes.
    pub fn run(
        &mut self,
        root: &mut [RootMove],
        multipv: usize,
        mut on_iteration: impl FnMut(&Iteration<'_>),
    ) -> u32 {
        if root.is_empty() {
            return 0;
        }
        let max_depth = self.limits.depth.unwrap_or(MAX_DEPTH).clamp(1, MAX_DEPTH);
        let k = multipv.clamp(1, root.len());
        let mut completed = 0;
        let mut previous_iteration_nodes = 0u64;
        let mut previous_iteration_time = Duration::ZERO;
        for depth in 1..=max_depth {
            self.root_depth = i32::try_from(depth).unwrap_or(1);
            self.enforce_limits = depth > 1;
            let iteration_start = (self.nodes, Instant::now());
            let mut results: Vec<(i32, bool, Vec<Move32>)> = Vec::with_capacity(root.len());
            let mut exact_values: Vec<i32> = Vec::with_capacity(k);
            for (i, rm) in root.iter().enumerate() {
                let previous = (depth > 1).then_some(rm.value);
                let (value, exact) = if i < k {
                    (self.search_root_exact(rm.mv, depth, previous), true)
                } else {
                    let threshold = exact_values[k - 1];
                    let v = self.search_root_move(rm.mv, depth, threshold, threshold + 1);
                    if !self.aborted && v > threshold {
                        (self.search_root_exact(rm.mv, depth, Some(v)), true)
                    } else {
                        (v, false)
                    }
                };
                if self.aborted {
                    break;
                }
                if exact {
                    let at = exact_values.partition_point(|&x| x >= value);
                    exact_values.insert(at, value);
                }
                let mut pv = Vec::with_capacity(1 + self.pv[1].len());
                pv.push(rm.mv);
                pv.extend_from_slice(&self.pv[1]);
                results.push((value, exact, pv));
            }
            if self.aborted {
                break;
            }
            for (rm, (value, exact, pv)) in root.iter_mut().zip(results) {
                rm.value = value;
                rm.exact = exact;
                rm.depth = depth;
                rm.pv = pv;
            }
            // Stable: ties keep their previous (initially canonical) order.
            root.sort_by(|a, b| b.exact.cmp(&a.exact).then(b.value.cmp(&a.value)));
            completed = depth;
            on_iteration(&Iteration {
                depth,
                seldepth: self.seldepth,
                nodes: self.nodes,
                elapsed: self.started.elapsed(),
                moves: root,
            });
            if depth >= max_depth
                || self.should_not_start_next(
                    iteration_start,
                    previous_iteration_nodes,
                    previous_iteration_time,
                )
            {
                break;
            }
            previous_iteration_nodes = self.nodes - iteration_start.0;
            previous_iteration_time = iteration_start.1.elapsed();
        }
        completed
    }

    /// True if the next iteration would most likely not finish within the limits (its
    /// work would be thrown away), predicted from the growth of the last iterations.
    fn should_not_start_next(
        &self,
        (start_nodes, start_time): (u64, Instant),
        previous_nodes: u64,
        previous_time: Duration,
    ) -> bool {
        let this_nodes = self.nodes - start_nodes;
        let this_time = start_time.elapsed();
        let growth = if previous_nodes > 0 {
            (this_nodes as f64 / previous_nodes as f64).clamp(1.5, 8.0)
        } else {
            4.0
        };
        if let Some(limit) = self.limits.nodes {
            let predicted = self.nodes as f64 + this_nodes as f64 * growth;
            if predicted > limit as f64 {
                return true;
            }
        }
        if let Some(deadline) = self.limits.deadline {
            let time_growth = if previous_time > Duration::ZERO {
                (this_time.as_secs_f64() / previous_time.as_secs_f64()).clamp(1.5, 8.0)
            } else {
                growth
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            if this_time.as_secs_f64() * time_growth > remaining.as_secs_f64() {
                return true;
            }
        }
        self.stop_requested()
    }

    fn stop_requested(&self) -> bool {
        self.limits
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Searches one root move to an exact value, widening an aspiration window
    /// around `previous` until the value falls inside it.
    fn search_root_exact(&mut self, mv: Move32, depth: u32, previous: Option<i32>) -> i32 {
        let (mut low, mut high) = match previous {
            Some(p) if depth >= 3 && !is_mate(p) => (p - ASPIRATION, p + ASPIRATION),
            _ => (-INFINITE, INFINITE),
        };
        let mut delta = ASPIRATION;
        loop {
            let v = self.search_root_move(mv, depth, low, high);
            if self.aborted {
                return 0;
            }
            delta *= 2;
            if v <= low && low > -INFINITE {
                low = if delta > 800 {
                    -INFINITE
                } else {
                    (v - delta).max(-INFINITE)
                };
            } else if v >= high && high < INFINITE {
                high = if delta > 800 {
                    INFINITE
                } else {
                    (v + delta).min(INFINITE)
                };
            } else {
                return v;
            }
        }
    }

    /// The value of root move `mv` (mover's view) searched with window `(alpha, beta)`.
    fn search_root_move(&mut self, mv: Move32, depth: u32, alpha: i32, beta: i32) -> i32 {
        let gives_check = self.board.gives_check_move32(mv);
        let depth = i32::try_from(depth).unwrap_or(1) - 1 + i32::from(gives_check);
        self.make_move(mv, gives_check);
        self.nodes += 1;
        let v = -self.search(depth, -beta, -alpha, 1, true);
        self.undo(mv);
        v
    }

    fn undo(&mut self, mv: Move32) {
        if let Some(n) = &mut self.nnue {
            n.stack.pop();
        }
        if let Err(e) = self.board.undo_move32(mv) {
            self.failure = Some(format!("undo of {} failed: {e:?}", mv.to_usi()));
            self.aborted = true;
        }
    }

    fn check_abort(&mut self) -> bool {
        if self.aborted {
            return true;
        }
        if !self.enforce_limits {
            return false;
        }
        if self.limits.nodes.is_some_and(|n| self.nodes >= n) {
            self.aborted = true;
        } else if self.nodes & 1023 == 0 {
            let late = self.limits.deadline.is_some_and(|d| Instant::now() >= d);
            if late || self.stop_requested() {
                self.aborted = true;
            }
        }
        self.aborted
    }

    fn update_pv(&mut self, ply: usize, mv: Move32) {
        let (head, tail) = self.pv.split_at_mut(ply + 1);
        let row = &mut head[ply];
        row.clear();
        row.push(mv);
        row.extend_from_slice(&tail[0]);
    }

    /// Orders moves: TT move, captures by MVV-LVA, promotions, killers, history.
    fn score_moves(&self, moves: &mut [ScoredMove], tt_move: u16, ply: usize) {
        let killers = self.killers[ply];
        for m in moves.iter_mut() {
            let raw = m.mv.to_move().raw();
            m.score = if raw == tt_move && tt_move != 0 {
                TT_MOVE_SCORE
            } else {
                self.move_score(m.mv, raw, killers)
            };
        }
    }

    fn move_score(&self, mv: Move32, raw: u16, killers: [u16; 2]) -> i32 {
        let after = mv.piece_after_move();
        if !mv.is_drop() {
            let victim = self.board.piece_on(mv.to_sq());
            let mover = self.board.piece_on(mv.from_sq());
            let promotion_gain = if mv.is_promotion() {
                BOARD_VALUE[after.piece_type().to_index()]
                    - BOARD_VALUE[mover.piece_type().to_index()]
            } else {
                0
            };
            if !victim.is_empty() {
                return CAPTURE_SCORE + capture_gain(victim) * 8
                    - BOARD_VALUE[mover.piece_type().to_index()] / 8
                    + promotion_gain;
            }
            if mv.is_promotion() {
                return PROMOTION_SCORE + promotion_gain;
            }
        }
        if raw == killers[0] {
            return KILLER_SCORE;
        }
        if raw == killers[1] {
            return KILLER_SCORE - 1;
        }
        self.history[after.to_index() & 31][mv.to_sq().to_index()]
    }

    fn is_quiet(&self, mv: Move32) -> bool {
        !mv.is_promotion() && (mv.is_drop() || self.board.piece_on(mv.to_sq()).is_empty())
    }

    fn record_cutoff(&mut self, mv: Move32, ply: usize, depth: i32) {
        let raw = mv.to_move().raw();
        let k = &mut self.killers[ply];
        if k[0] != raw {
            k[1] = k[0];
            k[0] = raw;
        }
        let h = &mut self.history[mv.piece_after_move().to_index() & 31][mv.to_sq().to_index()];
        *h = (*h + depth * depth).min(HISTORY_MAX);
    }

    /// Alpha-beta with a window `(alpha, beta)` at `ply` plies from the root.
    fn search(
        &mut self,
        depth: i32,
        mut alpha: i32,
        mut beta: i32,
        ply: usize,
        null_ok: bool,
    ) -> i32 {
        if depth <= 0 {
            return self.qsearch(alpha, beta, ply, 0);
        }
        self.pv[ply].clear();
        self.nodes += 1;
        if self.check_abort() {
            return 0;
        }
        self.seldepth = self.seldepth.max(ply);
        if ply >= MAX_PLY {
            return self.static_eval();
        }
        let ply_i = ply as i32;
        // A cycle inside the searched line scores as the game rule would score it.
        if let Some((state, _)) = self.board.repetition_state_with_distance(ply) {
            match state {
                RepetitionState::Draw => return DRAW,
                RepetitionState::Win => return mate_in(ply_i),
                RepetitionState::Lose => return mated_in(ply_i),
                _ => {}
            }
        }
        // Mate-distance pruning: no line here can beat a shorter mate found elsewhere.
        alpha = alpha.max(mated_in(ply_i));
        beta = beta.min(mate_in(ply_i + 1));
        if alpha >= beta {
            return alpha;
        }
        let pv_node = beta - alpha > 1;
        let key = self.board.key();
        let hit = self.tt.probe(key, ply);
        let tt_move = hit.map_or(0, |h| h.mv);
        if let Some(h) = hit
            && !pv_node
            && h.depth >= depth
        {
            let usable = match h.bound {
                Bound::Exact => true,
                Bound::Lower => h.value >= beta,
                Bound::Upper => h.value <= alpha,
            };
            if usable {
                return h.value;
            }
        }
        let in_check = self.board.is_in_check();
        if !pv_node && !in_check && null_ok && depth >= 3 && beta.abs() < MATE_IN_MAX_PLY {
            let static_eval = self.static_eval();
            if static_eval >= beta && self.board.apply_null_move().is_ok() {
                if let Some(n) = &mut self.nnue {
                    n.stack.push(Change::none());
                }
                let reduction = 2 + depth / 4;
                let v = -self.search(depth - 1 - reduction, -beta, -beta + 1, ply + 1, false);
                if let Some(n) = &mut self.nnue {
                    n.stack.pop();
                }
                if self.board.undo_null_move().is_err() {
                    self.failure = Some("undo of a null move failed".to_owned());
                    self.aborted = true;
                }
                if self.aborted {
                    return 0;
                }
                if v >= beta {
                    return if v >= MATE_IN_MAX_PLY { beta } else { v };
                }
            }
        }

        let mut moves = std::mem::take(&mut self.move_buffers[ply]);
        moves.clear();
        generate_moves_move32_into::<Legal, _>(&self.board, &mut Collect(&mut moves));
        if moves.is_empty() {
            self.move_buffers[ply] = moves;
            // No legal move loses in shogi, in check or not.
            return mated_in(ply_i);
        }
        self.score_moves(&mut moves, tt_move, ply);
        let original_alpha = alpha;
        let mut best = -INFINITE;
        let mut best_move = 0u16;
        let extend_checks = ply < 2 * self.root_depth as usize;
        for i in 0..moves.len() {
            pick_next(&mut moves, i);
            let ScoredMove { mv, score } = moves[i];
            let gives_check = self.board.gives_check_move32(mv);
            let quiet = self.is_quiet(mv);
            let new_depth = depth - 1 + i32::from(gives_check && extend_checks);
            self.make_move(mv, gives_check);
            let mut v;
            if i == 0 {
                v = -self.search(new_depth, -beta, -alpha, ply + 1, true);
            } else {
                let reduction = if depth >= 3
                    && i >= 3
                    && quiet
                    && !in_check
                    && !gives_check
                    && score < KILLER_SCORE - 1
                {
                    1 + i32::from(i >= 8 && depth >= 5) + i32::from(!pv_node && i >= 16)
                } else {
                    0
                };
                v = -self.search(new_depth - reduction, -alpha - 1, -alpha, ply + 1, true);
                if v > alpha && reduction > 0 {
                    v = -self.search(new_depth, -alpha - 1, -alpha, ply + 1, true);
                }
                if v > alpha && v < beta {
                    v = -self.search(new_depth, -beta, -alpha, ply + 1, true);
                }
            }
            self.undo(mv);
            if self.aborted {
                self.move_buffers[ply] = moves;
                return 0;
            }
            if v > best {
                best = v;
                if v > alpha {
                    alpha = v;
                    best_move = mv.to_move().raw();
                    self.update_pv(ply, mv);
                    if v >= beta {
                        if quiet {
                            self.record_cutoff(mv, ply, depth);
                        }
                        break;
                    }
                }
            }
        }
        self.move_buffers[ply] = moves;
        let bound = if best >= beta {
            Bound::Lower
        } else if best > original_alpha {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.tt.store(key, ply, best_move, best, depth, bound);
        best
    }

    /// Quiescence: captures and promotions until the position is quiet; every
    /// evasion when in check (so mates at the horizon are seen). `qdepth` counts
    /// plies below the horizon: deep down only recaptures are tried and checks are
    /// no longer answered, which bounds the tree in wild positions (drops make
    /// capture-check sequences branch enormously).
    fn qsearch(&mut self, mut alpha: i32, beta: i32, ply: usize, qdepth: u32) -> i32 {
        self.pv[ply].clear();
        self.nodes += 1;
        if self.check_abort() {
            return 0;
        }
        self.seldepth = self.seldepth.max(ply);
        if ply >= MAX_PLY || qdepth >= QS_MAX_DEPTH {
            return self.static_eval();
        }
        let in_check = self.board.is_in_check();
        if in_check && qdepth >= QS_EVASION_DEPTH {
            // Only evasions are legal here; past this depth the static value stands.
            return self.static_eval();
        }
        let recaptures_only = qdepth >= QS_RECAPTURE_DEPTH;
        let last_to = self.board.last_move().to_sq();
        let mut moves = std::mem::take(&mut self.move_buffers[ply]);
        moves.clear();
        let mut best;
        let stand_pat;
        if in_check {
            generate_moves_move32_into::<Legal, _>(&self.board, &mut Collect(&mut moves));
            if moves.is_empty() {
                self.move_buffers[ply] = moves;
                return mated_in(ply as i32);
            }
            best = -INFINITE;
            stand_pat = -INFINITE;
        } else {
            stand_pat = self.static_eval();
            if stand_pat >= beta {
                self.move_buffers[ply] = moves;
                return stand_pat;
            }
            alpha = alpha.max(stand_pat);
            best = stand_pat;
            generate_moves_move32_into::<CapturePlusPro, _>(&self.board, &mut Collect(&mut moves));
            let board = &self.board;
            moves.retain(|m| {
                (!recaptures_only || m.mv.to_sq() == last_to)
                    && board.is_legal_after_pseudo_move32(m.mv)
            });
        }
        self.score_moves(&mut moves, 0, MAX_PLY + 1);
        let them = self.board.turn().flip();
        for i in 0..moves.len() {
            pick_next(&mut moves, i);
            let mv = moves[i].mv;
            if !in_check && !mv.is_drop() {
                let victim = self.board.piece_on(mv.to_sq());
                let gain = if victim.is_empty() {
                    0
                } else {
                    capture_gain(victim)
                };
                // Delta pruning: even winning the piece cannot lift the score to alpha.
                if !mv.is_promotion() && stand_pat + gain + 200 <= alpha {
                    continue;
                }
                // A capture by a more valuable piece onto a defended square usually
                // loses material; skip it rather than search it.
                let mover = self.board.piece_on(mv.from_sq());
                let risk = BOARD_VALUE[mover.piece_type().to_index()];
                if mover.piece_type() != PieceType::KING
                    && risk > gain + 100
                    && self.board.is_attacked_by(mv.to_sq(), them)
                {
                    continue;
                }
            }
            let gives_check = self.board.gives_check_move32(mv);
            self.make_move(mv, gives_check);
            let v = -self.qsearch(-beta, -alpha, ply + 1, qdepth + 1);
            self.undo(mv);
            if self.aborted {
                self.move_buffers[ply] = moves;
                return 0;
            }
            if v > best {
                best = v;
                if v > alpha {
                    alpha = v;
                    self.update_pv(ply, mv);
                    if v >= beta {
                        break;
                    }
                }
            }
        }
        self.move_buffers[ply] = moves;
        best
    }
}

/// Selection step: moves the best-scored remaining move to `i`.
fn pick_next(moves: &mut [ScoredMove], i: usize) {
    let mut best = i;
    for j in i + 1..moves.len() {
        if moves[j].score > moves[best].score {
            best = j;
        }
    }
    moves.swap(i, best);
}
