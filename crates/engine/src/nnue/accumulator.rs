//! The first layer's output (the accumulator) and its incremental update.
//!
//! Each perspective's half is the bias plus the weight columns of its active
//! features. A move changes at most four piece features (mover off, mover on,
//! captured piece off, captured piece into the hand), so the child's half is the
//! parent's plus two or three columns and minus two: far cheaper than summing the
//! ~38 columns again. A king move changes every feature of its own side (the
//! king square is part of each index), so that half is recomputed.

use stera_rules::backend::board::Position as Board;
use stera_rules::backend::types::Color;

use super::features::{Change, FeatureList, PIECE_FEATURES, active_features, king_index};
use super::network::Network;
use super::simd::{self, Backend};
pub use super::transformer::Accumulator;

/// Beyond this many pending moves, recomputing a half is cheaper than replaying
/// the updates.
const MAX_REPLAY: usize = 8;

impl Accumulator {
    /// Recomputes `perspective`'s half from scratch. Returns false (half left at
    /// the biases) when that side has no king.
    pub fn refresh(
        &mut self,
        network: &Network,
        board: &Board,
        perspective: Color,
        backend: Backend,
    ) -> bool {
        let mut features = FeatureList::default();
        let ok = active_features(board, perspective, &mut features);
        let half = &mut self.values[perspective.to_index() & 1];
        *half = *network.biases();
        for &f in features.as_slice() {
            if let Some(column) = network.column(f as usize) {
                simd::add_assign(backend, half, column);
            }
        }
        ok
    }

    /// Recomputes both halves. Returns false when a king is missing.
    pub fn refresh_all(&mut self, network: &Network, board: &Board, backend: Backend) -> bool {
        let black = self.refresh(network, board, Color::BLACK, backend);
        let white = self.refresh(network, board, Color::WHITE, backend);
        black && white
    }

    /// Sets `perspective`'s half to `parent`'s after `change`, whose king did not
    /// move; `king` is that perspective's king index in the child position.
    pub fn update_from(
        &mut self,
        parent: &Accumulator,
        network: &Network,
        perspective: Color,
        king: usize,
        change: &Change,
        backend: Backend,
    ) {
        let p = perspective.to_index() & 1;
        let half = &mut self.values[p];
        *half = parent.values[p];
        let (removed, added) = change.features(perspective);
        let base = king * PIECE_FEATURES;
        for &f in removed.as_slice() {
            if let Some(column) = network.column(base + usize::from(f)) {
                simd::sub_assign(backend, half, column);
            }
        }
        for &f in added.as_slice() {
            if let Some(column) = network.column(base + usize::from(f)) {
                simd::add_assign(backend, half, column);
            }
        }
    }
}

/// One ply of the stack.
#[derive(Clone, Default)]
struct Entry {
    acc: Accumulator,
    /// Which halves of `acc` are up to date.
    computed: [bool; 2],
    /// The move that led here from the entry below.
    change: Change,
}

/// Accumulators along the line being searched, updated lazily: a move only
/// records what it changes, and the halves are brought up to date when a position
/// is actually evaluated (many interior nodes never are).
///
/// ```
/// # fn demo(net: &stera_engine::nnue::Network) {
/// use stera_engine::nnue::{AccumulatorStack, Backend, features::Change};
/// use stera_rules::Position;
///
/// let mut pos = Position::startpos();
/// let mut stack = AccumulatorStack::new(Backend::detect());
/// stack.reset(net, pos.backend());
/// let mv = pos.backend().move32_from_move(
///     stera_rules::backend::types::Move::from_usi("7g7f").unwrap());
/// stack.push(Change::of_move(pos.backend(), mv));
/// pos.do_move(stera_rules::Move::from_usi("7g7f").unwrap());
/// let incremental = stack.evaluate(net, pos.backend(), 16);
/// assert_eq!(incremental, stera_engine::nnue::evaluate_position(net, pos.backend(), 16));
/// # }
/// ```
pub struct AccumulatorStack {
    entries: Vec<Entry>,
    top: usize,
    backend: Backend,
    /// Counts of work done, for benchmarks: (incremental updates, refreshes).
    updates: u64,
    refreshes: u64,
}

impl AccumulatorStack {
    /// An empty stack using `backend` for its arithmetic.
    #[must_use]
    pub fn new(backend: Backend) -> Self {
        Self {
            entries: vec![Entry::default(); 16],
            top: 0,
            backend,
            updates: 0,
            refreshes: 0,
        }
    }

    /// Starts over at `board` (the root), computing both halves. Returns false
    /// when a king is missing (HalfKP cannot evaluate such a position).
    pub fn reset(&mut self, network: &Network, board: &Board) -> bool {
        self.top = 0;
        let root = &mut self.entries[0];
        root.change = Change::none();
        let ok = root.acc.refresh_all(network, board, self.backend);
        root.computed = [true; 2];
        self.refreshes += 2;
        ok
    }

    /// Records that `change` is about to be played (call before the board moves).
    pub fn push(&mut self, change: Change) {
        self.top += 1;
        if self.top == self.entries.len() {
            self.entries.push(Entry::default());
        }
        let entry = &mut self.entries[self.top];
        entry.change = change;
        entry.computed = [false; 2];
    }

    /// Forgets the last pushed move (call when it is undone).
    pub fn pop(&mut self) {
        self.top = self.top.saturating_sub(1);
    }

    /// Plies pushed above the root.
    #[must_use]
    pub fn depth(&self) -> usize {
        self.top
    }

    /// (incremental half updates, half refreshes) done so far.
    #[must_use]
    pub fn work(&self) -> (u64, u64) {
        (self.updates, self.refreshes)
    }

    /// The accumulator of the top position (`board`), brought up to date.
    pub fn current(&mut self, network: &Network, board: &Board) -> &Accumulator {
        for perspective in [Color::BLACK, Color::WHITE] {
            self.bring_up_to_date(network, board, perspective);
        }
        &self.entries[self.top].acc
    }

    /// Centipawns for the side to move in `board` (the top position).
    pub fn evaluate(&mut self, network: &Network, board: &Board, fv_scale: i32) -> i32 {
        let backend = self.backend;
        let acc = self.current(network, board);
        network.evaluate(acc, board.turn(), fv_scale, backend)
    }

    fn bring_up_to_date(&mut self, network: &Network, board: &Board, perspective: Color) {
        let p = perspective.to_index() & 1;
        let top = self.top;
        if self.entries[top].computed[p] {
            return;
        }
        // Find the nearest computed ancestor; a king move of this perspective on
        // the way (or a long way back) means recomputing from the board instead.
        let mut base = top;
        let mut refresh = false;
        while !self.entries[base].computed[p] {
            if self.entries[base].change.king_moved == Some(perspective)
                || base == 0
                || top - base >= MAX_REPLAY
            {
                refresh = true;
                break;
            }
            base -= 1;
        }
        let king = king_index(board, perspective);
        match (refresh, king) {
            (false, Some(king)) => {
                // The king of this perspective did not move since `base`, so the
                // top's king square is the one every update in between uses.
                for i in base + 1..=top {
                    let (below, above) = self.entries.split_at_mut(i);
                    let parent = &below[i - 1].acc;
                    let entry = &mut above[0];
                    entry.acc.update_from(
                        parent,
                        network,
                        perspective,
                        king,
                        &entry.change,
                        self.backend,
                    );
                    entry.computed[p] = true;
                    self.updates += 1;
                }
            }
            _ => {
                let entry = &mut self.entries[top];
                entry.acc.refresh(network, board, perspective, self.backend);
                entry.computed[p] = true;
                self.refreshes += 1;
            }
        }
    }
}
