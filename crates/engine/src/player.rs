//! What a game asks of an engine: one move for the side to move (not a value for
//! every move, which is what [`crate::Evaluator`] gives the book).
//!
//! A [`Player`] is given the position **with its history** (the moves played since
//! the position was constructed, kept by [`Position`]): the built-in engine's search
//! sees repetitions along it, and a USI engine receives `position <start> moves
//! ...`, so that neither walks into a fourfold repetition blindly.

use stera_rules::{Move, Position, STARTPOS_SFEN};

use crate::{EvalError, Limits};

/// An engine's answer in a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayerMove {
    /// A legal move, with the engine's score for it when it printed one
    /// (centipawns from the mover's point of view, mate scores as in
    /// [`stera_rules::value`]).
    Move { mv: Move, score: Option<i32> },
    /// `bestmove resign` (also what a player answers when it has no legal move).
    Resign,
    /// `bestmove win`: an entering-king declaration. Whether it is valid is the
    /// referee's business, not the player's.
    Win,
}

/// Anything that plays moves in a game: the built-in engine
/// ([`crate::builtin::BuiltinPlayer`]) or an external USI engine
/// ([`crate::usi::UsiPlayer`]).
pub trait Player: Send {
    /// Called before each game (USI `usinewgame`; the built-in engine clears its
    /// table, so a game does not depend on the games played before it).
    ///
    /// # Errors
    /// The engine could not be reached or restarted.
    fn new_game(&mut self) -> Result<(), EvalError>;

    /// The move for the side to move of `position`, searched within `limits`.
    /// A move returned is legal in `position`.
    ///
    /// # Errors
    /// Engine failures and time-outs, limits the engine cannot honour, and an
    /// engine answer that is not a legal move, `resign` or `win`.
    fn play(&mut self, position: &Position, limits: &Limits) -> Result<PlayerMove, EvalError>;

    /// The engine identity (name, version, value-changing options).
    fn identity(&self) -> String;
}

/// The position `position` was constructed from and the moves played since, in
/// order: what a USI `position` command must carry.
///
/// ```
/// let pos = stera_rules::Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
/// let (start, moves) = stera_engine::player::history(&pos);
/// assert_eq!(start.to_sfen(), stera_rules::STARTPOS_SFEN);
/// assert_eq!(moves.iter().map(|m| m.to_string()).collect::<Vec<_>>(), ["7g7f", "3c3d"]);
/// ```
#[must_use]
pub fn history(position: &Position) -> (Position, Vec<Move>) {
    let mut start = position.clone();
    let mut moves = Vec::with_capacity(start.history_len());
    while let Ok(mv) = start.undo_move() {
        moves.push(mv);
    }
    moves.reverse();
    (start, moves)
}

/// The text after `position ` for `position` with its history: `startpos` or
/// `sfen <sfen>`, then ` moves ...` when moves were played.
///
/// ```
/// let pos = stera_rules::Position::from_position_command("startpos moves 7g7f").unwrap();
/// assert_eq!(stera_engine::player::position_command(&pos), "startpos moves 7g7f");
/// ```
#[must_use]
pub fn position_command(position: &Position) -> String {
    let (start, moves) = history(position);
    let sfen = start.to_sfen();
    let mut text = if sfen == STARTPOS_SFEN {
        "startpos".to_owned()
    } else {
        format!("sfen {sfen}")
    };
    if !moves.is_empty() {
        text.push_str(" moves");
        for mv in moves {
            text.push(' ');
            text.push_str(&mv.to_string());
        }
    }
    text
}
