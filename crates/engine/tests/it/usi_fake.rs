//! The USI evaluator against a scripted engine: missing moves, crashes, hangs,
//! startup failures. Needs only `sh`.

use crate::engines;

use std::time::Duration;

use engines::{fake_engine, fake_engine_with_marker};
use stera_engine::usi::{ScoreConversion, UsiEvaluator, win_rate_to_value};
use stera_engine::{EvalError, Evaluator, Limits};
use stera_rules::Position;
use stera_rules::value::mate_in;

fn depth(d: u32) -> Limits {
    Limits {
        depth: Some(d),
        ..Limits::default()
    }
}

fn value_of(evaluation: &stera_engine::Evaluation, usi: &str) -> (i32, u32) {
    let m = evaluation
        .moves
        .iter()
        .find(|m| m.mv.to_string() == usi)
        .unwrap_or_else(|| panic!("{usi} missing"));
    (m.value, m.depth)
}

#[test]
fn unreported_moves_are_filled_by_child_searches() {
    let mut engine = UsiEvaluator::new(fake_engine("few", &[])).unwrap();
    assert_eq!(engine.engine_name(), "fake-usi few");
    assert_eq!(engine.multipv_max(), Some(500));
    let pos = Position::startpos();
    let evaluation = engine.evaluate(&pos, &depth(3)).unwrap();
    let legal = pos.legal_moves();
    let order: Vec<_> = evaluation.moves.iter().map(|m| m.mv).collect();
    assert_eq!(order, legal);
    // Reported at the root: the last exact line counts, the bound line does not.
    assert_eq!(value_of(&evaluation, "7g7f"), (50, 2));
    assert_eq!(value_of(&evaluation, "2g2f"), (-20, 2));
    // Everything else came from a child search (cp 10 for the opponent), one ply deeper.
    assert_eq!(value_of(&evaluation, "9g9f"), (-10, 4));
    let stats = engine.stats();
    assert_eq!(stats.child_searches, 28);
    assert_eq!(stats.searches, 29);
    assert_eq!(stats.restarts, 0);
    // Root nodes (25) plus 28 child searches of 100 nodes.
    assert_eq!(evaluation.nodes, 25 + 28 * 100);
    assert_eq!(evaluation.engine, "fake-usi few");
}

#[test]
fn child_searches_switch_multipv_without_isready() {
    let (config, marker) = fake_engine_with_marker("few", "few-record");
    let mut engine = UsiEvaluator::new(config).unwrap();
    let pos = Position::startpos();
    for _ in 0..2 {
        engine.evaluate(&pos, &depth(3)).unwrap();
    }
    let sent = std::fs::read_to_string(&marker).unwrap();
    let _ = std::fs::remove_file(&marker);
    let lines: Vec<&str> = sent.lines().collect();
    // One `isready`, after the handshake: MultiPV is read when a search starts,
    // and YaneuraOu's `isready` costs 160 ms, twice an evaluation here.
    assert_eq!(
        lines.iter().filter(|l| **l == "isready").count(),
        1,
        "{sent}"
    );
    assert_eq!(lines[0], "isready");
    let multipv: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("setoption name MultiPV"))
        .copied()
        .collect();
    assert_eq!(
        multipv,
        [
            "setoption name MultiPV value 30",
            "setoption name MultiPV value 1",
            "setoption name MultiPV value 30",
            "setoption name MultiPV value 1",
        ]
    );
    // Each switch is followed by the search it is for.
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("setoption") {
            assert!(lines[i + 1].starts_with("position "), "{sent}");
        }
    }
}

#[test]
fn a_complete_multipv_report_needs_no_child_search() {
    let mut engine = UsiEvaluator::new(fake_engine("all", &[])).unwrap();
    let evaluation = engine.evaluate(&Position::startpos(), &depth(1)).unwrap();
    assert_eq!(evaluation.moves.len(), 30);
    // The script numbers the moves in canonical order: multipv k has cp k.
    for (k, m) in (1..).zip(&evaluation.moves) {
        assert_eq!(m.value, k, "{}", m.mv);
    }
    assert_eq!(engine.stats().child_searches, 0);
}

