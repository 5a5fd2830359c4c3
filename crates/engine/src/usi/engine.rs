//! One external engine process as both USI front ends use it: started with its
//! name, identity and `go` mode; restarted after a crash (at most
//! [`UsiConfig::max_restarts`] times per request); killed and restarted after a
//! time-out. [`super::UsiEvaluator`] and [`super::UsiPlayer`] differ only in what
//! one attempt asks of it; both send the `go` commands of a [`SearchPlan`].

use std::time::Duration;

use stera_rules::Position;

use super::config::{GoMode, UsiConfig, identity};
use super::session::{EngineInfo, Session, SessionError, session_error};
use crate::{EvalError, Limits};

/// The engine as a USI front end drives it (the OS process itself is
/// [`super::process::EngineProcess`], under a [`Session`]).
pub(crate) struct UsiEngine {
    pub(crate) config: UsiConfig,
    session: Option<Session>,
    /// The engine's `id name` (the program path when it printed none).
    pub(crate) name: String,
    pub(crate) identity: String,
    /// The engine takes only byoyomi limits (GPS Shogi).
    pub(crate) byoyomi_only: bool,
    /// Restarts after crashes and time-outs.
    pub(crate) restarts: u64,
}

impl UsiEngine {
    /// Starts the engine (handshake, options, `isready`, `usinewgame`).
    pub(crate) fn start(config: UsiConfig) -> Result<Self, EvalError> {
        let label = config.program.display().to_string();
        let session = Session::start(&config).map_err(|e| session_error(e, &label, "startup"))?;
        let name = if session.info.name.is_empty() {
            label
        } else {
            session.info.name.clone()
        };
        let byoyomi_only = match config.go_mode {
            GoMode::Any => false,
            GoMode::ByoyomiOnly => true,
            GoMode::Auto => name.to_ascii_lowercase().contains("gpsshogi"),
        };
        let identity = identity(&name, &config);
        Ok(Self {
            config,
            session: Some(session),
            name,
            identity,
            byoyomi_only,
            restarts: 0,
        })
    }

    /// What the engine said of itself at the handshake, while it runs.
    pub(crate) fn info(&self) -> Option<&EngineInfo> {
        self.session.as_ref().map(|s| &s.info)
    }

    /// The running session, started afresh if the last one died.
    pub(crate) fn session(&mut self) -> Result<&mut Session, SessionError> {
        if self.session.is_none() {
            self.session = Some(Session::start(&self.config)?);
        }
        self.session
            .as_mut()
            .ok_or_else(|| SessionError::Crashed("engine not running".to_owned()))
    }

    /// Forgets a dead session (dropping it reaps the process); the next
    /// [`Self::session`] starts a fresh one.
    pub(crate) fn restart_later(&mut self) {
        self.session = None;
        self.restarts += 1;
    }

    /// Runs `attempt` until it succeeds, restarting a crashed engine up to
    /// `max_restarts` times. A time-out kills the engine, starts it again at once
    /// (so the next request finds it ready; if that fails, the next request tries
    /// again and reports it) and fails. `context` names the request in messages
    /// (`` `position ...` ``, an SFEN).
    pub(crate) fn run<T>(
        &mut self,
        position: &Position,
        context: &str,
        mut attempt: impl FnMut(&mut Self) -> Result<T, SessionError>,
    ) -> Result<T, EvalError> {
        let mut crashes = 0;
        loop {
            match attempt(self) {
                Ok(answer) => return Ok(answer),
                Err(SessionError::Crashed(reason)) if crashes < self.config.max_restarts => {
                    crashes += 1;
                    tracing::warn!(
                        target: "stera_engine::usi",
                        "engine `{}` crashed ({reason}); restart {crashes} of {} for `{context}`",
                        self.name,
                        self.config.max_restarts,
                    );
                    self.restart_later();
                }
                Err(SessionError::Timeout(after)) => {
                    if let Some(session) = self.session.as_mut() {
                        session.kill();
                    }
                    self.restart_later();
                    self.session = Session::start(&self.config).ok();
                    return Err(EvalError::Timeout {
                        engine: self.name.clone(),
                        sfen: position.to_sfen(),
                        after,
                    });
                }
                Err(SessionError::Broken(reason)) => {
                    // Killed at once: it may still be printing. Started again
                    // when the next request comes.
                    if let Some(session) = self.session.as_mut() {
                        session.kill();
                    }
                    self.restart_later();
                    return Err(EvalError::Engine {
                        engine: self.name.clone(),
                        reason: format!("{reason} (on `{context}`)"),
                    });
                }
                Err(SessionError::Crashed(reason)) => {
                    self.session = None;
                    return Err(EvalError::Engine {
                        engine: self.name.clone(),
                        reason: format!(
                            "crashed {} times on `{context}`; last: {reason}",
                            crashes + 1
                        ),
                    });
                }
                Err(other) => return Err(session_error(other, &self.name, context)),
            }
        }
    }
}

