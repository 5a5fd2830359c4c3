//! The engine flags every binary shares (`--engine`, `--engine-cmd`,
//! `--engine-option`, ..., the budgets `--nodes`, `--depth`, `--time-ms`, and
//! `match`'s `--opponent-*` twins), read into `stera_engine`'s
//! [`EngineChoice`] and [`Limits`]: the command line lives here, the engines
//! know none.

use std::path::PathBuf;
use std::time::Duration;

use stera_engine::choice::{DEFAULT_TIMEOUT_SECS, EngineChoice, EngineKind, GoModeChoice};
use stera_engine::{EvalError, Limits};

/// The kind of evaluator (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKindArg {
    /// The built-in alpha-beta engine (nothing to install).
    Builtin,
    /// An external USI engine given by --engine-cmd.
    Usi,
}

impl EngineKindArg {
    /// The engine kind it names.
    #[must_use]
    pub const fn kind(self) -> EngineKind {
        match self {
            Self::Builtin => EngineKind::Builtin,
            Self::Usi => EngineKind::Usi,
        }
    }
}

/// Which `go` limits a USI engine understands (`--go-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GoModeArg {
    /// Byoyomi only for GPS Shogi (recognised by its `id name`), anything otherwise.
    Auto,
    /// `go depth`, `go nodes` and `go ... byoyomi` as the limits ask.
    Any,
    /// Only `go btime 0 wtime 0 byoyomi <ms>`.
    ByoyomiOnly,
}

impl GoModeArg {
    /// The mode it names.
    #[must_use]
    pub const fn choice(self) -> GoModeChoice {
        match self {
            Self::Auto => GoModeChoice::Auto,
            Self::Any => GoModeChoice::Any,
            Self::ByoyomiOnly => GoModeChoice::ByoyomiOnly,
        }
    }
}

/// Evaluator flags: [`EngineFlags::choice`] is the engine they choose.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct EngineFlags {
    /// Which evaluator to run. Default: `usi` when --engine-cmd is given (a
    /// command is a USI engine's), otherwise `builtin`.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<EngineKindArg>,
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
    #[arg(long, value_name = "K", default_value_t = stera_engine::usi::DEFAULT_WIN_RATE_COEFFICIENT)]
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

