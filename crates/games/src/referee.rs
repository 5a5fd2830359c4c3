//! The rules of a game as it is played ([`Referee`]) and as it is checked
//! afterwards ([`verify`]): one implementation, so that a worker that plays a game
//! and the coordinator that counts it cannot disagree.
//!
//! After every move, in this order:
//!
//! 1. **Mate**: the side to move has no legal move and loses.
//! 2. **Repetition**: the position occurs for the fourth time (the rules core's
//!    [`Position::game_repetition`]): a draw, unless one side gave check with every
//!    move of the cycle, which then loses (perpetual check).
//! 3. **Adjudication** (when enabled): the last [`Adjudication::plies`] moves all
//!    carry an engine score and, seen from Black, all are at least the threshold
//!    (Black wins) or all at most minus it (White wins). With at least two plies,
//!    both sides' engines agree.
//! 4. **Ply limit**: [`GameRules::ply_limit`] moves were played: a draw.
//!
//! Besides, the side to move may resign (it loses) or declare a win, judged by the
//! 27-point rule of [`crate::declaration`]: valid, it wins; invalid, it loses.

use stera_rules::{Color, Key, Position, Repetition, RulesError};
use thiserror::Error;

use crate::declaration;
use crate::game::{Game, GameMove, GameResult, Outcome, Termination};

/// The default ply limit (a draw after this many moves).
pub const DEFAULT_PLY_LIMIT: u32 = 320;

/// The default number of consecutive moves of `--adjudicate-plies`, the same in
/// every command that adjudicates (the coordinator's games and `match`).
pub const DEFAULT_ADJUDICATE_PLIES: u32 = 8;

/// Adjudication: the game ends when both sides' engines agree that one side is
/// winning by at least `threshold` for `plies` consecutive moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adjudication {
    /// Centipawns (from Black's point of view, in absolute value).
    pub threshold: i32,
    /// Consecutive moves, at least 2 (so that both sides' scores count).
    pub plies: u32,
}

/// The rules every component applies to a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameRules {
    /// Moves of the game (from its start position) after which it is a draw.
    pub ply_limit: u32,
    /// Optional score adjudication.
    pub adjudication: Option<Adjudication>,
}

impl Default for GameRules {
    fn default() -> Self {
        Self {
            ply_limit: DEFAULT_PLY_LIMIT,
            adjudication: None,
        }
    }
}

impl GameRules {
    /// Checks that the rules make sense.
    ///
    /// # Errors
    /// [`GameError::Rules`] for a zero ply limit or an adjudication over fewer
    /// than two plies or with a non-positive threshold.
    pub fn check(&self) -> Result<(), GameError> {
        if self.ply_limit == 0 {
            return Err(GameError::Rules("the ply limit must be at least 1".into()));
        }
        if let Some(a) = self.adjudication {
            if a.plies < 2 {
                return Err(GameError::Rules(format!(
                    "adjudication needs at least 2 plies (both sides' scores), not {}",
                    a.plies
                )));
            }
            if a.threshold <= 0 {
                return Err(GameError::Rules(format!(
                    "the adjudication threshold must be positive, not {}",
                    a.threshold
                )));
            }
        }
        Ok(())
    }
}

/// Why a game is invalid.
#[derive(Debug, Error)]
pub enum GameError {
    #[error("bad rules: {0}")]
    Rules(String),
    #[error("bad start position `{text}`")]
    Start {
        text: String,
        #[source]
        source: RulesError,
    },
    #[error("move {index} ({mv}) is not legal in `{sfen}`")]
    IllegalMove {
        /// 0-based index of the move in the game.
        index: usize,
        mv: String,
        sfen: String,
    },
    #[error("move {index} ({mv}) comes after the game ended ({result})")]
    MoveAfterEnd {
        index: usize,
        mv: String,
        result: GameResult,
    },
    #[error("the game was already over ({0})")]
    AlreadyOver(GameResult),
    #[error("claimed result `{claimed}` does not follow from the game: {reason}")]
    WrongResult { claimed: GameResult, reason: String },
    #[error("the game has not ended")]
    NotFinished,
}

/// What [`verify`] found: the game is valid and ends as claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub result: GameResult,
    /// Moves played.
    pub plies: usize,
    /// SFEN of the final position.
    pub final_sfen: String,
    /// Every position of the game, start and final included: what per-position
    /// result counters need.
    pub positions: Vec<Visited>,
}

