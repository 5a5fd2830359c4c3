//! Playing one game: two sides, each an engine [`Player`] and optionally a book,
//! refereed by [`Referee`].

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_engine::{EvalError, Limits, Player, PlayerMove};
use stera_rules::{Color, Move, Position};
use thiserror::Error;

use crate::book::BookPolicy;
use crate::game::{Game, GameMove, MoveSource};
use crate::referee::{GameError, GameRules, Referee};

/// One side of a game.
pub struct Side<'a> {
    /// The engine that plays when the book has no move.
    pub player: &'a mut dyn Player,
    /// The side's book, if it has one.
    pub book: Option<&'a dyn BookPolicy>,
}

/// How a game is played.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlayOptions {
    pub rules: GameRules,
    /// The engines' budget per move.
    pub limits: Limits,
    /// Seed of the book draws (and of the node jitter): the same seed, books
    /// and deterministic engines give the same game.
    pub seed: u64,
    /// Node-limit jitter as a fraction (0 to 1): each engine move gets
    /// `nodes × (1 + jitter × u)` with `u` uniform in [-1, 1], drawn from the
    /// seed, so that engines deterministic at a node limit do not replay the same
    /// game. 0 (the default) keeps every move at the limit.
    pub node_jitter: f64,
}

/// The default node jitter of `book-tools match` and `learn` at a node limit
/// (±50 %): the least of 0, 0.1, 0.3 and 0.5 at which a match on a small
/// single-root book from its 30 ply-1 positions, each used for 3 or 4 pairs,
/// played at least 95 % distinct games (the built-in engine at 1,000 nodes, 200
/// games: 30 %, 60.5 %, 86.5 % and 96 % distinct); it keeps the mean budget
/// (BENCHMARKS "Distinct games by node jitter").
pub const DEFAULT_NODE_JITTER: f64 = 0.5;

/// One side's budget per engine move: its limits and their node jitter. A
/// match against another engine gives each side its own
/// ([`play_game_with_budgets`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// The engine's limits per move.
    pub limits: Limits,
    /// Node-limit jitter as a fraction (0 to 1), as [`PlayOptions::node_jitter`].
    pub node_jitter: f64,
}

impl Budget {
    /// The limits of one engine move: [`Budget::limits`] with the node limit
    /// jittered by `uniform` (in [0, 1)) when jitter is on.
    ///
    /// ```
    /// use stera_engine::Limits;
    /// use stera_games::play::Budget;
    /// let budget = Budget {
    ///     limits: Limits { nodes: Some(1000), ..Limits::default() },
    ///     node_jitter: 0.2,
    /// };
    /// assert_eq!(budget.move_limits(0.0).nodes, Some(800));
    /// assert_eq!(budget.move_limits(0.5).nodes, Some(1000));
    /// // Without a node limit there is nothing to jitter.
    /// let depth = Budget { limits: Limits { depth: Some(2), ..Limits::default() }, node_jitter: 0.2 };
    /// assert_eq!(depth.move_limits(0.0), depth.limits);
    /// ```
    #[must_use]
    pub fn move_limits(&self, uniform: f64) -> Limits {
        let jitter = self.node_jitter.clamp(0.0, 1.0);
        match self.limits.nodes {
            Some(nodes) if jitter > 0.0 => {
                let factor = 1.0 + jitter * (2.0 * uniform - 1.0);
                Limits {
                    nodes: Some(((nodes as f64 * factor).round() as u64).max(1)),
                    ..self.limits
                }
            }
            _ => self.limits,
        }
    }
}

impl PlayOptions {
    /// The budget both sides play with in [`play_game`].
    #[must_use]
    pub fn budget(&self) -> Budget {
        Budget {
            limits: self.limits,
            node_jitter: self.node_jitter,
        }
    }

    /// The limits of one engine move: [`PlayOptions::limits`] with the node
    /// limit jittered by `uniform` (in [0, 1)) when jitter is on.
    ///
    /// ```
    /// use stera_engine::Limits;
    /// use stera_games::PlayOptions;
    /// let options = PlayOptions {
    ///     limits: Limits { nodes: Some(1000), ..Limits::default() },
    ///     node_jitter: 0.2,
    ///     ..PlayOptions::default()
    /// };
    /// assert_eq!(options.move_limits(0.0).nodes, Some(800));
    /// assert_eq!(options.move_limits(0.5).nodes, Some(1000));
    /// ```
    #[must_use]
    pub fn move_limits(&self, uniform: f64) -> Limits {
        self.budget().move_limits(uniform)
    }
}

