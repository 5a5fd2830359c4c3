//! One running engine speaking USI: handshake, options, and searches.

use std::io;
use std::time::{Duration, Instant};

use super::config::UsiConfig;
use super::info::Info;
use super::process::{EngineProcess, MAX_LINE_BYTES, ReadError};
use crate::EvalError;

/// The most `option` lines a handshake may print (real engines print a few dozen).
pub(crate) const MAX_OPTIONS: usize = 1_000;
/// The most scored `info` lines one search may print. A MultiPV search of every
/// legal move (at most 593) to depth 100, each line twice for its aspiration
/// bounds, stays below it; the kept lines take some 100 bytes each.
pub(crate) const MAX_SCORED_LINES: usize = 200_000;

/// Why a session failed.
#[derive(Debug)]
pub(crate) enum SessionError {
    /// The process exited or closed its pipes; restarting may help.
    Crashed(String),
    /// No answer within this time; the process must be killed.
    Timeout(Duration),
    /// The engine cannot be used as configured; restarting will not help.
    Rejected(String),
    /// The engine broke a bound on its output (a line too long, too many lines of
    /// a kind); it must be killed, and restarting it for the same request would
    /// only do the same again.
    Broken(String),
    /// The process could not be started.
    Spawn(io::Error),
}

/// An option the engine advertised (`option name <name> type <kind> ... max <n>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OptionDecl {
    pub name: String,
    pub kind: String,
    pub max: Option<i64>,
}

impl OptionDecl {
    /// Parses a line `option name <Name with spaces> type <kind> [default ..] [min ..] [max ..] [var ..]*`.
    pub(crate) fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("option name ")?;
        let (name, after) = rest.split_once(" type ")?;
        let mut tokens = after.split_ascii_whitespace();
        let kind = tokens.next()?.to_owned();
        let mut max = None;
        while let Some(token) = tokens.next() {
            if token == "max" {
                max = tokens.next().and_then(|t| t.parse().ok());
            }
        }
        Some(Self {
            name: name.trim().to_owned(),
            kind,
            max,
        })
    }
}

/// What the engine said about itself during the handshake.
#[derive(Debug, Clone, Default)]
pub(crate) struct EngineInfo {
    /// `id name`, or empty when the engine printed none.
    pub name: String,
    pub options: Vec<OptionDecl>,
}

impl EngineInfo {
    /// The largest MultiPV the engine accepts; `None` when it has no MultiPV option.
    pub(crate) fn multipv_max(&self) -> Option<u32> {
        let decl = self
            .options
            .iter()
            .find(|o| o.name.eq_ignore_ascii_case("MultiPV"))?;
        Some(
            decl.max
                .and_then(|m| u32::try_from(m).ok())
                .unwrap_or(u32::try_from(stera_rules::MAX_LEGAL_MOVES).unwrap_or(u32::MAX))
                .max(1),
        )
    }

    fn has_option(&self, name: &str) -> bool {
        self.options
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(name))
    }
}

/// The output of one search, `go` to `bestmove`.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchOutput {
    /// Every `info` line that carried a score, in the order printed.
    pub scored: Vec<Info>,
    /// The move after `bestmove` (`resign` and `win` included).
    pub bestmove: String,
    /// The last `nodes` printed.
    pub nodes: u64,
    /// The last `time` printed, in milliseconds.
    pub time_ms: u64,
    /// Wall time from sending `go` to reading `bestmove`: the engine's share of the
    /// search as seen from outside.
    pub go_to_bestmove: Duration,
}

/// A started engine, ready for `position` and `go`.
pub(crate) struct Session {
    process: EngineProcess,
    pub info: EngineInfo,
    multipv: Option<u32>,
}

impl Session {
    /// Spawns the engine, shakes hands, sends the configured options, and waits until
    /// it is ready for a new game.
    pub(crate) fn start(config: &UsiConfig) -> Result<Self, SessionError> {
        let mut process =
            EngineProcess::spawn(&config.program, &config.args).map_err(SessionError::Spawn)?;
        let deadline = Instant::now() + config.startup_timeout;
        let timeout = config.startup_timeout;
        let mut info = EngineInfo::default();
        send(&mut process, "usi")?;
        loop {
            let line = read(&mut process, deadline, timeout)?;
            let line = line.trim();
            if line == "usiok" {
                break;
            }
            if let Some(name) = line.strip_prefix("id name ") {
                name.trim().clone_into(&mut info.name);
            } else if let Some(decl) = OptionDecl::parse(line) {
                if info.options.len() == MAX_OPTIONS {
                    return Err(SessionError::Broken(format!(
                        "the engine printed more than {MAX_OPTIONS} `option` lines before `usiok`"
                    )));
                }
                info.options.push(decl);
            }
        }
        for (name, value) in &config.options {
            // A misspelt option would silently leave the engine at its default and
            // put wrong values into a book; `USI_*` options are standard and often
            // not advertised.
            if !info.has_option(name) && !name.starts_with("USI_") {
                let known: Vec<&str> = info.options.iter().map(|o| o.name.as_str()).collect();
                return Err(SessionError::Rejected(format!(
                    "the engine has no option `{name}` (it advertises: {})",
                    known.join(", ")
                )));
            }
            send(
                &mut process,
                &format!("setoption name {name} value {value}"),
            )?;
        }
        let mut session = Self {
            process,
            info,
            multipv: None,
        };
        session.wait_ready(deadline, timeout)?;
        send(&mut session.process, "usinewgame")?;
        Ok(session)
    }

    /// Sends `isready` and waits for `readyok`, dropping whatever the engine
    /// printed before it (once, after the handshake's options).
    fn wait_ready(&mut self, deadline: Instant, timeout: Duration) -> Result<(), SessionError> {
        send(&mut self.process, "isready")?;
        loop {
            if read(&mut self.process, deadline, timeout)?.trim() == "readyok" {
                return Ok(());
            }
        }
    }

