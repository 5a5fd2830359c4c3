//! What a worker asks of an engine: a value for **every** legal move.

use std::time::Duration;

use stera_rules::{Move, Position};
use thiserror::Error;

/// How much effort one position gets. Unset fields are unlimited; an evaluator
/// rejects limits it cannot honour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Search nodes (for all moves of the position together, unless the evaluator
    /// documents otherwise).
    pub nodes: Option<u64>,
    /// Nominal search depth in plies.
    pub depth: Option<u32>,
    /// Wall-clock budget for the whole position.
    pub time: Option<Duration>,
}

/// The value of one legal move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveValue {
    pub mv: Move,
    /// Centipawns from the point of view of the side that plays `mv` (the side to
    /// move in the evaluated position). Mate scores follow
    /// [`stera_rules::value`]: `MATE - n` for mate in `n` plies after the move.
    pub value: i32,
    /// The depth the value was searched to.
    pub depth: u32,
}

/// The result of evaluating one position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// One entry per legal move, in canonical order ([`Position::legal_moves`]).
    pub moves: Vec<MoveValue>,
    /// Nodes searched for this position.
    pub nodes: u64,
    /// Time spent.
    pub elapsed: Duration,
    /// Who evaluated it (engine name and version, options that change values).
    pub engine: String,
}

/// Why an evaluation failed.
#[derive(Debug, Error)]
pub enum EvalError {
    #[error("evaluation of `{sfen}` misses legal move {mv}")]
    MissingMove { sfen: String, mv: Move },
    #[error("evaluation of `{sfen}` has move {mv} which is not legal there")]
    IllegalMove { sfen: String, mv: Move },
    #[error("evaluation of `{sfen}` lists move {mv} twice")]
    DuplicateMove { sfen: String, mv: Move },
    #[error("evaluation of `{sfen}` gives {mv} the value {value}, outside -32000..=32000")]
    ValueOutOfRange { sfen: String, mv: Move, value: i32 },
    #[error("unsupported limits: {0}")]
    UnsupportedLimits(String),
    #[error("engine `{engine}` failed: {reason}")]
    Engine { engine: String, reason: String },
    #[error("engine `{engine}` timed out after {after:?} on `{sfen}`")]
    Timeout {
        engine: String,
        sfen: String,
        after: Duration,
    },
    #[error("I/O with engine `{engine}`")]
    Io {
        engine: String,
        #[source]
        source: std::io::Error,
    },
}

/// Anything that gives a value to every legal move of a position.
///
/// Implementations are synchronous and single-position; a worker runs several in
/// parallel threads. A result that misses a legal move is an error, never partial.
pub trait Evaluator: Send {
    /// Evaluates every legal move of `position`.
    ///
    /// # Errors
    /// Engine failures, time-outs, or a result that fails [`Evaluation::check_complete`].
    fn evaluate(&mut self, position: &Position, limits: &Limits) -> Result<Evaluation, EvalError>;

    /// The engine identity string recorded with every thought position.
    fn identity(&self) -> String;
}

impl Evaluation {
    /// Puts the moves into canonical order and checks that they are exactly the legal
    /// moves of `position`, each once, with values in the book range.
    ///
    /// # Errors
    /// The first problem found.
    pub fn check_complete(&mut self, position: &Position) -> Result<(), EvalError> {
        let sfen = || position.to_sfen();
        let legal = position.legal_moves();
        stera_rules::sort_canonical(&mut self.moves, |m| m.mv);
        for pair in self.moves.windows(2) {
            if pair[0].mv == pair[1].mv {
                return Err(EvalError::DuplicateMove {
                    sfen: sfen(),
                    mv: pair[0].mv,
                });
            }
        }
        for m in &self.moves {
            if legal.binary_search(&m.mv).is_err() {
                return Err(EvalError::IllegalMove {
                    sfen: sfen(),
                    mv: m.mv,
                });
            }
            if !(-stera_rules::value::MATE..=stera_rules::value::MATE).contains(&m.value) {
                return Err(EvalError::ValueOutOfRange {
                    sfen: sfen(),
                    mv: m.mv,
                    value: m.value,
                });
            }
        }
        if let Some(missing) = legal
            .iter()
            .find(|mv| self.moves.binary_search_by_key(*mv, |m| m.mv).is_err())
        {
            return Err(EvalError::MissingMove {
                sfen: sfen(),
                mv: *missing,
            });
        }
        Ok(())
    }
}