/// Mixed into the seed of the jitter draws, so that they do not repeat the book
/// draws.
const JITTER_STREAM: u64 = 0x6A09_E667_F3BC_C909;

/// Why a game could not be played to its end.
#[derive(Debug, Error)]
pub enum PlayError {
    #[error("the {color:?} engine failed")]
    Engine {
        color: Color,
        #[source]
        source: EvalError,
    },
    #[error(transparent)]
    Game(#[from] GameError),
}

/// Plays a game from `start`: first the `opening` moves, then each side's book
/// move while its position is in its book, otherwise its engine's move, until
/// the rules end the game or a side resigns or declares.
///
/// Both players get [`Player::new_game`] first. Book moves carry no score (the
/// adjudication counts engine scores only). The book draws come from one
/// generator seeded with [`PlayOptions::seed`], one draw per book move.
///
/// # Errors
/// An engine failure ([`PlayError::Engine`], naming the side), an illegal
/// opening move, or bad rules.
pub fn play_game<'a>(
    start: &Position,
    opening: &[Move],
    black: Side<'a>,
    white: Side<'a>,
    options: &PlayOptions,
) -> Result<Game, PlayError> {
    let budget = options.budget();
    play_game_with_budgets(start, opening, black, white, options, [budget, budget])
}

/// [`play_game`] with a budget for each colour (`budgets[0]` Black's,
/// `budgets[1]` White's) instead of [`PlayOptions::limits`] and
/// [`PlayOptions::node_jitter`]: two engines each at its own limits. The
/// jitter draws come from one generator seeded with [`PlayOptions::seed`], one
/// draw per engine move whichever side plays it, so equal budgets give the
/// games of [`play_game`].
///
/// # Errors
/// As [`play_game`].
pub fn play_game_with_budgets<'a>(
    start: &Position,
    opening: &[Move],
    black: Side<'a>,
    white: Side<'a>,
    options: &PlayOptions,
    budgets: [Budget; 2],
) -> Result<Game, PlayError> {
    let books = [black.book, white.book];
    let mut players = [black.player, white.player];
    play_loop(start, opening, &mut players, books, options, budgets)
}

/// One engine on both sides, no book: a self-play game (the coordinator's
/// self-play games, both sides searched by the book's workers), the same loop
/// as every other game.
///
/// # Errors
/// As [`play_game`].
pub fn play_self_game(
    start: &Position,
    opening: &[Move],
    player: &mut dyn Player,
    options: &PlayOptions,
) -> Result<Game, PlayError> {
    let budget = options.budget();
    play_loop(
        start,
        opening,
        &mut [player],
        [None, None],
        options,
        [budget, budget],
    )
}

/// The game loop: `players` holds one engine per colour, or one for both.
fn play_loop(
    start: &Position,
    opening: &[Move],
    players: &mut [&mut dyn Player],
    books: [Option<&dyn BookPolicy>; 2],
    options: &PlayOptions,
    budgets: [Budget; 2],
) -> Result<Game, PlayError> {
    for (player, color) in players.iter_mut().zip([Color::Black, Color::White]) {
        player
            .new_game()
            .map_err(|source| PlayError::Engine { color, source })?;
    }
    let mut referee = Referee::new(start.clone(), options.rules)?;
    for &mv in opening {
        if referee.result().is_some() {
            break;
        }
        referee.play(GameMove::new(mv, MoveSource::Opening))?;
    }
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut jitter = StdRng::seed_from_u64(options.seed ^ JITTER_STREAM);
    let last = players.len() - 1;
    while referee.result().is_none() {
        let color = referee.position().side_to_move();
        let index = usize::from(color == Color::White);
        if let Some(book) = books[index]
            && let Some(mv) = book.choose(referee.position(), rng.random::<f64>())
        {
            referee.play(GameMove::new(mv, MoveSource::Book))?;
            continue;
        }
        let answer = players[index.min(last)]
            .play(
                referee.position(),
                &budgets[index].move_limits(jitter.random::<f64>()),
            )
            .map_err(|source| PlayError::Engine { color, source })?;
        match answer {
            PlayerMove::Move { mv, score } => {
                referee.play(GameMove {
                    mv,
                    score,
                    source: MoveSource::Engine,
                })?;
            }
            PlayerMove::Resign => {
                referee.resign()?;
            }
            PlayerMove::Win => {
                referee.declare()?;
            }
        }
    }
    Ok(referee.into_game()?)
}
