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

/// Centipawns of the logistic that turns a value into a win rate and back: the
/// scale YaneuraOu's tools and most shogi engines use (`1 / (1 + exp(-v / 600))`).
pub const WIN_RATE_SCALE: f64 = 600.0;

/// The default weight of a move's value against its games, in games: a handful,
/// so that a few games cannot overturn a value but a few hundred decide.
pub const DEFAULT_PRIOR_GAMES: f64 = 4.0;

/// True for a usable `--prior-games`: a finite number of games, 0 or more.
///
/// ```
/// use stera_book::results::prior_games_valid;
/// assert!(prior_games_valid(0.0) && prior_games_valid(4.0));
/// assert!(!prior_games_valid(-1.0) && !prior_games_valid(f64::NAN));
/// ```
#[must_use]
pub fn prior_games_valid(games: f64) -> bool {
    games >= 0.0 && games.is_finite()
}

/// The win rate a value in centipawns stands for.
///
/// ```
/// use stera_book::results::win_rate_of_value;
/// assert_eq!(win_rate_of_value(0), 0.5);
/// assert!(win_rate_of_value(100) > 0.5 && win_rate_of_value(-100) < 0.5);
/// ```
#[must_use]
pub fn win_rate_of_value(cp: i32) -> f64 {
    1.0 / (1.0 + (-f64::from(cp) / WIN_RATE_SCALE).exp())
}

/// What a move is worth to its mover, from its games and its value.
///
/// ```
/// use stera_book::GameCounts;
/// use stera_book::results::{Estimate, win_rate_of_value};
/// // No games: the win rate of the value.
/// let none = Estimate::new(GameCounts::default(), 0, 4.0);
/// assert_eq!(none.mean, win_rate_of_value(0));
/// // 100 games at 0.7 outweigh four pseudo-games at 0.5.
/// let many = Estimate::new(GameCounts { wins: 70, draws: 0, losses: 30 }, 0, 4.0);
/// assert!((many.mean - (70.0 + 2.0) / 104.0).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The expected score in `0..=1`: `(points + prior · p(value)) / (games + prior)`.
    pub mean: f64,
    /// Games plus the prior's pseudo-games.
    pub weight: f64,
}

impl Estimate {
    /// The estimate of a move with `results` (from its mover's view) and book
    /// `value`, shrunk towards the value's win rate by `prior_games`.
    #[must_use]
    pub fn new(results: GameCounts, value: i32, prior_games: f64) -> Self {
        let prior = prior_games.max(0.0);
        let games = results.games() as f64;
        let points = f64::from(results.wins) + f64::from(results.draws) / 2.0;
        let weight = games + prior;
        let mean = if weight > 0.0 {
            (points + prior * win_rate_of_value(value)) / weight
        } else {
            win_rate_of_value(value)
        };
        Self { mean, weight }
    }

    /// The standard deviation of the mean (a normal approximation of its
    /// posterior: `sqrt(m (1 - m) / (weight + 1))`).
    #[must_use]
    pub fn deviation(&self) -> f64 {
        (self.mean * (1.0 - self.mean) / (self.weight + 1.0)).sqrt()
    }
}

/// The value a move is written and chosen by when its games count: its book
/// `value` where it has no games or is a mate (games do not overturn a proof),
/// else its [`Estimate`] turned back into centipawns by the same logistic,
/// kept out of the mate range. `export --by-results` writes it and
/// `match --book-moves results` plays its best, so the two agree.
///
/// ```
/// use stera_book::GameCounts;
/// use stera_book::results::results_value;
/// assert_eq!(results_value(GameCounts::default(), 25, 4.0), 25);
/// // 3 wins in 4 games, no prior: 600 ln 3 = 659.
/// let c = GameCounts { wins: 3, draws: 0, losses: 1 };
/// assert_eq!(results_value(c, 0, 0.0), 659);
/// // A proven mate stays.
/// assert_eq!(results_value(c, -31_990, 4.0), -31_990);
/// ```
#[must_use]
pub fn results_value(results: GameCounts, value: i32, prior_games: f64) -> i32 {
    if results.games() == 0 || stera_rules::value::is_mate(value) {
        return value;
    }
    let bound = stera_rules::value::MATE_IN_MAX_PLY - 1;
    let mean = Estimate::new(results, value, prior_games).mean;
    let cp = WIN_RATE_SCALE * (mean / (1.0 - mean)).ln();
    if cp.is_nan() {
        return value;
    }
    // Clamped in f64 first: a score of 1 or 0 is an infinite logit.
    cp.clamp(-f64::from(bound), f64::from(bound)).round() as i32
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
