//! [`UsiEvaluator`]: every legal move's value from an external USI engine.

use std::time::{Duration, Instant};

use stera_rules::value::{MATE, mate_in, mated_in};
use stera_rules::{Move, Position, Repetition};

use super::collect::{MoveScores, position_value};
use super::config::UsiConfig;
use super::engine::{SearchPlan, UsiEngine};
use super::info::Info;
use super::score::value_for_parent;
use super::session::{EngineInfo, SearchOutput, SessionError};
use crate::{EvalError, Evaluation, Evaluator, Limits};

/// Counters over the life of one evaluator (for measurements and logs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsiStats {
    /// Positions evaluated successfully.
    pub positions: u64,
    /// `go` commands sent, root and child searches together.
    pub searches: u64,
    /// Child searches made for moves the root search did not report.
    pub child_searches: u64,
    /// Sum of the last `time` each search printed: the engine's own view of its
    /// search time (engines that print no `time` add nothing).
    pub engine_time: Duration,
    /// Sum of the wall time from sending `go` to reading `bestmove`. What
    /// `evaluate` takes beyond this is the evaluator's own overhead (options,
    /// `position`, the `isready` round trip, parsing, checking).
    pub go_to_bestmove: Duration,
    /// Engine restarts after a crash or a time-out.
    pub restarts: u64,
}

/// An [`Evaluator`] backed by an external USI engine process.
///
/// Per position it sets MultiPV to the number of legal moves (capped at the engine's
/// maximum), searches once, and keeps the last exact score per first move of the
/// principal variations. Moves the engine did not report (engines without MultiPV,
/// such as GPS Shogi, or moves an engine prunes, such as some non-promotions) are
/// valued by searching the position after the move with MultiPV 1 and negating the
/// result; children that are already decided (no legal move, repetition in the
/// position's history) get their exact value without asking the engine.
///
/// Limits: `depth` and `nodes` go to the engine as `go depth` / `go nodes` (child
/// searches get one ply less); `time` is the byoyomi of **every** search, so a
/// position that needs child searches takes several times that. The engine sees the
/// position as an SFEN, without the game history.
///
/// Scores are the engine's own scale: values from different engines are not
/// comparable, which is why the identity names the engine and its value-changing
/// options. Engines that print win rates are supported through
/// [`super::ScoreConversion`].
///
/// A crashed engine is restarted and the position retried (at most
/// [`UsiConfig::max_restarts`] times); a search that exceeds its time-out kills the
/// engine, restarts it for the next position and fails with [`EvalError::Timeout`].
/// Dropping the evaluator sends `quit` and kills the engine if it does not exit.
pub struct UsiEvaluator {
    engine: UsiEngine,
    /// Counters but restarts, which the engine process keeps.
    stats: UsiStats,
}

impl UsiEvaluator {
    /// Starts the engine (handshake, options, `isready`, `usinewgame`).
    ///
    /// # Errors
    /// [`EvalError::Engine`] when the program cannot be run, exits or rejects an
    /// option, [`EvalError::Timeout`] when it does not
    /// become ready within [`UsiConfig::startup_timeout`].
    pub fn new(config: UsiConfig) -> Result<Self, EvalError> {
        Ok(Self {
            engine: UsiEngine::start(config)?,
            stats: UsiStats::default(),
        })
    }

    /// The engine's `id name` (the program path when it printed none).
    #[must_use]
    pub fn engine_name(&self) -> &str {
        &self.engine.name
    }

    /// The largest MultiPV the engine accepts, `None` without a MultiPV option.
    #[must_use]
    pub fn multipv_max(&self) -> Option<u32> {
        self.engine.info().and_then(EngineInfo::multipv_max)
    }

    /// Counters since the evaluator was created.
    #[must_use]
    pub fn stats(&self) -> UsiStats {
        UsiStats {
            restarts: self.engine.restarts,
            ..self.stats
        }
    }
}

