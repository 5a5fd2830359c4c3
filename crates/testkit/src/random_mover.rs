//! The fake engine of the service benchmarks and tests: a value for every legal
//! move at once, and pseudo-random games.

use stera_proto::v1::MoveValue;
use stera_rules::Position;

/// Plays a pseudo-random legal move at once (the fake engine of play jobs).
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
