//! The hand-crafted evaluation: material (hand pieces worth a little more than the
//! same piece on the board), piece-square terms, slider mobility and king safety.
//!
//! Values are centipawns on roughly YaneuraOu's scale (a pawn is 90) from the point
//! of view of the side to move.

use stera_rules::backend::board::attack_tables::{bishop_attacks, lance_attacks, rook_attacks};
use stera_rules::backend::board::{KING_ATTACKS, Position as Board};
use stera_rules::backend::types::{Color, HandPiece, Piece, PieceType, Square};

/// Value of each piece type on the board, indexed by `PieceType::raw()`
/// (none, pawn, lance, knight, silver, bishop, rook, gold, king, +pawn, +lance,
/// +knight, +silver, horse, dragon).
pub const BOARD_VALUE: [i32; 16] = [
    0, 90, 315, 405, 495, 855, 990, 540, 0, 540, 540, 540, 540, 945, 1395, 0,
];

/// Value of a piece in hand, indexed by `PieceType::raw()` of the unpromoted type.
/// A hand piece can be dropped almost anywhere, so it is worth about 10% more.
pub const HAND_VALUE: [i32; 8] = [0, 100, 350, 445, 545, 940, 1090, 595];

/// The value a capture of `piece` wins: the piece leaves the board and its
/// unpromoted form enters the captor's hand.
#[inline]
#[must_use]
pub fn capture_gain(piece: Piece) -> i32 {
    let board = BOARD_VALUE[piece.piece_type().to_index()];
    let hand = HAND_VALUE[piece.base_piece_type().to_index() & 7];
    board + hand
}

/// Hand pieces in the order the evaluation reads them.
const HAND_PIECES: [(HandPiece, PieceType); 7] = [
    (HandPiece::PAWN, PieceType::PAWN),
    (HandPiece::LANCE, PieceType::LANCE),
    (HandPiece::KNIGHT, PieceType::KNIGHT),
    (HandPiece::SILVER, PieceType::SILVER),
    (HandPiece::BISHOP, PieceType::BISHOP),
    (HandPiece::ROOK, PieceType::ROOK),
    (HandPiece::GOLD, PieceType::GOLD),
];

/// How much each hand piece adds to the danger around the enemy king (drops are what
/// makes shogi attacks fast).
const HAND_DANGER: [i32; 7] = [1, 2, 2, 3, 3, 4, 3];

/// Relative rank seen from `color`: 0 is its own back rank, 8 the enemy's.
#[inline]
fn relative_rank(color: Color, sq: Square) -> usize {
    let rank = sq.rank().raw() as usize; // 0 = rank a (White's back rank)
    if color == Color::BLACK {
        8 - rank
    } else {
        rank
    }
}

/// Distance of `sq`'s file from the centre file.
#[inline]
fn file_from_centre(sq: Square) -> i32 {
    (i32::from(sq.file().raw()) - 4).abs()
}

/// Piece-square term for a piece of `color` and type `pt` on `sq`.
fn piece_square(color: Color, pt: PieceType, sq: Square) -> i32 {
    let r = relative_rank(color, sq) as i32;
    match pt {
        // Pawns near promotion are worth more; one step up is neutral.
        PieceType::PAWN => [0, 0, 0, 4, 10, 20, 30, 0, 0][r as usize],
        // Knights that jumped too far are easily lost; on their start rank they are fine.
        PieceType::KNIGHT => [0, 0, 8, 12, 6, -10, -20, 0, 0][r as usize],
        PieceType::SILVER => [0, 8, 12, 10, 6, 2, 0, -5, -10][r as usize],
        PieceType::GOLD => [4, 10, 6, 0, -6, -10, -10, -12, -15][r as usize],
        PieceType::LANCE => [6, 2, 0, 0, 0, 0, 0, 0, 0][r as usize],
        // A king is safest on its back ranks and away from the centre file.
        PieceType::KING => {
            let rank_term = [40, 35, 10, -30, -60, -90, -110, -120, -120][r as usize];
            rank_term + 6 * file_from_centre(sq)
        }
        PieceType::PRO_PAWN
        | PieceType::PRO_LANCE
        | PieceType::PRO_KNIGHT
        | PieceType::PRO_SILVER => {
            // Promoted minors help most near the enemy king, i.e. high ranks.
            [-10, -10, -5, 0, 5, 10, 15, 20, 20][r as usize]
        }
        _ => 0,
    }
}

