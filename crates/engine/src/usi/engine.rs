//! One external engine process as both USI front ends use it: started with its
//! name, identity and `go` mode; restarted after a crash (at most
//! [`UsiConfig::max_restarts`] times per request); killed and restarted after a
//! time-out. [`super::UsiEvaluator`] and [`super::UsiPlayer`] differ only in what
//! one attempt asks of it.

use stera_rules::Position;

use super::config::{GoMode, UsiConfig};
use super::evaluator::{identity, session_error};
use super::session::{EngineInfo, Session, SessionError};
use crate::EvalError;

pub(crate) struct EngineProcess {
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

impl EngineProcess {
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
