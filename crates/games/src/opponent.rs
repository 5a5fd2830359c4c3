//! Learning opponents: an engine and a budget, with a weight in a pool.
//!
//! A learned book wins against the opponents it learned against (BENCHMARKS
//! "Learning that generalises"): learning against one engine at one budget
//! finds that opponent's weaknesses. A pool of opponents (several budgets,
//! several engines) asks for moves that win against all of them. Each
//! [`OpponentSpec`] is written the way the engine flags of the command line are,
//! so an opponent is described exactly as a worker or `book-tools evaluate`
//! would be:
//!
//! ```
//! use stera_engine::Limits;
//! use stera_engine::choice::EngineChoice;
//! use stera_games::opponent::{OpponentSpec, Pool};
//! let nodes = |n| Limits { nodes: Some(n), ..Limits::default() };
//! let weak = OpponentSpec::of(EngineChoice::builtin(), nodes(500), 0.5).with_weight(2.0).unwrap();
//! let strong = OpponentSpec::of(EngineChoice::builtin(), nodes(4000), 0.5);
//! assert_eq!(weak.budget(), "500 nodes");
//! let pool = Pool::new(vec![weak, strong]).unwrap();
//! // Weight 2 against 1: two thirds of the games go to the first.
//! assert_eq!(pool.pick(0.5), 0);
//! assert_eq!(pool.pick(0.9), 1);
//! ```
//!
//! Descriptions are read from the command line's grammar by
//! `stera_service::opponent_flags::parse_opponent`.

use stera_engine::Limits;
use stera_engine::choice::{EngineChoice, EngineKind};
use thiserror::Error;

use crate::thinker::BUDGET_SEPARATOR;
pub use crate::thinker::budget_text;

/// The longest `--engine-id` (as a search's `engine`, stera_proto's
/// `MAX_SEARCH_ENGINE_BYTES`).
pub const MAX_ENGINE_ID_BYTES: usize = 256;

/// The default share by which an opponent's node limit is jittered per move.
pub const DEFAULT_OPPONENT_NODE_JITTER: f64 = crate::play::DEFAULT_NODE_JITTER;

/// An opponent description that cannot be used.
#[derive(Debug, Error)]
#[error("opponent `{spec}`: {reason}")]
pub struct OpponentError {
    /// The description as given (at most 200 characters).
    pub spec: String,
    /// What is wrong.
    pub reason: String,
}

/// One opponent: an engine, its budget per move, and its weight in a pool.
#[derive(Debug, Clone)]
pub struct OpponentSpec {
    /// The engine, as the engine flags describe it.
    pub engine: EngineChoice,
    /// Its budget per move.
    pub limits: Limits,
    /// Its share of the games, relative to the pool's other opponents.
    pub weight: f64,
    /// Jitter of its node limit per move (0 with a depth or time limit only).
    pub node_jitter: f64,
    /// The engine's identity or a part of it (`--engine-id`): on the cluster
    /// the workers whose engine says it play this opponent; on one machine the
    /// started engine must say it.
    pub engine_id: Option<String>,
    /// The description as given.
    pub text: String,
    /// The engine flags the description gives (`--engine-cmd`...), in the
    /// order the flags are declared.
    engine_flags: Vec<String>,
}

