//! The entering-king declaration (nyūgyoku sengen) under the CSA 27-point rule,
//! the rule of the CSA tournaments and of USI `EnteringKingRule CSARule27`.
//!
//! The side to move may declare a win when all of these hold:
//!
//! 1. its king stands in the opponent's camp (the three ranks nearest the
//!    opponent: a-c for Black, g-i for White);
//! 2. at least 10 of its other pieces stand in that camp;
//! 3. its points are at least 28 for Black (sente) or 27 for White, counting its
//!    pieces in the camp (king excluded) and in hand, rook and bishop (promoted
//!    or not) 5 points, every other piece 1;
//! 4. it is not in check;
//! 5. it has time left (games here have no clock, so this always holds).
//!
//! A declaration that fails any of them loses. The count is made from the SFEN,
//! independently of the backend's own implementation, which the tests compare.

use stera_rules::{Color, Position};

/// Pieces other than the king that must stand in the camp.
pub const PIECES_REQUIRED: u32 = 10;

/// Points Black (sente) needs.
pub const BLACK_POINTS_REQUIRED: u32 = 28;

/// Points White (gote) needs.
pub const WHITE_POINTS_REQUIRED: u32 = 27;

/// The facts a declaration is judged on, for the side to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclarationCheck {
    /// The declaring side (the side to move).
    pub side: Color,
    /// Its king stands in the opponent's camp.
    pub king_in_camp: bool,
    /// Its pieces other than the king in the opponent's camp.
    pub pieces_in_camp: u32,
    /// Its points: pieces in the camp (king excluded) and in hand.
    pub points: u32,
    /// It is in check.
    pub in_check: bool,
}

impl DeclarationCheck {
    /// The points `side` needs.
    #[must_use]
    pub const fn points_required(side: Color) -> u32 {
        match side {
            Color::Black => BLACK_POINTS_REQUIRED,
            Color::White => WHITE_POINTS_REQUIRED,
        }
    }

    /// True when the declaration wins.
    #[must_use]
    pub fn holds(&self) -> bool {
        self.king_in_camp
            && self.pieces_in_camp >= PIECES_REQUIRED
            && self.points >= Self::points_required(self.side)
            && !self.in_check
    }
}

/// Judges a declaration by the side to move of `position`.
///
/// ```
/// use stera_rules::Position;
/// let pos = Position::from_sfen("+R+B+PGGGGSS/4K4/SSL6/9/9/9/9/9/4k4 b RB8P 1").unwrap();
/// let check = stera_games::declaration::check(&pos);
/// assert_eq!((check.pieces_in_camp, check.points), (12, 38));
/// assert!(check.holds());
/// assert!(!stera_games::declaration::check(&Position::startpos()).holds());
/// ```
#[must_use]
pub fn check(position: &Position) -> DeclarationCheck {
    let side = position.side_to_move();
    let sfen = position.to_sfen();
    let mut fields = sfen.split_whitespace();
    let board = fields.next().unwrap_or("");
    let hand = fields.nth(1).unwrap_or("-");
    let ours = |c: char| match side {
        Color::Black => c.is_ascii_uppercase(),
        Color::White => c.is_ascii_lowercase(),
    };
    let value = |c: char| match c.to_ascii_uppercase() {
        'R' | 'B' => 5,
        _ => 1,
    };
    let camp = match side {
        Color::Black => 0..3,
        Color::White => 6..9,
    };
    let mut result = DeclarationCheck {
        side,
        king_in_camp: false,
        pieces_in_camp: 0,
        points: 0,
        in_check: position.in_check(),
    };
    for (rank, row) in board.split('/').enumerate() {
        if !camp.contains(&rank) {
            continue;
        }
        for c in row.chars().filter(|c| c.is_ascii_alphabetic() && ours(*c)) {
            if c.eq_ignore_ascii_case(&'k') {
                result.king_in_camp = true;
            } else {
                result.pieces_in_camp += 1;
                result.points += value(c);
            }
        }
    }
    let mut count = 0u32;
    for c in hand.chars() {
        if let Some(d) = c.to_digit(10) {
            count = count * 10 + d;
        } else {
            if ours(c) {
                result.points += count.max(1) * value(c);
            }
            count = 0;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use stera_rules::backend::types::{EnteringKingRule, MOVE_NONE};

    use super::*;

    /// The backend's own implementation of the same rule, as an oracle.
    fn backend_says(pos: &Position) -> bool {
        let mut b = pos.backend().clone();
        b.set_entering_king_rule(EnteringKingRule::Point27);
        b.declaration_win_move() != MOVE_NONE
    }

    fn pos(sfen: &str) -> Position {
        Position::from_sfen(sfen).unwrap_or_else(|e| panic!("{sfen}: {e}"))
    }

    #[test]
    fn each_condition_matters_and_agrees_with_the_backend() {
        let cases = [
            // Valid: 12 pieces in camp worth 20 (promoted rook and bishop 5 each),
            // 18 in hand.
            ("+R+B+PGGGGSS/4K4/SSL6/9/9/9/9/9/4k4 b RB8P 1", true, 12, 38),
            // Black with exactly 28: 10 tokins in the camp, R B and 8 pawns in hand.
            (
                "+P+P+P+P+P4/4K4/+P+P+P+P+P4/9/9/9/9/9/4k4 b RB8P 1",
                true,
                10,
                28,
            ),
            // 27 is enough for White but not for Black.
            (
                "+P+P+P+P+P4/4K4/+P+P+P+P+P4/9/9/9/9/9/4k4 b RB7P 1",
                false,
                10,
                27,
            ),
            // Only 9 pieces in the camp, points plenty.
            (
                "+P+P+P+P+P4/4K4/+P+P+P+P5/9/9/9/9/9/4k4 b 2R2B8P 1",
                false,
                9,
                37,
            ),
            // The king outside the camp.
            (
                "+P+P+P+P+P4/9/+P+P+P+P+P4/4K4/9/9/9/9/4k4 b 2R2B8P 1",
                false,
                10,
                38,
            ),
            // White: king on 5h, 10 tokins in ranks g-i, R B and 7 pawns: 27.
            (
                "4K4/9/9/9/9/9/+p+p+p+p+p4/4k4/+p+p+p+p+p4 w rb7p 1",
                true,
                10,
                27,
            ),
            (
                "4K4/9/9/9/9/9/+p+p+p+p+p4/4k4/+p+p+p+p+p4 w rb6p 1",
                false,
                10,
                26,
            ),
        ];
        for (sfen, holds, pieces, points) in cases {
            let p = pos(sfen);
            let c = check(&p);
            assert_eq!(
                (c.holds(), c.pieces_in_camp, c.points),
                (holds, pieces, points),
                "{sfen}"
            );
            assert_eq!(backend_says(&p), holds, "backend on {sfen}");
        }
    }

    #[test]
    fn no_declaration_in_check() {
        // The first valid case with a white tokin on 5c giving check.
        let p = pos("+R+B+PGGGGSS/4K4/SSL1+p4/9/9/9/9/9/4k4 b RB8P 1");
        let c = check(&p);
        assert!(c.in_check);
        assert!(!c.holds());
        assert!(!backend_says(&p));
    }
}
