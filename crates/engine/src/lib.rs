//! Evaluators: the means by which a worker gives a value to every legal move.

mod evaluator;
pub mod usi;

pub use evaluator::{EvalError, Evaluation, Evaluator, Limits, MoveValue};
