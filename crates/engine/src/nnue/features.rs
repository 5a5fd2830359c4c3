//! HalfKP features: for each perspective (Black, White), the square of that
//! side's own king combined with every other piece on the board or in hand.
//!
//! A piece feature `P` (0..1548) is the start of its kind's range plus the square
//! address (1一 = 0, 1二 = 1, ..., 2一 = 9, ..., 9九 = 80), or for hand pieces the
//! start of the range plus the piece's number (the first pawn in hand is start + 1,
//! the second start + 2; "zero pieces" has a slot that is never active). Promoted
//! pawns, lances, knights and silvers count as golds. For White's perspective the
//! board is rotated 180 degrees (`sq -> 80 - sq`) and "friend" means White.
//! The input index is `K * 1548 + P` where `K` is the (rotated) own-king square.
//!
//! ```
//! use stera_engine::nnue::features::{board_feature, PIECE_FEATURES};
//! use stera_rules::backend::types::{Color, Piece, Square};
//!
//! // A black pawn on 1二 (address 1), seen by Black: "friend pawn" starts at 90.
//! assert_eq!(board_feature(Color::BLACK, Piece::B_PAWN, Square::new(1)), 91);
//! // Seen by White it is an enemy pawn on 9八 (address 79): 171 + 79.
//! assert_eq!(board_feature(Color::WHITE, Piece::B_PAWN, Square::new(1)), 250);
//! assert_eq!(PIECE_FEATURES, 1548);
//! ```

use stera_rules::backend::board::Position as Board;
use stera_rules::backend::types::{Color, Hand, HandPiece, Piece, PieceType, Square};

/// Squares a king can stand on.
pub const KING_SQUARES: usize = 81;
/// Piece features per king square (hand counts and board pieces of both sides).
pub const PIECE_FEATURES: usize = 1548;
/// Inputs of the feature transformer: 81 x 1548 = 125 388.
pub const INPUT_DIMENSIONS: usize = KING_SQUARES * PIECE_FEATURES;

/// Start of the "friend's piece on the board" range per `PieceType::raw()`
/// (the enemy's range follows 81 later); `NO_FEATURE` for kings and empty squares.
const BOARD_START: [u16; 16] = [
    NO_FEATURE, // none
    90,         // pawn
    252,        // lance
    414,        // knight
    576,        // silver
    900,        // bishop
    1224,       // rook
    738,        // gold
    NO_FEATURE, // king: never a piece feature
    738,        // promoted pawn counts as gold
    738,        // promoted lance
    738,        // promoted knight
    738,        // promoted silver
    1062,       // horse
    1386,       // dragon
    NO_FEATURE,
];
const NO_FEATURE: u16 = u16::MAX;

/// Start of the "friend's pieces in hand" range per `HandPiece::raw()` (pawn,
/// lance, knight, silver, bishop, rook, gold); the enemy's follows `HAND_SLOTS` later.
const HAND_START: [u16; 7] = [0, 38, 48, 58, 78, 84, 68];
/// Slots per hand range (0..=max count, slot 0 never active).
const HAND_SLOTS: [u16; 7] = [19, 5, 5, 5, 3, 3, 5];
/// The most pieces of each kind one hand can hold.
pub const HAND_MAX: [u32; 7] = [18, 4, 4, 4, 2, 2, 4];

/// More features than any position can have: at most 79 non-king pieces on the
/// board plus 38 hand pieces.
pub const MAX_ACTIVE: usize = 128;

/// Board address of `sq` from `perspective` (rotated 180 degrees for White).
#[inline]
#[must_use]
pub fn oriented(perspective: Color, sq: Square) -> usize {
    let s = sq.to_index();
    if perspective == Color::BLACK {
        s
    } else {
        80 - s
    }
}