/// The `go` commands for one position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchPlan {
    pub(crate) root_go: String,
    pub(crate) child_go: String,
    /// The byoyomi of each search; the time-out comes on top of it.
    pub(crate) byoyomi: Duration,
}

impl SearchPlan {
    pub(crate) fn new(
        limits: &Limits,
        byoyomi_only: bool,
        engine: &str,
    ) -> Result<Self, EvalError> {
        if limits.nodes.is_none() && limits.depth.is_none() && limits.time.is_none() {
            return Err(EvalError::UnsupportedLimits(
                "no depth, nodes or time limit: an external engine would search forever".to_owned(),
            ));
        }
        if limits.depth == Some(0) || limits.nodes == Some(0) {
            return Err(EvalError::UnsupportedLimits(
                "depth and nodes must be at least 1".to_owned(),
            ));
        }
        if byoyomi_only && (limits.nodes.is_some() || limits.depth.is_some()) {
            return Err(EvalError::UnsupportedLimits(format!(
                "engine `{engine}` takes only time (byoyomi) limits, not depth or nodes"
            )));
        }
        let go = |depth: Option<u32>| {
            let mut go = "go".to_owned();
            if let Some(d) = depth {
                go.push_str(&format!(" depth {d}"));
            }
            if let Some(n) = limits.nodes {
                go.push_str(&format!(" nodes {n}"));
            }
            if let Some(t) = limits.time {
                go.push_str(&format!(
                    " btime 0 wtime 0 byoyomi {}",
                    t.as_millis().max(1)
                ));
            }
            go
        };
        Ok(Self {
            root_go: go(limits.depth),
            // A child is one ply deeper than the root already: one ply less keeps
            // its value comparable with the moves the root search reported.
            child_go: go(limits.depth.map(|d| d.saturating_sub(1).max(1))),
            byoyomi: limits.time.unwrap_or(Duration::ZERO),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_commands_follow_the_limits() {
        let limits = Limits {
            depth: Some(6),
            ..Limits::default()
        };
        let plan = SearchPlan::new(&limits, false, "e").unwrap();
        assert_eq!(plan.root_go, "go depth 6");
        assert_eq!(plan.child_go, "go depth 5");
        let limits = Limits {
            nodes: Some(5000),
            time: Some(Duration::from_millis(150)),
            ..Limits::default()
        };
        let plan = SearchPlan::new(&limits, true, "e");
        assert!(matches!(plan, Err(EvalError::UnsupportedLimits(_))));
        let plan = SearchPlan::new(&limits, false, "e").unwrap();
        assert_eq!(plan.root_go, "go nodes 5000 btime 0 wtime 0 byoyomi 150");
        assert_eq!(plan.child_go, plan.root_go);
        let limits = Limits {
            time: Some(Duration::from_millis(100)),
            ..Limits::default()
        };
        let plan = SearchPlan::new(&limits, true, "e").unwrap();
        assert_eq!(plan.root_go, "go btime 0 wtime 0 byoyomi 100");
        assert!(SearchPlan::new(&Limits::default(), false, "e").is_err());
        let zero = Limits {
            depth: Some(0),
            ..Limits::default()
        };
        assert!(SearchPlan::new(&zero, false, "e").is_err());
        let shallow = Limits {
            depth: Some(1),
            ..Limits::default()
        };
        assert_eq!(
            SearchPlan::new(&shallow, false, "e").unwrap().child_go,
            "go depth 1"
        );
    }
}
