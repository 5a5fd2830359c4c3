//! When learning has done its work: the key positions of a learning run and how
//! many of them are settled, the one rule `book-tools learn --stop-when-settled`
//! and the coordinator's `--learn-stop-when-settled` stop on and report.
//!
//! The key positions are the positions that matter most to a book's user: each
//! opening's position (the learner to move as Black) and the position after the
//! opponents' most played reply there (the learner to move as White). One is
//! settled when the move the results rule plays there is the best of the
//! learner's contenders with at least a given posterior probability
//! ([`LearningPolicy::settled`]); a position out of the book does not count.

use std::collections::HashSet;
use std::fmt;

use stera_rules::Position;
use thiserror::Error;

use super::LearningPolicy;
use crate::openings::Opening;

/// The posterior probability at which a key position counts as settled in
/// reports when no stopping probability is given.
pub const DEFAULT_SETTLED: f64 = 0.95;

/// A stopping probability outside (0.5, 1): at 0.5 or below a move is
/// "settled" while another is as likely the best; at 1 nothing ever is.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
#[error("must lie in (0.5, 1), not {0}")]
pub struct SettledThresholdError(pub f64);

/// `probability` when it lies in (0.5, 1).
///
/// # Errors
/// [`SettledThresholdError`] otherwise (NaN included); the caller names its flag.
pub fn check_settled_threshold(probability: f64) -> Result<f64, SettledThresholdError> {
    if probability > 0.5 && probability < 1.0 {
        Ok(probability)
    } else {
        Err(SettledThresholdError(probability))
    }
}

/// How many key positions are settled, of those the book holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettledCount {
    /// Key positions in the book whose move is settled.
    pub settled: usize,
    /// Key positions in the book.
    pub total: usize,
}

impl SettledCount {
    /// True when there is a key position in the book and every one is settled:
    /// when a run that stops when settled stops.
    #[must_use]
    pub fn all(&self) -> bool {
        self.total > 0 && self.settled == self.total
    }
}

impl fmt::Display for SettledCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} key positions settled", self.settled, self.total)
    }
}

/// The openings' positions, each once, whose moves (and the moves after the
/// most played reply there) a learning run is judged by.
#[derive(Debug, Clone)]
pub struct KeyPositions {
    positions: Vec<Position>,
    /// Openings they come from (one round of games plays each twice).
    openings: usize,
}

impl KeyPositions {
    /// The position each of `openings` reaches, each position once.
    #[must_use]
    pub fn of_openings(openings: &[Opening]) -> Self {
        let mut seen = HashSet::new();
        let positions = openings
            .iter()
            .filter_map(|opening| {
                let mut position = opening.start.clone();
                for &mv in &opening.moves {
                    position.do_move(mv);
                }
                seen.insert(position.key()).then_some(position)
            })
            .collect();
        Self {
            positions,
            openings: openings.len(),
        }
    }

    /// The openings' positions (without the positions after the replies, which
    /// change with the games).
    #[must_use]
    pub fn positions(&self) -> &[Position] {
        &self.positions
    }

    /// Games between two checks of the stopping rule: one round of the
    /// openings, each played with the learner as Black and as White, so that a
    /// check costs the same share of the games however many openings there are
    /// and every key position has had its games since the last.
    #[must_use]
    pub fn check_every(&self) -> u64 {
        (2 * self.openings as u64).max(1)
    }

    /// How many of the key positions (each opening's and the one after the
    /// most played reply there) the book holds, and how many of those are
    /// settled at `threshold` under `policy`.
    #[must_use]
    pub fn settled(&self, policy: &LearningPolicy, threshold: f64) -> SettledCount {
        let mut count = SettledCount::default();
        for position in &self.positions {
            for p in [Some(position.clone()), policy.most_played_reply(position)]
                .into_iter()
                .flatten()
            {
                if let Some(s) = policy.settled(&p) {
                    count.total += 1;
                    count.settled += usize::from(s.probability >= threshold);
                }
            }
        }
        count
    }
}
