//! Evaluators: the means by which a worker gives a value to every legal move.

pub mod builtin;
pub mod choice;
mod evaluator;
pub mod nnue;
pub mod usi;

pub use builtin::BuiltinEvaluator;
pub use evaluator::{EvalError, Evaluation, Evaluator, Limits, MoveValue};
pub use usi::{UsiConfig, UsiEvaluator};
