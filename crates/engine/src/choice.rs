//! Which evaluator a process runs, as given on its command line (shared by the
//! worker, `book-tools evaluate` and the coordinator, which passes them on to its
//! local workers, so all accept the same flags).

use std::path::PathBuf;
use std::time::Duration;

use crate::builtin::BuiltinConfig;
use crate::nnue::{self, DEFAULT_FV_SCALE, NnueConfig};
use crate::player::Player;
use crate::usi::{GoMode, ScoreConversion, UsiConfig, UsiEvaluator};
use crate::{BuiltinEvaluator, BuiltinPlayer, EvalError, Evaluator, Limits, UsiPlayer};

/// The largest accepted `--fv-scale` (YaneuraOu's option allows the same range).
pub const MAX_FV_SCALE: i32 = 128;

/// The default of `--timeout-secs`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// The kind of evaluator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The built-in alpha-beta engine (nothing to install).
    Builtin,
    /// An external USI engine given by --engine-cmd.
    Usi,
}

/// Which `go` limits a USI engine understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GoModeArg {
    /// Byoyomi only for GPS Shogi (recognised by its `id name`), anything otherwise.
    Auto,
    /// `go depth`, `go nodes` and `go ... byoyomi` as the limits ask.
    Any,
    /// Only `go btime 0 wtime 0 byoyomi <ms>`.
    ByoyomiOnly,
}

/// Evaluator flags.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct EngineChoice {
    /// Which evaluator to run. Default: `usi` when --engine-cmd is given (a
    /// command is a USI engine's), otherwise `builtin`.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<EngineKind>,
    /// The USI engine's command line: the program, then its arguments, separated by
    /// spaces (for example `/usr/games/fairy-stockfish`). Required with `--engine usi`;
    /// given alone, it makes the engine `usi`.
    #[arg(long, value_name = "CMD")]
    pub engine_cmd: Option<String>,
    /// A USI option as `Name=Value`, sent with `setoption` after the handshake
    /// (repeatable; e.g. `UCI_Variant=shogi` for Fairy-Stockfish, `BookDepth=0` for
    /// gpsusi, `BookFile=no_book` for YaneuraOu). Default: none, the engine's own
    /// option values.
    #[arg(long, value_name = "NAME=VALUE")]
    pub engine_option: Vec<String>,
    /// Which `go` limits the USI engine understands.
    #[arg(long, value_enum, default_value = "auto")]
    pub go_mode: GoModeArg,
    /// Seconds one USI search may run beyond its byoyomi before the engine is
    /// killed; also how long the engine may take to start (`usi` .. `usiok`,
    /// `isready` .. `readyok`). An engine that prints without end is stopped at
    /// the same deadline.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout_secs: u64,
    /// The USI engine prints win rates scaled by SCALE in `score cp` (e.g. 10000);
    /// they are converted with cp = -K ln(1/p - 1). Default: `score cp` is
    /// centipawns, taken as printed.
    #[arg(long, value_name = "SCALE")]
    pub cp_is_win_rate: Option<f64>,
    /// K in the win-rate conversion cp = -K ln(1/p - 1), also used for
    /// `score winrate` output.
    #[arg(long, value_name = "K", default_value_t = crate::usi::DEFAULT_WIN_RATE_COEFFICIENT)]
    pub win_rate_coefficient: f64,
    /// NNUE evaluation file (HalfKP 256x2-32-32 `nn.bin`, 64 217 066 bytes) for the
    /// built-in engine; without it the built-in engine uses its hand-crafted
    /// evaluation. Loaded once and shared by all engines of the process.
    #[arg(long, value_name = "PATH")]
    pub eval_file: Option<PathBuf>,
    /// Divisor of the NNUE output (YaneuraOu's FV_SCALE, 1..=128). Only with
    /// --eval-file. Default: 16, right for most HalfKP nets.
    #[arg(long, value_name = "N")]
    pub fv_scale: Option<i32>,
}