    /// Searches `position` (the text after `position `) with `go` (the full go
    /// command), with MultiPV set to `multipv` if the engine has that option. The
    /// search must end by `deadline`; a time-out reports `budget`.
    pub(crate) fn search(
        &mut self,
        position: &str,
        go: &str,
        multipv: Option<u32>,
        deadline: Instant,
        budget: Duration,
    ) -> Result<SearchOutput, SessionError> {
        let timeout = budget;
        if let (Some(k), Some(max)) = (multipv, self.info.multipv_max()) {
            let k = k.clamp(1, max);
            if self.multipv != Some(k) {
                send(
                    &mut self.process,
                    &format!("setoption name MultiPV value {k}"),
                )?;
                self.multipv = Some(k);
            }
        }
        // No `isready` here: it follows the handshake's options only. Sent
        // between `position` and `go` it puts YaneuraOu's board back to the
        // initial position, and before each search it costs YaneuraOu 160 ms
        // (130 times a 1,000-node search). A session whose search did not end
        // in `bestmove` is never searched again (see `UsiEngine::run`), so no
        // line of an earlier search can be pending; and MultiPV, which the
        // evaluator switches twice an evaluation when it searches children,
        // is read when a search starts (YaneuraOu and Fairy-Stockfish
        // checked, BENCHMARKS "The USI driver and YaneuraOu").
        send(&mut self.process, &format!("position {position}"))?;
        send(&mut self.process, go)?;
        let go_sent = Instant::now();
        let mut output = SearchOutput::default();
        loop {
            let line = read(&mut self.process, deadline, timeout)?;
            if let Some(info) = Info::parse(&line) {
                if let Some(n) = info.nodes {
                    output.nodes = n;
                }
                if let Some(t) = info.time_ms {
                    output.time_ms = t;
                }
                if info.score.is_some() {
                    if output.scored.len() == MAX_SCORED_LINES {
                        return Err(SessionError::Broken(format!(
                            "the engine printed more than {MAX_SCORED_LINES} scored `info` lines \
                             in one search (`{go}`)"
                        )));
                    }
                    output.scored.push(info);
                }
            } else if let Some(rest) = line.trim().strip_prefix("bestmove") {
                rest.split_ascii_whitespace()
                    .next()
                    .unwrap_or("")
                    .clone_into(&mut output.bestmove);
                output.go_to_bestmove = go_sent.elapsed();
                return Ok(output);
            }
        }
    }

    /// Tells the engine that a new game starts (`usinewgame`).
    pub(crate) fn new_game(&mut self) -> Result<(), SessionError> {
        send(&mut self.process, "usinewgame")
    }

    /// Kills the process without asking (it did not answer in time).
    pub(crate) fn kill(&mut self) {
        self.process.kill();
    }
}

fn send(process: &mut EngineProcess, command: &str) -> Result<(), SessionError> {
    process.send(command).map_err(|e| {
        SessionError::Crashed(format!(
            "cannot write `{command}` ({e}); {}",
            process.death_report()
        ))
    })
}

/// The next line; `timeout` is what a time-out reports (the budget that ran out).
fn read(
    process: &mut EngineProcess,
    deadline: Instant,
    timeout: Duration,
) -> Result<String, SessionError> {
    match process.read_line(deadline) {
        Ok(line) => Ok(line),
        Err(ReadError::Timeout) => Err(SessionError::Timeout(timeout)),
        Err(ReadError::Closed) => Err(SessionError::Crashed(process.death_report())),
        Err(ReadError::TooLong(start)) => Err(SessionError::Broken(format!(
            "the engine printed a line longer than {MAX_LINE_BYTES} bytes: `{start}`"
        ))),
    }
}

/// The [`EvalError`] for a failed session step: `engine` names the engine,
/// `context` the request (an SFEN, `usinewgame`, `startup`).
pub(crate) fn session_error(error: SessionError, engine: &str, context: &str) -> EvalError {
    match error {
        // `EvalError::Io` would print the OS error twice in an error chain; the
        // reason alone reads better and names the failing step.
        SessionError::Spawn(source) => EvalError::Engine {
            engine: engine.to_owned(),
            reason: format!("cannot run the program: {source}"),
        },
        SessionError::Timeout(after) => EvalError::Timeout {
            engine: engine.to_owned(),
            sfen: context.to_owned(),
            after,
        },
        SessionError::Crashed(reason)
        | SessionError::Rejected(reason)
        | SessionError::Broken(reason) => EvalError::Engine {
            engine: engine.to_owned(),
            reason,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_lines() {
        let o = OptionDecl::parse("option name MultiPV type spin default 1 min 1 max 500").unwrap();
        assert_eq!(o.name, "MultiPV");
        assert_eq!(o.kind, "spin");
        assert_eq!(o.max, Some(500));
        let o = OptionDecl::parse("option name Move Overhead type spin default 30 min 0 max 5000")
            .unwrap();
        assert_eq!(o.name, "Move Overhead");
        let o = OptionDecl::parse("option name Debug Log File type string default ").unwrap();
        assert_eq!(o.name, "Debug Log File");
        assert_eq!(o.max, None);
        assert!(OptionDecl::parse("id name x").is_none());
    }

    #[test]
    fn multipv_max_from_options() {
        let mut info = EngineInfo::default();
        assert_eq!(info.multipv_max(), None);
        info.options.push(
            OptionDecl::parse("option name MultiPV type spin default 1 min 1 max 500").unwrap(),
        );
        assert_eq!(info.multipv_max(), Some(500));
        info.options[0].max = None;
        assert_eq!(info.multipv_max(), Some(593));
    }
}
