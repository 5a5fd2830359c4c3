//! One learning run: what `book-tools learn` and the coordinator's learning
//! games decide alike. Where each game starts and who plays which colour
//! ([`crate::schedule`]), its seed (the run's seed and the game's number, no
//! clock), which opponent of the pool it meets, where the openings come from
//! (a file or the store's roots), the ids counted games get, when a growing
//! book is read again, and when every key position is settled and the run
//! stops. The front ends differ only in where the engines run (this machine,
//! or the workers) and where the games are counted (the store, or the
//! coordinator's dispatcher).
//!
//! Same seed, openings, pool and node-limited engines: the same games, on one
//! machine and on the cluster (with one game at a time: each game learns from
//! those counted before it).
//!
//! ```
//! use stera_engine::Limits;
//! use stera_engine::choice::EngineChoice;
//! use stera_games::learning_run::{LearningRun, LearningSettings};
//! use stera_games::opponent::{OpponentSpec, Pool};
//! use stera_games::openings::parse_lines;
//! use stera_games::{Budget, GameRules};
//! use stera_rules::Color;
//! let run = LearningRun::new(LearningSettings {
//!     openings: parse_lines(["startpos", "startpos moves 7g7f"], "example").unwrap(),
//!     pool: Pool::new(vec![OpponentSpec::of(
//!         EngineChoice::builtin(),
//!         Limits { nodes: Some(500), ..Limits::default() },
//!         0.5,
//!     )]).unwrap(),
//!     seed: 1,
//!     book_budget: Budget { limits: Limits { nodes: Some(1000), ..Limits::default() }, node_jitter: 0.5 },
//!     rules: GameRules::default(),
//!     stop_when_settled: None,
//! }).unwrap();
//! let (first, second, third) = (run.plan(0), run.plan(1), run.plan(2));
//! assert_eq!((first.opening, first.learner), (0, Color::Black));
//! assert_eq!((second.opening, second.learner), (0, Color::White));
//! assert_eq!(third.opening, 1);
//! assert_eq!(run.plan(5).seed, run.plan(5).seed); // no clock in a seed
//! ```

use std::path::Path;

use stera_engine::Player;
use stera_rules::Color;
use thiserror::Error;

use crate::Game;
use crate::book::BookPolicy;
use crate::openings::{self, Opening, OpeningsError};
use crate::opponent::Pool;
use crate::play::{Budget, PlayError, PlayOptions};
use crate::referee::GameRules;
use crate::results_book::LearningPolicy;
use crate::results_book::{DEFAULT_SETTLED, KeyPositions, SettledCount};
use crate::schedule::{self, seat};

/// What a learning run is given.
#[derive(Debug, Clone)]
pub struct LearningSettings {
    /// Where games start, in turn, each with the learner Black and White.
    pub openings: Vec<Opening>,
    /// The opponents and their weights.
    pub pool: Pool,
    /// The run's seed.
    pub seed: u64,
    /// The book side's engine budget out of book.
    pub book_budget: Budget,
    /// The game rules.
    pub rules: GameRules,
    /// Stop once every key position is settled at this probability.
    pub stop_when_settled: Option<f64>,
}

/// A learning run that cannot start.
#[derive(Debug, Error)]
pub enum LearningRunError {
    #[error("no opening to play from")]
    NoOpenings,
    #[error(transparent)]
    Openings(#[from] OpeningsError),
}

/// One game of a run, as [`LearningRun::plan`] decides it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GamePlan {
    /// The game's number in the run, from 0.
    pub index: u64,
    /// Its opening, an index into the run's openings.
    pub opening: usize,
    /// The learner's colour.
    pub learner: Color,
    /// The seed of its book and jitter draws.
    pub seed: u64,
    /// Its opponent, an index into the pool.
    pub opponent: usize,
}

/// A learning run: see the module's documentation.
#[derive(Debug, Clone)]
pub struct LearningRun {
    settings: LearningSettings,
    key_positions: KeyPositions,
}

impl LearningRun {
    /// The run of `settings`.
    ///
    /// # Errors
    /// No opening.
    pub fn new(settings: LearningSettings) -> Result<Self, LearningRunError> {
        if settings.openings.is_empty() {
            return Err(LearningRunError::NoOpenings);
        }
        let key_positions = KeyPositions::of_openings(&settings.openings);
        Ok(Self {
            settings,
            key_positions,
        })
    }

    /// The openings, in turn.
    #[must_use]
    pub fn openings(&self) -> &[Opening] {
        &self.settings.openings
    }

    /// The pool of opponents.
    #[must_use]
    pub fn pool(&self) -> &Pool {
        &self.settings.pool
    }