/// The piece feature (0..1548) of `piece` on `sq` seen from `perspective`, or
/// `None` for a king or an empty square.
#[inline]
#[must_use]
pub fn board_feature_checked(perspective: Color, piece: Piece, sq: Square) -> Option<u16> {
    let start = BOARD_START[piece.piece_type().to_index() & 15];
    if start == NO_FEATURE {
        return None;
    }
    let enemy = if piece.color() == perspective { 0 } else { 81 };
    Some(start + enemy + oriented(perspective, sq) as u16)
}

/// The piece feature (0..1548) of a non-king `piece` on `sq` seen from
/// `perspective` (kings and empty squares give `u16::MAX`).
#[inline]
#[must_use]
pub fn board_feature(perspective: Color, piece: Piece, sq: Square) -> u16 {
    board_feature_checked(perspective, piece, sq).unwrap_or(NO_FEATURE)
}

/// The piece feature of the `nth` (1-based) `piece` in `owner`'s hand, seen from
/// `perspective`. `nth` above the physical maximum is clamped to it.
#[inline]
#[must_use]
pub fn hand_feature(perspective: Color, owner: Color, piece: HandPiece, nth: u32) -> u16 {
    let i = piece.to_index();
    let enemy = if owner == perspective {
        0
    } else {
        HAND_SLOTS[i]
    };
    HAND_START[i] + enemy + nth.min(HAND_MAX[i]) as u16
}

/// The king-square part `K` of the input index for `perspective`, or `None` when
/// that side has no king on the board.
#[inline]
#[must_use]
pub fn king_index(board: &Board, perspective: Color) -> Option<usize> {
    let sq = board.king_square(perspective);
    sq.is_valid().then(|| oriented(perspective, sq))
}

/// The active input indices of one perspective, in no particular order.
#[derive(Clone)]
pub struct FeatureList {
    len: usize,
    items: [u32; MAX_ACTIVE],
}

impl Default for FeatureList {
    fn default() -> Self {
        Self {
            len: 0,
            items: [0; MAX_ACTIVE],
        }
    }
}

impl FeatureList {
    /// The indices collected.
    #[must_use]
    pub fn as_slice(&self) -> &[u32] {
        &self.items[..self.len]
    }

    fn push(&mut self, index: u32) {
        // MAX_ACTIVE exceeds what any board can produce; a full list would mean a
        // broken board, and dropping a feature there is better than a panic.
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = index;
            self.len += 1;
        }
    }
}

/// Fills `out` with the active input indices of `perspective`. Returns false
/// (and leaves `out` empty) when that side has no king.
pub fn active_features(board: &Board, perspective: Color, out: &mut FeatureList) -> bool {
    out.len = 0;
    let Some(king) = king_index(board, perspective) else {
        return false;
    };
    let base = (king * PIECE_FEATURES) as u32;
    let mut occupied = board.bitboards().occupied();
    while let Some(sq) = occupied.pop_lsb() {
        if let Some(p) = board_feature_checked(perspective, board.piece_on(sq), sq) {
            out.push(base + u32::from(p));
        }
    }
    for owner in [Color::BLACK, Color::WHITE] {
        let hand: Hand = board.hand(owner);
        for hp in HandPiece::iter() {
            let count = Hand::count_of(hand, hp).min(HAND_MAX[hp.to_index()]);
            for nth in 1..=count {
                out.push(base + u32::from(hand_feature(perspective, owner, hp, nth)));
            }
        }
    }
    true
}

/// What one move changes in the piece features (perspective-free), so that each
/// perspective's accumulator can be updated with a few column additions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Change {
    /// Pieces that disappear (at most two: the mover and a captured piece, or a
    /// hand piece that is dropped).
    pub removed: [Slot; 2],
    /// Pieces that appear (at most two: the mover on its destination and the
    /// captured piece in the captor's hand).
    pub added: [Slot; 2],
    /// Valid entries of `removed` and `added`.
    pub removed_len: u8,
    pub added_len: u8,
    /// The side whose king moved: its perspective must be refreshed.
    pub king_moved: Option<Color>,
}

