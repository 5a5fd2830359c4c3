//! The built-in engine: an alpha-beta searcher with a hand-crafted evaluation,
//! the default evaluator (nothing to install or configure).
//!
//! * [`BuiltinEvaluator`] scores every legal move of a position for the book
//!   (see [`Evaluator`]).
//! * [`run_usi`] speaks USI over any reader/writer pair, so GUIs and tools can
//!   play against the engine or analyse with it.
//!
//! ```
//! use stera_engine::{BuiltinEvaluator, Evaluator, Limits};
//! use stera_rules::Position;
//!
//! let mut engine = BuiltinEvaluator::new();
//! let pos = Position::startpos();
//! let limits = Limits { nodes: Some(20_000), ..Limits::default() };
//! let evaluation = engine.evaluate(&pos, &limits).unwrap();
//! assert_eq!(evaluation.moves.len(), 30);
//! ```

pub mod eval;
mod player;
mod search;
pub mod tt;
mod usi;

use std::time::Instant;

use stera_rules::Position;
use stera_rules::backend::board::Position as Board;
use stera_rules::backend::types::{Move as BackendMove, Move32};

use crate::nnue::{DEFAULT_FV_SCALE, NnueConfig};
use crate::{EvalError, Evaluation, Evaluator, Limits, MoveValue};

pub use player::BuiltinPlayer;
pub use search::{MAX_DEPTH, MAX_PLY, RootMove, SearchLimits};
pub use tt::{DEFAULT_HASH_MB, TranspositionTable};
pub use usi::{MAX_COMMAND_BYTES, run_usi, run_usi_with};

/// The node budget per position when the caller sets no limit at all.
///
/// It is an upper bound: an iteration that would not finish within it is not
/// started. On opening positions 300 000 allows depth 5 on every move (typically
/// 60 000-180 000 nodes used, a few tenths of a second on one core), the useful
/// range for filling a book.
pub const DEFAULT_NODES: u64 = 300_000;

/// The engine name used in the identity string and `id name`.
pub const ENGINE_NAME: &str = "stera-builtin";

/// Settings of the built-in evaluator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinConfig {
    /// Transposition table size in MiB.
    pub hash_mb: usize,
    /// Nodes per position when [`Limits`] is empty.
    pub default_nodes: u64,
}

impl Default for BuiltinConfig {
    fn default() -> Self {
        Self {
            hash_mb: DEFAULT_HASH_MB,
            default_nodes: DEFAULT_NODES,
        }
    }
}

/// The built-in engine as an [`Evaluator`]: every legal move gets an exact value
/// at one common depth.
///
/// Limits: `nodes` is a budget for the whole position (all moves together);
/// `depth` is the nominal depth of the last iteration; `time` is a wall-clock
/// budget. With no limit at all, [`BuiltinConfig::default_nodes`] applies. The
/// first iteration (depth 1 plus quiescence) always completes; a later iteration
/// that would not fit is not started, and one cut short is discarded.
///
/// With a node or depth limit (no time limit) the result is deterministic: the
/// same position and limits give the same values on any machine.
///
/// The static evaluation is the hand-crafted one unless an NNUE network is given
/// ([`BuiltinEvaluator::with_nnue`]).
pub struct BuiltinEvaluator {
    config: BuiltinConfig,
    tt: TranspositionTable,
    nnue: Option<NnueConfig>,
}

impl Default for BuiltinEvaluator {
    fn default() -> Self {
        Self::new()
    }
}

impl BuiltinEvaluator {
    /// The evaluator with [`BuiltinConfig::default`].
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(BuiltinConfig::default())
    }

    /// The evaluator with explicit settings.
    #[must_use]
    pub fn with_config(config: BuiltinConfig) -> Self {
        Self {
            config,
            tt: TranspositionTable::new(config.hash_mb),
            nnue: None,
        }
    }

    /// The evaluator with explicit settings, evaluating with the NNUE network in
    /// `nnue` (the network is shared, not copied).
    #[must_use]
    pub fn with_nnue(config: BuiltinConfig, nnue: NnueConfig) -> Self {
        Self {
            nnue: Some(nnue),
            ..Self::with_config(config)
        }
    }

    /// The NNUE network in use, if any.
    #[must_use]
    pub fn nnue(&self) -> Option<&NnueConfig> {
        self.nnue.as_ref()
    }

    /// The settings in use.
    #[must_use]
    pub fn config(&self) -> BuiltinConfig {
        self.config
    }
}

