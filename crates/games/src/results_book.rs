//! Book moves chosen by the results of games, and the learner that earns them.
//!
//! A book's values are a search's opinion; whether its move wins is what games
//! say (BENCHMARKS "From the start position": the moves a deeper search
//! prefers lost 41 Elo for the engine that played on from them). A
//! [`ResultsBook`] is a store's analysis with the game counters of its positions:
//! a move's results are its child position's counters, read from the mover's
//! view.
//!
//! * [`MoveRule::Results`](crate::MoveRule::Results) plays the move with the best
//!   [`results_value`]: its game score ([`Estimate`]), shrunk towards the win
//!   rate of its value by a few pseudo-games, back in centipawns; a move without
//!   games is worth its value and a move with many is worth its games. An
//!   export with `--by-results` writes the same values, so an engine that plays
//!   a book's best value plays the same moves.
//! * [`LearningPolicy`] plays by Thompson sampling over the same estimates (a
//!   normal approximation of each move's posterior), so that the moves that look
//!   best get the games and the others get enough to be found out: what
//!   `book-tools learn` plays against an opponent engine without a book.
//! * [`KeyPositions`]: the positions a learning run is judged by, and how many
//!   of them are settled ([`LearningPolicy::settled`]): what both learning front
//!   ends report and stop on.
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use stera_book::GameCounts;
//! use stera_games::{AnalysedBook, ResultsBook};
//! use stera_rules::Position;
//! // A book without a position plays nothing; results alone make no book move.
//! let empty = Arc::new(AnalysedBook::new(stera_book::Book::new()).unwrap());
//! let after = Position::from_position_command("startpos moves 2g2f").unwrap();
//! let book = ResultsBook::new(empty, HashMap::new());
//! // White, to move after 2g2f, lost one game there.
//! book.add(&[(book.count_key(&after), GameCounts::LOSS)]);
//! let start = Position::startpos();
//! assert_eq!(book.move_results(&start, "2g2f".parse().unwrap()), GameCounts::WIN);
//! assert_eq!(book.best_by_results(&start, 4.0), None);
//! ```

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_book::GameCounts;
pub use stera_book::results::{
    DEFAULT_PRIOR_GAMES, Estimate, WIN_RATE_SCALE, results_value, win_rate_of_value,
};
use stera_rules::{Color, Key, Move, Position};

use crate::book::{AnalysedBook, BookPolicy, BookSource, Candidate};
use crate::game::{Game, MoveSource};

mod settling;
pub use settling::{
    DEFAULT_SETTLED, KeyPositions, SettledCount, SettledThresholdError, check_settled_threshold,
};

/// A store's analysis with the game results of its positions.
pub struct ResultsBook {
    analysed: Arc<AnalysedBook>,
    /// Counters by the key they are stored under (see [`Self::count_key`]).
    counts: RwLock<HashMap<Key, GameCounts>>,
}

impl ResultsBook {
    /// `analysed` with the counters `counts` (as a store holds them: by position
    /// key, from the side to move's view).
    #[must_use]
    pub fn new(analysed: Arc<AnalysedBook>, counts: HashMap<Key, GameCounts>) -> Self {
        Self {
            analysed,
            counts: RwLock::new(counts),
        }
    }

    /// The analysis the moves come from.
    #[must_use]
    pub fn analysed(&self) -> &Arc<AnalysedBook> {
        &self.analysed
    }

    /// The key a position's counters are stored under ([`stera_book::Book::count_key`]):
    /// the key the book holds it by, its own or its colour-flipped twin's (as the
    /// coordinator's self-play games count them).
    #[must_use]
    pub fn count_key(&self, position: &Position) -> Key {
        self.analysed
            .book()
            .count_key(position.key(), position.flipped_key())
    }

    /// The counters of `position`, from its side to move's view.
    #[must_use]
    pub fn counts(&self, position: &Position) -> GameCounts {
        let key = self.count_key(position);
        self.read().get(&key).copied().unwrap_or_default()
    }

    /// The results of `mv` in `position` from the mover's view: the counters of
    /// the position it leads to, flipped.
    #[must_use]
    pub fn move_results(&self, position: &Position, mv: Move) -> GameCounts {
        let mut child = position.clone();
        child.do_move(mv);
        self.counts(&child).flipped()
    }

    /// Adds a game's counters (as [`Self::learning_counts`] gives them).
    pub fn add(&self, counts: &[(Key, GameCounts)]) {
        let mut table = self
            .counts
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for &(key, c) in counts {
            table.entry(key).or_default().add(c);
        }
    }