#[test]
fn an_engine_that_crashes_on_its_first_go_is_restarted() {
    let (config, marker) = fake_engine_with_marker("crash-first-go", "crash-first-go");
    let mut engine = UsiEvaluator::new(config).unwrap();
    let evaluation = engine.evaluate(&Position::startpos(), &depth(2)).unwrap();
    assert!(marker.exists(), "the fake engine never crashed");
    assert_eq!(evaluation.moves.len(), 30);
    assert_eq!(value_of(&evaluation, "7g7f"), (50, 2));
    assert_eq!(engine.stats().restarts, 1);
    // The restarted engine keeps working.
    engine.evaluate(&Position::startpos(), &depth(2)).unwrap();
    assert_eq!(engine.stats().restarts, 1);
    let _ = std::fs::remove_file(&marker);
}

#[test]
fn an_engine_that_always_crashes_fails_after_bounded_restarts() {
    let mut config = fake_engine("crash-always", &[]);
    config.max_restarts = 2;
    let mut engine = UsiEvaluator::new(config).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    let EvalError::Engine { reason, .. } = &err else {
        panic!("expected an engine error, got {err}");
    };
    assert!(reason.contains("crashed 3 times"), "{reason}");
    assert!(
        reason.contains("fake engine: crashing"),
        "stderr not reported: {reason}"
    );
    assert_eq!(engine.stats().restarts, 2);
}

#[test]
fn an_engine_that_hangs_times_out() {
    let mut config = fake_engine("hang", &[]);
    config.search_timeout = Duration::from_millis(300);
    let mut engine = UsiEvaluator::new(config).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    let EvalError::Timeout { after, sfen, .. } = &err else {
        panic!("expected a time-out, got {err}");
    };
    assert_eq!(*after, Duration::from_millis(300));
    assert_eq!(sfen, &Position::startpos().to_sfen());
    // The engine was replaced; the next position times out the same way instead of
    // reading the hung engine's state.
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    assert!(matches!(err, EvalError::Timeout { .. }), "{err}");
}

#[test]
fn a_position_timeout_caps_all_searches_together() {
    let mut config = fake_engine("hang", &[]);
    config.position_timeout = Some(Duration::from_millis(200));
    let mut engine = UsiEvaluator::new(config).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    let EvalError::Timeout { after, .. } = err else {
        panic!("expected a time-out, got {err}");
    };
    assert!(after <= Duration::from_millis(200), "{after:?}");
}

#[test]
fn startup_failures_are_clear_errors() {
    let err = UsiEvaluator::new(fake_engine("exit-at-start", &[]))
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(text.contains("refusing to start"), "{text}");
    let missing = stera_engine::usi::UsiConfig::new("./no/such/engine");
    let err = UsiEvaluator::new(missing).err().unwrap();
    assert!(matches!(err, EvalError::Engine { .. }), "{err}");
    assert!(err.to_string().contains("cannot run the program"), "{err}");
}

#[test]
fn misspelt_options_are_rejected_and_real_ones_identify_the_engine() {
    let config = fake_engine("few", &[]).with_option("Stlye", "wild");
    let err = UsiEvaluator::new(config).err().unwrap().to_string();
    assert!(err.contains("no option `Stlye`"), "{err}");
    assert!(err.contains("MultiPV, Style"), "{err}");
    let config = fake_engine("few", &[]).with_option("Style", "wild");
    let engine = UsiEvaluator::new(config).unwrap();
    assert_eq!(engine.identity(), "fake-usi few [Style=wild]");
}

#[test]
fn limits_the_engine_cannot_honour_are_rejected() {
    let mut engine = UsiEvaluator::new(fake_engine("few", &[])).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &Limits::default())
        .unwrap_err();
    assert!(matches!(err, EvalError::UnsupportedLimits(_)), "{err}");
    let mut config = fake_engine("few", &[]);
    config.go_mode = stera_engine::usi::GoMode::ByoyomiOnly;
    let mut engine = UsiEvaluator::new(config).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    assert!(matches!(err, EvalError::UnsupportedLimits(_)), "{err}");
    let byoyomi = Limits {
        time: Some(Duration::from_millis(50)),
        ..Limits::default()
    };
    assert_eq!(
        engine
            .evaluate(&Position::startpos(), &byoyomi)
            .unwrap()
            .moves
            .len(),
        30
    );
}

