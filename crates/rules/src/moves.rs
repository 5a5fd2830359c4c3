use std::fmt;
use std::str::FromStr;

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

impl Move {
    /// The raw 16-bit encoding.
    #[must_use]
    pub const fn raw(self) -> u16 {
        self.0
    }

    /// Rebuilds a move from [`Move::raw`]; `None` if the bits name no move.
    #[must_use]
    pub fn from_raw(raw: u16) -> Option<Self> {
        let m = rsshogi::types::Move::from_raw(raw);
        // A round trip through USI text rejects encodings that name no square.
        let usi = m.to_usi();
        rsshogi::types::Move::from_usi(&usi)
            .filter(|back| back.raw() == raw)
            .map(|_| Self(raw))
    }

    /// Parses USI text (`7g7f`, `8h2b+`, `P*5e`) without looking at a position.
    ///
    /// # Errors
    /// [`RulesError::MoveSyntax`] when the text is not a USI move.
    pub fn from_usi(usi: &str) -> Result<Self, RulesError> {
        rsshogi::types::Move::from_usi(usi)
            .filter(|m| m.to_usi() == usi)
            .map(|m| Self(m.raw()))
            .ok_or_else(|| RulesError::MoveSyntax(usi.to_owned()))
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

    pub(crate) const fn from_backend(m: rsshogi::types::Move) -> Self {
        Self(m.raw())
    }

    /// The move in the backend crate's representation (for the engine's hot paths).
    #[must_use]
    pub const fn backend(self) -> rsshogi::types::Move {
        rsshogi::types::Move::from_raw(self.0)
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.backend().to_usi())
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