impl EngineFlags {
    /// The engine these flags choose.
    #[must_use]
    pub fn choice(&self) -> EngineChoice {
        EngineChoice {
            engine: self.engine.map(EngineKindArg::kind),
            engine_cmd: self.engine_cmd.clone(),
            engine_option: self.engine_option.clone(),
            go_mode: self.go_mode.choice(),
            timeout_secs: self.timeout_secs,
            cp_is_win_rate: self.cp_is_win_rate,
            win_rate_coefficient: self.win_rate_coefficient,
            eval_file: self.eval_file.clone(),
            fv_scale: self.fv_scale,
        }
    }
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
    pub opponent_engine: Option<EngineKindArg>,
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
    /// use stera_engine::choice::EngineKind;
    /// use stera_service::engine_flags::{EngineFlags, OpponentChoice};
    /// #[derive(Parser)]
    /// struct Cli {
    ///     #[command(flatten)]
    ///     engine: EngineFlags,
    ///     #[command(flatten)]
    ///     opponent: OpponentChoice,
    /// }
    /// let same = Cli::parse_from(["x"]);
    /// assert_eq!(same.opponent.engine(&same.engine.choice()).kind(), EngineKind::Builtin);
    /// let other = Cli::parse_from(["x", "--opponent-engine-cmd", "/usr/games/fairy-stockfish"]);
    /// let engine = other.opponent.engine(&other.engine.choice());
    /// assert_eq!(engine.kind(), EngineKind::Usi);
    /// assert_eq!(engine.engine_cmd.as_deref(), Some("/usr/games/fairy-stockfish"));
    /// ```
    #[must_use]
    pub fn engine(&self, own: &EngineChoice) -> EngineChoice {
        if !self.names_engine() {
            return own.clone();
        }
        EngineChoice {
            engine: self.opponent_engine.map(EngineKindArg::kind),
            engine_cmd: self.opponent_engine_cmd.clone(),
            engine_option: self.opponent_engine_option.clone(),
            go_mode: self
                .opponent_go_mode
                .map_or(GoModeChoice::Auto, GoModeArg::choice),
            timeout_secs: self.opponent_timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS),
            cp_is_win_rate: self.opponent_cp_is_win_rate,
            win_rate_coefficient: self
                .opponent_win_rate_coefficient
                .unwrap_or(stera_engine::usi::DEFAULT_WIN_RATE_COEFFICIENT),
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

/// The command-line words that give `choice` back, each flag at its
/// default left out: the engine of a process started by this one (the
/// coordinator's `--local-workers`). Values go as `--flag=value`, so that
/// one starting with `-` stays a value.
///
/// ```
/// use clap::Parser;
/// use stera_engine::choice::EngineChoice;
/// use stera_service::engine_flags::{EngineFlags, engine_args};
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     engine: EngineFlags,
/// }
/// let words = ["x", "--engine-cmd", "/usr/games/fairy-stockfish", "--engine-option", "UCI_Variant=shogi"];
/// let engine = Cli::parse_from(words).engine.choice();
/// let args = engine_args(&engine);
/// assert_eq!(args, ["--engine-cmd=/usr/games/fairy-stockfish", "--engine-option=UCI_Variant=shogi"]);
/// let again = Cli::parse_from(std::iter::once("x".into()).chain(args)).engine.choice();
/// assert_eq!(again, engine);
/// assert!(engine_args(&EngineChoice::builtin()).is_empty());
/// ```
#[must_use]
pub fn engine_args(choice: &EngineChoice) -> Vec<std::ffi::OsString> {
    let this = choice;
    let flag = |name: &str, value: &dyn AsRef<std::ffi::OsStr>| {
        let mut word = std::ffi::OsString::from(format!("--{name}="));
        word.push(value.as_ref());
        word
    };
    let default = EngineChoice::builtin();
    let mut args = Vec::new();
    if let Some(kind) = this.engine {
        args.push(flag("engine", &kind.name()));
    }
    if let Some(cmd) = &this.engine_cmd {
        args.push(flag("engine-cmd", cmd));
    }
    for option in &this.engine_option {
        args.push(flag("engine-option", option));
    }
    if this.go_mode != default.go_mode {
        args.push(flag("go-mode", &this.go_mode.name()));
    }
    if this.timeout_secs != default.timeout_secs {
        args.push(flag("timeout-secs", &this.timeout_secs.to_string()));
    }
    if let Some(scale) = this.cp_is_win_rate {
        // `f64`'s `Display` is the shortest text that parses back to it.
        args.push(flag("cp-is-win-rate", &scale.to_string()));
    }
    if this.win_rate_coefficient.to_bits() != default.win_rate_coefficient.to_bits() {
        args.push(flag(
            "win-rate-coefficient",
            &this.win_rate_coefficient.to_string(),
        ));
    }
    if let Some(path) = &this.eval_file {
        args.push(flag("eval-file", path));
    }
    if let Some(scale) = this.fv_scale {
        args.push(flag("fv-scale", &scale.to_string()));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use std::time::Duration;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        limits: LimitArgs,
    }

    #[test]
    fn the_help_states_the_built_in_engines_own_budget() {
        let help = Cli::command().render_long_help().to_string();
        let n = stera_engine::builtin::DEFAULT_NODES;
        let budget = format!("{},{:03} nodes", n / 1000, n % 1000);
        assert!(help.contains(&budget), "{budget} missing from:\n{help}");
    }

    #[derive(Parser)]
    struct EngineCli {
        #[command(flatten)]
        engine: EngineFlags,
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
                    .choice()
            };
            let engine = parse(case.iter().map(Into::into).collect());
            let words = engine_args(&engine);
            assert_eq!(parse(words.clone()), engine, "{case:?} -> {words:?}");
            assert_eq!(words.is_empty(), engine.is_default(), "{case:?}");
        }
    }

    #[test]
    fn the_opponent_twins_are_named_as_given() {
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