/// Evaluation budget flags.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct LimitArgs {
    /// Node limit (`go nodes N`; the built-in engine's budget for the whole
    /// position). When none of --nodes, --depth and --time-ms is given, the
    /// built-in engine searches 300,000 nodes per position and a USI engine is
    /// refused (it would search forever).
    #[arg(long, value_name = "NODES")]
    pub nodes: Option<u64>,
    /// Depth limit (`go depth D`; child searches of moves a USI engine did not report
    /// get D-1). Default: no depth limit.
    #[arg(long, value_name = "DEPTH")]
    pub depth: Option<u32>,
    /// Time limit in milliseconds: `go btime 0 wtime 0 byoyomi MS` for each USI
    /// search, a budget for the whole position for the built-in engine (the
    /// coordinator's flag of the same name, `--time-ms`). Default: no time limit.
    /// Formerly `--byoyomi` (or `--time`), still accepted.
    #[arg(long, value_name = "MS", alias = "byoyomi", alias = "time")]
    pub time_ms: Option<u64>,
}

/// The budget of each move an engine plays in a game (`book-tools match`,
/// `learn`): [`LimitArgs`] with help that speaks of moves, since there a budget
/// is per move, not for the whole position of a think job.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct MoveLimitArgs {
    /// Node limit per move: each move an engine plays searches this many nodes
    /// (`go nodes N` for a USI engine). Default, without --nodes, --depth and
    /// --time-ms: `learn` plays 1,000 nodes per move (the coordinator's
    /// --learn-nodes), `match` the built-in engine's 300,000 and refuses a USI
    /// engine.
    #[arg(long, value_name = "NODES")]
    pub nodes: Option<u64>,
    /// Depth limit per move (`go depth D`). Default: no depth limit.
    #[arg(long, value_name = "DEPTH")]
    pub depth: Option<u32>,
    /// Time limit per move in milliseconds (`go btime 0 wtime 0 byoyomi MS`
    /// for a USI engine). Default: no time limit. Formerly `--byoyomi` (or
    /// `--time`), still accepted.
    #[arg(long, value_name = "MS", alias = "byoyomi", alias = "time")]
    pub time_ms: Option<u64>,
}

impl MoveLimitArgs {
    /// The limits these flags ask for.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.as_limit_args().limits()
    }

    /// The same flags as [`LimitArgs`] (what [`OpponentChoice::limits`] takes).
    #[must_use]
    pub fn as_limit_args(&self) -> LimitArgs {
        LimitArgs {
            nodes: self.nodes,
            depth: self.depth,
            time_ms: self.time_ms,
        }
    }
}

impl LimitArgs {
    /// The limits these flags ask for.
    #[must_use]
    pub fn limits(&self) -> Limits {
        Limits {
            nodes: self.nodes,
            depth: self.depth,
            time: self.time_ms.map(Duration::from_millis),
        }
    }
}

/// The opponent's engine and budget, when it is not the engine of the side
/// under test (`book-tools match`): a prefixed copy of [`EngineChoice`] and
/// [`LimitArgs`] whose every flag is optional. Without any `--opponent-*`
/// engine flag the opponent is the side's own engine ([`OpponentChoice::engine`]);
/// without any `--opponent-*` limit, its limits ([`OpponentChoice::limits`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OpponentChoice {
    /// The opponent's evaluator (as --engine). Default: the same engine as the
    /// side under test (--engine and its flags), unless another --opponent-*
    /// engine flag describes one: then `usi` with --opponent-engine-cmd, else
    /// `builtin`.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub opponent_engine: Option<EngineKind>,
    /// The opponent's USI command line (as --engine-cmd), e.g.
    /// `/usr/games/fairy-stockfish`. Default: the side under test's engine.
    #[arg(long, value_name = "CMD")]
    pub opponent_engine_cmd: Option<String>,
    /// A USI option of the opponent's engine as `Name=Value` (repeatable; as
    /// --engine-option, e.g. `UCI_Variant=shogi`). Default: none.
    #[arg(long, value_name = "NAME=VALUE")]
    pub opponent_engine_option: Vec<String>,
    /// Which `go` limits the opponent's USI engine understands (as --go-mode).
    /// Default: auto.
    #[arg(long, value_enum, value_name = "MODE")]
    pub opponent_go_mode: Option<GoModeArg>,
    /// Seconds one search of the opponent's USI engine may run beyond its
    /// byoyomi, and its start may take (as --timeout-secs). Default: 120.
    #[arg(long, value_name = "SECS")]
    pub opponent_timeout_secs: Option<u64>,
    /// The opponent's USI engine prints win rates scaled by SCALE in `score cp`
    /// (as --cp-is-win-rate). Default: centipawns.
    #[arg(long, value_name = "SCALE")]
    pub opponent_cp_is_win_rate: Option<f64>,
    /// K of the opponent's win-rate conversion (as --win-rate-coefficient).
    /// Default: the same default as --win-rate-coefficient.
    #[arg(long, value_name = "K")]
    pub opponent_win_rate_coefficient: Option<f64>,
    /// NNUE evaluation file of a built-in opponent (as --eval-file). Default:
    /// the hand-crafted evaluation.
    #[arg(long, value_name = "PATH")]
    pub opponent_eval_file: Option<PathBuf>,
    /// Divisor of the opponent's NNUE output (as --fv-scale). Default: 16.
    #[arg(long, value_name = "N")]
    pub opponent_fv_scale: Option<i32>,
    /// The opponent's node limit (as --nodes). Given any of --opponent-nodes,
    /// --opponent-depth and --opponent-time-ms, the opponent plays at those
    /// limits alone. Default: the side under test's limits.
    #[arg(long, value_name = "NODES")]
    pub opponent_nodes: Option<u64>,
    /// The opponent's depth limit (as --depth). Default: the side under test's
    /// limits (see --opponent-nodes).
    #[arg(long, value_name = "DEPTH")]
    pub opponent_depth: Option<u32>,
    /// The opponent's time limit in milliseconds (as --time-ms). Default: the
    /// side under test's limits (see --opponent-nodes).
    #[arg(long, value_name = "MS")]
    pub opponent_time_ms: Option<u64>,
}

