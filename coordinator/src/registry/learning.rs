//! What the status line, the status document, the dashboard and the metrics
//! show of the run's learning games. Two writers, as learning has two halves:
//! the game threads (`learn::driver`) publish the target, the pace and the
//! key positions; the dispatcher (`learn::ledger`, through `kinds`) the games
//! counted per opponent. Readers take a [`LearningStatus`], the Status reply's.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use stera_proto::v1::{LearningOpponent, LearningStatus};

/// The learning games of this run against one opponent of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpponentGames {
    /// The store's number of the opponent, from 1 (as `book-tools stats` and
    /// `--opponents` show it).
    pub number: u32,
    /// Its identity as stored (engine identity and budget).
    pub identity: String,
    /// Games recorded against it in this run.
    pub games: u64,
    /// Games recorded against it in the store (every run).
    pub games_stored: u64,
}

/// The learning figures of this run (all zero without learning games).
#[derive(Debug, Default)]
pub struct LearningBoard {
    /// `--learn-games`.
    target: AtomicU64,
    /// After how many games counted, the games per second since the first
    /// started and the seconds left to the target at that rate (one lock: the
    /// game threads publish in any order, the latest count wins).
    pace: Mutex<(u64, f64, u64)>,
    key_settled: AtomicU64,
    key_total: AtomicU64,
    /// The probability at which a key position counts as settled (`f64` bits).
    settled_probability: AtomicU64,
    /// Every key position settled under `--learn-stop-when-settled`.
    all_settled: AtomicBool,
    /// By number.
    opponents: Mutex<Vec<OpponentGames>>,
}

impl LearningBoard {
    /// A run of `target` games starts, key positions settled at `probability`.
    pub fn start(&self, target: u64, probability: f64) {
        self.target.store(target, Ordering::Relaxed);
        self.settled_probability
            .store(probability.to_bits(), Ordering::Relaxed);
    }

    /// The run's target (0: no learning games).
    pub fn target(&self) -> u64 {
        self.target.load(Ordering::Relaxed)
    }

    /// After `counted` games, games per second and the seconds left to the
    /// target at that rate; an earlier count published late changes nothing.
    pub fn set_pace(&self, counted: u64, per_second: f64, left_secs: u64) {
        let mut pace = self
            .pace
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if counted >= pace.0 {
            *pace = (counted, per_second, left_secs);
        }
    }

    /// `settled` of `total` key positions are settled.
    pub fn set_key_positions(&self, settled: usize, total: usize) {
        self.key_settled.store(settled as u64, Ordering::Relaxed);
        self.key_total.store(total as u64, Ordering::Relaxed);
    }

    /// Every key position is settled: no new game starts (nothing is left to
    /// wait for but the games in flight).
    pub fn set_all_settled(&self) {
        self.all_settled.store(true, Ordering::Relaxed);
        self.pace
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .2 = 0;
    }

    /// The games of this run per opponent, as the dispatcher counted them.
    pub fn set_opponents(&self, opponents: Vec<OpponentGames>) {
        *self
            .opponents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = opponents;
    }

    /// The games of this run per opponent, by number.
    pub fn opponents(&self) -> Vec<OpponentGames> {
        self.opponents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Key positions settled and their number.
    pub fn key_positions(&self) -> (u64, u64) {
        (
            self.key_settled.load(Ordering::Relaxed),
            self.key_total.load(Ordering::Relaxed),
        )
    }

    /// Games per second and the seconds left.
    pub fn pace(&self) -> (f64, u64) {
        let (_, per_second, left_secs) = *self
            .pace
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (per_second, left_secs)
    }

    /// The Status reply's learning figures, `games` counted in this run.
    pub fn status(&self, games: u64) -> LearningStatus {
        let (games_per_second, left_secs) = self.pace();
        let (key_positions_settled, key_positions) = self.key_positions();
        LearningStatus {
            games,
            target: self.target(),
            games_per_second,
            left_secs,
            key_positions_settled,
            key_positions,
            settled_probability: f64::from_bits(self.settled_probability.load(Ordering::Relaxed)),
            all_settled: self.all_settled.load(Ordering::Relaxed),
            opponents: self
                .opponents()
                .into_iter()
                .map(|o| LearningOpponent {
                    number: o.number,
                    identity: o.identity,
                    games: o.games,
                    games_stored: o.games_stored,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_carries_what_both_halves_published() {
        let board = LearningBoard::default();
        assert_eq!(board.status(0), LearningStatus::default());
        board.start(400, 0.95);
        board.set_pace(8, 2.5, 52);
        // The seventh game's figures, published after the eighth's.
        board.set_pace(7, 2.4, 60);
        board.set_key_positions(3, 12);
        board.set_opponents(vec![OpponentGames {
            number: 2,
            identity: "e at 60 nodes".into(),
            games: 7,
            games_stored: 19,
        }]);
        let s = board.status(9);
        assert_eq!((s.games, s.target, s.left_secs), (9, 400, 52));
        assert!((s.games_per_second - 2.5).abs() < 1e-12);
        assert!((s.settled_probability - 0.95).abs() < 1e-12);
        assert_eq!((s.key_positions_settled, s.key_positions), (3, 12));
        assert!(!s.all_settled);
        assert_eq!(s.opponents.len(), 1);
        assert_eq!(
            (
                s.opponents[0].number,
                s.opponents[0].games,
                s.opponents[0].games_stored
            ),
            (2, 7, 19)
        );
        board.set_all_settled();
        let s = board.status(9);
        assert!(s.all_settled);
        assert_eq!(s.left_secs, 0);
    }
}
