//! The fake engine of the service benchmarks and tests: a value for every legal
//! move at once, and pseudo-random moves for search jobs.

use stera_engine::Player;
use stera_proto::v1::{JobResult, MoveValue, SearchJob, SearchResult, job_result};
use stera_rules::Position;

/// Plays a pseudo-random legal move at once (the fake engine of search jobs).
pub struct RandomMover(pub u64);

impl stera_engine::Player for RandomMover {
    fn new_game(&mut self) -> Result<(), stera_engine::EvalError> {
        Ok(())
    }
    fn play(
        &mut self,
        position: &Position,
        _: &stera_engine::Limits,
    ) -> Result<stera_engine::PlayerMove, stera_engine::EvalError> {
        // xorshift: cheap, and the same sequence on every run.
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let legal = position.legal_moves();
        let mv = legal[(self.0 % legal.len() as u64) as usize];
        Ok(stera_engine::PlayerMove::Move { mv, score: Some(0) })
    }
    fn identity(&self) -> String {
        "random-mover".into()
    }
}

/// A value for every legal move of `pos`, from the move's bits (-30..=30), depth 1.
pub fn move_values(pos: &Position) -> Vec<MoveValue> {
    pos.legal_moves()
        .iter()
        .map(|m| MoveValue {
            usi: m.to_string(),
            value: i32::from(m.raw() % 61) - 30,
            depth: 1,
        })
        .collect()
}

/// The answer to a search job by a [`RandomMover`] seeded with `seed`: a
/// pseudo-random legal move of the position after the job's moves, or
/// `resign` when there is none.
///
/// # Errors
/// The job's position or moves do not parse.
pub fn search_answer(lease_id: u64, job: &SearchJob, seed: u64) -> Result<JobResult, String> {
    let mut position = Position::from_sfen(&job.start_sfen).map_err(|e| e.to_string())?;
    for usi in &job.moves {
        let mv = position.parse_move(usi).map_err(|e| e.to_string())?;
        position.do_move(mv);
    }
    let usi = if position.legal_moves().is_empty() {
        "resign".to_owned()
    } else {
        match RandomMover(seed | 1).play(&position, &stera_engine::Limits::default()) {
            Ok(stera_engine::PlayerMove::Move { mv, .. }) => mv.to_string(),
            _ => "resign".to_owned(),
        }
    };
    Ok(JobResult {
        lease_id,
        engine: "fake".into(),
        kind: Some(job_result::Kind::Search(SearchResult {
            usi,
            ..SearchResult::default()
        })),
        ..JobResult::default()
    })
}
