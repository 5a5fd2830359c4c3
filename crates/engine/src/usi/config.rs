//! How to run one external engine.

use std::path::PathBuf;
use std::time::Duration;

use super::score::ScoreConversion;

/// Which `go` limits the engine understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GoMode {
    /// Decided from the engine's `id name`: byoyomi only for GPS Shogi (`gpsusi`
    /// aborts on `go depth` and `go nodes`), everything for other engines.
    #[default]
    Auto,
    /// `go depth`, `go nodes` and `go btime 0 wtime 0 byoyomi`, as the limits ask.
    Any,
    /// Only `go btime 0 wtime 0 byoyomi <ms>`; depth and node limits are rejected.
    ByoyomiOnly,
}

/// Everything needed to start and drive one USI engine.
///
/// ```
/// use stera_engine::usi::UsiConfig;
/// let config = UsiConfig::new("/usr/games/fairy-stockfish")
///     .with_option("UCI_Variant", "shogi");
/// assert_eq!(config.options, [("UCI_Variant".to_owned(), "shogi".to_owned())]);
/// ```
#[derive(Debug, Clone)]
pub struct UsiConfig {
    /// The engine executable. A path with a directory part is also the engine's
    /// working directory (engines find their evaluation files next to themselves).
    pub program: PathBuf,
    /// Command-line arguments for the engine.
    pub args: Vec<String>,
    /// `setoption name <Name> value <Value>` sent after the handshake, in order.
    pub options: Vec<(String, String)>,
    /// Which `go` limits the engine understands.
    pub go_mode: GoMode,
    /// How printed scores become book values.
    pub scores: ScoreConversion,
    /// How long one search (`go` until `bestmove`) may take beyond its byoyomi.
    pub search_timeout: Duration,
    /// How long one whole position (all its searches and retries) may take; `None`
    /// for no limit beyond [`UsiConfig::search_timeout`].
    pub position_timeout: Option<Duration>,
    /// How long starting the engine (`usi` .. `usiok`, `isready` .. `readyok`) may
    /// take (the command lines' `--timeout-secs` sets it with the search timeout).
    pub startup_timeout: Duration,
    /// How many times a crashed engine is restarted for the same position before the
    /// evaluation fails.
    pub max_restarts: u32,
}

impl UsiConfig {
    /// A configuration with defaults: no options, automatic `go` mode, centipawn
    /// scores, 120 s per search, 60 s to start, 2 restarts per position.
    #[must_use]
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            options: Vec::new(),
            go_mode: GoMode::Auto,
            scores: ScoreConversion::default(),
            search_timeout: Duration::from_secs(120),
            position_timeout: None,
            startup_timeout: Duration::from_secs(60),
            max_restarts: 2,
        }
    }

    /// Adds a `setoption`.
    #[must_use]
    pub fn with_option(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.push((name.into(), value.into()));
        self
    }

    /// Parses `Name=Value` (the value may contain `=`; the name may contain spaces, as
    /// in `Move Overhead=0`).
    ///
    /// # Errors
    /// A message saying what is wrong with `text`.
    ///
    /// ```
    /// use stera_engine::usi::UsiConfig;
    /// assert_eq!(
    ///     UsiConfig::parse_option("BookFile=no_book").unwrap(),
    ///     ("BookFile".to_owned(), "no_book".to_owned())
    /// );
    /// assert!(UsiConfig::parse_option("MultiPV").is_err());
    /// ```
    pub fn parse_option(text: &str) -> Result<(String, String), String> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| format!("engine option `{text}` is not of the form Name=Value"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("engine option `{text}` has an empty name"));
        }
        Ok((name.to_owned(), value.trim().to_owned()))
    }
}

/// Options that change speed, logging or resources but not what a search of given
/// limits returns; they are left out of the identity so that a book does not look
/// like it mixes engines when only the hash size changed.
pub(crate) const NON_VALUE_OPTIONS: &[&str] = &[
    "Hash",
    "USI_Hash",
    "Threads",
    "Thread",
    "Ponder",
    "USI_Ponder",
    "Debug Log File",
    "InputLogFile",
    "ErrorLogFile",
    "CSAFile",
    "Verbose",
    "Move Overhead",
    "NetworkDelay",
    "NetworkDelay2",
    "MinimumThinkingTime",
    "Minimum Thinking Time",
    "Slow Mover",
    "SlowMover",
];

/// `id name` plus the options and score conversion that change values, e.g.
/// `Fairy-Stockfish 11.1 LB 64 [UCI_Variant=shogi]`.
pub(crate) fn identity(engine_name: &str, config: &UsiConfig) -> String {
    let mut parts: Vec<String> = config
        .options
        .iter()
        .filter(|(name, _)| {
            !NON_VALUE_OPTIONS
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name))
        })
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    if !config.scores.is_default() {
        if let Some(scale) = config.scores.cp_is_win_rate {
            parts.push(format!("cp-is-win-rate/{scale}"));
        }
        parts.push(format!(
            "win-rate-coefficient={}",
            config.scores.win_rate_coefficient
        ));
    }
    if parts.is_empty() {
        engine_name.to_owned()
    } else {
        format!("{engine_name} [{}]", parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_names_value_changing_options_only() {
        let config = UsiConfig::new("x")
            .with_option("UCI_Variant", "shogi")
            .with_option("Hash", "256")
            .with_option("threads", "4");
        assert_eq!(
            identity("Engine 1", &config),
            "Engine 1 [UCI_Variant=shogi]"
        );
        assert_eq!(identity("Engine 1", &UsiConfig::new("x")), "Engine 1");
        let mut config = UsiConfig::new("x");
        config.scores = ScoreConversion {
            cp_is_win_rate: Some(10_000.0),
            win_rate_coefficient: 600.0,
        };
        assert_eq!(
            identity("E", &config),
            "E [cp-is-win-rate/10000 win-rate-coefficient=600]"
        );
    }
}
