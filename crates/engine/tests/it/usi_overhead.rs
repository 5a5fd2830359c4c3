//! Measures what the USI evaluator costs beyond the engine's own search: run with
//!
//! ```text
//! cargo test --release -p stera-engine --test it -- usi_overhead:: --ignored --nocapture
//! ```
//!
//! Figures are printed, not asserted (wall-clock times depend on the machine).

use crate::engines;

use std::time::{Duration, Instant};

use engines::{fake_engine, real_engine};
use stera_engine::usi::{UsiConfig, UsiEvaluator};
use stera_engine::{Evaluator, Limits};
use stera_rules::Position;

const ROUNDS: u32 = 200;

/// Per position, means of: the wall time of `evaluate`, the engine-reported search
/// time, and the wall time from `go` to `bestmove`.
fn measure(
    engine: &mut UsiEvaluator,
    pos: &Position,
    limits: &Limits,
) -> (Duration, Duration, Duration) {
    // The first position pays for warm-up (hash allocation, page faults).
    engine.evaluate(pos, limits).unwrap();
    let before = engine.stats();
    let start = Instant::now();
    for _ in 0..ROUNDS {
        let evaluation = engine.evaluate(pos, limits).unwrap();
        assert_eq!(evaluation.moves.len(), pos.legal_move_count());
    }
    let wall = start.elapsed() / ROUNDS;
    let after = engine.stats();
    let engine_time = (after.engine_time - before.engine_time) / ROUNDS;
    let go_to_bestmove = (after.go_to_bestmove - before.go_to_bestmove) / ROUNDS;
    (wall, engine_time, go_to_bestmove)
}

#[test]
#[ignore = "measurement; run by hand"]
fn overhead_against_an_instant_scripted_engine() {
    // The script answers every `go` at once with all 30 moves of the initial
    // position, so the whole time is protocol, process I/O and parsing (and the
    // shell's own speed).
    let mut engine = UsiEvaluator::new(fake_engine("all", &[])).unwrap();
    let limits = Limits {
        depth: Some(1),
        ..Limits::default()
    };
    let (wall, _, searching) = measure(&mut engine, &Position::startpos(), &limits);
    println!(
        "scripted instant engine, 30 moves: evaluate {wall:?}, go..bestmove {searching:?}, \
         overhead {:?} per position",
        wall.saturating_sub(searching)
    );
}

#[test]
#[ignore = "measurement; run by hand"]
fn overhead_beyond_fairy_stockfish_search_time() {
    let Some(path) = real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let config = UsiConfig::new(path).with_option("UCI_Variant", "shogi");
    let mut engine = UsiEvaluator::new(config).unwrap();
    for (name, text, depth) in [
        ("startpos", "startpos", 1),
        ("startpos", "startpos", 4),
        (
            "207 moves",
            "sfen l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
            1,
        ),
    ] {
        let pos = Position::from_position_command(text).unwrap();
        let limits = Limits {
            depth: Some(depth),
            ..Limits::default()
        };
        let (wall, engine_time, searching) = measure(&mut engine, &pos, &limits);
        println!(
            "fairy-stockfish {name} depth {depth}: evaluate {wall:?}, go..bestmove {searching:?}, \
             engine-reported {engine_time:?}; overhead beyond go..bestmove {:?}, \
             beyond engine-reported {:?} per position",
            wall.saturating_sub(searching),
            wall.saturating_sub(engine_time)
        );
    }
}