impl OpponentSpec {
    /// An opponent of `engine` at `limits`, described by `text`, with the
    /// engine flags that text gave (`--engine-cmd`...); the one check of every
    /// opponent, however it was written.
    ///
    /// # Errors
    /// No budget, a weight that is not positive, a jitter outside [0, 1), an
    /// `engine_id` empty or too long, an engine flag the engine would not use.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: EngineChoice,
        limits: Limits,
        weight: f64,
        node_jitter: f64,
        engine_id: Option<String>,
        text: &str,
        engine_flags: Vec<String>,
    ) -> Result<Self, OpponentError> {
        let error = |reason: String| OpponentError {
            spec: stera_rules::excerpt(text),
            reason,
        };
        // A flag the engine kind would not use is refused here, before a
        // store or an engine is touched, not when (or if) this engine starts.
        engine.check_flags().map_err(|e| error(engine_reason(e)))?;
        if limits.nodes.is_none() && limits.depth.is_none() && limits.time.is_none() {
            return Err(error(
                "no budget: give --nodes, --depth or --time-ms (an opponent is an engine and a budget)"
                    .into(),
            ));
        }
        if !(weight.is_finite() && weight > 0.0) {
            return Err(error(format!(
                "--weight must be a positive number, not {weight}"
            )));
        }
        if !(0.0..1.0).contains(&node_jitter) {
            return Err(error(format!(
                "--node-jitter must lie in [0, 1), not {node_jitter}"
            )));
        }
        if let Some(id) = &engine_id
            && (id.trim().is_empty() || id.len() > MAX_ENGINE_ID_BYTES)
        {
            return Err(error(format!(
                "--engine-id must be 1 to {MAX_ENGINE_ID_BYTES} bytes of an engine's identity"
            )));
        }
        Ok(Self {
            engine,
            node_jitter: if limits.nodes.is_some() {
                node_jitter
            } else {
                0.0
            },
            limits,
            weight,
            engine_id,
            text: text.trim().to_owned(),
            engine_flags,
        })
    }

    /// The same opponent with another weight.
    ///
    /// # Errors
    /// A weight that is not positive.
    pub fn with_weight(self, weight: f64) -> Result<Self, OpponentError> {
        // Checked by the one check of every opponent.
        Self::new(
            self.engine,
            self.limits,
            weight,
            self.node_jitter,
            self.engine_id,
            &self.text,
            self.engine_flags,
        )
    }

    /// The opponent that plays `engine` at `limits` (a single-opponent pool).
    #[must_use]
    pub fn of(engine: EngineChoice, limits: Limits, node_jitter: f64) -> Self {
        let text = format!("{} at {}", engine_words(&engine), budget_text(&limits));
        Self {
            engine,
            node_jitter: if limits.nodes.is_some() {
                node_jitter
            } else {
                0.0
            },
            limits,
            weight: 1.0,
            engine_id: None,
            text,
            engine_flags: Vec::new(),
        }
    }

    /// Who plays this opponent's moves on the cluster: the workers of its
    /// `--engine-id`, or without one and without engine flags the workers
    /// that think for the book (the book's own engine).
    ///
    /// ```
    /// use stera_engine::Limits;
    /// use stera_engine::choice::EngineChoice;
    /// use stera_games::opponent::OpponentSpec;
    /// use stera_games::Route;
    /// let nodes = Limits { nodes: Some(500), ..Limits::default() };
    /// let own = OpponentSpec::of(EngineChoice::builtin(), nodes, 0.5);
    /// assert_eq!(own.route().unwrap(), Route::Thinkers);
    /// let fs = EngineChoice { engine_cmd: Some("fs".into()), ..EngineChoice::builtin() };
    /// let fairy = OpponentSpec::new(fs.clone(), nodes, 1.0, 0.5, Some("Fairy-Stockfish".into()),
    ///     "--engine-cmd fs --engine-id Fairy-Stockfish --nodes 500", vec!["--engine-cmd".into()]).unwrap();
    /// assert_eq!(fairy.route().unwrap(), Route::Engine("Fairy-Stockfish".into()));
    /// // Engine flags alone name no worker.
    /// let unnamed = OpponentSpec::new(fs, nodes, 1.0, 0.5, None, "--engine-cmd fs --nodes 500",
    ///     vec!["--engine-cmd".into()]).unwrap();
    /// assert!(unnamed.route().is_err());
    /// ```
    ///
    /// # Errors
    /// Engine flags without `--engine-id`: the coordinator starts no engine,
    /// so it cannot tell which workers run them.
    pub fn route(&self) -> Result<crate::Route, OpponentError> {
        match &self.engine_id {
            Some(id) => Ok(crate::Route::Engine(id.clone())),
            None if !self.names_engine() => Ok(crate::Route::Thinkers),
            None => Err(OpponentError {
                spec: stera_rules::excerpt(&self.text),
                reason: format!(
                    "it gives {} but no --engine-id: on the cluster the workers' engines play, so name the opponent's engine as its workers report it (`book-tools remote status` lists them), e.g. --engine-id Fairy-Stockfish",
                    if self.engine_flags.is_empty() {
                        "an engine".to_owned()
                    } else {
                        self.engine_flags.join(", ")
                    }
                ),
            }),
        }
    }

    /// Checks that `engine_identity`, the identity of the engine started for
    /// this opponent, says its `--engine-id`.
    ///
    /// # Errors
    /// It does not.
    pub fn check_engine_id(&self, engine_identity: &str) -> Result<(), OpponentError> {
        match &self.engine_id {
            Some(id) if !engine_identity.contains(id.as_str()) => Err(OpponentError {
                spec: stera_rules::excerpt(&self.text),
                reason: format!(
                    "its engine says it is `{}`, which does not contain --engine-id `{}`",
                    stera_rules::excerpt(engine_identity),
                    stera_rules::excerpt(id)
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Its budget per move in a game (limits and node jitter).
    #[must_use]
    pub fn budget_per_move(&self) -> crate::Budget {
        crate::Budget {
            limits: self.limits,
            node_jitter: self.node_jitter,
        }
    }

    /// Its budget in words: `1000 nodes`, `depth 3`, `200 ms`.
    #[must_use]
    pub fn budget(&self) -> String {
        budget_text(&self.limits)
    }

    /// The identity its learning games are counted under: the engine's own
    /// identity (as its `Player` reports it) and the budget.
    #[must_use]
    pub fn identity(&self, engine_identity: &str) -> String {
        crate::thinker::identity(engine_identity, &self.budget())
    }

    /// True when its games differ from one another by its own play: its node
    /// limit is jittered. An opponent limited by depth or time alone (with a
    /// deterministic engine) replays a game whenever the book side does.
    #[must_use]
    pub fn varies(&self) -> bool {
        self.node_jitter > 0.0
    }

    /// True when the description names an engine: it gives any engine flag
    /// (`--engine`, `--engine-cmd`, `--engine-option`, `--eval-file`,
    /// `--fv-scale`, the USI flags), or its engine is not the default (the
    /// built-in engine with its hand-crafted evaluation). On the cluster an
    /// opponent is the workers' engine, and only a budget is given.
    #[must_use]
    pub fn names_engine(&self) -> bool {
        !self.engine_flags.is_empty() || engine_words(&self.engine) != DEFAULT_ENGINE_WORDS
    }

    /// The engine flags its description gives (`--engine-cmd`, ...), for an
    /// error that says which of them is not wanted.
    #[must_use]
    pub fn engine_flags(&self) -> &[String] {
        &self.engine_flags
    }

    /// True when `other` runs the same engine program with the same options and
    /// is driven the same way (go mode, timeout, score conversion), so one
    /// started engine can serve both (with their own budgets).
    #[must_use]
    pub fn same_engine(&self, other: &EngineChoice) -> bool {
        let (a, b) = (&self.engine, other);
        engine_words(a) == engine_words(b)
            && (a.kind() == EngineKind::Builtin
                || (a.go_mode == b.go_mode
                    && a.timeout_secs == b.timeout_secs
                    && a.cp_is_win_rate == b.cp_is_win_rate
                    && a.win_rate_coefficient == b.win_rate_coefficient))
    }
}

/// True when the opponent `identity` (as [`OpponentSpec::identity`] makes it)
/// plays at `budget` (as [`OpponentSpec::budget`] words it), whatever its engine.
#[must_use]
pub fn plays_at(identity: &str, budget: &str) -> bool {
    identity
        .strip_suffix(budget)
        .is_some_and(|rest| rest.ends_with(BUDGET_SEPARATOR))
}

/// [`engine_words`] of the default engine flags.
const DEFAULT_ENGINE_WORDS: &str = "builtin";

/// The reason of an engine flag error, without the engine it names (the
/// command line).
fn engine_reason(e: stera_engine::EvalError) -> String {
    match e {
        stera_engine::EvalError::Engine { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// The engine flags in words, for comparing engines and naming them.
fn engine_words(engine: &EngineChoice) -> String {
    match engine.kind() {
        EngineKind::Builtin => match &engine.eval_file {
            Some(path) => format!(
                "builtin eval-file {} fv-scale {:?}",
                path.display(),
                engine.fv_scale
            ),
            None => DEFAULT_ENGINE_WORDS.into(),
        },
        EngineKind::Usi => format!(
            "usi {} {}",
            engine.engine_cmd.as_deref().unwrap_or(""),
            engine.engine_option.join(" ")
        ),
    }
}

/// Opponents with weights: which one plays a game.
#[derive(Debug, Clone)]
pub struct Pool {
    members: Vec<OpponentSpec>,
    total_weight: f64,
}

impl Pool {
    /// A pool of `members` (at least one).
    ///
    /// # Errors
    /// An empty pool.
    pub fn new(members: Vec<OpponentSpec>) -> Result<Self, OpponentError> {
        if members.is_empty() {
            return Err(OpponentError {
                spec: String::new(),
                reason: "a pool needs at least one opponent".into(),
            });
        }
        let total_weight = members.iter().map(|m| m.weight).sum();
        Ok(Self {
            members,
            total_weight,
        })
    }

    /// Its opponents.
    #[must_use]
    pub fn members(&self) -> &[OpponentSpec] {
        &self.members
    }

    /// The opponent of a game whose draw is `uniform` (in [0, 1)): each in
    /// proportion to its weight.
    #[must_use]
    pub fn pick(&self, uniform: f64) -> usize {
        let mut target = uniform.clamp(0.0, 1.0) * self.total_weight;
        for (i, member) in self.members.iter().enumerate() {
            if target < member.weight {
                return i;
            }
            target -= member.weight;
        }
        self.members.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_nodes(n: u64, weight: f64) -> OpponentSpec {
        let limits = Limits {
            nodes: Some(n),
            ..Limits::default()
        };
        OpponentSpec::of(EngineChoice::builtin(), limits, 0.5)
            .with_weight(weight)
            .unwrap()
    }

    #[test]
    fn picks_follow_the_weights() {
        let pool = Pool::new(vec![at_nodes(500, 1.0), at_nodes(1000, 3.0)]).unwrap();
        let picks: Vec<usize> = (0..100).map(|i| pool.pick(f64::from(i) / 100.0)).collect();
        assert_eq!(picks.iter().filter(|&&p| p == 0).count(), 25);
        assert!(Pool::new(Vec::new()).is_err());
    }

    #[test]
    fn every_opponent_is_checked_however_it_was_written() {
        let none = Limits::default();
        let err = OpponentSpec::new(
            EngineChoice::builtin(),
            none,
            1.0,
            0.5,
            None,
            "x",
            Vec::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no budget"), "{err}");
        assert!(at_nodes(100, 1.0).with_weight(0.0).is_err());
        assert!(at_nodes(100, 1.0).with_weight(f64::NAN).is_err());
        let limits = at_nodes(100, 1.0).limits;
        let refused = [
            (1.0, None, "--node-jitter must lie in [0, 1)"),
            (
                0.5,
                Some(" ".to_owned()),
                "--engine-id must be 1 to 256 bytes",
            ),
            (
                0.5,
                Some("x".repeat(257)),
                "--engine-id must be 1 to 256 bytes",
            ),
        ];
        for (jitter, engine_id, says) in refused {
            let builtin = EngineChoice::builtin();
            let err = OpponentSpec::new(builtin, limits, 1.0, jitter, engine_id, "x", Vec::new())
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