/// A piece on the board or in hand, in terms both perspectives understand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Slot {
    /// Nothing (unused entry).
    #[default]
    Empty,
    /// `piece` on `sq`.
    Board { piece: Piece, sq: Square },
    /// The `nth` (1-based) `piece` in `owner`'s hand.
    Hand {
        owner: Color,
        piece: HandPiece,
        nth: u32,
    },
}

impl Slot {
    /// The piece feature of this slot from `perspective` (None for kings).
    #[inline]
    #[must_use]
    pub fn feature(self, perspective: Color) -> Option<u16> {
        match self {
            Slot::Empty => None,
            Slot::Board { piece, sq } => board_feature_checked(perspective, piece, sq),
            Slot::Hand { owner, piece, nth } => Some(hand_feature(perspective, owner, piece, nth)),
        }
    }
}

impl Change {
    /// The change a null move makes: none.
    #[must_use]
    pub fn none() -> Self {
        Self::default()
    }

    /// The change `mv` (legal in `board`, not yet played) will make.
    #[must_use]
    pub fn of_move(board: &Board, mv: stera_rules::backend::types::Move32) -> Self {
        let mut change = Self::default();
        let us = board.turn();
        let to = mv.to_sq();
        if let Some(pt) = mv.dropped_piece() {
            if let Some(hp) = HandPiece::from_piece_type(pt) {
                let count = Hand::count_of(board.hand(us), hp);
                change.push_removed(Slot::Hand {
                    owner: us,
                    piece: hp,
                    nth: count,
                });
            }
            change.push_added(Slot::Board {
                piece: Piece::from_parts(us, pt),
                sq: to,
            });
            return change;
        }
        let from = mv.from_sq();
        let mover = board.piece_on(from);
        if mover.piece_type() == PieceType::KING {
            change.king_moved = Some(us);
        }
        change.push_removed(Slot::Board {
            piece: mover,
            sq: from,
        });
        let after = if mv.is_promotion() {
            mover.promote()
        } else {
            mover
        };
        change.push_added(Slot::Board {
            piece: after,
            sq: to,
        });
        let captured = board.piece_on(to);
        if !captured.is_empty() {
            change.push_removed(Slot::Board {
                piece: captured,
                sq: to,
            });
            if let Some(hp) = HandPiece::from_piece_type(captured.base_piece_type()) {
                let count = Hand::count_of(board.hand(us), hp);
                change.push_added(Slot::Hand {
                    owner: us,
                    piece: hp,
                    nth: count + 1,
                });
            }
        }
        change
    }

    fn push_removed(&mut self, slot: Slot) {
        if let Some(s) = self.removed.get_mut(usize::from(self.removed_len)) {
            *s = slot;
            self.removed_len += 1;
        }
    }

    fn push_added(&mut self, slot: Slot) {
        if let Some(s) = self.added.get_mut(usize::from(self.added_len)) {
            *s = slot;
            self.added_len += 1;
        }
    }

    /// The removed and added piece features from `perspective` (kings omitted).
    #[must_use]
    pub fn features(&self, perspective: Color) -> (Features4, Features4) {
        let mut removed = Features4::default();
        let mut added = Features4::default();
        for slot in &self.removed[..usize::from(self.removed_len)] {
            if let Some(f) = slot.feature(perspective) {
                removed.push(f);
            }
        }
        for slot in &self.added[..usize::from(self.added_len)] {
            if let Some(f) = slot.feature(perspective) {
                added.push(f);
            }
        }
        (removed, added)
    }
}

/// Up to four piece features (what one move removes or adds).
#[derive(Debug, Clone, Copy, Default)]
pub struct Features4 {
    len: u8,
    items: [u16; 4],
}

impl Features4 {
    fn push(&mut self, f: u16) {
        if let Some(s) = self.items.get_mut(usize::from(self.len)) {
            *s = f;
            self.len += 1;
        }
    }

    /// The features held.
    #[must_use]
    pub fn as_slice(&self) -> &[u16] {
        &self.items[..usize::from(self.len)]
    }
}