#[test]
fn a_position_without_moves_needs_no_engine() {
    let mut engine = UsiEvaluator::new(fake_engine("hang", &[])).unwrap();
    // Black to move, checkmated by the gold on 5h backed by the pawn on 5g.
    let mated = Position::from_sfen("4k4/9/9/9/9/9/4p4/4g4/4K4 b - 1").unwrap();
    assert!(mated.is_checkmate());
    let evaluation = engine.evaluate(&mated, &depth(2)).unwrap();
    assert!(evaluation.moves.is_empty());
}

#[test]
fn win_rates_are_converted() {
    let pos = Position::startpos();
    // `score winrate` is always a probability; `cp` is centipawns by default.
    let mut engine = UsiEvaluator::new(fake_engine("winrate", &[])).unwrap();
    let evaluation = engine.evaluate(&pos, &depth(2)).unwrap();
    assert_eq!(
        value_of(&evaluation, "7g7f"),
        (win_rate_to_value(0.75, 756.0), 2)
    );
    assert_eq!(value_of(&evaluation, "7g7f").0, 831);
    assert_eq!(value_of(&evaluation, "2g2f"), (2500, 2));
    // Told that `cp` holds a win rate times 10000, 2500 is 25 %.
    let mut config = fake_engine("winrate", &[]);
    config.scores = ScoreConversion {
        cp_is_win_rate: Some(10_000.0),
        win_rate_coefficient: 756.0,
    };
    let mut engine = UsiEvaluator::new(config).unwrap();
    let evaluation = engine.evaluate(&pos, &depth(2)).unwrap();
    assert_eq!(value_of(&evaluation, "2g2f").0, -831);
    assert!(
        evaluation.engine.contains("cp-is-win-rate/10000"),
        "{}",
        evaluation.engine
    );
}

#[test]
fn a_mating_move_the_engine_did_not_report_gets_the_mate_value() {
    // The scripted engine reports no legal move here, so every move is a child
    // search, except G*5b, after which the opponent has no legal move at all.
    let pos = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
    let mut engine = UsiEvaluator::new(fake_engine("few", &[])).unwrap();
    let evaluation = engine.evaluate(&pos, &depth(3)).unwrap();
    assert_eq!(evaluation.moves.len(), pos.legal_move_count());
    assert_eq!(value_of(&evaluation, "G*5b").0, mate_in(1));
    assert_eq!(value_of(&evaluation, "G*9a"), (-10, 4));
    assert_eq!(
        engine.stats().child_searches,
        u64::try_from(pos.legal_move_count() - 1).unwrap()
    );
}

#[test]
fn a_move_that_repeats_the_position_a_fourth_time_is_a_draw() {
    // Kings shuffle: the next 5b5a brings back the initial position a fourth time.
    let pos = Position::from_position_command(
        "startpos moves 5i5h 5a5b 5h5i 5b5a 5i5h 5a5b 5h5i 5b5a 5i5h 5a5b 5h5i",
    )
    .unwrap();
    let mut engine = UsiEvaluator::new(fake_engine("few", &[])).unwrap();
    let evaluation = engine.evaluate(&pos, &depth(3)).unwrap();
    assert_eq!(value_of(&evaluation, "5b5a").0, 0);
    // Other moves come from the engine (cp 10 for the opponent after the move).
    assert_eq!(value_of(&evaluation, "5b4b"), (-10, 4));
}

/// Issue 26, point 6: an engine that scores only a move that does not exist and
/// plays an illegal one had its values accepted (20,021 move values of -50 in a
/// book). Its evaluation is now an engine failure that names the move.
#[test]
fn an_engine_that_reports_illegal_moves_fails_the_evaluation() {
    let mut engine = UsiEvaluator::new(fake_engine("illegal", &[])).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, EvalError::Engine { .. }) && text.contains("not a legal move"),
        "{text}"
    );
    assert!(text.contains("5a5i") || text.contains("9z9z"), "{text}");
}
