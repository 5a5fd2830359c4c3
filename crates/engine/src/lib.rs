//! Evaluators: the means by which a worker gives a value to every legal move;
//! players: one move at a time for games.

pub mod builtin;
pub mod choice;
mod evaluator;
mod line;
pub mod nnue;
pub mod player;
pub mod usi;

pub use builtin::{BuiltinEvaluator, BuiltinPlayer};
pub use evaluator::{EvalError, Evaluation, Evaluator, Limits, MoveValue};
pub use player::{Player, PlayerMove};
pub use usi::{UsiConfig, UsiEvaluator, UsiPlayer};