/// One try at the whole position; any session error aborts it.
fn attempt(
    engine: &mut UsiEngine,
    stats: &mut UsiStats,
    position: &Position,
    legal: &[Move],
    plan: &SearchPlan,
    position_deadline: Option<Instant>,
) -> Result<Evaluation, SessionError> {
    let sfen = position.to_sfen();
    let conversion = engine.config.scores;
    let search_budget = plan.byoyomi + engine.config.search_timeout;
    let deadline = |now: Instant| {
        let search = now + search_budget;
        match position_deadline {
            Some(p) if p < search => (p, p.saturating_duration_since(now)),
            _ => (search, search_budget),
        }
    };
    let multipv = u32::try_from(legal.len()).unwrap_or(u32::MAX);
    let mut nodes = 0;
    let (at, budget) = deadline(Instant::now());
    let root = engine.session()?.search(
        &format!("sfen {sfen}"),
        &plan.root_go,
        Some(multipv),
        at,
        budget,
    )?;
    stats.count_search(&root);
    // Lines of the root search that start with a move not legal here are not
    // used (`MoveScores::record`); those moves are searched as children, whose
    // answers are checked.
    nodes += root.nodes;
    let mut scores = MoveScores::new(legal.to_vec());
    for info in &root.scored {
        scores.record(info, &conversion);
    }
    let exact_depth = scores.max_depth();
    for mv in scores.missing() {
        let mut child = position.clone();
        child.do_move(mv);
        if let Some(value) = decided_value(&child) {
            scores.set(mv, value, exact_depth);
            continue;
        }
        let (at, budget) = deadline(Instant::now());
        let out = engine.session()?.search(
            &format!("sfen {sfen} moves {mv}"),
            &plan.child_go,
            Some(1),
            at,
            budget,
        )?;
        stats.count_search(&out);
        stats.child_searches += 1;
        nodes += out.nodes;
        let context = format!("sfen {sfen} moves {mv}");
        check_bestmove(&child, &out.bestmove, &context)?;
        let legal_lines = legal_lines(&child, out.scored, &context)?;
        let (child_value, depth) = match position_value(&legal_lines, &out.bestmove, &conversion) {
            Some(found) => found,
            // Without any score, a resignation still says who wins.
            None if out.bestmove == "resign" => (-MATE, 0),
            None if out.bestmove == "win" => (MATE, 0),
            None => {
                return Err(SessionError::Rejected(format!(
                    "no score for `position sfen {sfen} moves {mv}` (bestmove {})",
                    out.bestmove
                )));
            }
        };
        scores.set(mv, value_for_parent(child_value), depth + 1);
    }
    Ok(Evaluation {
        moves: scores.into_move_values(),
        nodes,
        elapsed: Duration::ZERO,
        engine: engine.identity.clone(),
    })
}

/// Refuses a search whose `bestmove` is not a legal move of the searched
/// position (nor `resign` or `win`): an engine that plays illegal moves does not
/// see the position it was given, and its scores mean nothing.
fn check_bestmove(position: &Position, bestmove: &str, context: &str) -> Result<(), SessionError> {
    if matches!(bestmove, "resign" | "win") || is_legal(position, bestmove) {
        return Ok(());
    }
    Err(SessionError::Rejected(format!(
        "the engine answered `bestmove {bestmove}` to `position {context}`, which is not a legal move there"
    )))
}

/// The scored lines of a search whose principal variation starts with a legal
/// move of `position` (or has none). A line that starts with an illegal move is
/// an error: its score is of some other position.
fn legal_lines(
    position: &Position,
    scored: Vec<Info>,
    context: &str,
) -> Result<Vec<Info>, SessionError> {
    for info in &scored {
        if let Some(first) = info.first_pv_move.as_deref()
            && !matches!(first, "resign" | "win")
            && !is_legal(position, first)
        {
            return Err(SessionError::Rejected(format!(
                "the engine scored `pv {first}` for `position {context}`, which is not a legal move there"
            )));
        }
    }
    Ok(scored)
}

fn is_legal(position: &Position, usi: &str) -> bool {
    Move::from_usi(usi).is_ok_and(|mv| position.legal_moves().contains(&mv))
}

impl UsiStats {
    fn count_search(&mut self, search: &SearchOutput) {
        self.searches += 1;
        self.engine_time += Duration::from_millis(search.time_ms);
        self.go_to_bestmove += search.go_to_bestmove;
    }
}

impl Evaluator for UsiEvaluator {
    fn evaluate(&mut self, position: &Position, limits: &Limits) -> Result<Evaluation, EvalError> {
        let start = Instant::now();
        let legal = position.legal_moves();
        if legal.is_empty() {
            // Nothing to value; the book scores a position without moves itself.
            return Ok(Evaluation {
                moves: Vec::new(),
                nodes: 0,
                elapsed: start.elapsed(),
                engine: self.engine.identity.clone(),
            });
        }
        let plan = SearchPlan::new(limits, self.engine.byoyomi_only, &self.engine.name)?;
        let position_deadline = self.engine.config.position_timeout.map(|t| start + t);
        let stats = &mut self.stats;
        let mut evaluation = self.engine.run(position, &position.to_sfen(), |engine| {
            attempt(engine, stats, position, &legal, &plan, position_deadline)
        })?;
        evaluation.elapsed = start.elapsed();
        evaluation.check_complete(position)?;
        self.stats.positions += 1;
        Ok(evaluation)
    }

    fn identity(&self) -> String {
        self.engine.identity.clone()
    }
}

/// The value, for the side that just moved, of a child position that needs no
/// search: no legal move (mate, or the rare stalemate, which also loses in shogi) or
/// a fourfold repetition in the position's history.
fn decided_value(child: &Position) -> Option<i32> {
    if child.has_no_legal_move() {
        return Some(mate_in(1));
    }
    match child.game_repetition()? {
        Repetition::Draw => Some(0),
        // The mover checked on every move of the cycle: the mover loses.
        Repetition::OpponentPerpetualCheck => Some(mated_in(1)),
        Repetition::OwnPerpetualCheck => Some(mate_in(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decided_children() {
        // After G*5b the white king on 5a is mated (gold protected by the pawn... on 5c).
        let pos = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
        let mate = pos.parse_move("G*5b").unwrap();
        let mut child = pos.clone();
        child.do_move(mate);
        assert_eq!(decided_value(&child), Some(mate_in(1)));
        let quiet = pos.parse_move("G*9a").unwrap();
        let mut child = pos;
        child.do_move(quiet);
        assert_eq!(decided_value(&child), None);
    }
}
