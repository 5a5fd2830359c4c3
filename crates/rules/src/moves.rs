use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::RulesError;

/// A shogi move in its 16-bit form (source, destination, promotion flag or dropped
/// piece). The same layout as YaneuraOu's `Move16`, so the raw value is a stable,
/// compact identifier: the book stores moves and orders them by it.
///
/// A `Move` does not know its position; [`crate::Position::parse_move`] checks legality.
///
/// ```
/// use stera_rules::Move;
/// let m: Move = "7g7f".parse().unwrap();
/// assert_eq!(m.to_string(), "7g7f");
/// assert_eq!("P*5e".parse::<Move>().unwrap().to_string(), "P*5e");
/// assert!("7g7".parse::<Move>().is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Move(u16);

/// Sorts `items` into the canonical move order: ascending [`Move::raw`] of the
/// move `mv` reads from each item. [`Position::legal_moves`](crate::Position::legal_moves)
/// returns moves in this order and stores keep one value per move in it, so a
/// value needs no move beside it; this is the one place the order is defined.
///
/// ```
/// use stera_rules::{Move, sort_canonical};
/// let mut moves: Vec<Move> = ["7g7f", "2g2f", "P*5e"].iter().map(|m| m.parse().unwrap()).collect();
/// sort_canonical(&mut moves, |m| *m);
/// assert!(moves.windows(2).all(|w| w[0].raw() < w[1].raw()));
/// ```
pub fn sort_canonical<T>(items: &mut [T], mut mv: impl FnMut(&T) -> Move) {
    items.sort_unstable_by_key(|item| mv(item).raw());
}

impl Move {
    /// The raw 16-bit encoding.
    #[must_use]
    pub const fn raw(self) -> u16 {
        self.0
    }

    /// Rebuilds a move from [`Move::raw`]; `None` if the bits name no move.
    #[must_use]
    pub fn from_raw(raw: u16) -> Option<Self> {
        // Book walks check millions of stored moves: look the answer up in a
        // table of all 65,536 encodings built once with the round trip below.
        static VALID: OnceLock<Box<[u64; 1024]>> = OnceLock::new();
        let valid = VALID.get_or_init(|| {
            let mut bits = Box::new([0u64; 1024]);
            for r in 0..=u16::MAX {
                if Self::round_trips(r) {
                    bits[usize::from(r >> 6)] |= 1 << (r & 63);
                }
            }
            bits
        });
        (valid[usize::from(raw >> 6)] >> (raw & 63) & 1 == 1).then_some(Self(raw))
    }

    /// True when the encoding survives a round trip through USI text (which
    /// rejects encodings that name no square or piece).
    fn round_trips(raw: u16) -> bool {
        let usi = rsshogi::types::Move::from_raw(raw).to_usi();
        rsshogi::types::Move::from_usi(&usi).is_some_and(|back| back.raw() == raw)
    }

    /// Parses USI text (`7g7f`, `8h2b+`, `P*5e`) without looking at a position.
    ///
    /// # Errors
    /// [`RulesError::MoveSyntax`] when the text is not a USI move.
    pub fn from_usi(usi: &str) -> Result<Self, RulesError> {
        rsshogi::types::Move::from_usi(usi)
            .filter(|m| m.to_usi() == usi)
            .map(|m| Self(m.raw()))
            .ok_or_else(|| RulesError::MoveSyntax(crate::excerpt(usi)))
    }

    /// True for a piece dropped from the hand.
    #[must_use]
    pub fn is_drop(self) -> bool {
        self.backend().is_drop()
    }

    /// True for a promoting board move.
    #[must_use]
    pub fn is_promotion(self) -> bool {
        self.backend().is_promotion()
    }

