//! The USI driver against YaneuraOu, the engine the book's users run. It is not
//! packaged, so these tests are run by hand with a build of its public source
//! (`make -C source normal YANEURAOU_EDITION=YANEURAOU_ENGINE_MATERIAL
//! COMPILER=g++ TARGET_CPU=AVX2`, no evaluation file needed):
//!
//!     STERA_YANEURAOU=/path/to/YaneuraOu-by-gcc cargo test -p stera-engine --test it -- --ignored usi_yaneuraou
//!
//! YaneuraOu answers `isready` by setting up the initial position again: a
//! driver that sent it between `position` and `go` searched the initial
//! position whatever it asked.

use stera_engine::usi::{UsiConfig, UsiEvaluator, UsiPlayer};
use stera_engine::{Evaluator, Limits, Player, PlayerMove};
use stera_rules::Position;

fn yaneuraou() -> UsiConfig {
    let path = std::env::var("STERA_YANEURAOU")
        .expect("STERA_YANEURAOU names a YaneuraOu build (see the module's comment)");
    UsiConfig::new(path)
        .with_option("BookFile", "no_book")
        .with_option("Threads", "1")
        .with_option("USI_Hash", "16")
}

fn nodes(n: u64) -> Limits {
    Limits {
        nodes: Some(n),
        ..Limits::default()
    }
}

/// Positions whose legal moves differ from the initial position's.
const POSITIONS: [&str; 3] = [
    "startpos moves 1g1f 1c1d 2i1g",
    "startpos moves 7g7f 3c3d 8h2b+ 3a2b",
    "sfen l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
];

#[test]
#[ignore = "needs a YaneuraOu build: STERA_YANEURAOU=path"]
fn yaneuraou_plays_moves_of_the_position_it_is_given() {
    let mut player = UsiPlayer::new(yaneuraou()).unwrap();
    player.new_game().unwrap();
    for text in POSITIONS {
        let position = Position::from_position_command(text).unwrap();
        match player.play(&position, &nodes(2000)).unwrap() {
            PlayerMove::Move { mv, .. } => {
                assert!(position.legal_moves().contains(&mv), "{mv} in {text}");
            }
            other => panic!("{other:?} in {text}"),
        }
    }
}

#[test]
#[ignore = "needs a YaneuraOu build: STERA_YANEURAOU=path"]
fn yaneuraou_values_every_legal_move_of_the_position_it_is_given() {
    let mut engine = UsiEvaluator::new(yaneuraou()).unwrap();
    for text in POSITIONS {
        let position = Position::from_position_command(text).unwrap();
        let evaluation = engine.evaluate(&position, &nodes(20_000)).unwrap();
        let mut valued: Vec<_> = evaluation.moves.iter().map(|m| m.mv).collect();
        let mut legal = position.legal_moves();
        valued.sort_unstable_by_key(|m| m.to_string());
        legal.sort_unstable_by_key(|m| m.to_string());
        assert_eq!(valued, legal, "{text}");
    }
}
