//! External USI engines as evaluators and as players ([`UsiPlayer`]).
//!
//! [`UsiEvaluator`] runs an engine process (YaneuraOu, FukauraOu, Fairy-Stockfish
//! with `UCI_Variant=shogi`, GPS Shogi's `gpsusi`, ...) and gives every legal move of
//! a position a value: from one MultiPV search where the engine supports it, and by
//! searching the position after each move the engine did not report.
//!
//! ```no_run
//! use stera_engine::usi::{UsiConfig, UsiEvaluator};
//! use stera_engine::{Evaluator, Limits};
//! let config = UsiConfig::new("/usr/games/fairy-stockfish").with_option("UCI_Variant", "shogi");
//! let mut engine = UsiEvaluator::new(config)?;
//! let limits = Limits { depth: Some(6), ..Limits::default() };
//! let evaluation = engine.evaluate(&stera_rules::Position::startpos(), &limits)?;
//! assert_eq!(evaluation.moves.len(), 30);
//! # Ok::<(), stera_engine::EvalError>(())
//! ```
//!
//! Scores: `score cp X` is taken as centipawns in the engine's own scale;
//! `score mate N` becomes `±(32000 - |N|)` with the sign of `N` (`mate -0` and
//! `mate -` are being mated); `score winrate P` (a probability) and, when
//! [`ScoreConversion::cp_is_win_rate`] is set, a `cp` field that holds a scaled win
//! rate are converted by `cp = -k ln(1/p - 1)` (`k` = 756 by default), clamped to
//! ±29900, with `p = 0` / `p = 1` giving ∓30000.

mod collect;
mod config;
mod engine;
mod evaluator;
mod info;
mod player;
mod process;
mod score;
mod session;

pub use config::{GoMode, UsiConfig};
pub use evaluator::{UsiEvaluator, UsiStats};
pub use info::Info;
pub use player::UsiPlayer;
pub use score::{
    DEFAULT_WIN_RATE_COEFFICIENT, RawScore, ScoreConversion, WIN_RATE_CERTAIN, WIN_RATE_CLAMP,
    value_for_parent, win_rate_to_value,
};