    /// Game `index`: the opening goes round, the learner's colour alternates
    /// (each opening is a pair), the opponent is drawn by weight from the
    /// game's seed.
    #[must_use]
    pub fn plan(&self, index: u64) -> GamePlan {
        let (opening, learner) = schedule::pair_slot(index, self.settings.openings.len());
        let seed = schedule::game_seed(self.settings.seed, index);
        let opponent = self.settings.pool.pick(schedule::unit_draw(seed));
        GamePlan {
            index,
            opening,
            learner,
            seed,
            opponent,
        }
    }

    /// Plays `plan`: the learner follows `policy` and plays `book_player` out
    /// of book at the run's book budget; the opponent plays
    /// `opponent_player`, no book, at its own budget.
    ///
    /// # Errors
    /// An engine failure or an illegal opening move.
    pub fn play(
        &self,
        plan: &GamePlan,
        policy: &dyn BookPolicy,
        book_player: &mut dyn Player,
        opponent_player: &mut dyn Player,
    ) -> Result<Game, PlayError> {
        let opening = &self.settings.openings[plan.opening % self.settings.openings.len()];
        let spec = &self.settings.pool.members()[plan.opponent];
        let options = PlayOptions {
            rules: self.settings.rules,
            limits: self.settings.book_budget.limits,
            seed: plan.seed,
            node_jitter: self.settings.book_budget.node_jitter,
        };
        schedule::play_as(
            opening,
            seat(book_player, Some(policy), self.settings.book_budget),
            seat(opponent_player, None, spec.budget_per_move()),
            plan.learner,
            &options,
        )
    }

    /// The key positions the run is judged by.
    #[must_use]
    pub fn key_positions(&self) -> &KeyPositions {
        &self.key_positions
    }

    /// The probability at which a key position counts as settled: the
    /// stopping rule's, else [`DEFAULT_SETTLED`].
    #[must_use]
    pub fn settled_at(&self) -> f64 {
        self.settings.stop_when_settled.unwrap_or(DEFAULT_SETTLED)
    }

    /// True when the stopping rule is checked after `counted` games: after
    /// each round of the openings (every opening as Black and as White).
    #[must_use]
    pub fn check_due(&self, counted: u64) -> bool {
        counted > 0 && counted.is_multiple_of(self.key_positions.check_every())
    }

    /// How many key positions `policy` has settled.
    #[must_use]
    pub fn settled(&self, policy: &LearningPolicy) -> SettledCount {
        self.key_positions.settled(policy, self.settled_at())
    }

    /// True when the run stops at `count`: it stops when settled, and every
    /// key position is.
    #[must_use]
    pub fn stops(&self, count: &SettledCount) -> bool {
        self.settings.stop_when_settled.is_some() && count.all()
    }
}

/// The openings of a run: the file's when one is given, else the store's
/// roots (position commands), named `roots_label` in errors. One reader for
/// every front end.
///
/// # Errors
/// A file that cannot be read or a line that is no position.
pub fn openings_of(
    file: Option<&Path>,
    roots: &[String],
    roots_label: &str,
) -> Result<Vec<Opening>, OpeningsError> {
    match file {
        Some(file) => openings::read_file(file),
        None => openings::parse_lines(roots.iter().map(String::as_str), roots_label),
    }
}

/// The id of the first game counted after a store's games (whose highest id
/// is `max_stored`): ids go on from the store's, so a game is counted once
/// and a later run never reuses an id.
#[must_use]
pub fn first_game_id(max_stored: Option<u64>) -> u64 {
    max_stored.map_or(0, |m| m.saturating_add(1))
}

/// True when a book of `book_len` positions has grown enough since a snapshot
/// of `snapshot_len` to be read again (learning's policy and the self-play
/// games' openings): at least [`REFRESH_MIN_GROWTH`] positions and a
/// [`REFRESH_SHARE`]th of the book, so that a 15M-position book is not cloned
/// and analysed again for every few hundred positions.
///
/// ```
/// use stera_games::learning_run::book_grew_enough;
/// assert!(!book_grew_enough(300, 315));
/// assert!(book_grew_enough(300, 316));
/// assert!(!book_grew_enough(1_000_000, 1_040_000));
/// assert!(book_grew_enough(1_000_000, 1_050_000));
/// assert!(!book_grew_enough(500, 400)); // read smaller: not again
/// ```
#[must_use]
pub fn book_grew_enough(snapshot_len: u64, book_len: u64) -> bool {
    let grown = book_len.saturating_sub(snapshot_len);
    grown >= REFRESH_MIN_GROWTH.max(snapshot_len / REFRESH_SHARE)
}

/// New positions that make a snapshot worth taking again, at least.
pub const REFRESH_MIN_GROWTH: u64 = 16;
/// ... and at least this share (1/N, 5 %) of the book.
pub const REFRESH_SHARE: u64 = 20;
