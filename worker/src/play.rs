//! Play jobs on the worker: one whole game from the coordinator's start position
//! and opening, the worker's engine on both sides, played by the one game loop
//! ([`stera_games::play`]) under the rules the coordinator checks the game with.

use std::sync::Mutex;
use std::time::Instant;

use stera_engine::choice::EngineChoice;
use stera_engine::{Limits, Player, PlayerMove};
use stera_games::PlayOptions;
use stera_proto::v1::{JobResult, PlayJob, PlayResult, SearchJob, SearchResult, job_result};
use stera_rules::Position;
use stera_service::convert::{play_result_to_proto, rules_of};

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

    /// Plays the job's game; blocks (run it on a blocking thread). A player whose
    /// game failed is not reused.
    ///
    /// # Errors
    /// A bad job, an engine failure, a move the rules refuse.
    pub fn play(&self, lease_id: u64, job: &PlayJob, limits: &Limits) -> Result<JobResult, String> {
        self.with_player(lease_id, |player| {
            play(job, player, limits).map(job_result::Kind::Play)
        })
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

/// `error` and each of its causes, `: `-separated (the job's failure reason).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Plays one game of a play job with `player` on both sides: the one game
/// loop of [`stera_games::play`].
///
/// # Errors
/// A bad start position or opening, bad rules, an engine failure.
pub fn play(job: &PlayJob, player: &mut dyn Player, limits: &Limits) -> Result<PlayResult, String> {
    let start = Position::from_sfen(&job.start_sfen)
        .map_err(|e| format!("bad start position from the coordinator: {e}"))?;
    let mut position = start.clone();
    let mut opening = Vec::with_capacity(job.opening.len());
    for (i, usi) in job.opening.iter().enumerate() {
        let mv = position
            .parse_move(usi)
            .map_err(|e| format!("opening move #{} `{usi}`: {e}", i + 1))?;
        position.do_move(mv);
        opening.push(mv);
    }
    let options = PlayOptions {
        rules: rules_of(job),
        limits: *limits,
        ..PlayOptions::default()
    };
    let game = stera_games::play::play_self_game(&start, &opening, player, &options)
        .map_err(|e| with_causes(&e))?;
    Ok(play_result_to_proto(&game))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_engine::PlayerMove;
    use stera_games::{GameMove, MoveSource, Outcome, Termination};
    use stera_service::convert::result_from_proto;

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
    fn a_game_follows_the_opening_and_ends_by_the_rules() {
        let job = PlayJob {
            start_sfen: stera_rules::STARTPOS_SFEN.into(),
            opening: vec!["7g7f".into(), "3c3d".into()],
            ply_limit: 12,
            ..PlayJob::default()
        };
        let result = play(&job, &mut FirstMove, &Limits::default()).unwrap();
        assert_eq!(result.moves.len(), 12);
        assert_eq!(result.moves[0].usi, "7g7f");
        assert_eq!(result.moves[1].usi, "3c3d");
        let claimed = result_from_proto(&result).unwrap();
        assert_eq!(claimed.termination, Termination::PlyLimit);
        assert_eq!(claimed.outcome, Outcome::Draw);
        // The coordinator's check agrees.
        let moves: Vec<GameMove> = result
            .moves
            .iter()
            .map(|m| GameMove::new(m.usi.parse().unwrap(), MoveSource::Engine))
            .collect();
        let verified =
            stera_games::verify(&job.start_sfen, &moves, &claimed, &rules_of(&job)).unwrap();
        assert_eq!(verified.plies, 12);
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

    #[test]
    fn an_illegal_opening_is_an_error() {
        let job = PlayJob {
            start_sfen: stera_rules::STARTPOS_SFEN.into(),
            opening: vec!["7g7f".into(), "7g7f".into()],
            ply_limit: 12,
            ..PlayJob::default()
        };
        let err = play(&job, &mut FirstMove, &Limits::default()).unwrap_err();
        assert!(err.contains("opening move #2 `7g7f`"), "{err}");
    }
}
