//! The built-in engine against a random mover: it must win every game.
//!
//! A game is won by mate (the random side has no legal move) or, if the ply limit
//! comes first, by a material lead of at least two rooks. A draw by repetition, a
//! loss, or a smaller lead fails the test.

use crate::rng;

use rng::Rng;
use stera_engine::{BuiltinEvaluator, Evaluator, Limits};
use stera_rules::{Color, Position};

/// Plies after which a game is adjudicated on material.
const MAX_PLIES: u32 = 200;
/// Material lead (centipawns, the engine's piece values) that counts as a win.
const DECISIVE_LEAD: i32 = 2_000;

/// Material of Black minus material of White, counted from the SFEN (independent of
/// the engine's evaluation code).
fn material_balance(pos: &Position) -> i32 {
    fn value(c: char, promoted: bool) -> i32 {
        match (c.to_ascii_lowercase(), promoted) {
            ('p', false) => 90,
            ('l', false) => 315,
            ('n', false) => 405,
            ('s', false) => 495,
            ('g', _) => 540,
            ('b', false) => 855,
            ('r', false) => 990,
            ('b', true) => 945,
            ('r', true) => 1395,
            ('k', _) => 0,
            (_, true) => 540,
            _ => 0,
        }
    }
    let sfen = pos.to_sfen();
    let fields: Vec<&str> = sfen.split_whitespace().collect();
    let mut balance = 0;
    let mut promoted = false;
    for c in fields[0].chars() {
        if c == '+' {
            promoted = true;
            continue;
        }
        if c.is_ascii_alphabetic() {
            let v = value(c, promoted);
            balance += if c.is_ascii_uppercase() { v } else { -v };
        }
        promoted = false;
    }
    let mut count = 0;
    for c in fields[2].chars() {
        if let Some(d) = c.to_digit(10) {
            count = count * 10 + d as i32;
        } else if c != '-' {
            let v = value(c, false) * count.max(1);
            balance += if c.is_ascii_uppercase() { v } else { -v };
            count = 0;
        }
    }
    balance
}

enum Outcome {
    EngineMates,
    Adjudicated(i32),
}

fn play(engine_color: Color, seed: u64) -> Outcome {
    let mut engine = BuiltinEvaluator::new();
    let limits = Limits {
        nodes: Some(3_000),
        ..Limits::default()
    };
    let mut rng = Rng(seed);
    let mut pos = Position::startpos();
    for ply in 0..MAX_PLIES {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            assert_ne!(
                pos.side_to_move(),
                engine_color,
                "the engine got mated at ply {ply}: {}",
                pos.to_sfen()
            );
            return Outcome::EngineMates;
        }
        let mv = if pos.side_to_move() == engine_color {
            let evaluation = engine.evaluate(&pos, &limits).expect("evaluates");
            evaluation
                .moves
                .iter()
                .max_by_key(|m| m.value)
                .expect("has moves")
                .mv
        } else {
            moves[rng.below(moves.len())]
        };
        pos.do_move(mv);
        assert!(
            pos.game_repetition().is_none(),
            "repetition at ply {ply}: {}",
            pos.to_sfen()
        );
    }
    let balance = material_balance(&pos);
    Outcome::Adjudicated(if engine_color == Color::Black {
        balance
    } else {
        -balance
    })
}

#[test]
fn beats_a_random_mover_with_either_colour() {
    let games = [
        (Color::Black, 1u64),
        (Color::White, 2),
        (Color::Black, 3),
        (Color::White, 4),
    ];
    let mut mates = 0;
    for (color, seed) in games {
        match play(color, seed) {
            Outcome::EngineMates => mates += 1,
            Outcome::Adjudicated(lead) => assert!(
                lead >= DECISIVE_LEAD,
                "game {seed} as {color:?}: only {lead} cp ahead after {MAX_PLIES} plies"
            ),
        }
    }
    // Against random play a working engine mates; adjudication is the exception.
    assert!(
        mates >= 3,
        "only {mates} of {} games ended in mate",
        games.len()
    );
}

#[test]
fn material_counter_counts_hands_and_promotions() {
    let pos = Position::from_sfen("4k4/9/4+P4/9/9/9/9/9/4K4 b R2p 1").expect("valid");
    assert_eq!(material_balance(&pos), 540 + 990 - 180);
}
