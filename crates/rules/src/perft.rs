//! Move-path enumeration: the standard correctness check for move generation.

use rsshogi::board::perft::compute_perft;

use crate::{Move, Position};

impl Position {
    /// Number of leaf nodes of the legal move tree of `depth` plies (every legal
    /// move, optional non-promotions included).
    ///
    /// ```
    /// let mut pos = stera_rules::Position::startpos();
    /// assert_eq!(pos.perft(3), 25_470);
    /// ```
    pub fn perft(&mut self, depth: u8) -> u64 {
        if depth == 0 {
            return 1;
        }
        compute_perft(self.backend_mut(), depth)
    }

    /// Per-move leaf counts at `depth` (each move's subtree of `depth - 1` plies), in
    /// canonical move order.
    pub fn perft_divide(&mut self, depth: u8) -> Vec<(Move, u64)> {
        let moves = self.legal_moves();
        let mut out = Vec::with_capacity(moves.len());
        for mv in moves {
            self.do_move(mv);
            let n = self.perft(depth.saturating_sub(1));
            // do_move just pushed, so the undo cannot fail.
            let _ = self.undo_move();
            out.push((mv, n));
        }
        out
    }
}
