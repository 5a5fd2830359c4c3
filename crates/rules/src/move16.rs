//! Move16: YaneuraOu's 16-bit move, as `.ybb` books store it.
//!
//! | bits | board move | drop |
//! |---|---|---|
//! | 0-6 | destination square | destination square |
//! | 7-13 | origin square | piece type: pawn 1, lance 2, knight 3, silver 4, bishop 5, rook 6, gold 7 |
//! | 14 | 0 | 1 |
//! | 15 | promotion | 0 |
//!
//! Squares count file-major from 1a: `(file - 1) * 9 + (rank - 1)`, so 1a = 0,
//! 1i = 8, 9i = 80. (cshogi's `move16()` is Apery's encoding for drops and
//! promotions and differs there.)
//!
//! ```
//! use stera_rules::{Move, Position, move16};
//! let m: Move = "7g7f".parse().unwrap();
//! assert_eq!(move16::to_move16(m), 59 + (60 << 7));
//! assert_eq!(move16::from_move16(16525).unwrap().to_string(), "P*2e");
//! assert_eq!(move16::from_move16(41738).unwrap().to_string(), "8h2b+");
//! // Bits that name no move, and moves that are not legal in a position.
//! assert!(move16::from_move16(0).is_err());
//! let pos = Position::startpos();
//! assert!(pos.move_from_move16(16525).is_err()); // no pawn in hand
//! assert_eq!(pos.move_from_move16(7739).unwrap(), m);
//! ```

use rsshogi::types::{PieceType, Square};
use thiserror::Error;

use crate::{Move, Position};

/// Bit 14: a drop.
pub const DROP_FLAG: u16 = 1 << 14;
/// Bit 15: a promotion.
pub const PROMOTION_FLAG: u16 = 1 << 15;

/// A Move16 that is not a move, or not a legal one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Move16Error {
    /// The bits name no move; `reason` says which field is wrong.
    #[error("Move16 {raw:#06x} is not a move: {reason}")]
    NotAMove { raw: u16, reason: &'static str },
    /// A move that is not legal in the position.
    #[error("Move16 {raw:#06x} (`{usi}`) is not legal in `{sfen}`")]
    Illegal { raw: u16, usi: String, sfen: String },
}

/// The Move16 piece type of a dropped piece, from the backend's.
fn drop_code(piece: PieceType) -> u16 {
    match piece {
        PieceType::PAWN => 1,
        PieceType::LANCE => 2,
        PieceType::KNIGHT => 3,
        PieceType::SILVER => 4,
        PieceType::BISHOP => 5,
        PieceType::ROOK => 6,
        PieceType::GOLD => 7,
        _ => 0,
    }
}

/// The backend's piece type of a Move16 drop code.
fn drop_piece(code: u16) -> Option<PieceType> {
    Some(match code {
        1 => PieceType::PAWN,
        2 => PieceType::LANCE,
        3 => PieceType::KNIGHT,
        4 => PieceType::SILVER,
        5 => PieceType::BISHOP,
        6 => PieceType::ROOK,
        7 => PieceType::GOLD,
        _ => return None,
    })
}

fn square_index(square: Square) -> u16 {
    u16::try_from(square.to_index()).unwrap_or(u16::MAX) & 0x7f
}

/// The Move16 of a move.
#[must_use]
pub fn to_move16(mv: Move) -> u16 {
    let b = mv.backend();
    let to = square_index(b.to_sq());
    match b.dropped_piece() {
        Some(piece) => to | drop_code(piece) << 7 | DROP_FLAG,
        None => {
            let promotion = if b.is_promotion() { PROMOTION_FLAG } else { 0 };
            to | square_index(b.from_sq()) << 7 | promotion
        }
    }
}

/// The move of a Move16, checked for shape only: squares on the board, a piece
/// type for a drop, no promoting drop, distinct origin and destination. Whether
/// the move is legal needs a position: [`Position::move_from_move16`].
///
/// # Errors
/// [`Move16Error::NotAMove`] naming the wrong field.
pub fn from_move16(raw: u16) -> Result<Move, Move16Error> {
    let fail = |reason| Move16Error::NotAMove { raw, reason };
    let to = raw & 0x7f;
    let from = raw >> 7 & 0x7f;
    if to >= 81 {
        return Err(fail("the destination square is above 80"));
    }
    let to_sq = Square::from_index(usize::from(to));
    let backend = if raw & DROP_FLAG != 0 {
        if raw & PROMOTION_FLAG != 0 {
            return Err(fail("a drop cannot promote"));
        }
        let piece = drop_piece(from).ok_or_else(|| fail("the dropped piece type is not 1..=7"))?;
        rsshogi::types::Move::drop(piece, to_sq)
    } else {
        if from >= 81 {
            return Err(fail("the origin square is above 80"));
        }
        if from == to {
            return Err(fail("origin and destination are the same square"));
        }
        let from_sq = Square::from_index(usize::from(from));
        if raw & PROMOTION_FLAG != 0 {
            rsshogi::types::Move::promotion(from_sq, to_sq)
        } else {
            rsshogi::types::Move::normal(from_sq, to_sq)
        }
    };
    Move::from_raw(backend.raw()).ok_or_else(|| fail("not the encoding of a move"))
}

