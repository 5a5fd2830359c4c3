//! [`UsiPlayer`]: an external USI engine playing games, one `go` per move.

use std::time::Instant;

use stera_rules::Position;

use super::collect::position_value;
use super::config::UsiConfig;
use super::engine::{SearchPlan, UsiEngine};
use super::session::{Session, SessionError, session_error};
use crate::player::{Player, PlayerMove, position_command};
use crate::{EvalError, Limits};

/// A USI engine as a [`Player`].
///
/// Each move sends `position <start> moves <the game so far>` (so the engine sees
/// the repetitions of the game) and one `go`: `go depth`/`go nodes` as the limits
/// ask, `go btime 0 wtime 0 byoyomi <ms>` for a time limit (the only form GPS
/// Shogi's `gpsusi` accepts; [`GoMode`](super::GoMode) decides as for the evaluator). `bestmove
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
    engine: UsiEngine,
}

impl UsiPlayer {
    /// Starts the engine (handshake, options, `isready`, `usinewgame`).
    ///
    /// # Errors
    /// As [`super::UsiEvaluator::new`].
    pub fn new(config: UsiConfig) -> Result<Self, EvalError> {
        Ok(Self {
            engine: UsiEngine::start(config)?,
        })
    }

    /// The engine's `id name` (the program path when it printed none).
    #[must_use]
    pub fn engine_name(&self) -> &str {
        &self.engine.name
    }

    /// Restarts after crashes and time-outs since the player was created.
    #[must_use]
    pub fn restarts(&self) -> u64 {
        self.engine.restarts
    }
}

/// One try: `position`, `go`, `bestmove`.
fn attempt(
    engine: &mut UsiEngine,
    position: &Position,
    command: &str,
    plan: &SearchPlan,
) -> Result<PlayerMove, SessionError> {
    let budget = plan.byoyomi + engine.config.search_timeout;
    let deadline = Instant::now() + budget;
    let conversion = engine.config.scores;
    let out = engine
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

impl Player for UsiPlayer {
    fn new_game(&mut self) -> Result<(), EvalError> {
        let result = self.engine.session().and_then(Session::new_game);
        match result {
            Ok(()) => Ok(()),
            // A dead engine is started afresh (which begins a new game anyway).
            Err(SessionError::Crashed(_)) => {
                self.engine.restart_later();
                let name = self.engine.name.clone();
                self.engine
                    .session()
                    .map(|_| ())
                    .map_err(|e| session_error(e, &name, "usinewgame"))
            }
            Err(e) => Err(session_error(e, &self.engine.name, "usinewgame")),
        }
    }

    fn play(&mut self, position: &Position, limits: &Limits) -> Result<PlayerMove, EvalError> {
        if position.has_no_legal_move() {
            return Ok(PlayerMove::Resign);
        }
        let plan = SearchPlan::new(limits, self.engine.byoyomi_only, &self.engine.name)?;
        let command = position_command(position);
        let context = format!("position {command}");
        self.engine.run(position, &context, |engine| {
            attempt(engine, position, &command, &plan)
        })
    }

    fn identity(&self) -> String {
        self.engine.identity.clone()
    }
}