/// The identity string of the built-in engine with the hand-crafted evaluation,
/// e.g. `stera-builtin 0.1.0 (hce)`.
#[must_use]
pub fn identity() -> String {
    identity_with(None)
}

/// The identity string for an evaluation with `nnue` (or the hand-crafted one),
/// e.g. `stera-builtin 0.1.0 (nnue nn.bin 1a2b3c4d)`; a non-default `FV_SCALE` is
/// named too, since it changes every value.
#[must_use]
pub fn identity_with(nnue: Option<&NnueConfig>) -> String {
    let version = env!("CARGO_PKG_VERSION");
    match nnue {
        None => format!("{ENGINE_NAME} {version} (hce)"),
        Some(n) if n.fv_scale == DEFAULT_FV_SCALE => {
            format!("{ENGINE_NAME} {version} (nnue {})", n.network.description())
        }
        Some(n) => format!(
            "{ENGINE_NAME} {version} (nnue {} fv_scale {})",
            n.network.description(),
            n.fv_scale
        ),
    }
}

/// Root moves for `board`: the given legal moves with their backend encoding.
fn root_moves(board: &Board, moves: &[stera_rules::Move]) -> Vec<RootMove> {
    moves
        .iter()
        .map(|m| RootMove {
            mv: board.move32_from_move(BackendMove::from_raw(m.raw())),
            value: 0,
            exact: false,
            depth: 0,
            pv: Vec::new(),
        })
        .collect()
}

/// The rules move for a root move, looked up among the legal moves the root was
/// built from (sorted by raw encoding).
fn to_rules_move(legal: &[stera_rules::Move], mv: Move32) -> Option<stera_rules::Move> {
    let raw = mv.to_move().raw();
    legal
        .binary_search_by_key(&raw, |m| m.raw())
        .ok()
        .map(|i| legal[i])
}

/// The search limits for `limits` started at `started`: `default_nodes` when no
/// limit is given at all, and a depth within the engine's [`MAX_DEPTH`].
pub(crate) fn search_limits(
    limits: &Limits,
    default_nodes: u64,
    started: Instant,
) -> Result<SearchLimits, EvalError> {
    if let Some(d) = limits.depth.filter(|&d| d > MAX_DEPTH) {
        return Err(EvalError::UnsupportedLimits(format!(
            "depth {d} exceeds the built-in engine's maximum of {MAX_DEPTH}"
        )));
    }
    let unlimited = limits.nodes.is_none() && limits.depth.is_none() && limits.time.is_none();
    Ok(SearchLimits {
        nodes: if unlimited {
            Some(default_nodes)
        } else {
            limits.nodes
        },
        depth: limits.depth,
        deadline: limits.time.map(|t| started + t),
        stop: None,
    })
}

impl Evaluator for BuiltinEvaluator {
    fn evaluate(&mut self, position: &Position, limits: &Limits) -> Result<Evaluation, EvalError> {
        let started = Instant::now();
        if limits.depth == Some(0) {
            return Err(EvalError::UnsupportedLimits(
                "depth must be at least 1".to_owned(),
            ));
        }
        let search_limits = search_limits(limits, self.config.default_nodes, started)?;
        let legal = position.legal_moves();
        let board = position.backend().clone();
        let mut root = root_moves(&board, &legal);
        let identity = identity_with(self.nnue.as_ref());
        let mut searcher =
            search::Searcher::new(board, &mut self.tt, search_limits).with_nnue(self.nnue.as_ref());
        let depth = searcher.run(&mut root, usize::MAX, |_| {});
        if let Some(reason) = searcher.failure() {
            return Err(EvalError::Engine {
                engine: identity,
                reason: reason.to_owned(),
            });
        }
        let nodes = searcher.nodes();
        let mut moves = Vec::with_capacity(root.len());
        for rm in &root {
            let mv = to_rules_move(&legal, rm.mv).ok_or_else(|| EvalError::Engine {
                engine: identity.clone(),
                reason: format!("root move {} lost its encoding", rm.mv.to_usi()),
            })?;
            moves.push(MoveValue {
                mv,
                value: rm.value,
                depth: rm.depth.min(depth),
            });
        }
        let mut evaluation = Evaluation {
            moves,
            nodes,
            elapsed: started.elapsed(),
            engine: identity,
        };
        evaluation.check_complete(position)?;
        Ok(evaluation)
    }

    fn identity(&self) -> String {
        identity_with(self.nnue.as_ref())
    }
}
