//! The built-in evaluator: completeness on random positions, mates with the right
//! distance (checked against an independent brute-force mate solver), determinism.

use crate::rng;

use rng::Rng;
use stera_engine::{BuiltinEvaluator, Evaluation, Evaluator, Limits};
use stera_rules::value::MATE;
use stera_rules::{Move, Position};

fn nodes(n: u64) -> Limits {
    Limits {
        nodes: Some(n),
        ..Limits::default()
    }
}

fn best(evaluation: &Evaluation) -> (Move, i32) {
    let top = evaluation
        .moves
        .iter()
        .max_by_key(|m| m.value)
        .expect("position has moves");
    (top.mv, top.value)
}

/// True if the side to move mates in at most `plies` plies (checks only).
fn attacker_mates(pos: &mut Position, plies: u32) -> bool {
    for mv in pos.legal_moves() {
        if !pos.gives_check(mv) {
            continue;
        }
        pos.do_move(mv);
        let lost = defender_lost(pos, plies - 1);
        pos.undo_move().expect("undo after do");
        if lost {
            return true;
        }
    }
    false
}

fn defender_lost(pos: &mut Position, plies: u32) -> bool {
    let moves = pos.legal_moves();
    if moves.is_empty() {
        return true;
    }
    if plies == 0 {
        return false;
    }
    for mv in moves {
        pos.do_move(mv);
        let mated = attacker_mates(pos, plies - 1);
        pos.undo_move().expect("undo after do");
        if !mated {
            return false;
        }
    }
    true
}

#[test]
fn every_legal_move_is_scored_on_random_positions() {
    let mut engine = BuiltinEvaluator::new();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut checked = 0;
    let mut with_drops = 0;
    for game in 0..12 {
        let mut pos = Position::startpos();
        let plies = 10 + game * 9;
        for _ in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.do_move(moves[rng.below(moves.len())]);
        }
        let legal = pos.legal_moves();
        let mut evaluation = engine.evaluate(&pos, &nodes(4_000)).expect("evaluates");
        // check_complete is the contract; run it again on the returned value.
        evaluation.check_complete(&pos).expect("complete");
        assert_eq!(evaluation.moves.len(), legal.len(), "{}", pos.to_sfen());
        for (m, l) in evaluation.moves.iter().zip(&legal) {
            assert_eq!(m.mv, *l);
            assert!(m.depth >= 1, "{} has depth 0 in {}", m.mv, pos.to_sfen());
            assert!((-MATE..=MATE).contains(&m.value));
        }
        assert!(evaluation.engine.starts_with("stera-builtin "));
        checked += 1;
        with_drops += usize::from(legal.iter().any(|m| m.to_string().contains('*')));
    }
    assert_eq!(checked, 12);
    assert!(
        with_drops > 0,
        "random play should reach positions with drops"
    );
}

#[test]
fn position_without_moves_gives_an_empty_evaluation() {
    // White is checkmated: gold on 5b protected by the pawn on 5c.
    let pos = Position::from_sfen("4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1").expect("valid");
    assert!(pos.is_checkmate());
    let evaluation = BuiltinEvaluator::new()
        .evaluate(&pos, &nodes(1_000))
        .expect("evaluates");
    assert!(evaluation.moves.is_empty());
}

#[test]
fn finds_mate_in_one_with_the_mate_score() {
    let pos = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").expect("valid");
    let evaluation = BuiltinEvaluator::new()
        .evaluate(&pos, &nodes(20_000))
        .expect("evaluates");
    let (mv, value) = best(&evaluation);
    assert_eq!(mv.to_string(), "G*5b");
    assert_eq!(value, MATE - 1);
    // Moves that do not mate must not claim to.
    for m in &evaluation.moves {
        if m.mv != mv {
            assert!(m.value < MATE - 1, "{} claims {}", m.mv, m.value);
        }
    }
}

