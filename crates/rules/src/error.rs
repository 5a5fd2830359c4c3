use thiserror::Error;

/// Everything that can go wrong when turning text into positions and moves.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RulesError {
    #[error("malformed SFEN `{sfen}`: {reason}")]
    Sfen { sfen: String, reason: String },
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
    #[error("malformed position command `{command}`: {reason}")]
    PositionCommand { command: String, reason: String },
    #[error("no move to undo")]
    NothingToUndo,
}