/// A position a game went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visited {
    pub key: Key,
    /// The key of its colour-flipped twin (the same situation for the side to
    /// move), under which a book may hold it.
    pub flipped_key: Key,
    pub side_to_move: Color,
}

impl Visited {
    fn of(position: &Position) -> Self {
        Self {
            key: position.key(),
            flipped_key: position.flipped_key(),
            side_to_move: position.side_to_move(),
        }
    }
}

/// A game in progress under [`GameRules`].
///
/// ```
/// use stera_games::{GameMove, GameRules, MoveSource, Outcome, Referee, Termination};
/// let mut referee = Referee::new(stera_rules::Position::startpos(), GameRules::default()).unwrap();
/// // Fool's mate does not exist in shogi; the fastest way to end is to resign.
/// let mv = referee.position().parse_move("7g7f").unwrap();
/// assert_eq!(referee.play(GameMove::new(mv, MoveSource::Engine)).unwrap(), None);
/// let result = referee.resign().unwrap();
/// assert_eq!((result.outcome, result.termination), (Outcome::BlackWins, Termination::Resignation));
/// ```
#[derive(Debug, Clone)]
pub struct Referee {
    start_sfen: String,
    position: Position,
    rules: GameRules,
    moves: Vec<GameMove>,
    positions: Vec<Visited>,
    result: Option<GameResult>,
}

impl Referee {
    /// A game from `start` (its history, if any, counts for repetitions). A start
    /// without a legal move is over at once.
    ///
    /// # Errors
    /// Rules that fail [`GameRules::check`].
    pub fn new(start: Position, rules: GameRules) -> Result<Self, GameError> {
        rules.check()?;
        let mut referee = Self {
            start_sfen: start.to_sfen(),
            positions: vec![Visited::of(&start)],
            position: start,
            rules,
            moves: Vec::new(),
            result: None,
        };
        referee.result = referee.forced_end();
        Ok(referee)
    }

    /// The current position, with the game's history.
    #[must_use]
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// The moves so far.
    #[must_use]
    pub fn moves(&self) -> &[GameMove] {
        &self.moves
    }

    /// The result, once the game is over.
    #[must_use]
    pub fn result(&self) -> Option<GameResult> {
        self.result
    }

    /// The rules in force.
    #[must_use]
    pub fn rules(&self) -> GameRules {
        self.rules
    }

    /// Plays a move; returns the result if it ended the game.
    ///
    /// # Errors
    /// [`GameError::AlreadyOver`], or [`GameError::IllegalMove`] (nothing changes).
    pub fn play(&mut self, game_move: GameMove) -> Result<Option<GameResult>, GameError> {
        if let Some(result) = self.result {
            return Err(GameError::AlreadyOver(result));
        }
        if !self.position.is_legal(game_move.mv) {
            return Err(GameError::IllegalMove {
                index: self.moves.len(),
                mv: game_move.mv.to_string(),
                sfen: self.position.to_sfen(),
            });
        }
        self.position.do_move(game_move.mv);
        self.moves.push(game_move);
        self.positions.push(Visited::of(&self.position));
        self.result = self.forced_end();
        Ok(self.result)
    }

    /// The side to move resigns.
    ///
    /// # Errors
    /// [`GameError::AlreadyOver`].
    pub fn resign(&mut self) -> Result<GameResult, GameError> {
        self.end(GameResult {
            outcome: Outcome::win_for(self.position.side_to_move().flip()),
            termination: Termination::Resignation,
        })
    }

    /// The side to move declares a win; the 27-point rule decides who wins.
    ///
    /// # Errors
    /// [`GameError::AlreadyOver`].
    pub fn declare(&mut self) -> Result<GameResult, GameError> {
        let side = self.position.side_to_move();
        let result = if declaration::check(&self.position).holds() {
            GameResult {
                outcome: Outcome::win_for(side),
                termination: Termination::Declaration,
            }
        } else {
            GameResult {
                outcome: Outcome::win_for(side.flip()),
                termination: Termination::InvalidDeclaration,
            }
        };
        self.end(result)
    }

    fn end(&mut self, result: GameResult) -> Result<GameResult, GameError> {
        if let Some(over) = self.result {
            return Err(GameError::AlreadyOver(over));
        }
        self.result = Some(result);
        Ok(result)
    }

    /// The finished game.
    ///
    /// # Errors
    /// [`GameError::NotFinished`].
    pub fn into_game(self) -> Result<Game, GameError> {
        let result = self.result.ok_or(GameError::NotFinished)?;
        Ok(Game {
            start_sfen: self.start_sfen,
            moves: self.moves,
            result,
        })
    }

