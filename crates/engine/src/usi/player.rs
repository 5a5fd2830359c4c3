//! [`UsiPlayer`]: an external USI engine playing games, one `go` per move.

use std::time::Instant;

use stera_rules::Position;

use super::collect::position_value;
use super::config::{GoMode, UsiConfig};
use super::evaluator::{SearchPlan, identity, session_error};
use super::session::{Session, SessionError};
use crate::player::{Player, PlayerMove, position_command};
use crate::{EvalError, Limits};

/// A USI engine as a [`Player`].
///
/// Each move sends `position <start> moves <the game so far>` (so the engine sees
/// the repetitions of the game) and one `go`: `go depth`/`go nodes` as the limits
/// ask, `go btime 0 wtime 0 byoyomi <ms>` for a time limit (the only form GPS
/// Shogi's `gpsusi` accepts; [`GoMode`] decides as for the evaluator). `bestmove
/// resign` and `bestmove win` are understood; any other answer must be a legal
/// move. The score is that of the last exact `info` line of the move played
/// (see the evaluator for engines that print lines for several moves), `None`
/// when the engine printed none.
///
/// A crashed engine is restarted and the move asked again (at most
/// [`UsiConfig::max_restarts`] times per move); a search past its time-out kills
/// the engine, which is restarted for the next move, and fails with
/// [`EvalError::Timeout`].
pub struct UsiPlayer {
    config: UsiConfig,
    session: Option<Session>,
    engine_name: String,
    identity: String,
    byoyomi_only: bool,
    restarts: u64,
}

impl UsiPlayer {
    /// Starts the engine (handshake, options, `isready`, `usinewgame`).
    ///
    /// # Errors
    /// As [`super::UsiEvaluator::new`].
    pub fn new(config: UsiConfig) -> Result<Self, EvalError> {
        let label = config.program.display().to_string();
        let session = Session::start(&config).map_err(|e| session_error(e, &label, "startup"))?;
        let engine_name = if session.info.name.is_empty() {
            label
        } else {
            session.info.name.clone()
        };
        let byoyomi_only = match config.go_mode {
            GoMode::Any => false,
            GoMode::ByoyomiOnly => true,
            GoMode::Auto => engine_name.to_ascii_lowercase().contains("gpsshogi"),
        };
        let identity = identity(&engine_name, &config);
        Ok(Self {
            config,
            session: Some(session),
            engine_name,
            identity,
            byoyomi_only,
            restarts: 0,
        })
    }

    /// The engine's `id name` (the program path when it printed none).
    #[must_use]
    pub fn engine_name(&self) -> &str {
        &self.engine_name
    }

    /// Restarts after crashes and time-outs since the player was created.
    #[must_use]
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    fn session(&mut self) -> Result<&mut Session, SessionError> {
        if self.session.is_none() {
            self.session = Some(Session::start(&self.config)?);
        }
        self.session
            .as_mut()
            .ok_or_else(|| SessionError::Crashed("engine not running".to_owned()))
    }

    /// One try: `position`, `go`, `bestmove`.
    fn attempt(
        &mut self,
        position: &Position,
        command: &str,
        plan: &SearchPlan,
    ) -> Result<PlayerMove, SessionError> {
        let budget = plan.byoyomi + self.config.search_timeout;
        let deadline = Instant::now() + budget;
        let conversion = self.config.scores;
        let out = self
            .session()?
            .search(command, &plan.root_go, Some(1), deadline, budget)?;
        match out.bestmove.as_str() {
            "resign" => return Ok(PlayerMove::Resign),
            "win" => return Ok(PlayerMove::Win),
            _ => {}
        }
        let mv = position.parse_move(&out.bestmove).map_err(|e| {
            SessionError::Rejected(format!(
                "bestmove `{}` after `position {command}`: {e}",
                out.bestmove
            ))
        })?;
        let score = position_value(&out.scored, &out.bestmove, &conversion).map(|(v, _)| v);
        Ok(PlayerMove::Move { mv, score })
    }
}

impl Player for UsiPlayer {
    fn new_game(&mut self) -> Result<(), EvalError> {
        let result = self.session().and_then(Session::new_game);
        match result {
            Ok(()) => Ok(()),
            // A dead engine is started afresh (which begins a new game anyway).
            Err(SessionError::Crashed(_)) => {
                self.session = None;
                self.restarts += 1;
                self.session()
                    .map(|_| ())
                    .map_err(|e| session_error(e, &self.engine_name, "usinewgame"))
            }
            Err(e) => Err(session_error(e, &self.engine_name, "usinewgame")),
        }
    }

    fn play(&mut self, position: &Position, limits: &Limits) -> Result<PlayerMove, EvalError> {
        if position.has_no_legal_move() {
            return Ok(PlayerMove::Resign);
        }
        let plan = SearchPlan::new(limits, self.byoyomi_only, &self.engine_name)?;
        let command = position_command(position);
        let mut crashes = 0;
        loop {
            match self.attempt(position, &command, &plan) {
                Ok(answer) => return Ok(answer),
                Err(SessionError::Crashed(reason)) if crashes < self.config.max_restarts => {
                    crashes += 1;
                    self.restarts += 1;
                    tracing::warn!(
                        target: "stera_engine::usi",
                        "engine `{}` crashed ({reason}); restart {crashes} of {} for `position {command}`",
                        self.engine_name,
                        self.config.max_restarts,
                    );
                    self.session = None;
                }
                Err(SessionError::Timeout(after)) => {
                    if let Some(session) = self.session.as_mut() {
                        session.kill();
                    }
                    self.restarts += 1;
                    self.session = Session::start(&self.config).ok();
                    return Err(EvalError::Timeout {
                        engine: self.engine_name.clone(),
                        sfen: position.to_sfen(),
                        after,
                    });
                }
                Err(SessionError::Crashed(reason)) => {
                    self.session = None;
                    return Err(EvalError::Engine {
                        engine: self.engine_name.clone(),
                        reason: format!(
                            "crashed {} times on `position {command}`; last: {reason}",
                            crashes + 1
                        ),
                    });
                }
                Err(other) => return Err(session_error(other, &self.engine_name, &command)),
            }
        }
    }

    fn identity(&self) -> String {
        self.identity.clone()
    }
}
