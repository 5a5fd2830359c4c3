//! The USI evaluator against real engines: Fairy-Stockfish (MultiPV) and GPS Shogi's
//! `gpsusi` (no MultiPV: the child-search path). Skipped with a note when an engine
//! is not installed, failed when `STERA_REQUIRE_ENGINES=1`.

use crate::engines;

use std::time::Duration;

use engines::real_engine;
use stera_engine::usi::{UsiConfig, UsiEvaluator};
use stera_engine::{Evaluation, Evaluator, Limits};
use stera_rules::Position;
use stera_rules::value::mate_in;

/// A middle game after a bishop exchange (both bishops in hand: many drops).
const BISHOP_EXCHANGE: &str = "startpos moves 7g7f 3c3d 8h2b+ 3a2b";
/// A quiet middle game: castles on both sides.
const CASTLES: &str = "startpos moves 7g7f 3c3d 2g2f 4c4d 2f2e 2b3c 3i4h 8b4b 5i6h 5a6b \
                       6h7h 6b7b 5g5f 3a3b 4i5h 7b8b 9g9f 9c9d 1g1f 1c1d 8h7g 4a5b 3g3f 7a7b";
/// A sharp position with many pieces in hand and promotion choices (207 legal moves).
const SHARP: &str = "sfen l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1";
/// Black mates at once with G*5b (the pawn on 5c guards the gold).
const MATE_IN_ONE: &str = "sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1";

fn fairy_stockfish() -> Option<UsiEvaluator> {
    let path = real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    )?;
    let config = UsiConfig::new(path).with_option("UCI_Variant", "shogi");
    Some(UsiEvaluator::new(config).expect("fairy-stockfish starts"))
}

fn gpsusi() -> Option<UsiEvaluator> {
    let path = real_engine("gpsusi", "STERA_GPSUSI", "gpsshogi")?;
    // Without BookDepth 0 it answers from its opening book without searching. It
    // prints lines for several root moves even without MultiPVWidth, never all.
    let config = UsiConfig::new(path)
        .with_option("BookDepth", "0")
        .with_option("Thread", "1");
    Some(UsiEvaluator::new(config).expect("gpsusi starts"))
}

fn position(text: &str) -> Position {
    Position::from_position_command(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Every legal move once, in canonical order, values in range (what
/// `check_complete` also checks, verified here independently).
fn assert_complete(evaluation: &Evaluation, pos: &Position) {
    let moves: Vec<_> = evaluation.moves.iter().map(|m| m.mv).collect();
    assert_eq!(moves, pos.legal_moves(), "moves of {}", pos.to_sfen());
    for m in &evaluation.moves {
        assert!(m.value.abs() <= 32_000, "{} = {}", m.mv, m.value);
    }
}

#[test]
fn fairy_stockfish_values_every_legal_move() {
    let Some(mut engine) = fairy_stockfish() else {
        return;
    };
    assert!(
        engine.identity().starts_with("Fairy-Stockfish"),
        "{}",
        engine.identity()
    );
    assert!(engine.identity().ends_with("[UCI_Variant=shogi]"));
    let limits = Limits {
        depth: Some(3),
        ..Limits::default()
    };
    for text in ["startpos", BISHOP_EXCHANGE, CASTLES, SHARP] {
        let pos = position(text);
        let evaluation = engine.evaluate(&pos, &limits).unwrap();
        assert_complete(&evaluation, &pos);
        assert!(evaluation.nodes > 0);
    }
    let stats = engine.stats();
    eprintln!("fairy-stockfish: {stats:?}");
    // MultiPV did the work: child searches only for moves the engine skipped.
    assert_eq!(stats.positions, 4);
    assert!(
        stats.child_searches < 30,
        "too many child searches: {stats:?}"
    );
}

#[test]
fn fairy_stockfish_finds_the_mate_in_one() {
    let Some(mut engine) = fairy_stockfish() else {
        return;
    };
    let pos = position(MATE_IN_ONE);
    let limits = Limits {
        depth: Some(3),
        ..Limits::default()
    };
    let evaluation = engine.evaluate(&pos, &limits).unwrap();
    assert_complete(&evaluation, &pos);
    let mate = pos.parse_move("G*5b").unwrap();
    for m in &evaluation.moves {
        if m.mv == mate {
            assert_eq!(m.value, mate_in(1));
        } else {
            assert!(m.value < mate_in(1), "{} = {}", m.mv, m.value);
        }
    }
}

/// After 7g7f 3c3d, 8h3c puts the bishop where both the bishop on 2b and the knight
/// on 2a take it for nothing: whatever the engine and the path (MultiPV line or
/// negated child search), that move must score far below the best one.
fn assert_blunder_scores_low(evaluation: &Evaluation, pos: &Position) {
    let blunder = pos.parse_move("8h3c").unwrap();
    let best = evaluation.moves.iter().map(|m| m.value).max().unwrap();
    let value = evaluation
        .moves
        .iter()
        .find(|m| m.mv == blunder)
        .unwrap()
        .value;
    assert!(value < best - 300, "8h3c = {value}, best = {best}");
}

const HANGING_BISHOP: &str = "startpos moves 7g7f 3c3d";

#[test]
fn fairy_stockfish_values_have_the_movers_sign() {
    let Some(mut engine) = fairy_stockfish() else {
        return;
    };
    let pos = position(HANGING_BISHOP);
    // Byoyomi limits work for Fairy-Stockfish too.
    let limits = Limits {
        time: Some(Duration::from_millis(100)),
        ..Limits::default()
    };
    let evaluation = engine.evaluate(&pos, &limits).unwrap();
    assert_complete(&evaluation, &pos);
    assert_blunder_scores_low(&evaluation, &pos);
}

#[test]
fn gpsusi_values_every_legal_move_through_child_searches() {
    let Some(mut engine) = gpsusi() else { return };
    assert!(engine.engine_name().starts_with("gpsshogi"));
    assert_eq!(engine.multipv_max(), None);
    let limits = Limits {
        time: Some(Duration::from_millis(100)),
        ..Limits::default()
    };
    let pos = Position::startpos();
    let evaluation = engine.evaluate(&pos, &limits).unwrap();
    assert_complete(&evaluation, &pos);
    let pos = position(HANGING_BISHOP);
    let evaluation = engine.evaluate(&pos, &limits).unwrap();
    assert_complete(&evaluation, &pos);
    assert_blunder_scores_low(&evaluation, &pos);
    let stats = engine.stats();
    eprintln!("gpsusi: {stats:?}");
    assert!(stats.child_searches > 0, "{stats:?}");
    // gpsusi aborts on `go depth`; the evaluator refuses instead of crashing it.
    let depth = Limits {
        depth: Some(3),
        ..Limits::default()
    };
    assert!(engine.evaluate(&Position::startpos(), &depth).is_err());
}