    /// The end the rules impose on the current position, if any.
    fn forced_end(&self) -> Option<GameResult> {
        let side = self.position.side_to_move();
        if self.position.has_no_legal_move() {
            return Some(GameResult {
                outcome: Outcome::win_for(side.flip()),
                termination: Termination::Mate,
            });
        }
        if let Some(repetition) = self.position.game_repetition() {
            let (outcome, termination) = match repetition {
                Repetition::Draw => (Outcome::Draw, Termination::Repetition),
                Repetition::OwnPerpetualCheck => {
                    (Outcome::win_for(side.flip()), Termination::PerpetualCheck)
                }
                Repetition::OpponentPerpetualCheck => {
                    (Outcome::win_for(side), Termination::PerpetualCheck)
                }
            };
            return Some(GameResult {
                outcome,
                termination,
            });
        }
        if let Some(winner) = self.adjudicated() {
            return Some(GameResult {
                outcome: Outcome::win_for(winner),
                termination: Termination::Adjudication,
            });
        }
        if self.moves.len() >= self.rules.ply_limit as usize {
            return Some(GameResult {
                outcome: Outcome::Draw,
                termination: Termination::PlyLimit,
            });
        }
        None
    }

    /// The side the last moves' scores agree on, if adjudication applies.
    fn adjudicated(&self) -> Option<Color> {
        let a = self.rules.adjudication?;
        let n = a.plies as usize;
        if self.moves.len() < n {
            return None;
        }
        // The side that made move i: the side to move now made the one before last.
        let last_mover = self.position.side_to_move().flip();
        let mut sign = 0;
        for (back, m) in self.moves.iter().rev().take(n).enumerate() {
            let mover = if back % 2 == 0 {
                last_mover
            } else {
                last_mover.flip()
            };
            let score = m.score?;
            let for_black = if mover == Color::Black { score } else { -score };
            let s = if for_black >= a.threshold {
                1
            } else if for_black <= -a.threshold {
                -1
            } else {
                return None;
            };
            if sign != 0 && s != sign {
                return None;
            }
            sign = s;
        }
        Some(if sign > 0 { Color::Black } else { Color::White })
    }
}

/// Checks a game reported by someone else: every move legal, no move after the
/// game ended, and `claimed` exactly what the rules say about the final position
/// (a forced end must be the one claimed; otherwise only a resignation or a
/// declaration, judged by the rule, can end the game).
///
/// `start` is `startpos`, an SFEN or a position command; the adjudication scores
/// are taken as reported (they cannot be checked without the engines).
///
/// # Errors
/// The first problem found, as a [`GameError`] whose message names it.
pub fn verify(
    start: &str,
    moves: &[GameMove],
    claimed: &GameResult,
    rules: &GameRules,
) -> Result<Verified, GameError> {
    let position = Position::from_position_command(start).map_err(|source| GameError::Start {
        text: start.to_owned(),
        source,
    })?;
    let mut referee = Referee::new(position, *rules)?;
    for (index, m) in moves.iter().enumerate() {
        if let Some(result) = referee.result() {
            return Err(GameError::MoveAfterEnd {
                index,
                mv: m.mv.to_string(),
                result,
            });
        }
        referee.play(*m)?;
    }
    let wrong = |reason: String| GameError::WrongResult {
        claimed: *claimed,
        reason,
    };
    let actual = match referee.result() {
        Some(forced) => forced,
        None => match claimed.termination {
            Termination::Resignation => referee.resign()?,
            Termination::Declaration | Termination::InvalidDeclaration => referee.declare()?,
            other => {
                return Err(wrong(format!(
                    "the final position `{}` is not a {} (the game goes on)",
                    referee.position().to_sfen(),
                    other.name()
                )));
            }
        },
    };
    if actual != *claimed {
        return Err(wrong(format!(
            "the rules give `{actual}` in `{}`",
            referee.position().to_sfen()
        )));
    }
    Ok(Verified {
        result: actual,
        plies: referee.moves().len(),
        final_sfen: referee.position().to_sfen(),
        positions: referee.positions,
    })
}

impl Game {
    /// [`verify`] of this game's own moves and result.
    ///
    /// # Errors
    /// As [`verify`].
    pub fn verify(&self, rules: &GameRules) -> Result<Verified, GameError> {
        verify(&self.start_sfen, &self.moves, &self.result, rules)
    }
}
