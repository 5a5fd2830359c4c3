//! Positions one move back: the keys of every position from which a move could
//! have led to a given one, for a caller that must tell whether a position is a
//! child of a position it holds (the coordinator, for a result whose lease it
//! does not know) without a table of every child of every held position.
//!
//! The candidates are computed from the keys alone (Zobrist keys change by
//! exclusive-or), so a probe costs a few thousand xors and table look-ups, never
//! a position per candidate. They are a superset: every real predecessor is
//! among them (a plain move, a promotion, a capture of any piece the mover's hand
//! could have received, a drop), next to positions that are not legal or from
//! which the move would not be (a promotion outside the zone, a king left in
//! check). A caller that finds a candidate it holds confirms the move forward
//! with [`Position::key_after`] from that position.

use rsshogi::types::{Color as BColor, Hand, HandPiece, PieceType, Square};

use crate::{Key, Position, zobrist};

/// Directions (file, rank).
type Directions = &'static [(i8, i8)];

/// Steps and rays (file, rank) of a Black piece: rank 0 is Black's far rank, so
/// forward is rank - 1. White's are the same negated.
fn geometry(pt: PieceType) -> (Directions, Directions) {
    const FORWARD: &[(i8, i8)] = &[(0, -1)];
    const KNIGHT: &[(i8, i8)] = &[(-1, -2), (1, -2)];
    const SILVER: &[(i8, i8)] = &[(-1, -1), (0, -1), (1, -1), (-1, 1), (1, 1)];
    const GOLD: &[(i8, i8)] = &[(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (0, 1)];
    const DIAGONAL: &[(i8, i8)] = &[(-1, -1), (1, -1), (-1, 1), (1, 1)];
    const ORTHOGONAL: &[(i8, i8)] = &[(0, -1), (-1, 0), (1, 0), (0, 1)];
    const KING: &[(i8, i8)] = &[
        (-1, -1),
        (0, -1),
        (1, -1),
        (-1, 0),
        (1, 0),
        (-1, 1),
        (0, 1),
        (1, 1),
    ];
    match pt {
        PieceType::PAWN => (FORWARD, &[]),
        PieceType::LANCE => (&[], FORWARD),
        PieceType::KNIGHT => (KNIGHT, &[]),
        PieceType::SILVER => (SILVER, &[]),
        PieceType::BISHOP => (&[], DIAGONAL),
        PieceType::ROOK => (&[], ORTHOGONAL),
        PieceType::KING => (KING, &[]),
        PieceType::HORSE => (ORTHOGONAL, DIAGONAL),
        PieceType::DRAGON => (DIAGONAL, ORTHOGONAL),
        // Gold and the promoted minor pieces.
        _ => (GOLD, &[]),
    }
}

/// The pieces a move can capture (not a king).
const CAPTURABLE: [PieceType; 13] = [
    PieceType::PAWN,
    PieceType::LANCE,
    PieceType::KNIGHT,
    PieceType::SILVER,
    PieceType::BISHOP,
    PieceType::ROOK,
    PieceType::GOLD,
    PieceType::PRO_PAWN,
    PieceType::PRO_LANCE,
    PieceType::PRO_KNIGHT,
    PieceType::PRO_SILVER,
    PieceType::HORSE,
    PieceType::DRAGON,
];

/// A key and its colour-flipped twin's key, changed together.
#[derive(Clone, Copy)]
struct Pair(u128, u128);

impl Pair {
    /// A piece of `color` (index) and type `pt` put on or taken off `square`.
    fn board(self, color: usize, pt: PieceType, square: usize) -> Self {
        let t = pt_index(pt);
        Self(
            self.0 ^ zobrist::board(color, t, square),
            self.1 ^ zobrist::board(1 - color, t, 80 - square),
        )
    }

    /// The hand of `color` holding `to` instead of `from` pieces of type `pt`.
    fn hand(self, color: usize, pt: PieceType, from: usize, to: usize) -> Self {
        let t = pt_index(pt);
        Self(
            self.0 ^ zobrist::hand(color, t, from) ^ zobrist::hand(color, t, to),
            self.1 ^ zobrist::hand(1 - color, t, from) ^ zobrist::hand(1 - color, t, to),
        )
    }

    fn keys(self) -> (Key, Key) {
        (Key(self.0), Key(self.1))
    }
}

fn pt_index(pt: PieceType) -> usize {
    usize::try_from(pt.raw()).unwrap_or(0)
}

fn hand_count(hand: Hand, pt: PieceType) -> usize {
    HandPiece::from_piece_type(pt).map_or(0, |hp| Hand::count_of(hand, hp) as usize)
}

/// The square `steps` times (file, rank) away from `square` (index file * 9 +
/// rank), if on the board.
fn offset(square: usize, (file, rank): (i8, i8), steps: i8) -> Option<usize> {
    let f = i8::try_from(square / 9).ok()? + file * steps;
    let r = i8::try_from(square % 9).ok()? + rank * steps;
    if (0..9).contains(&f) && (0..9).contains(&r) {
        usize::try_from(f * 9 + r).ok()
    } else {
        None
    }
}

impl Position {
    /// Keys (the position's and its colour-flipped twin's) of the positions one
    /// move before this one could have been: a superset of the real ones, see
    /// the module documentation of `retro`. Confirm a candidate `p` with
    /// `p.key_after(mv) == self.key()` for one of its legal moves.
    ///
    /// ```
    /// use stera_rules::Position;
    /// let before = Position::from_position_command("startpos moves 7g7f").unwrap();
    /// let after = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
    /// assert!(after.predecessor_keys().contains(&(before.key(), before.flipped_key())));
    /// ```
    #[must_use]
    pub fn predecessor_keys(&self) -> Vec<(Key, Key)> {
        let board = self.backend();
        let side = board.turn();
        let mover: BColor = side.flip();
        let (m, s) = (mover.to_index(), side.to_index());
        let hand = board.hand(mover);
        let empty = |sq: usize| board.piece_on(Square::from_index(sq)).is_empty();
        let side_key = zobrist::side();
        let base = Pair(self.key().0 ^ side_key, self.flipped_key().0 ^ side_key);
        let mut out = Vec::new();
        for to in 0..81 {
            let piece = board.piece_on(Square::from_index(to));
            if piece.is_empty() || piece.color() != mover {
                continue;
            }
            let after = piece.piece_type();
            let lifted = base.board(m, after, to);
            // A drop.
            if after.is_hand_piece() {
                let n = hand_count(hand, after);
                out.push(lifted.hand(m, after, n, n + 1).keys());
            }
            // A move, promoting or not, capturing or not.
            let befores = if after.is_promoted() {
                [Some(after), Some(after.demote())]
            } else {
                [Some(after), None]
            };
            for before in befores.into_iter().flatten() {
                let (steps, rays) = geometry(before);
                let sign: i8 = if mover == BColor::BLACK { 1 } else { -1 };
                let mut origins = Vec::new();
                for &(f, r) in steps {
                    // The piece moved by (f, r): it came from `to` minus that.
                    if let Some(from) = offset(to, (-f * sign, -r * sign), 1)
                        && empty(from)
                    {
                        origins.push(from);
                    }
                }
                for &(f, r) in rays {
                    let mut k = 1;
                    while let Some(from) = offset(to, (-f * sign, -r * sign), k) {
                        if !empty(from) {
                            break;
                        }
                        origins.push(from);
                        k += 1;
                    }
                }
                for from in origins {
                    let moved = lifted.board(m, before, from);
                    out.push(moved.keys());
                    for captured in CAPTURABLE {
                        let base_type = captured.demote();
                        let n = hand_count(hand, base_type);
                        if n > 0 {
                            let back = moved.board(s, captured, to).hand(m, base_type, n, n - 1);
                            out.push(back.keys());
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// Every position of random games is among the candidates of the position
    /// after its move, with its twin's key: plain moves, promotions, captures
    /// (of promoted pieces too) and drops, for both colours.
    #[test]
    fn every_real_predecessor_is_a_candidate() {
        let mut rng = StdRng::seed_from_u64(35);
        let (mut drops, mut captures, mut promotions, mut checked) = (0, 0, 0, 0);
        for _ in 0..300 {
            let mut pos = Position::startpos();
            for _ in 0..200 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                let mv = moves[rng.random_range(0..moves.len())];
                let before = (pos.key(), pos.flipped_key());
                let b = mv.backend();
                if b.dropped_piece().is_some() {
                    drops += 1;
                } else {
                    if !pos.backend().piece_on(b.to_sq()).is_empty() {
                        captures += 1;
                    }
                    if b.is_promotion() {
                        promotions += 1;
                    }
                }
                pos.do_move(mv);
                let candidates = pos.predecessor_keys();
                assert!(
                    candidates.contains(&before),
                    "{mv} into `{}` is not undone",
                    pos.to_sfen()
                );
                checked += 1;
            }
        }
        assert!(checked > 10_000 && drops > 500 && captures > 500 && promotions > 100);
    }

    /// A position's flipped twin has the flipped candidates.
    #[test]
    fn a_twin_has_the_twin_candidates() {
        let pos = Position::from_position_command("startpos moves 7g7f 3c3d 8h2b+").unwrap();
        let mut own: Vec<(Key, Key)> = pos.predecessor_keys();
        let mut twin: Vec<(Key, Key)> = pos
            .flipped()
            .predecessor_keys()
            .into_iter()
            .map(|(k, f)| (f, k))
            .collect();
        own.sort();
        twin.sort();
        assert_eq!(own, twin);
    }

    /// A position the start position is not one move before: no false twin of
    /// the start position among its candidates.
    #[test]
    fn two_moves_away_is_not_a_candidate() {
        let start = Position::startpos();
        let pos = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
        assert!(
            !pos.predecessor_keys()
                .iter()
                .any(|&(k, f)| k == start.key() || f == start.key())
        );
    }
}
