//! Repetition: the game rule (fourth occurrence) and the search form (first recurrence),
//! ordinary and perpetual check.

use stera_rules::{Position, Repetition};

fn play(pos: &mut Position, moves: &[&str]) {
    for m in moves {
        let mv = pos.parse_move(m).unwrap();
        pos.do_move(mv);
    }
}

#[test]
fn rook_shuffle_draws_on_fourth_occurrence() {
    let mut pos = Position::startpos();
    let cycle = ["2h3h", "8b7b", "3h2h", "7b8b"];
    play(&mut pos, &cycle);
    assert_eq!(pos.search_repetition(usize::MAX), Some(Repetition::Draw));
    assert_eq!(
        pos.game_repetition(),
        None,
        "second occurrence is no game end"
    );
    play(&mut pos, &cycle);
    assert_eq!(
        pos.game_repetition(),
        None,
        "third occurrence is no game end"
    );
    play(&mut pos, &cycle);
    assert_eq!(pos.game_repetition(), Some(Repetition::Draw));
}

#[test]
fn search_form_respects_the_window() {
    let mut pos = Position::startpos();
    play(&mut pos, &["2h3h", "8b7b", "3h2h", "7b8b"]);
    assert_eq!(pos.search_repetition(4), Some(Repetition::Draw));
    assert_eq!(pos.search_repetition(3), None, "the cycle is 4 plies long");
}

#[test]
fn perpetual_check_loses_for_the_checker() {
    // Black's rook checks on every move: 2e1e+ K1a-2b, 1e2e+ K2b-1a.
    let mut pos = Position::from_sfen("8k/9/9/9/7R1/9/9/9/K8 b - 1").unwrap();
    let cycle = ["2e1e", "1a2b", "1e2e", "2b1a"];
    play(&mut pos, &cycle);
    // Black to move, black gave every check of the cycle.
    assert_eq!(
        pos.search_repetition(usize::MAX),
        Some(Repetition::OwnPerpetualCheck)
    );
    play(&mut pos, &cycle);
    play(&mut pos, &cycle);
    assert_eq!(pos.game_repetition(), Some(Repetition::OwnPerpetualCheck));
    // One more checking move: now white is to move and the checker is the opponent.
    play(&mut pos, &["2e1e"]);
    assert_eq!(
        pos.search_repetition(usize::MAX),
        Some(Repetition::OpponentPerpetualCheck)
    );
    assert_eq!(
        pos.game_repetition(),
        Some(Repetition::OpponentPerpetualCheck)
    );
}

#[test]
fn check_and_mate() {
    // Black gold on 1b protected by the pawn on 1c: white king on 1a is mated.
    let mated = Position::from_sfen("7nk/8G/8P/9/9/9/9/9/K8 w - 1").unwrap();
    assert!(mated.in_check());
    assert!(mated.is_checkmate());
    assert!(mated.legal_moves().is_empty());
    let start = Position::startpos();
    assert!(!start.in_check() && !start.is_checkmate());
    let checked = Position::from_sfen("8k/9/8R/9/9/9/9/9/K8 w - 1").unwrap();
    assert!(checked.in_check() && !checked.is_checkmate());
}
