//! Game results at book positions: wins, draws and losses counted from the view
//! of the side to move there (three counters per position, never game records).
//!
//! ```
//! use stera_book::GameCounts;
//!
//! let mut at = GameCounts { wins: 1, draws: 0, losses: 0 };
//! at.add(GameCounts { wins: 0, draws: 1, losses: 1 });
//! assert_eq!(at.games(), 3);
//! assert_eq!(at.score(), Some(0.5)); // (1 + 1/2) / 3
//! // The player who moved into this position sees the losses as wins.
//! assert_eq!(at.flipped(), GameCounts { wins: 1, draws: 1, losses: 1 });
//! assert_eq!(GameCounts::decode(&at.encode()), Ok(at));
//! ```

use thiserror::Error;

/// Game results at a position, from the view of the side to move there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GameCounts {
    /// Games the side to move won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games the side to move lost.
    pub losses: u32,
}

/// Stored counters that are not [`GameCounts::ENCODED_LEN`] bytes long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("game counts of {len} bytes, expected {expected}", expected = GameCounts::ENCODED_LEN)]
pub struct GameCountsDecodeError {
    /// The length found.
    pub len: usize,
}

impl GameCounts {
    /// Bytes of [`GameCounts::encode`]: wins, draws, losses as u32 little-endian.
    pub const ENCODED_LEN: usize = 12;

    /// One won game.
    pub const WIN: Self = Self {
        wins: 1,
        draws: 0,
        losses: 0,
    };
    /// One drawn game.
    pub const DRAW: Self = Self {
        wins: 0,
        draws: 1,
        losses: 0,
    };
    /// One lost game.
    pub const LOSS: Self = Self {
        wins: 0,
        draws: 0,
        losses: 1,
    };

    /// Number of games counted.
    ///
    /// ```
    /// # use stera_book::GameCounts;
    /// assert_eq!(GameCounts { wins: 2, draws: 1, losses: 4 }.games(), 7);
    /// ```
    #[must_use]
    pub fn games(&self) -> u64 {
        u64::from(self.wins) + u64::from(self.draws) + u64::from(self.losses)
    }

    /// (wins + draws / 2) / games, in `0.0..=1.0`; `None` without games.
    ///
    /// ```
    /// # use stera_book::GameCounts;
    /// assert_eq!(GameCounts { wins: 1, draws: 1, losses: 2 }.score(), Some(0.375));
    /// assert_eq!(GameCounts::default().score(), None);
    /// ```
    #[must_use]
    pub fn score(&self) -> Option<f64> {
        let games = self.games();
        if games == 0 {
            return None;
        }
        // u64 -> f64 is exact below 2^53; three u32 sums stay far below.
        let (points, games) = (
            f64::from(self.wins) + f64::from(self.draws) / 2.0,
            games as f64,
        );
        Some(points / games)
    }

    /// Adds `other`'s counters to these, each saturating at `u32::MAX`.
    ///
    /// ```
    /// # use stera_book::GameCounts;
    /// let mut c = GameCounts { wins: u32::MAX, ..GameCounts::default() };
    /// c.add(GameCounts::WIN);
    /// assert_eq!(c.wins, u32::MAX);
    /// ```
    pub fn add(&mut self, other: Self) {
        self.wins = self.wins.saturating_add(other.wins);
        self.draws = self.draws.saturating_add(other.draws);
        self.losses = self.losses.saturating_add(other.losses);
    }

    /// The same games from the other side's view (wins and losses swapped): the
    /// counters of a child position read from the parent's side to move.
    ///
    /// ```
    /// # use stera_book::GameCounts;
    /// assert_eq!(GameCounts::WIN.flipped(), GameCounts::LOSS);
    /// ```
    #[must_use]
    pub fn flipped(self) -> Self {
        Self {
            wins: self.losses,
            draws: self.draws,
            losses: self.wins,
        }
    }

    /// The fixed 12-byte form: wins, draws, losses as u32 little-endian.
    #[must_use]
    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[..4].copy_from_slice(&self.wins.to_le_bytes());
        b[4..8].copy_from_slice(&self.draws.to_le_bytes());
        b[8..].copy_from_slice(&self.losses.to_le_bytes());
        b
    }

    /// Reads [`GameCounts::encode`].
    ///
    /// # Errors
    /// [`GameCountsDecodeError`] when `bytes` is not exactly 12 bytes long.
    pub fn decode(bytes: &[u8]) -> Result<Self, GameCountsDecodeError> {
        let b: &[u8; Self::ENCODED_LEN] = bytes
            .try_into()
            .map_err(|_| GameCountsDecodeError { len: bytes.len() })?;
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok(Self {
            wins: word(0),
            draws: word(4),
            losses: word(8),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_rejects_other_lengths() {
        let c = GameCounts {
            wins: 1,
            draws: 0x0102_0304,
            losses: u32::MAX,
        };
        let bytes = c.encode();
        assert_eq!(bytes[4..8], [4, 3, 2, 1]);
        assert_eq!(GameCounts::decode(&bytes), Ok(c));
        assert_eq!(
            GameCounts::decode(&bytes[..11]),
            Err(GameCountsDecodeError { len: 11 })
        );
        assert!(GameCounts::decode(&[0; 13]).is_err());
        assert_eq!(
            GameCountsDecodeError { len: 3 }.to_string(),
            "game counts of 3 bytes, expected 12"
        );
    }

    #[test]
    fn score_games_and_flip() {
        let c = GameCounts {
            wins: 3,
            draws: 2,
            losses: 5,
        };
        assert_eq!(c.games(), 10);
        assert_eq!(c.score(), Some(0.4));
        assert_eq!(c.flipped().score(), Some(0.6));
        assert_eq!(c.flipped().flipped(), c);
        let max = GameCounts {
            wins: u32::MAX,
            draws: u32::MAX,
            losses: u32::MAX,
        };
        assert_eq!(max.games(), 3 * u64::from(u32::MAX));
        assert_eq!(max.score(), Some(0.5));
    }
}