#[test]
fn finds_mate_in_three_with_the_mate_score() {
    // Found by the brute-force solver below: mate in 3 plies, none in 1.
    let problems = [
        "7pk/6G2/6S2/9/9/9/9/9/K8 b GS 1",
        "5k3/6n2/4s1nS1/5N3/9/9/9/9/K8 b BG 1",
        "4nB3/7k1/9/4+R4/9/9/9/9/K8 b GS 1",
    ];
    let mut engine = BuiltinEvaluator::new();
    for sfen in problems {
        let mut pos = Position::from_sfen(sfen).expect("valid");
        assert!(!attacker_mates(&mut pos, 1), "{sfen} has a mate in 1");
        assert!(attacker_mates(&mut pos, 3), "{sfen} has no mate in 3");
        let evaluation = engine.evaluate(&pos, &nodes(100_000)).expect("evaluates");
        let (mv, value) = best(&evaluation);
        assert_eq!(value, MATE - 3, "{sfen}: best {mv} scored {value}");
        // The engine's move really mates in 3 against every defence.
        pos.do_move(mv);
        assert!(
            defender_lost(&mut pos, 2),
            "{sfen}: {mv} does not mate in 3"
        );
        pos.undo_move().expect("undo");
        // Every move the engine calls mate-in-3 is one.
        for m in evaluation.moves.iter().filter(|m| m.value == MATE - 3) {
            pos.do_move(m.mv);
            assert!(defender_lost(&mut pos, 2), "{sfen}: {} is no mate", m.mv);
            pos.undo_move().expect("undo");
        }
    }
}

#[test]
fn being_mated_is_scored_negative_with_distance() {
    // White to move; black threatens G*5b mate. A pawn move ignores the threat.
    let pos = Position::from_sfen("4k3p/9/4P4/9/9/9/9/9/4K4 w G 1").expect("valid");
    let evaluation = BuiltinEvaluator::new()
        .evaluate(&pos, &nodes(30_000))
        .expect("evaluates");
    let pawn_move = evaluation
        .moves
        .iter()
        .find(|m| m.mv.to_string() == "1a1b")
        .expect("the pawn move is legal");
    assert_eq!(pawn_move.value, -(MATE - 2));
    // Some king move at least delays the mate.
    let (_, best_value) = best(&evaluation);
    assert!(best_value > -(MATE - 2), "best {best_value}");
}

#[test]
fn same_input_gives_same_output() {
    let pos = Position::from_position_command("startpos moves 7g7f 3c3d 2g2f 4c4d").expect("valid");
    let other = Position::from_position_command("startpos moves 2g2f 8c8d").expect("valid");
    let limits = nodes(30_000);
    let mut engine = BuiltinEvaluator::new();
    let first = engine.evaluate(&pos, &limits).expect("evaluates");
    // Whatever the engine searched in between must not change the result.
    engine.evaluate(&other, &limits).expect("evaluates");
    let second = engine.evaluate(&pos, &limits).expect("evaluates");
    let fresh = BuiltinEvaluator::new()
        .evaluate(&pos, &limits)
        .expect("evaluates");
    assert_eq!(first.moves, second.moves);
    assert_eq!(first.nodes, second.nodes);
    assert_eq!(first.moves, fresh.moves);
    assert_eq!(first.nodes, fresh.nodes);
}

#[test]
fn node_budget_is_respected_and_depth_limit_is_exact() {
    let pos = Position::startpos();
    let mut engine = BuiltinEvaluator::new();
    let evaluation = engine.evaluate(&pos, &nodes(50_000)).expect("evaluates");
    assert!(evaluation.nodes <= 50_000, "used {}", evaluation.nodes);
    let depth3 = engine
        .evaluate(
            &pos,
            &Limits {
                depth: Some(3),
                ..Limits::default()
            },
        )
        .expect("evaluates");
    assert!(depth3.moves.iter().all(|m| m.depth == 3));
    let zero = engine.evaluate(
        &pos,
        &Limits {
            depth: Some(0),
            ..Limits::default()
        },
    );
    assert!(zero.is_err());
}

#[test]
fn hanging_rook_is_recaptured() {
    // Black's rook on 3d can be taken by the pawn on 3c.
    let pos = Position::from_position_command(
        "startpos moves 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b 2e2d 2c2d 2h2d 8e8f 8g8f 8b8f 2d3d",
    )
    .expect("valid");
    let evaluation = BuiltinEvaluator::new()
        .evaluate(&pos, &nodes(30_000))
        .expect("evaluates");
    let (mv, value) = best(&evaluation);
    assert_eq!(mv.to_string(), "3c3d");
    assert!(value > 1_000, "winning a rook is worth more than {value}");
}
