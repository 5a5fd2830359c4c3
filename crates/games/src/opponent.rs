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
//! use stera_games::opponent::{OpponentSpec, Pool};
//! let weak = OpponentSpec::parse("--nodes 500 --weight 2").unwrap();
//! let usi = OpponentSpec::parse(
//!     "--engine usi --engine-cmd /usr/games/fairy-stockfish \
//!      --engine-option UCI_Variant=shogi --depth 2",
//! ).unwrap();
//! assert_eq!(weak.budget(), "500 nodes");
//! assert_eq!(usi.budget(), "depth 2");
//! assert!(!usi.varies());            // depth limits do not jitter
//! let pool = Pool::new(vec![weak, usi]).unwrap();
//! // Weight 2 against 1: two thirds of the games go to the first.
//! assert_eq!(pool.pick(0.5), 0);
//! assert_eq!(pool.pick(0.9), 1);
//! ```

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use stera_engine::Limits;
use stera_engine::choice::{EngineChoice, EngineKind, LimitArgs};
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

/// The flags one opponent is described with.
#[derive(Debug, Clone, Parser)]
#[command(no_binary_name = true, disable_help_flag = true)]
struct OpponentFlags {
    #[command(flatten)]
    engine: EngineChoice,
    #[command(flatten)]
    limits: LimitArgs,
    /// Share of the games played against this opponent, relative to the others.
    #[arg(long, default_value_t = 1.0)]
    weight: f64,
    /// Jitter of this opponent's node limit per move.
    #[arg(long, default_value_t = DEFAULT_OPPONENT_NODE_JITTER)]
    node_jitter: f64,
    /// The engine's identity, or a part of it.
    #[arg(long)]
    engine_id: Option<String>,
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
    /// Reads an opponent from the engine flags (`--engine`, `--engine-cmd`,
    /// `--engine-option`, `--eval-file`...), the budget flags (`--nodes`,
    /// `--depth`, `--time-ms`), `--weight` (1) and `--node-jitter` (0.5, only
    /// with `--nodes`), quoted as in a shell.
    ///
    /// # Errors
    /// Unbalanced quotes, an unknown flag, no budget, a weight that is not
    /// positive, a jitter outside [0, 1).
    pub fn parse(text: &str) -> Result<Self, OpponentError> {
        let error = |reason: String| OpponentError {
            spec: stera_rules::excerpt(text),
            reason,
        };
        let words = shlex::split(text).ok_or_else(|| error("unbalanced quotes".into()))?;
        let first_line = |e: clap::Error| {
            error(
                e.render()
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or("bad flags")
                    .to_owned(),
            )
        };
        let matches = OpponentFlags::command()
            .try_get_matches_from(&words)
            .map_err(first_line)?;
        let flags = OpponentFlags::from_arg_matches(&matches).map_err(first_line)?;
        // Which engine flags the text gives, default values included: on the
        // cluster any of them is refused, whatever its value.
        let engine_flags: Vec<String> = EngineChoice::augment_args(clap::Command::new("engine"))
            .get_arguments()
            .filter(|arg| {
                matches.value_source(arg.get_id().as_str())
                    == Some(clap::parser::ValueSource::CommandLine)
            })
            .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
            .collect();
        // A flag the engine kind would not use is refused here, before a
        // store or an engine is touched, not when (or if) this engine starts.
        flags
            .engine
            .check_flags()
            .map_err(|e| error(engine_reason(e)))?;
        let limits = flags.limits.limits();
        if limits.nodes.is_none() && limits.depth.is_none() && limits.time.is_none() {
            return Err(error(
                "no budget: give --nodes, --depth or --time-ms (an opponent is an engine and a budget)"
                    .into(),
            ));
        }
        if !(flags.weight.is_finite() && flags.weight > 0.0) {
            return Err(error(format!(
                "--weight must be a positive number, not {}",
                flags.weight
            )));
        }
        if !(0.0..1.0).contains(&flags.node_jitter) {
            return Err(error(format!(
                "--node-jitter must lie in [0, 1), not {}",
                flags.node_jitter
            )));
        }
        let node_jitter = if limits.nodes.is_some() {
            flags.node_jitter
        } else {
            0.0
        };
        if let Some(id) = &flags.engine_id
            && (id.trim().is_empty() || id.len() > MAX_ENGINE_ID_BYTES)
        {
            return Err(error(format!(
                "--engine-id must be 1 to {MAX_ENGINE_ID_BYTES} bytes of an engine's identity"
            )));
        }
        Ok(Self {
            engine: flags.engine,
            limits,
            weight: flags.weight,
            node_jitter,
            engine_id: flags.engine_id,
            text: text.trim().to_owned(),
            engine_flags,
        })
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
    /// use stera_games::opponent::OpponentSpec;
    /// use stera_games::Route;
    /// let fairy = OpponentSpec::parse("--engine-id Fairy-Stockfish --nodes 20000").unwrap();
    /// assert_eq!(fairy.route().unwrap(), Route::Engine("Fairy-Stockfish".into()));
    /// let own = OpponentSpec::parse("--nodes 500").unwrap();
    /// assert_eq!(own.route().unwrap(), Route::Thinkers);
    /// // Engine flags alone name no worker.
    /// assert!(OpponentSpec::parse("--engine usi --engine-cmd fs --nodes 9").unwrap().route().is_err());
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

    #[test]
    fn an_opponent_needs_a_budget_and_a_positive_weight() {
        let err = OpponentSpec::parse("--engine builtin")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no budget"), "{err}");
        assert!(OpponentSpec::parse("--nodes 100 --weight 0").is_err());
        assert!(OpponentSpec::parse("--nodes 100 --weight nan").is_err());
        assert!(OpponentSpec::parse("--nodes 100 --node-jitter 1").is_err());
        let err = OpponentSpec::parse("--nodes 100 --frobnicate")
            .unwrap_err()
            .to_string();
        assert!(err.contains("frobnicate"), "{err}");
        assert!(OpponentSpec::parse("--engine-cmd 'unclosed").is_err());
    }

    #[test]
    fn quoted_commands_and_options_are_read_as_in_a_shell() {
        let o = OpponentSpec::parse(
            "--engine usi --engine-cmd '/opt/my engine/run --fast' --engine-option Threads=1 --time-ms 50",
        )
        .unwrap();
        assert_eq!(
            o.engine.engine_cmd.as_deref(),
            Some("/opt/my engine/run --fast")
        );
        assert_eq!(o.engine.engine_option, ["Threads=1"]);
        assert_eq!(o.budget(), "50 ms");
        assert_eq!(o.node_jitter, 0.0);
        assert_eq!(o.identity("X 1.0"), "X 1.0 at 50 ms");
        assert!(super::plays_at(&o.identity("X 1.0"), &o.budget()));
        assert!(!super::plays_at("X 1.0 at 150 ms", &o.budget()));
    }

    #[test]
    fn the_same_engine_is_found_whatever_the_budget() {
        let a = OpponentSpec::parse("--nodes 500").unwrap();
        let b = OpponentSpec::parse("--nodes 4000 --weight 3").unwrap();
        assert!(a.same_engine(&b.engine));
        let c = OpponentSpec::parse("--engine usi --engine-cmd x --depth 2").unwrap();
        assert!(!a.same_engine(&c.engine));
        // One command driven another way is another engine to start.
        for other in [
            "--engine-cmd x --depth 3 --go-mode byoyomi-only",
            "--engine-cmd x --depth 3 --timeout-secs 7",
            "--engine-cmd x --depth 3 --cp-is-win-rate 10000",
        ] {
            assert!(
                !c.same_engine(&OpponentSpec::parse(other).unwrap().engine),
                "{other}"
            );
        }
        assert!(
            c.same_engine(
                &OpponentSpec::parse("--engine-cmd x --nodes 9")
                    .unwrap()
                    .engine
            )
        );
        assert!(!a.names_engine() && !b.names_engine() && c.names_engine());
    }

    #[test]
    fn an_engine_command_is_a_usi_engine_and_any_engine_flag_names_an_engine() {
        // A command alone makes the engine a USI one, as --opponent-engine-cmd
        // does in `match`: it is started, never replaced by the built-in engine.
        let cmd =
            OpponentSpec::parse("--engine-cmd /usr/games/fairy-stockfish --nodes 1000").unwrap();
        assert_eq!(cmd.engine.kind(), EngineKind::Usi);
        assert!(!cmd.same_engine(&OpponentSpec::parse("--nodes 1000").unwrap().engine));
        assert!(cmd.names_engine());
        assert_eq!(cmd.engine_flags(), ["--engine-cmd"]);
        for (text, flags) in [
            ("--engine builtin --nodes 10", vec!["--engine"]),
            (
                "--eval-file nn.bin --fv-scale 20 --nodes 10",
                vec!["--eval-file", "--fv-scale"],
            ),
            ("--timeout-secs 5 --nodes 10", vec!["--timeout-secs"]),
            (
                "--engine usi --engine-cmd x --engine-option A=1 --depth 2",
                vec!["--engine", "--engine-cmd", "--engine-option"],
            ),
        ] {
            let spec = OpponentSpec::parse(text).unwrap();
            assert!(spec.names_engine(), "{text}");
            assert_eq!(spec.engine_flags(), flags, "{text}");
        }
        let budget = OpponentSpec::parse("--nodes 10 --weight 2 --node-jitter 0.1").unwrap();
        assert!(!budget.names_engine() && budget.engine_flags().is_empty());
    }

    #[test]
    fn an_engine_flag_the_engine_would_not_use_is_refused_at_once() {
        for (text, says) in [
            (
                "--engine builtin --engine-cmd x --nodes 10",
                "--engine-cmd `x` needs --engine usi",
            ),
            (
                "--engine-option A=1 --nodes 10",
                "--engine-option `A=1` needs --engine usi",
            ),
            ("--fv-scale 20 --nodes 10", "--fv-scale needs --eval-file"),
            (
                "--engine-cmd x --eval-file nn.bin --nodes 10",
                "--eval-file and --fv-scale",
            ),
        ] {
            let err = OpponentSpec::parse(text).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains(text), "{text}: {err}");
        }
    }

    #[test]
    fn picks_follow_the_weights() {
        let pool = Pool::new(vec![
            OpponentSpec::parse("--nodes 500").unwrap(),
            OpponentSpec::parse("--nodes 1000 --weight 3").unwrap(),
        ])
        .unwrap();
        let picks: Vec<usize> = (0..100).map(|i| pool.pick(f64::from(i) / 100.0)).collect();
        assert_eq!(picks.iter().filter(|&&p| p == 0).count(), 25);
        assert!(Pool::new(Vec::new()).is_err());
    }
}
