use thiserror::Error;

use crate::legality::PositionRule;

/// Everything that can go wrong when turning text into positions and moves.
///
/// Text from outside is quoted with [`crate::excerpt`] (at most
/// [`crate::MAX_QUOTE_CHARS`] characters), so a huge bad line never becomes a huge
/// error message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RulesError {
    #[error("malformed SFEN `{sfen}`: {reason}")]
    Sfen { sfen: String, reason: String },
    /// A well-formed SFEN of a position that breaks a rule of
    /// [`crate::legality`].
    #[error("illegal position `{sfen}`: {rule}")]
    IllegalPosition { sfen: String, rule: PositionRule },
    #[error("malformed USI move `{0}`")]
    MoveSyntax(String),
    #[error("illegal move `{mv}` in position `{sfen}`")]
    IllegalMove { mv: String, sfen: String },
    #[error("move {index} (`{mv}`) of the position command is not legal in `{sfen}`")]
    IllegalMoveInSequence {
        index: usize,
        mv: String,
        sfen: String,
    },
    /// A move list that would take the game past [`crate::MAX_PLY`]; `index` is the
    /// 1-based number of the first move over the limit.
    #[error("move {index} would take the game past ply {max}, the limit (MAX_PLY)", max = crate::MAX_PLY)]
    PlyLimit { index: usize },
    #[error("malformed position command `{command}`: {reason}")]
    PositionCommand { command: String, reason: String },
    #[error("no move to undo")]
    NothingToUndo,
}
