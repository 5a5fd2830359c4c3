//! Which evaluator a process runs: the engine, its command and options, how it
//! is driven. The command-line flags that give it are `stera_service`'s
//! (`engine_flags`): this crate knows no command line, and every binary (the
//! worker, `book-tools`, the coordinator for its local workers) reads the same
//! flags into this one [`EngineChoice`].

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// The built-in alpha-beta engine (nothing to install).
    Builtin,
    /// An external USI engine given by --engine-cmd.
    Usi,
}

/// Which `go` limits a USI engine understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoModeChoice {
    /// Byoyomi only for GPS Shogi (recognised by its `id name`), anything otherwise.
    Auto,
    /// `go depth`, `go nodes` and `go ... byoyomi` as the limits ask.
    Any,
    /// Only `go btime 0 wtime 0 byoyomi <ms>`.
    ByoyomiOnly,
}

/// Which evaluator to run and how (`--engine`, `--engine-cmd`, ...: the flag
/// of each field is named in its documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineChoice {
    /// Which evaluator to run. Default: `usi` when --engine-cmd is given (a
    /// command is a USI engine's), otherwise `builtin`.
    pub engine: Option<EngineKind>,
    /// The USI engine's command line: the program, then its arguments, separated by
    /// spaces (for example `/usr/games/fairy-stockfish`). Required with `--engine usi`;
    /// given alone, it makes the engine `usi`.
    pub engine_cmd: Option<String>,
    /// A USI option as `Name=Value`, sent with `setoption` after the handshake
    /// (repeatable; e.g. `UCI_Variant=shogi` for Fairy-Stockfish, `BookDepth=0` for
    /// gpsusi, `BookFile=no_book` for YaneuraOu). Default: none, the engine's own
    /// option values.
    pub engine_option: Vec<String>,
    /// Which `go` limits the USI engine understands.
    pub go_mode: GoModeChoice,
    /// Seconds one USI search may run beyond its byoyomi before the engine is
    /// killed; also how long the engine may take to start (`usi` .. `usiok`,
    /// `isready` .. `readyok`). An engine that prints without end is stopped at
    /// the same deadline.
    pub timeout_secs: u64,
    /// The USI engine prints win rates scaled by SCALE in `score cp` (e.g. 10000);
    /// they are converted with cp = -K ln(1/p - 1). Default: `score cp` is
    /// centipawns, taken as printed.
    pub cp_is_win_rate: Option<f64>,
    /// K in the win-rate conversion cp = -K ln(1/p - 1), also used for
    /// `score winrate` output.
    pub win_rate_coefficient: f64,
    /// NNUE evaluation file (HalfKP 256x2-32-32 `nn.bin`, 64 217 066 bytes) for the
    /// built-in engine; without it the built-in engine uses its hand-crafted
    /// evaluation. Loaded once and shared by all engines of the process.
    pub eval_file: Option<PathBuf>,
    /// Divisor of the NNUE output (YaneuraOu's FV_SCALE, 1..=128). Only with
    /// --eval-file. Default: 16, right for most HalfKP nets.
    pub fv_scale: Option<i32>,
}

impl EngineKind {
    /// Its name on the command line (`builtin`, `usi`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Usi => "usi",
        }
    }
}

impl GoModeChoice {
    /// Its name on the command line (`auto`, `any`, `byoyomi-only`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Any => "any",
            Self::ByoyomiOnly => "byoyomi-only",
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
            go_mode: GoModeChoice::Auto,
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
    ///
    /// # Errors
    /// As [`EngineChoice::check_flags`].
    pub fn check_flags_named(&self, prefix: &str) -> Result<(), EvalError> {
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
            GoModeChoice::Auto => GoMode::Auto,
            GoModeChoice::Any => GoMode::Any,
            GoModeChoice::ByoyomiOnly => GoMode::ByoyomiOnly,
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

    fn usi(cmd: &str) -> EngineChoice {
        EngineChoice {
            engine_cmd: Some(cmd.to_owned()),
            ..EngineChoice::builtin()
        }
    }

    #[test]
    fn the_timeout_bounds_the_handshake_too() {
        let engine = EngineChoice {
            engine: Some(EngineKind::Usi),
            timeout_secs: 7,
            ..usi("e")
        };
        let config = engine.usi_config().unwrap();
        assert_eq!(config.search_timeout, Duration::from_secs(7));
        assert_eq!(config.startup_timeout, Duration::from_secs(7));
    }

    #[test]
    fn an_engine_command_alone_is_a_usi_engine_and_an_unused_flag_is_refused() {
        assert_eq!(EngineChoice::builtin().kind(), EngineKind::Builtin);
        let engine = usi("e");
        assert_eq!(engine.kind(), EngineKind::Usi);
        assert!(engine.check_flags().is_ok());
        assert_eq!(
            engine.usi_config().unwrap().program,
            std::path::Path::new("e")
        );
        let builtin = EngineChoice::builtin();
        for (choice, says) in [
            (
                EngineChoice {
                    engine: Some(EngineKind::Builtin),
                    ..usi("e")
                },
                "--engine-cmd `e` needs --engine usi, not --engine builtin",
            ),
            (
                EngineChoice {
                    engine_option: vec!["A=1".into()],
                    ..builtin.clone()
                },
                "--engine-option `A=1` needs --engine usi with --engine-cmd",
            ),
            (
                EngineChoice {
                    fv_scale: Some(20),
                    ..builtin.clone()
                },
                "--fv-scale needs --eval-file",
            ),
            (
                EngineChoice {
                    eval_file: Some("nn.bin".into()),
                    ..usi("e")
                },
                "--eval-file and --fv-scale are for the built-in engine",
            ),
        ] {
            let err = choice.check_flags().unwrap_err().to_string();
            assert!(err.contains(says), "{choice:?}: {err}");
        }
        // Named with a prefix, as the opponent's flags are.
        let err = EngineChoice {
            engine: Some(EngineKind::Builtin),
            ..usi("e")
        }
        .check_flags_named("opponent-")
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--opponent-engine-cmd `e` needs --opponent-engine usi"),
            "{err}"
        );
    }
}
