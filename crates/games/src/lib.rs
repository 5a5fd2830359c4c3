//! Games: one implementation of the game rules for every component (the worker
//! that plays, the coordinator that checks, `book-tools match`), and what games
//! need around them.
//!
//! * [`game`]: [`Game`], [`GameMove`] (with its source and optional engine
//!   score), [`GameResult`] ([`Outcome`] and [`Termination`]).
//! * [`referee`]: [`Referee`] applies the rules while a game is played
//!   (mate, sennichite, perpetual check, declaration, resignation, adjudication,
//!   ply limit); [`verify`] checks a reported game and its claimed result.
//! * [`declaration`]: the CSA 27-point entering-king rule.
//! * [`book`]: following a book ([`BookPolicy`], [`SoftmaxPolicy`] over the
//!   tera-shock values).
//! * [`results_book`]: book moves chosen by game results ([`ResultsBook`],
//!   [`MoveRule::Results`]) and the Thompson-sampling [`LearningPolicy`] that
//!   earns them against an opponent engine.
//! * [`opponent`]: learning opponents, an engine and a budget ([`OpponentSpec`]),
//!   and a weighted [`Pool`](opponent::Pool) of them.
//! * [`thinker`]: who thought a position, an engine at a budget (the identity
//!   opponents are counted under too), and when two thinkers agree.
//! * [`openings`]: where games start ([`Opening`]), read from openings files and
//!   position lines by one bounded reader.
//! * [`play`]: [`play_game`] between two [`stera_engine::Player`]s with books:
//!   the one game loop every game of the product is played by.
//! * [`schedule`]: which opening, colour and seed game n of a run gets.
//! * [`search_player`]: a [`stera_engine::Player`] whose moves the workers
//!   search ([`SearchPlayer`] over a [`search_player::MoveSearch`] transport).
//! * [`learning_run`]: one learning run ([`LearningRun`]), what `book-tools
//!   learn` and the coordinator's learning games decide alike.
//! * [`stats`]: score, Elo with a 95 % interval, likelihood of superiority.
//! * [`csa`]: games as CSA text.
//!
//! ```
//! use stera_games::{GameMove, GameRules, MoveSource, Outcome, Termination, verify};
//! use stera_rules::Move;
//! // Black resigns after 7g7f 3c3d: White wins.
//! let moves: Vec<GameMove> = ["7g7f", "3c3d"]
//!     .iter()
//!     .map(|m| GameMove::new(m.parse::<Move>().unwrap(), MoveSource::Engine))
//!     .collect();
//! let claimed = stera_games::GameResult {
//!     outcome: Outcome::WhiteWins,
//!     termination: Termination::Resignation,
//! };
//! let verified = verify("startpos", &moves, &claimed, &GameRules::default()).unwrap();
//! assert_eq!(verified.plies, 2);
//! assert_eq!(verified.positions.len(), 3);
//! ```

pub mod book;
pub mod csa;
pub mod declaration;
pub mod game;
pub mod games_file;
pub mod learning_run;
pub mod openings;
pub mod opponent;
pub mod play;
pub mod referee;
pub mod results_book;
pub mod schedule;
pub mod search_player;
pub mod stats;
pub mod thinker;

pub use book::{
    AnalysedBook, BookPolicy, BookSource, Candidate, MoveRule, RuledBook, SoftmaxPolicy,
};
pub use game::{Game, GameMove, GameResult, MoveSource, Outcome, Termination};
pub use learning_run::{GamePlan, LearningRun, LearningSettings};
pub use openings::{Opening, OpeningsError};
pub use opponent::{OpponentSpec, Pool};
pub use play::{Budget, PlayError, PlayOptions, Side, play_game, play_game_with_budgets};
pub use referee::{
    Adjudication, DEFAULT_ADJUDICATE_PLIES, DEFAULT_PLY_LIMIT, GameError, GameRules, Referee,
    Verified, Visited, verify,
};
pub use results_book::{LearningPolicy, ResultsBook, Settled};
pub use search_player::{Route, SearchPlayer};

/// The default seed of games' draws (`--play-seed` of the coordinator and of
/// `book-tools match`, `--learn-seed` of both learners): one default, so that
/// the same flags give the same games in every binary.
pub const DEFAULT_PLAY_SEED: u64 = 1;

/// The default node budget per move of the book side's engine in learning
/// games (`--learn-nodes` of the coordinator, `book-tools learn` without
/// `--nodes`, `--depth` or `--time-ms`): the budget a book is made for.
pub const DEFAULT_LEARN_NODES: u64 = 1000;

/// The default number of learning games played at once
/// (`--learn-concurrency` of the coordinator and of `book-tools learn`): one,
/// so that a seed gives the same learning run (each game learns from those
/// counted before it).
pub const DEFAULT_LEARN_CONCURRENCY: usize = 1;