    /// The same move on the colour-flipped board ([`crate::Position::flipped`]):
    /// origin and destination squares turned 180 degrees; a drop keeps its piece.
    ///
    /// ```
    /// use stera_rules::Move;
    /// let flip = |usi: &str| usi.parse::<Move>().unwrap().flipped().to_string();
    /// assert_eq!(flip("7g7f"), "3c3d");
    /// assert_eq!(flip("8h2b+"), "2b8h+");
    /// assert_eq!(flip("P*5e"), "P*5e");
    /// assert_eq!(flip("G*1a"), "G*9i");
    /// ```
    #[must_use]
    pub fn flipped(self) -> Self {
        // Move16: destination in bits 0-6, origin (or dropped piece) in 7-13,
        // drop flag bit 14, promotion bit 15; squares count 0..=80 and the
        // turned square of s is 80 - s.
        let raw = self.0;
        let to = raw & 0x7f;
        let mut out = (raw & !0x7f) | (80 - to.min(80));
        if raw & (1 << 14) == 0 {
            let from = (raw >> 7) & 0x7f;
            out = (out & !(0x7f << 7)) | ((80 - from.min(80)) << 7);
        }
        Self(out)
    }

    pub(crate) const fn from_backend(m: rsshogi::types::Move) -> Self {
        Self(m.raw())
    }

    /// The move in the backend crate's representation (for the engine's hot paths).
    #[must_use]
    pub const fn backend(self) -> rsshogi::types::Move {
        rsshogi::types::Move::from_raw(self.0)
    }
}

impl Move {
    /// Writes the USI text into `buf` and returns it (no allocation; book exports
    /// print tens of millions of moves).
    pub fn write_usi(self, buf: &mut [u8; 5]) -> &str {
        let n = self.usi_bytes(buf);
        std::str::from_utf8(&buf[..n]).unwrap_or("?")
    }

    /// [`Move::write_usi`] as bytes: writes the USI text at the start of `buf`
    /// and returns its length (4, or 5 with a promotion). For writers of
    /// millions of lines, which copy the 5 bytes and keep the length.
    pub fn usi_bytes(self, buf: &mut [u8; 5]) -> usize {
        const PIECES: &[u8; 8] = b"?PLNSBRG";
        let b = self.backend();
        let square = |index: usize, out: &mut [u8]| {
            // Square index = file * 9 + rank, files 1..9 and ranks a..i.
            out[0] = b'1' + (index / 9) as u8;
            out[1] = b'a' + (index % 9) as u8;
        };
        if let Some(pt) = b.dropped_piece() {
            buf[0] = PIECES[usize::try_from(pt.raw()).unwrap_or(0).min(7)];
            buf[1] = b'*';
        } else {
            square(b.from_sq().to_index().min(80), &mut buf[0..2]);
        }
        square(b.to_sq().to_index().min(80), &mut buf[2..4]);
        if b.is_promotion() {
            buf[4] = b'+';
            5
        } else {
            4
        }
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 5];
        f.write_str(self.write_usi(&mut buf))
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Move({self})")
    }
}

impl FromStr for Move {
    type Err = RulesError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_usi(s)
    }
}

#[cfg(test)]
mod table_tests {
    use super::Move;

    /// The lookup table answers exactly what the USI round trip answers, for
    /// every one of the 65,536 encodings.
    #[test]
    fn from_raw_table_agrees_with_round_trip() {
        let mut real_moves = 0;
        for raw in 0..=u16::MAX {
            let m = Move::from_raw(raw);
            assert_eq!(m.is_some(), Move::round_trips(raw), "{raw:#06x}");
            let b = rsshogi::types::Move::from_raw(raw);
            real_moves += usize::from(m.is_some() && (b.is_drop() || b.from_sq() != b.to_sq()));
        }
        // Board moves (81 x 80 pairs of squares, with and without promotion) and
        // drops (7 kinds x 81 squares); the backend's text round trip also lets a
        // few from == to encodings through, which no legality check accepts.
        assert_eq!(real_moves, 81 * 80 * 2 + 7 * 81);
    }
}
