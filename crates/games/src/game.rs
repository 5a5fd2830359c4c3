//! A game and how it ended.

use std::fmt;

use stera_book::GameCounts;
use stera_rules::{Color, Move};

/// Who won.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    BlackWins,
    WhiteWins,
    Draw,
}

impl Outcome {
    /// The outcome in which `color` wins.
    #[must_use]
    pub const fn win_for(color: Color) -> Self {
        match color {
            Color::Black => Self::BlackWins,
            Color::White => Self::WhiteWins,
        }
    }

    /// The winner, `None` for a draw.
    #[must_use]
    pub const fn winner(self) -> Option<Color> {
        match self {
            Self::BlackWins => Some(Color::Black),
            Self::WhiteWins => Some(Color::White),
            Self::Draw => None,
        }
    }

    /// Points for `color`: 1 for a win, 0.5 for a draw, 0 for a loss.
    #[must_use]
    pub fn points_for(self, color: Color) -> f64 {
        match self.winner() {
            None => 0.5,
            Some(c) if c == color => 1.0,
            Some(_) => 0.0,
        }
    }

    /// The game as one counted result for `color`: a win, a draw or a loss.
    ///
    /// ```
    /// use stera_book::GameCounts;
    /// use stera_games::Outcome;
    /// use stera_rules::Color;
    /// assert_eq!(Outcome::BlackWins.counts_for(Color::White), GameCounts::LOSS);
    /// assert_eq!(Outcome::Draw.counts_for(Color::Black), GameCounts::DRAW);
    /// ```
    #[must_use]
    pub fn counts_for(self, color: Color) -> GameCounts {
        match self.winner() {
            None => GameCounts::DRAW,
            Some(c) if c == color => GameCounts::WIN,
            Some(_) => GameCounts::LOSS,
        }
    }
}

/// Why a game ended. Every termination decides the [`Outcome`] from the final
/// position (its side to move is "the side to move" below).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Termination {
    /// The side to move has no legal move (checkmate; in shogi also without
    /// check) and loses. Pawn-drop mate is not a legal move, so it never ends a
    /// game this way.
    Mate,
    /// The position occurred for the fourth time: a draw (sennichite).
    Repetition,
    /// The position occurred for the fourth time and one side gave check with
    /// every move of the cycle: that side loses.
    PerpetualCheck,
    /// The side to move declared a win (USI `bestmove win`) and the CSA 27-point
    /// entering-king rule holds: it wins.
    Declaration,
    /// The side to move declared a win but the rule does not hold: it loses.
    InvalidDeclaration,
    /// The side to move resigned.
    Resignation,
    /// The game reached the ply limit: a draw.
    PlyLimit,
    /// Both sides' scores agreed beyond the adjudication threshold for the last
    /// plies (see [`crate::Adjudication`]): the side they favour wins.
    Adjudication,
}

impl Termination {
    /// A short lower-case name (`mate`, `repetition`, ...), for reports and metrics.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Mate => "mate",
            Self::Repetition => "repetition",
            Self::PerpetualCheck => "perpetual-check",
            Self::Declaration => "declaration",
            Self::InvalidDeclaration => "invalid-declaration",
            Self::Resignation => "resignation",
            Self::PlyLimit => "ply-limit",
            Self::Adjudication => "adjudication",
        }
    }
}

/// The result of a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GameResult {
    pub outcome: Outcome,
    pub termination: Termination,
}

impl fmt::Display for GameResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match self.outcome {
            Outcome::BlackWins => "black wins",
            Outcome::WhiteWins => "white wins",
            Outcome::Draw => "draw",
        };
        write!(f, "{who} by {}", self.termination.name())
    }
}

/// Where a move of a game came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MoveSource {
    /// Part of the opening the game was started from (a root or an openings file).
    Opening,
    /// Sampled from the side's book.
    Book,
    /// Searched by the side's engine.
    Engine,
}

/// One move of a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameMove {
    pub mv: Move,
    /// The engine's score of the move, from the mover's point of view
    /// (centipawns; mate scores as in [`stera_rules::value`]), when it gave one.
    pub score: Option<i32>,
    pub source: MoveSource,
}

impl GameMove {
    /// A move with no score.
    #[must_use]
    pub const fn new(mv: Move, source: MoveSource) -> Self {
        Self {
            mv,
            score: None,
            source,
        }
    }
}

/// A finished game: where it started, its moves, and its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Game {
    /// SFEN of the start position (with ply).
    pub start_sfen: String,
    pub moves: Vec<GameMove>,
    pub result: GameResult,
}

impl Game {
    /// Indices (0-based plies) of the moves that came from a book.
    #[must_use]
    pub fn book_plies(&self) -> Vec<usize> {
        self.moves
            .iter()
            .enumerate()
            .filter(|(_, m)| m.source == MoveSource::Book)
            .map(|(i, _)| i)
            .collect()
    }

    /// The moves as USI text, separated by spaces.
    #[must_use]
    pub fn usi_moves(&self) -> String {
        let moves: Vec<String> = self.moves.iter().map(|m| m.mv.to_string()).collect();
        moves.join(" ")
    }
}
