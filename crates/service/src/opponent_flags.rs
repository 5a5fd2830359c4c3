//! An opponent described in the command line's grammar, quoted as one
//! argument: the engine flags, a budget, `--weight`, `--node-jitter` and
//! `--engine-id` (`learn --learn-opponent`, the coordinator's
//! `--learn-opponent`, `match --opponent`: one grammar, one reader).
//!
//! ```
//! use stera_games::opponent::Pool;
//! use stera_service::opponent_flags::parse_opponent;
//! let weak = parse_opponent("--nodes 500 --weight 2").unwrap();
//! let usi = parse_opponent(
//!     "--engine usi --engine-cmd /usr/games/fairy-stockfish \
//!      --engine-option UCI_Variant=shogi --depth 2",
//! ).unwrap();
//! assert_eq!(weak.budget(), "500 nodes");
//! assert_eq!(usi.budget(), "depth 2");
//! assert!(!usi.varies());            // depth limits do not jitter
//! let pool = Pool::new(vec![weak, usi]).unwrap();
//! assert_eq!(pool.pick(0.5), 0);
//! assert_eq!(pool.pick(0.9), 1);
//! ```

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use stera_games::opponent::{DEFAULT_OPPONENT_NODE_JITTER, OpponentError, OpponentSpec};

use crate::engine_flags::{EngineFlags, LimitArgs};

/// The flags one opponent is described with.
#[derive(Debug, Clone, Parser)]
#[command(no_binary_name = true, disable_help_flag = true)]
struct OpponentFlags {
    #[command(flatten)]
    engine: EngineFlags,
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

/// Reads an opponent from the engine flags (`--engine`, `--engine-cmd`,
/// `--engine-option`, `--eval-file`...), the budget flags (`--nodes`,
/// `--depth`, `--time-ms`), `--weight` (1), `--node-jitter` (0.5, only with
/// `--nodes`) and `--engine-id`, quoted as in a shell.
///
/// # Errors
/// Unbalanced quotes, an unknown flag, and what [`OpponentSpec::new`] refuses.
pub fn parse_opponent(text: &str) -> Result<OpponentSpec, OpponentError> {
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
    // cluster they need an --engine-id, whatever their value.
    let engine_flags: Vec<String> = EngineFlags::augment_args(clap::Command::new("engine"))
        .get_arguments()
        .filter(|arg| {
            matches.value_source(arg.get_id().as_str())
                == Some(clap::parser::ValueSource::CommandLine)
        })
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect();
    OpponentSpec::new(
        flags.engine.choice(),
        flags.limits.limits(),
        flags.weight,
        flags.node_jitter,
        flags.engine_id,
        text,
        engine_flags,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_engine::choice::EngineKind;
    use stera_games::opponent::{Pool, plays_at};

    #[test]
    fn an_opponent_needs_a_budget_and_a_positive_weight() {
        let err = parse_opponent("--engine builtin").unwrap_err().to_string();
        assert!(err.contains("no budget"), "{err}");
        assert!(parse_opponent("--nodes 100 --weight 0").is_err());
        assert!(parse_opponent("--nodes 100 --weight nan").is_err());
        assert!(parse_opponent("--nodes 100 --node-jitter 1").is_err());
        let err = parse_opponent("--nodes 100 --frobnicate")
            .unwrap_err()
            .to_string();
        assert!(err.contains("frobnicate"), "{err}");
        assert!(parse_opponent("--engine-cmd 'unclosed").is_err());
    }

    #[test]
    fn quoted_commands_and_options_are_read_as_in_a_shell() {
        let o = parse_opponent(
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
        assert!(plays_at(&o.identity("X 1.0"), &o.budget()));
        assert!(!plays_at("X 1.0 at 150 ms", &o.budget()));
    }

    #[test]
    fn the_same_engine_is_found_whatever_the_budget() {
        let a = parse_opponent("--nodes 500").unwrap();
        let b = parse_opponent("--nodes 4000 --weight 3").unwrap();
        assert!(a.same_engine(&b.engine));
        let c = parse_opponent("--engine usi --engine-cmd x --depth 2").unwrap();
        assert!(!a.same_engine(&c.engine));
        // One command driven another way is another engine to start.
        for other in [
            "--engine-cmd x --depth 3 --go-mode byoyomi-only",
            "--engine-cmd x --depth 3 --timeout-secs 7",
            "--engine-cmd x --depth 3 --cp-is-win-rate 10000",
        ] {
            assert!(
                !c.same_engine(&parse_opponent(other).unwrap().engine),
                "{other}"
            );
        }
        assert!(c.same_engine(&parse_opponent("--engine-cmd x --nodes 9").unwrap().engine));
        assert!(!a.names_engine() && !b.names_engine() && c.names_engine());
    }

    #[test]
    fn an_engine_command_is_a_usi_engine_and_any_engine_flag_names_an_engine() {
        // A command alone makes the engine a USI one, as --opponent-engine-cmd
        // does in `match`: it is started, never replaced by the built-in engine.
        let cmd = parse_opponent("--engine-cmd /usr/games/fairy-stockfish --nodes 1000").unwrap();
        assert_eq!(cmd.engine.kind(), EngineKind::Usi);
        assert!(!cmd.same_engine(&parse_opponent("--nodes 1000").unwrap().engine));
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
            let spec = parse_opponent(text).unwrap();
            assert!(spec.names_engine(), "{text}");
            assert_eq!(spec.engine_flags(), flags, "{text}");
        }
        let budget = parse_opponent("--nodes 10 --weight 2 --node-jitter 0.1").unwrap();
        assert!(!budget.names_engine() && budget.engine_flags().is_empty());
        let id = parse_opponent("--engine-id Fairy --nodes 10").unwrap();
        assert_eq!(id.engine_id.as_deref(), Some("Fairy"));
        assert!(id.engine_flags().is_empty());
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
            let err = parse_opponent(text).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains(text), "{text}: {err}");
        }
    }

    #[test]
    fn a_pool_of_read_opponents_picks_by_weight() {
        let pool = Pool::new(vec![
            parse_opponent("--nodes 500").unwrap(),
            parse_opponent("--nodes 1000 --weight 3").unwrap(),
        ])
        .unwrap();
        let picks: Vec<usize> = (0..100).map(|i| pool.pick(f64::from(i) / 100.0)).collect();
        assert_eq!(picks.iter().filter(|&&p| p == 0).count(), 25);
    }
}