/// Mobility of long-range pieces (cheap to compute with the attack tables).
fn mobility(board: &Board, color: Color, pt: PieceType, sq: Square) -> i32 {
    let occupied = board.bitboards().occupied();
    let own = board.bitboards().color_pieces(color);
    let count = |bb: stera_rules::backend::board::Bitboard| (bb & !own).count() as i32;
    match pt {
        PieceType::ROOK => 3 * count(rook_attacks(sq, occupied)),
        PieceType::DRAGON => 3 * count(rook_attacks(sq, occupied)),
        PieceType::BISHOP => 3 * count(bishop_attacks(sq, occupied)),
        PieceType::HORSE => 3 * count(bishop_attacks(sq, occupied)),
        PieceType::LANCE => 2 * count(lance_attacks(sq, occupied, color)),
        _ => 0,
    }
}

/// King safety of `color`: enemy pieces attacking the squares around its king,
/// weighed against its own defenders there, scaled by the enemy's hand.
fn king_safety(board: &Board, color: Color) -> i32 {
    let king = board.king_square(color);
    if king.is_none() {
        return 0;
    }
    let them = color.flip();
    let occupied = board.bitboards().occupied();
    let mut zone = KING_ATTACKS[king];
    let mut attack_units = 0i32;
    let mut uncovered = 0i32;
    let mut guards = 0i32;
    while let Some(sq) = zone.pop_lsb() {
        let attackers = board.attackers_to_color(them, sq, occupied).count() as i32;
        // The king itself defends every square of its zone; do not count it.
        let defenders = board.attackers_to_color(color, sq, occupied).count() as i32 - 1;
        attack_units += attackers;
        if attackers > defenders {
            uncovered += attackers - defenders;
        }
        let p = board.piece_on(sq);
        if !p.is_empty() && p.color() == color {
            let pt = p.piece_type();
            if pt == PieceType::GOLD || pt == PieceType::SILVER || p.is_promoted() {
                guards += 1;
            }
        }
    }
    let hand = board.hand(them);
    let hand_danger: i32 = HAND_PIECES
        .iter()
        .zip(HAND_DANGER)
        .map(|((hp, _), w)| (hand.count(*hp).min(3) as i32) * w)
        .sum();
    let danger = attack_units * 14 + uncovered * 30 + attack_units * hand_danger * 3;
    // Danger grows faster than linearly once the attack is real, but is bounded so a
    // lost king never outweighs mate search.
    let nonlinear = (uncovered * uncovered * 8).min(600);
    guards * 22 - (danger + nonlinear).min(1500)
}

/// Evaluates `board` from the point of view of the side to move.
///
/// Deterministic and independent of search history: the same position always gets
/// the same value.
#[must_use]
pub fn evaluate(board: &Board) -> i32 {
    let mut score = [0i32; 2];
    let mut occupied = board.bitboards().occupied();
    while let Some(sq) = occupied.pop_lsb() {
        let p = board.piece_on(sq);
        if p.is_empty() {
            continue;
        }
        let c = p.color();
        let pt = p.piece_type();
        let s = &mut score[c.to_index()];
        *s += BOARD_VALUE[pt.to_index()];
        *s += piece_square(c, pt, sq);
        *s += mobility(board, c, pt, sq);
    }
    for color in [Color::BLACK, Color::WHITE] {
        let hand = board.hand(color);
        let s = &mut score[color.to_index()];
        for (hp, pt) in HAND_PIECES {
            let n = hand.count(hp) as i32;
            if n > 0 {
                let value = HAND_VALUE[pt.to_index()];
                // Extra pawns in hand are worth less than the first few.
                *s += if hp == HandPiece::PAWN {
                    value * n.min(4) + (value * 3 / 4) * (n - 4).max(0)
                } else {
                    value * n
                };
            }
        }
        *s += king_safety(board, color);
    }
    let us = board.turn();
    score[us.to_index()] - score[us.flip().to_index()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_rules::Position;

    fn eval_of(sfen: &str) -> i32 {
        let pos = Position::from_sfen(sfen).expect("test SFEN is valid");
        evaluate(pos.backend())
    }

    #[test]
    fn startpos_is_balanced() {
        assert_eq!(eval_of(stera_rules::STARTPOS_SFEN), 0);
    }

    #[test]
    fn symmetric_position_is_zero_for_either_side() {
        let flipped = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1";
        assert_eq!(eval_of(flipped), 0);
    }

    #[test]
    fn extra_rook_in_hand_is_good_for_its_owner() {
        let black_up = eval_of("lnsgkgsnl/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b R 1");
        let white_to_move =
            eval_of("lnsgkgsnl/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w R 1");
        assert!(black_up > 900, "black a rook up: {black_up}");
        assert_eq!(black_up, -white_to_move);
    }

    #[test]
    fn hand_piece_is_worth_more_than_board_piece() {
        for pt in 1..8 {
            assert!(HAND_VALUE[pt] > BOARD_VALUE[pt], "piece type {pt}");
        }
    }
}
