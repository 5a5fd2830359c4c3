//! Result validation against arbitrary worker results (issue 16's fuzzing of result
//! validation): no input panics, and a result is accepted exactly when an
//! independent check says it is complete, legal, unique and in range.

use std::collections::HashSet;

use proptest::prelude::*;
use stera_coordinator::validate::thought_from_result;
use stera_proto::v1::MoveValue;
use stera_rules::{Position, value::MATE};

/// A position after `plies` pseudo-random legal moves from the start.
fn position(seed: u64, plies: usize) -> Position {
    let mut pos = Position::startpos();
    let mut x = seed | 1;
    for _ in 0..plies {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        pos.do_move(moves[(x % moves.len() as u64) as usize]);
    }
    pos
}

/// What a worker might send for one entry: a legal move (by index), a random
/// text, or one of the tricky spellings.
#[derive(Debug, Clone)]
enum Entry {
    Legal(usize),
    Text(String),
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        6 => any::<usize>().prop_map(Entry::Legal),
        1 => "[a-zA-Z0-9*+ ]{0,8}".prop_map(Entry::Text),
        1 => prop::sample::select(vec!["1a1i+", "P*1a", "7g7f+", "", "none", "resign", "9a9a"])
            .prop_map(|s| Entry::Text(s.to_owned())),
    ]
}

fn value() -> impl Strategy<Value = i32> {
    prop_oneof![
        8 => -MATE..=MATE,
        1 => any::<i32>(),
        1 => prop::sample::select(vec![MATE, -MATE, MATE + 1, -MATE - 1, i32::MIN, i32::MAX]),
    ]
}

/// The independent verdict: every legal move exactly once, nothing else, values in
/// range.
fn acceptable(pos: &Position, moves: &[MoveValue]) -> bool {
    let legal: HashSet<String> = pos.legal_moves().iter().map(ToString::to_string).collect();
    let mut seen = HashSet::new();
    for m in moves {
        if !legal.contains(&m.usi) || !seen.insert(m.usi.clone()) {
            return false;
        }
        if !(-MATE..=MATE).contains(&m.value) {
            return false;
        }
    }
    seen.len() == legal.len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_results_never_panic(
        seed in any::<u64>(),
        plies in 0usize..60,
        entries in prop::collection::vec((entry(), value(), any::<u32>()), 0..40),
    ) {
        let pos = position(seed, plies);
        let legal = pos.legal_moves();
        let moves: Vec<MoveValue> = entries
            .into_iter()
            .map(|(e, value, depth)| MoveValue {
                usi: match e {
                    Entry::Legal(i) if !legal.is_empty() => legal[i % legal.len()].to_string(),
                    Entry::Legal(_) => "7g7f".into(),
                    Entry::Text(t) => t,
                },
                value,
                depth,
            })
            .collect();
        let verdict = thought_from_result(&pos, &moves, "fuzz", 0);
        prop_assert_eq!(verdict.is_ok(), acceptable(&pos, &moves), "{:?}", verdict.err());
    }

    /// Complete results in any order and with any in-range values are accepted,
    /// and a single change (a move dropped, duplicated, or out of range) is refused.
    #[test]
    fn complete_results_pass_and_one_flaw_fails(
        seed in any::<u64>(),
        plies in 0usize..60,
        values in prop::collection::vec(-MATE..=MATE, 600),
        rotate in any::<usize>(),
        flaw in 0u8..3,
        at in any::<usize>(),
    ) {
        let pos = position(seed, plies);
        let legal = pos.legal_moves();
        prop_assume!(!legal.is_empty());
        let mut moves: Vec<MoveValue> = legal
            .iter()
            .zip(&values)
            .map(|(m, v)| MoveValue { usi: m.to_string(), value: *v, depth: 1 })
            .collect();
        let n = moves.len();
        moves.rotate_left(rotate % n);
        let thought = thought_from_result(&pos, &moves, "", 0).map_err(TestCaseError::fail)?;
        prop_assert_eq!(thought.values.len(), n);
        let i = at % n;
        match flaw {
            0 => { moves.remove(i); }
            1 => { let d = moves[i].clone(); moves.push(d); }
            _ => moves[i].value = MATE + 1,
        }
        prop_assert!(thought_from_result(&pos, &moves, "", 0).is_err());
    }
}