impl Move {
    /// The Move16 of this move (see [`crate::move16`]).
    #[must_use]
    pub fn to_move16(self) -> u16 {
        to_move16(self)
    }
}

impl Position {
    /// The move of a Move16 if it is legal here.
    ///
    /// # Errors
    /// [`Move16Error::NotAMove`] or [`Move16Error::Illegal`].
    pub fn move_from_move16(&self, raw: u16) -> Result<Move, Move16Error> {
        let mv = from_move16(raw)?;
        if self.is_legal(mv) {
            Ok(mv)
        } else {
            Err(Move16Error::Illegal {
                raw,
                usi: mv.to_string(),
                sfen: self.to_sfen(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Move16 from USI text by the spec's formula, independent of the backend.
    fn by_formula(usi: &str) -> u16 {
        let b = usi.as_bytes();
        let square = |f: u8, r: u8| u16::from(f - b'1') * 9 + u16::from(r - b'a');
        let to = square(b[2], b[3]);
        if b[1] == b'*' {
            let piece = b"PLNSBRG".iter().position(|&p| p == b[0]).unwrap() as u16 + 1;
            to + (piece << 7) + (1 << 14)
        } else {
            let promote = if b.len() == 5 { 1 << 15 } else { 0 };
            to + (square(b[0], b[1]) << 7) + promote
        }
    }

    #[test]
    fn spec_examples() {
        for (usi, raw) in [("7g7f", 7739), ("P*2e", 16525), ("8h2b+", 41738)] {
            let mv: Move = usi.parse().unwrap();
            assert_eq!(to_move16(mv), raw, "{usi}");
            assert_eq!(by_formula(usi), raw, "{usi}");
            assert_eq!(from_move16(raw).unwrap(), mv, "{usi}");
        }
        // Corners: 1a = 0, 1i = 8, 9i = 80.
        assert_eq!(to_move16("1i1a".parse().unwrap()), 8 << 7);
        assert_eq!(
            to_move16("G*9i".parse().unwrap()),
            80 + (7 << 7) + (1 << 14)
        );
    }

    #[test]
    fn every_move_of_every_shape_round_trips() {
        // Every from/to pair with and without promotion and every drop: the
        // encodings the backend accepts round-trip and agree with the formula.
        let mut count = 0;
        for raw in 0..=u16::MAX {
            let Ok(mv) = from_move16(raw) else { continue };
            count += 1;
            assert_eq!(to_move16(mv), raw);
            assert_eq!(by_formula(&mv.to_string()), raw, "{mv}");
        }
        assert!(count >= 7 * 81, "{count}");
    }

    #[test]
    fn bad_fields_are_named() {
        let reason = |raw| match from_move16(raw) {
            Err(Move16Error::NotAMove { reason, .. }) => reason,
            other => panic!("{raw:#x}: {other:?}"),
        };
        assert_eq!(reason(81), "the destination square is above 80");
        assert_eq!(reason(5 | 90 << 7), "the origin square is above 80");
        assert_eq!(
            reason(5 | 5 << 7),
            "origin and destination are the same square"
        );
        assert_eq!(
            reason(5 | 8 << 7 | DROP_FLAG),
            "the dropped piece type is not 1..=7"
        );
        assert_eq!(reason(5 | DROP_FLAG), "the dropped piece type is not 1..=7");
        assert_eq!(
            reason(5 | 1 << 7 | DROP_FLAG | PROMOTION_FLAG),
            "a drop cannot promote"
        );
        let text = from_move16(81).unwrap_err().to_string();
        assert_eq!(
            text,
            "Move16 0x0051 is not a move: the destination square is above 80"
        );
    }

    #[test]
    fn legality_in_a_position() {
        let pos = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b P 1").unwrap();
        assert_eq!(
            pos.move_from_move16(by_formula("P*5e"))
                .unwrap()
                .to_string(),
            "P*5e"
        );
        let err = pos.move_from_move16(by_formula("G*5e")).unwrap_err();
        assert_eq!(
            err,
            Move16Error::Illegal {
                raw: by_formula("G*5e"),
                usi: "G*5e".into(),
                sfen: "4k4/9/9/9/9/9/9/9/4K4 b P 1".into()
            }
        );
    }
}