impl OpponentChoice {
    /// True when an `--opponent-*` engine flag names an engine of its own.
    #[must_use]
    pub fn names_engine(&self) -> bool {
        self.opponent_engine.is_some()
            || self.opponent_engine_cmd.is_some()
            || !self.opponent_engine_option.is_empty()
            || self.opponent_go_mode.is_some()
            || self.opponent_timeout_secs.is_some()
            || self.opponent_cp_is_win_rate.is_some()
            || self.opponent_win_rate_coefficient.is_some()
            || self.opponent_eval_file.is_some()
            || self.opponent_fv_scale.is_some()
    }

    /// Refuses `--opponent-*` engine flags that the opponent's engine would
    /// not use, named as given (see [`EngineChoice::check_flags`]); without
    /// any, the opponent is the side's own engine, checked as that.
    ///
    /// # Errors
    /// The flag given, the engine kind and why they do not go together.
    pub fn check_flags(&self) -> Result<(), EvalError> {
        if !self.names_engine() {
            return Ok(());
        }
        self.engine(&EngineChoice::builtin())
            .check_flags_named("opponent-")
    }

    /// True when an `--opponent-*` limit is given.
    #[must_use]
    pub fn names_limits(&self) -> bool {
        self.opponent_nodes.is_some()
            || self.opponent_depth.is_some()
            || self.opponent_time_ms.is_some()
    }

    /// The opponent's engine: `own` when no `--opponent-*` engine flag is
    /// given, otherwise the engine those flags describe, each unset flag at the
    /// default of its unprefixed twin (nothing is taken from `own`: another
    /// engine gets none of the side's USI options).
    ///
    /// ```
    /// use clap::Parser;
    /// use stera_engine::choice::{EngineChoice, EngineKind, OpponentChoice};
    /// #[derive(Parser)]
    /// struct Cli {
    ///     #[command(flatten)]
    ///     engine: EngineChoice,
    ///     #[command(flatten)]
    ///     opponent: OpponentChoice,
    /// }
    /// let same = Cli::parse_from(["x"]);
    /// assert_eq!(same.opponent.engine(&same.engine).kind(), EngineKind::Builtin);
    /// let other = Cli::parse_from(["x", "--opponent-engine-cmd", "/usr/games/fairy-stockfish"]);
    /// let engine = other.opponent.engine(&other.engine);
    /// assert_eq!(engine.kind(), EngineKind::Usi);
    /// assert_eq!(engine.engine_cmd.as_deref(), Some("/usr/games/fairy-stockfish"));
    /// ```
    #[must_use]
    pub fn engine(&self, own: &EngineChoice) -> EngineChoice {
        if !self.names_engine() {
            return own.clone();
        }
        EngineChoice {
            engine: self.opponent_engine,
            engine_cmd: self.opponent_engine_cmd.clone(),
            engine_option: self.opponent_engine_option.clone(),
            go_mode: self.opponent_go_mode.unwrap_or(GoModeArg::Auto),
            timeout_secs: self.opponent_timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS),
            cp_is_win_rate: self.opponent_cp_is_win_rate,
            win_rate_coefficient: self
                .opponent_win_rate_coefficient
                .unwrap_or(crate::usi::DEFAULT_WIN_RATE_COEFFICIENT),
            eval_file: self.opponent_eval_file.clone(),
            fv_scale: self.opponent_fv_scale,
        }
    }

    /// The opponent's limits: `own` when no `--opponent-*` limit is given,
    /// otherwise those limits alone.
    #[must_use]
    pub fn limits(&self, own: &LimitArgs) -> LimitArgs {
        if !self.names_limits() {
            return *own;
        }
        LimitArgs {
            nodes: self.opponent_nodes,
            depth: self.opponent_depth,
            time_ms: self.opponent_time_ms,
        }
    }
}

