//! Search jobs on the worker: one move of a game the coordinator plays (its
//! learning games, its self-play games, a client's match), on a pooled engine.
//! The game itself, its referee and its record stay with the coordinator.

use std::sync::Mutex;
use std::time::Instant;

use stera_engine::choice::EngineChoice;
use stera_engine::{Limits, Player, PlayerMove};
use stera_proto::v1::{JobResult, SearchJob, SearchResult, job_result};
use stera_rules::Position;

/// Players kept between games (an engine process is not started per game).
pub struct PlayerPool {
    choice: EngineChoice,
    idle: Mutex<Vec<Box<dyn Player>>>,
}

impl PlayerPool {
    /// Players of `choice`, started when a game first needs one.
    #[must_use]
    pub fn new(choice: EngineChoice) -> Self {
        Self {
            choice,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Searches the job's position for one move; blocks.
    ///
    /// # Errors
    /// A bad position or move list, an engine failure.
    pub fn search(
        &self,
        lease_id: u64,
        job: &SearchJob,
        limits: &Limits,
    ) -> Result<JobResult, String> {
        self.with_player(lease_id, |player| {
            search(job, player, limits).map(job_result::Kind::Search)
        })
    }

    /// Runs `work` on an idle (or new) player and wraps its result; a player
    /// whose work failed is dropped, not reused.
    fn with_player(
        &self,
        lease_id: u64,
        work: impl FnOnce(&mut dyn Player) -> Result<job_result::Kind, String>,
    ) -> Result<JobResult, String> {
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        let mut player = match idle {
            Some(p) => p,
            None => self.choice.start_player().map_err(|e| e.to_string())?,
        };
        let started = Instant::now();
        let kind = work(player.as_mut())?;
        let engine = player.identity();
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(player);
        }
        Ok(JobResult {
            lease_id,
            nodes: 0,
            elapsed_ms: u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX),
            engine,
            kind: Some(kind),
        })
    }
}

/// One move for a search job: the position after the job's moves (with its
/// history, for repetitions), searched as a fresh game so that the answer depends
/// on the position alone.
///
/// # Errors
/// A bad start position or move, an engine failure.
pub fn search(
    job: &SearchJob,
    player: &mut dyn Player,
    limits: &Limits,
) -> Result<SearchResult, String> {
    let mut position = Position::from_sfen(&job.start_sfen)
        .map_err(|e| format!("bad start position from the coordinator: {e}"))?;
    for (i, usi) in job.moves.iter().enumerate() {
        let mv = position
            .parse_move(usi)
            .map_err(|e| format!("move #{} `{usi}`: {e}", i + 1))?;
        position.do_move(mv);
    }
    player.new_game().map_err(|e| e.to_string())?;
    let answer = player.play(&position, limits).map_err(|e| e.to_string())?;
    Ok(match answer {
        PlayerMove::Move { mv, score } => SearchResult {
            usi: mv.to_string(),
            score: score.unwrap_or(0),
            has_score: score.is_some(),
        },
        PlayerMove::Resign => SearchResult {
            usi: "resign".into(),
            ..SearchResult::default()
        },
        PlayerMove::Win => SearchResult {
            usi: "win".into(),
            ..SearchResult::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plays the first legal move until the ply limit, then resigns never.
    struct FirstMove;

    impl Player for FirstMove {
        fn new_game(&mut self) -> Result<(), stera_engine::EvalError> {
            Ok(())
        }
        fn play(
            &mut self,
            position: &Position,
            _: &Limits,
        ) -> Result<PlayerMove, stera_engine::EvalError> {
            Ok(PlayerMove::Move {
                mv: position.legal_moves()[0],
                score: Some(0),
            })
        }
        fn identity(&self) -> String {
            "first-move".into()
        }
    }

    #[test]
    fn a_search_answers_for_the_side_to_move_after_the_moves() {
        let job = SearchJob {
            start_sfen: stera_rules::STARTPOS_SFEN.into(),
            moves: vec!["7g7f".into()],
            limits: None,
        };
        let answer = search(&job, &mut FirstMove, &Limits::default()).unwrap();
        let mut after = Position::from_sfen(stera_rules::STARTPOS_SFEN).unwrap();
        after.do_move(after.parse_move("7g7f").unwrap());
        // White's first legal move, not black's.
        assert_eq!(answer.usi, after.legal_moves()[0].to_string());
        assert!(answer.has_score);
        let bad = SearchJob {
            moves: vec!["7g7f".into(), "7g7f".into()],
            ..job
        };
        let err = search(&bad, &mut FirstMove, &Limits::default()).unwrap_err();
        assert!(err.contains("move #2 `7g7f`"), "{err}");
    }
}