    /// Positions with counters.
    #[must_use]
    pub fn positions_with_games(&self) -> usize {
        self.read().len()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Key, GameCounts>> {
        // The table is only ever added to; a writer that panicked left whole
        // entries behind.
        self.counts
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What a game teaches about `learner`'s book moves: every position from the
    /// game's start to the one after `learner`'s last book move (each once), with
    /// the result from its side to move's view, under its [`Self::count_key`].
    /// Empty when `learner` played no book move.
    ///
    /// # Errors
    /// The game's start SFEN does not parse (games of [`crate::play_game`] always do).
    pub fn learning_counts(
        &self,
        game: &Game,
        learner: Color,
    ) -> Result<Vec<(Key, GameCounts)>, stera_rules::RulesError> {
        let mut position = Position::from_sfen(&game.start_sfen)?;
        let Some(last) = game
            .moves
            .iter()
            .enumerate()
            .filter(|(i, m)| {
                m.source == MoveSource::Book && mover_at(position.side_to_move(), *i) == learner
            })
            .map(|(i, _)| i)
            .next_back()
        else {
            return Ok(Vec::new());
        };
        let mut seen = std::collections::HashSet::new();
        let mut counts = Vec::with_capacity(last + 2);
        for ply in 0..=last + 1 {
            let key = self.count_key(&position);
            if seen.insert(key) {
                counts.push((key, game.result.outcome.counts_for(position.side_to_move())));
            }
            if ply <= last {
                position.do_move(game.moves[ply].mv);
            }
        }
        Ok(counts)
    }

    /// The moves of `position` with their results and estimates, best value
    /// first; `None` out of book.
    #[must_use]
    pub fn estimates(
        &self,
        position: &Position,
        prior_games: f64,
    ) -> Option<Vec<(Candidate, GameCounts, Estimate)>> {
        let candidates = self.analysed.candidates(position)?;
        let results = self.results_of(position, &candidates);
        Some(
            candidates
                .into_iter()
                .zip(results)
                .map(|(c, r)| (c, r, Estimate::new(r, c.value, prior_games)))
                .collect(),
        )
    }

    /// The move [`MoveRule::Results`](crate::MoveRule::Results) plays: the best
    /// [`results_value`] (ties: the first, the better book value), what `export
    /// --by-results` writes first.
    #[must_use]
    pub fn best_by_results(&self, position: &Position, prior_games: f64) -> Option<Move> {
        let candidates = self.analysed.candidates(position)?;
        let results = self.results_of(position, &candidates);
        let chosen = crate::MoveRule::Results { prior_games }.probabilities_with_results(
            &candidates,
            Some(&results),
            position.side_to_move(),
        )?;
        chosen.first().map(|&(mv, _)| mv)
    }

    /// The results of each of `candidates`, moves of `position`, in their order.
    fn results_of(&self, position: &Position, candidates: &[Candidate]) -> Vec<GameCounts> {
        candidates
            .iter()
            .map(|c| self.move_results(position, c.mv))
            .collect()
    }
}

/// The side that plays the `ply`-th move (0-based) of a game whose first mover is `first`.
fn mover_at(first: Color, ply: usize) -> Color {
    if ply.is_multiple_of(2) {
        first
    } else {
        first.flip()
    }
}

impl BookSource for ResultsBook {
    fn candidates(&self, position: &Position) -> Option<Vec<Candidate>> {
        self.analysed.candidates(position)
    }

    fn has_counts(&self) -> bool {
        false
    }

    fn has_results(&self) -> bool {
        true
    }

    fn move_results(
        &self,
        position: &Position,
        candidates: &[Candidate],
    ) -> Option<Vec<GameCounts>> {
        Some(self.results_of(position, candidates))
    }

    fn describe(&self) -> String {
        format!(
            "{} with results at {} positions",
            self.analysed.describe(),
            self.positions_with_games()
        )
    }
}

/// The learner's default window: moves more than this many centipawns below a
/// position's best value are never tried (a book's values spread over a few tens
/// of centipawns at the start; a move 100 cp worse is a mistake at any budget).
pub const DEFAULT_LEARNING_WINDOW: i32 = 100;

/// Thompson sampling over a [`ResultsBook`]'s moves within `margin` centipawns of
/// the best value: each move's estimate is drawn from its posterior (normal
/// approximation) and the largest draw is played. Deterministic in the `uniform`
/// number [`BookPolicy::choose`] gets, so a seeded game replays.
pub struct LearningPolicy {
    book: Arc<ResultsBook>,
    margin: i32,
    prior_games: f64,
}

impl LearningPolicy {
    /// Learns over `book`'s moves at most `margin` centipawns below each
    /// position's best value, with `prior_games` pseudo-games of a move's value.
    #[must_use]
    pub fn new(book: Arc<ResultsBook>, margin: i32, prior_games: f64) -> Self {
        Self {
            book,
            margin: margin.max(0),
            prior_games,
        }
    }

    /// The results the learner reads (and a caller adds finished games to).
    #[must_use]
    pub fn results(&self) -> &Arc<ResultsBook> {
        &self.book
    }

    /// The moves the learner considers in `position`, with their estimates.
    fn contenders(&self, position: &Position) -> Option<Vec<(Move, Estimate)>> {
        let estimates = self.book.estimates(position, self.prior_games)?;
        let best = estimates.iter().map(|e| e.0.value).max()?;
        let floor = best.saturating_sub(self.margin);
        let contenders: Vec<(Move, Estimate)> = estimates
            .into_iter()
            .filter(|e| e.0.value >= floor)
            .map(|e| (e.0.mv, e.2))
            .collect();
        (!contenders.is_empty()).then_some(contenders)
    }
}

/// How sure the learner is of a position's move: the move the results rule plays
/// now and the posterior probability that it is the best of the moves the
/// learner considers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settled {
    /// The move [`MoveRule::Results`](crate::MoveRule::Results) plays.
    pub best: Move,
    /// The probability that it is the best of the contenders (Monte Carlo over
    /// each move's normal posterior, the same one Thompson sampling draws from).
    pub probability: f64,
    /// Games through the position's contenders.
    pub games: u64,
    /// Contenders (moves within the learner's margin).
    pub contenders: usize,
}

/// Draws of [`LearningPolicy::settled`]: a standard error below 0.5 % on the
/// probability.
const SETTLED_DRAWS: u32 = 10_000;

impl LearningPolicy {
    /// How settled `position`'s move is; `None` out of book. Deterministic (the
    /// draws are seeded by the position).
    #[must_use]
    pub fn settled(&self, position: &Position) -> Option<Settled> {
        let contenders = self.contenders(position)?;
        let best = self.book.best_by_results(position, self.prior_games)?;
        let games = contenders
            .iter()
            .map(|(mv, _)| self.book.move_results(position, *mv).games())
            .sum();
        let Some(chosen) = contenders.iter().position(|(mv, _)| *mv == best) else {
            // The results rule's move lies outside the margin: the learner never
            // tries it against the others, so nothing is settled.
            return Some(Settled {
                best,
                probability: 0.0,
                games,
                contenders: contenders.len(),
            });
        };
        let mut rng = StdRng::seed_from_u64(position.key().0 as u64 ^ 0x5E77_1ED0);
        let mut wins = 0u32;
        for _ in 0..SETTLED_DRAWS {
            let mut top = (usize::MAX, f64::NEG_INFINITY);
            for (i, (_, estimate)) in contenders.iter().enumerate() {
                let draw = estimate.mean + estimate.deviation() * standard_normal(&mut rng);
                if draw > top.1 {
                    top = (i, draw);
                }
            }
            wins += u32::from(top.0 == chosen);
        }
        Some(Settled {
            best,
            probability: f64::from(wins) / f64::from(SETTLED_DRAWS),
            games,
            contenders: contenders.len(),
        })
    }
}

impl LearningPolicy {
    /// The position after the reply to `position` that the games played most
    /// (the learner's next position when it plays the other colour); `None`
    /// when no reply has games.
    #[must_use]
    pub fn most_played_reply(&self, position: &Position) -> Option<Position> {
        let (_, mv) = position
            .legal_moves()
            .into_iter()
            .map(|mv| (self.book.move_results(position, mv).games(), mv))
            .filter(|(games, _)| *games > 0)
            .max_by_key(|(games, _)| *games)?;
        let mut after = position.clone();
        after.do_move(mv);
        Some(after)
    }
}

impl BookPolicy for LearningPolicy {
    /// The move [`MoveRule::Results`](crate::MoveRule::Results) would play now.
    fn probabilities(&self, position: &Position) -> Option<Vec<(Move, f64)>> {
        let best = self.book.best_by_results(position, self.prior_games)?;
        Some(vec![(best, 1.0)])
    }

    fn choose(&self, position: &Position, uniform: f64) -> Option<Move> {
        let contenders = self.contenders(position)?;
        let seed = uniform.to_bits() ^ (position.key().0 as u64);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut best: Option<(Move, f64)> = None;
        for (mv, estimate) in contenders {
            let draw = estimate.mean + estimate.deviation() * standard_normal(&mut rng);
            if best.is_none_or(|(_, b)| draw > b) {
                best = Some((mv, draw));
            }
        }
        best.map(|(mv, _)| mv)
    }

    fn describe(&self) -> String {
        format!(
            "learning (Thompson sampling within {} cp, prior {} games) over {}",
            self.margin,
            self.prior_games,
            self.book.describe()
        )
    }
}

/// A standard normal draw (Box-Muller).
fn standard_normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests;