impl EngineChoice {
    /// The built-in engine with every flag at its default.
    #[must_use]
    pub fn builtin() -> Self {
        Self {
            engine: None,
            engine_cmd: None,
            engine_option: Vec::new(),
            go_mode: GoModeArg::Auto,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            cp_is_win_rate: None,
            win_rate_coefficient: crate::usi::DEFAULT_WIN_RATE_COEFFICIENT,
            eval_file: None,
            fv_scale: None,
        }
    }

    /// True when every flag is at its default ([`EngineChoice::builtin`]): the
    /// command line chose no engine.
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Self::builtin()
    }

    /// The command-line words that give these flags back, each flag at its
    /// default left out: the engine of a process started by this one (the
    /// coordinator's `--local-workers`). Values go as `--flag=value`, so that
    /// one starting with `-` stays a value.
    ///
    /// ```
    /// use clap::Parser;
    /// use stera_engine::choice::EngineChoice;
    /// #[derive(Parser)]
    /// struct Cli {
    ///     #[command(flatten)]
    ///     engine: EngineChoice,
    /// }
    /// let words = ["x", "--engine-cmd", "/usr/games/fairy-stockfish", "--engine-option", "UCI_Variant=shogi"];
    /// let engine = Cli::parse_from(words).engine;
    /// let args = engine.to_args();
    /// assert_eq!(args, ["--engine-cmd=/usr/games/fairy-stockfish", "--engine-option=UCI_Variant=shogi"]);
    /// let again = Cli::parse_from(std::iter::once("x".into()).chain(args)).engine;
    /// assert_eq!(again, engine);
    /// assert!(EngineChoice::builtin().to_args().is_empty());
    /// ```
    #[must_use]
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        use clap::ValueEnum;
        fn name(value: Option<clap::builder::PossibleValue>) -> String {
            value.map_or_else(String::new, |v| v.get_name().to_owned())
        }
        let flag = |name: &str, value: &dyn AsRef<std::ffi::OsStr>| {
            let mut word = std::ffi::OsString::from(format!("--{name}="));
            word.push(value.as_ref());
            word
        };
        let default = Self::builtin();
        let mut args = Vec::new();
        if let Some(kind) = self.engine {
            args.push(flag("engine", &name(kind.to_possible_value())));
        }
        if let Some(cmd) = &self.engine_cmd {
            args.push(flag("engine-cmd", cmd));
        }
        for option in &self.engine_option {
            args.push(flag("engine-option", option));
        }
        if self.go_mode != default.go_mode {
            args.push(flag("go-mode", &name(self.go_mode.to_possible_value())));
        }
        if self.timeout_secs != default.timeout_secs {
            args.push(flag("timeout-secs", &self.timeout_secs.to_string()));
        }
        if let Some(scale) = self.cp_is_win_rate {
            // `f64`'s `Display` is the shortest text that parses back to it.
            args.push(flag("cp-is-win-rate", &scale.to_string()));
        }
        if self.win_rate_coefficient.to_bits() != default.win_rate_coefficient.to_bits() {
            args.push(flag(
                "win-rate-coefficient",
                &self.win_rate_coefficient.to_string(),
            ));
        }
        if let Some(path) = &self.eval_file {
            args.push(flag("eval-file", path));
        }
        if let Some(scale) = self.fv_scale {
            args.push(flag("fv-scale", &scale.to_string()));
        }
        args
    }

    /// The kind of engine these flags run: `--engine` as given, otherwise a
    /// USI engine when `--engine-cmd` names one and the built-in engine when
    /// not (the same rule as `--opponent-engine` with `--opponent-engine-cmd`).
    #[must_use]
    pub fn kind(&self) -> EngineKind {
        self.engine.unwrap_or(if self.engine_cmd.is_some() {
            EngineKind::Usi
        } else {
            EngineKind::Builtin
        })
    }

    /// The budget a search asked with `limits` runs at on this engine: `limits`,
    /// or the built-in engine's own [`crate::builtin::DEFAULT_NODES`] when they
    /// set nothing (an external engine has no budget of its own).
    #[must_use]
    pub fn budget_of(&self, limits: Limits) -> Limits {
        let unset = limits.nodes.is_none() && limits.depth.is_none() && limits.time.is_none();
        if unset && self.kind() == EngineKind::Builtin {
            Limits {
                nodes: Some(crate::builtin::DEFAULT_NODES),
                ..limits
            }
        } else {
            limits
        }
    }

    /// Starts the chosen evaluator.
    ///
    /// # Errors
    /// Inconsistent flags, or an engine that does not start.
    pub fn start(&self) -> Result<Box<dyn Evaluator>, EvalError> {
        self.check_flags()?;
        match self.kind() {
            EngineKind::Builtin => Ok(Box::new(match self.nnue()? {
                Some(nnue) => BuiltinEvaluator::with_nnue(BuiltinConfig::default(), nnue),
                None => BuiltinEvaluator::new(),
            })),
            EngineKind::Usi => Ok(Box::new(UsiEvaluator::new(self.usi_config()?)?)),
        }
    }

    /// Starts the chosen engine as a game [`Player`] (same flags, same checks as
    /// [`EngineChoice::start`]).
    ///
    /// # Errors
    /// Inconsistent flags, or an engine that does not start.
    pub fn start_player(&self) -> Result<Box<dyn Player>, EvalError> {
        self.check_flags()?;
        match self.kind() {
            EngineKind::Builtin => Ok(Box::new(BuiltinPlayer::with_config(
                BuiltinConfig::default(),
                self.nnue()?,
            ))),
            EngineKind::Usi => Ok(Box::new(UsiPlayer::new(self.usi_config()?)?)),
        }
    }

    /// Rejects flags that the engine these flags run would not use, so that
    /// none is silently left unused: a command or a USI option for the built-in
    /// engine, `--fv-scale` without `--eval-file`, an evaluation file for a USI
    /// engine. [`EngineChoice::start`] checks the same.
    ///
    /// # Errors
    /// The flag given, the engine kind and why they do not go together.
    pub fn check_flags(&self) -> Result<(), EvalError> {
        self.check_flags_named("")
    }

    /// [`EngineChoice::check_flags`] with the flags named with `prefix`
    /// (`opponent-`: `--opponent-engine-cmd`).
    fn check_flags_named(&self, prefix: &str) -> Result<(), EvalError> {
        let bad = |reason: String| {
            Err(EvalError::Engine {
                engine: "command line".into(),
                reason,
            })
        };
        let p = prefix;
        match self.kind() {
            EngineKind::Builtin => {
                if let Some(cmd) = &self.engine_cmd {
                    bad(format!(
                        "--{p}engine-cmd `{}` needs --{p}engine usi, not --{p}engine builtin: the built-in engine runs no command",
                        stera_rules::excerpt(cmd)
                    ))
                } else if let Some(option) = self.engine_option.first() {
                    bad(format!(
                        "--{p}engine-option `{}` needs --{p}engine usi with --{p}engine-cmd: the built-in engine takes no USI options",
                        stera_rules::excerpt(option)
                    ))
                } else if self.fv_scale.is_some() && self.eval_file.is_none() {
                    bad(format!("--{p}fv-scale needs --{p}eval-file"))
                } else {
                    Ok(())
                }
            }
            EngineKind::Usi if self.eval_file.is_some() || self.fv_scale.is_some() => bad(format!(
                "--{p}eval-file and --{p}fv-scale are for the built-in engine; \
                 give a USI engine its file with --{p}engine-option EvalFile=PATH"
            )),
            // Named here, with its prefix: the engine's start would name the
            // unprefixed flags of the side under test.
            EngineKind::Usi
                if self
                    .engine_cmd
                    .as_deref()
                    .is_none_or(|c| c.trim().is_empty()) =>
            {
                bad(format!("--{p}engine usi needs --{p}engine-cmd <CMD>"))
            }
            EngineKind::Usi => Ok(()),
        }
    }

    /// The NNUE evaluation these flags ask for (`None`: the hand-crafted one). The
    /// network is loaded once per process and shared by every engine started from
    /// the same path.
    ///
    /// # Errors
    /// `--fv-scale` out of range or without `--eval-file`; an unusable file.
    pub fn nnue(&self) -> Result<Option<NnueConfig>, EvalError> {
        let bad = |reason: String| EvalError::Engine {
            engine: "command line".into(),
            reason,
        };
        let fv_scale = self.fv_scale.unwrap_or(DEFAULT_FV_SCALE);
        if !(1..=MAX_FV_SCALE).contains(&fv_scale) {
            return Err(bad(format!(
                "--fv-scale must be 1..={MAX_FV_SCALE}, not {fv_scale}"
            )));
        }
        let Some(path) = &self.eval_file else {
            if self.fv_scale.is_some() {
                return Err(bad("--fv-scale needs --eval-file".into()));
            }
            return Ok(None);
        };
        let network = nnue::load_shared(path).map_err(|e| bad(e.to_string()))?;
        Ok(Some(NnueConfig { network, fv_scale }))
    }

    /// The USI configuration these flags describe.
    ///
    /// # Errors
    /// A missing or empty `--engine-cmd`, a malformed option, a bad coefficient.
    pub fn usi_config(&self) -> Result<UsiConfig, EvalError> {
        let bad = |reason: String| EvalError::Engine {
            engine: "command line".into(),
            reason,
        };
        let Some(command) = self.engine_cmd.as_deref() else {
            return Err(bad("--engine usi needs --engine-cmd <CMD>".into()));
        };
        let mut words = command.split_whitespace();
        let Some(program) = words.next() else {
            return Err(bad("--engine-cmd is empty".into()));
        };
        let mut config = UsiConfig::new(program);
        config.args = words.map(str::to_owned).collect();
        for text in &self.engine_option {
            config
                .options
                .push(UsiConfig::parse_option(text).map_err(bad)?);
        }
        config.go_mode = match self.go_mode {
            GoModeArg::Auto => GoMode::Auto,
            GoModeArg::Any => GoMode::Any,
            GoModeArg::ByoyomiOnly => GoMode::ByoyomiOnly,
        };
        config.search_timeout = Duration::from_secs(self.timeout_secs);
        config.startup_timeout = Duration::from_secs(self.timeout_secs);
        if let Some(scale) = self.cp_is_win_rate
            && !(scale.is_finite() && scale > 0.0)
        {
            return Err(bad(format!(
                "--cp-is-win-rate must be a positive number, not {scale}"
            )));
        }
        if !(self.win_rate_coefficient.is_finite() && self.win_rate_coefficient > 0.0) {
            return Err(bad(format!(
                "--win-rate-coefficient must be a positive number, not {}",
                self.win_rate_coefficient
            )));
        }
        config.scores = ScoreConversion {
            cp_is_win_rate: self.cp_is_win_rate,
            win_rate_coefficient: self.win_rate_coefficient,
        };
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        limits: LimitArgs,
    }

    #[test]
    fn the_help_states_the_built_in_engines_own_budget() {
        let help = Cli::command().render_long_help().to_string();
        let n = crate::builtin::DEFAULT_NODES;
        let budget = format!("{},{:03} nodes", n / 1000, n % 1000);
        assert!(help.contains(&budget), "{budget} missing from:\n{help}");
    }

    #[derive(Parser)]
    struct EngineCli {
        #[command(flatten)]
        engine: EngineChoice,
    }

    #[test]
    fn the_flags_parse_back_from_their_words() {
        let cases: [&[&str]; 5] = [
            &[],
            &[
                "--engine-cmd",
                "/usr/games/fairy-stockfish",
                "--engine-option",
                "UCI_Variant=shogi",
            ],
            &[
                "--engine",
                "usi",
                "--engine-cmd",
                "/opt/yo/YaneuraOu -x",
                "--engine-option",
                "BookFile=no_book",
                "--engine-option=-odd=1",
                "--go-mode",
                "byoyomi-only",
                "--timeout-secs",
                "30",
                "--cp-is-win-rate",
                "10000",
                "--win-rate-coefficient",
                "756.0864962951762",
            ],
            &[
                "--engine",
                "builtin",
                "--eval-file",
                "/nets/nn.bin",
                "--fv-scale",
                "24",
            ],
            &["--go-mode", "any", "--win-rate-coefficient", "0.1"],
        ];
        for case in cases {
            let parse = |words: Vec<std::ffi::OsString>| {
                EngineCli::try_parse_from(std::iter::once("x".into()).chain(words))
                    .unwrap()
                    .engine
            };
            let engine = parse(case.iter().map(Into::into).collect());
            let words = engine.to_args();
            assert_eq!(parse(words.clone()), engine, "{case:?} -> {words:?}");
            assert_eq!(words.is_empty(), engine.is_default(), "{case:?}");
        }
    }

    #[test]
    fn the_timeout_bounds_the_handshake_too() {
        let cli = EngineCli::try_parse_from([
            "x",
            "--engine",
            "usi",
            "--engine-cmd",
            "e",
            "--timeout-secs",
            "7",
        ])
        .unwrap();
        let config = cli.engine.usi_config().unwrap();
        assert_eq!(config.search_timeout, Duration::from_secs(7));
        assert_eq!(config.startup_timeout, Duration::from_secs(7));
    }

    #[test]
    fn an_engine_command_alone_is_a_usi_engine_and_an_unused_flag_is_refused() {
        let parse = |args: &[&str]| {
            EngineCli::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
                .unwrap()
                .engine
        };
        assert_eq!(parse(&[]).kind(), EngineKind::Builtin);
        assert_eq!(EngineChoice::builtin().kind(), EngineKind::Builtin);
        let usi = parse(&["--engine-cmd", "e"]);
        assert_eq!(usi.kind(), EngineKind::Usi);
        assert!(usi.check_flags().is_ok());
        assert_eq!(usi.usi_config().unwrap().program, std::path::Path::new("e"));
        for (args, says) in [
            (
                &["--engine", "builtin", "--engine-cmd", "e"][..],
                "--engine-cmd `e` needs --engine usi, not --engine builtin",
            ),
            (
                &["--engine-option", "A=1"][..],
                "--engine-option `A=1` needs --engine usi with --engine-cmd",
            ),
            (&["--fv-scale", "20"][..], "--fv-scale needs --eval-file"),
            (
                &["--engine-cmd", "e", "--eval-file", "nn.bin"][..],
                "--eval-file and --fv-scale are for the built-in engine",
            ),
        ] {
            let err = parse(args).check_flags().unwrap_err().to_string();
            assert!(err.contains(says), "{args:?}: {err}");
        }
        // The --opponent- twins are named as given.
        #[derive(Parser)]
        struct Both {
            #[command(flatten)]
            opponent: OpponentChoice,
        }
        let opponent = |args: &[&str]| {
            Both::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
                .unwrap()
                .opponent
        };
        assert!(opponent(&[]).check_flags().is_ok());
        assert!(
            opponent(&["--opponent-engine-cmd", "e"])
                .check_flags()
                .is_ok()
        );
        let err = opponent(&["--opponent-engine", "builtin", "--opponent-engine-cmd", "e"])
            .check_flags()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--opponent-engine-cmd `e` needs --opponent-engine usi"),
            "{err}"
        );
    }

    #[test]
    fn the_time_limit_keeps_its_former_names() {
        for flag in ["--time-ms", "--byoyomi", "--time"] {
            let cli = Cli::try_parse_from(["x", flag, "1500"]).unwrap();
            assert_eq!(
                cli.limits.limits().time,
                Some(Duration::from_millis(1500)),
                "{flag}"
            );
        }
        let none = Cli::try_parse_from(["x"]).unwrap().limits.limits();
        assert_eq!((none.nodes, none.depth, none.time), (None, None, None));
    }
}
