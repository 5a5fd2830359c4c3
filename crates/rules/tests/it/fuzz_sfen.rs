//! Fuzzing the SFEN and `position` command parsers with proptest: no input may
//! panic, and whatever parses must behave (legal moves, do/undo, keys, printing).
//! Seeds: `tests/corpus/sfen.txt` (the cases of issue 16 among them), mutated by
//! random byte edits; plus generated inputs of the SFEN alphabet.
//!
//! Case counts are explicit (see BENCHMARKS.md, "Fuzzing (issue 16)").

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
use stera_rules::{MAX_PLY, Position, RulesError, canonical_sfen};

thread_local! {
    /// Inputs of this test's thread that parsed into a position (the fuzzer must
    /// reach past the parser).
    static PARSED: Cell<usize> = const { Cell::new(0) };
}

const CORPUS: &str = include_str!("../corpus/sfen.txt");

fn seeds() -> Vec<&'static str> {
    CORPUS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect()
}

/// The fuzz target: parse `text` every way; exercise what parses.
fn target(text: &str) {
    let parsed = Position::from_sfen(text);
    let canonical = canonical_sfen(text);
    assert_eq!(
        parsed.is_ok(),
        canonical.is_ok(),
        "`{text}`: {parsed:?} / {canonical:?}"
    );
    if let Ok(pos) = parsed {
        assert_eq!(canonical.as_deref().ok(), Some(pos.to_sfen().as_str()));
        exercise(pos);
    }
    match Position::from_position_command(text) {
        Ok(pos) => exercise(pos),
        Err(e) => check_error(&e),
    }
}

fn check_error(e: &RulesError) {
    // Quoted text is cut: an error never grows with its input.
    assert!(e.to_string().len() < 2_000, "{e}");
}

/// What a legal position must support without panicking.
fn exercise(mut pos: Position) {
    PARSED.set(PARSED.get() + 1);
    assert!(pos.ply() >= 1 && pos.ply() <= MAX_PLY);
    let back = Position::from_sfen(&pos.to_sfen()).expect("printed SFEN parses");
    assert_eq!(back.key(), pos.key());
    let moves = pos.legal_moves();
    let _ = (pos.in_check(), pos.is_checkmate(), pos.game_repetition());
    for &mv in moves.iter().take(40) {
        let predicted = pos.key_after(mv);
        let _ = pos.gives_check(mv);
        pos.do_move(mv);
        assert_eq!(pos.key(), predicted);
        assert_eq!(pos.key(), pos.compute_key());
        let _ = pos.legal_move_count();
        pos.undo_move().expect("undo");
    }
}

/// Applies byte edits to a seed (insert, delete, replace, duplicate a run).
fn mutate(seed: &str, edits: &[(u8, usize, u8)]) -> Vec<u8> {
    let mut bytes = seed.as_bytes().to_vec();
    for &(op, at, byte) in edits {
        let at = if bytes.is_empty() {
            0
        } else {
            at % (bytes.len() + 1)
        };
        match op % 4 {
            0 => bytes.insert(at, byte),
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 if at < bytes.len() => bytes[at] = byte,
            _ => {
                let end = (at + usize::from(byte % 16)).min(bytes.len());
                let run = bytes[at..end].to_vec();
                bytes.splice(at..at, run);
            }
        }
    }
    bytes
}

/// Bytes that matter to the parsers, most of the time; any byte sometimes.
fn sfen_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        8 => proptest::sample::select(b"plnsbrgkPLNSBRGK+/123456789 bw-0".to_vec()),
        1 => any::<u8>(),
    ]
}

#[test]
fn corpus_does_not_panic() {
    for seed in seeds() {
        target(seed);
    }
}

/// The cases of issue 16 that do not fit on a line of the corpus.
#[test]
fn huge_generated_inputs_do_not_panic() {
    let shuffle = ["5i4h", "5a4b", "4h5i", "4b5a"];
    for count in [65_534, 65_535, 65_536, 100_000] {
        let mut command = String::from("startpos moves");
        for i in 0..count {
            command.push(' ');
            command.push_str(shuffle[i % 4]);
        }
        let err = Position::from_position_command(&command).unwrap_err();
        assert!(matches!(err, RulesError::PlyLimit { .. }), "{err}");
        check_error(&err);
    }
    target(&"9/".repeat(100_000));
    target(&format!(
        "4k4/9/9/9/9/9/9/9/4K4 b {} 1",
        "9P".repeat(10_000)
    ));
    target(&format!("4k4/9/9/9/9/9/9/9/4K4 b - {}", "9".repeat(10_000)));
    target(&"+".repeat(100_000));
}

/// Cases per fuzz target (`STERA_FUZZ_CASES` overrides it for longer runs).
fn cases() -> u32 {
    std::env::var("STERA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40_000)
}

/// Runs `cases` inputs of `strategy` through `test`; returns how many of them
/// parsed into a position.
fn fuzz<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value)) -> usize
where
    S::Value: std::fmt::Debug,
{
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let before = PARSED.get();
    // Deterministic, so that a run is reproducible and its figures are stable.
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner
        .run(&strategy, |value| {
            test(value);
            Ok(())
        })
        .unwrap();
    PARSED.get() - before
}

#[test]
fn mutated_seeds_do_not_panic() {
    let edits = proptest::collection::vec((any::<u8>(), any::<usize>(), sfen_byte()), 1..4);
    let strategy = (proptest::sample::select(seeds()), edits);
    let parsed = fuzz(cases(), strategy, |(seed, edits)| {
        target(&String::from_utf8_lossy(&mutate(seed, &edits)));
    });
    eprintln!(
        "fuzz_sfen mutated: {} cases, {parsed} parsed into positions",
        cases()
    );
    assert!(parsed > 300, "only {parsed} inputs parsed");
}

/// Well-formed SFENs of random placements (kings, any pieces, hands, side, ply):
/// most break a rule of a legal position, many do not.
#[test]
fn random_placements_do_not_panic() {
    let piece = prop_oneof![
        12 => Just(""),
        1 => proptest::sample::select(vec![
            "P", "p", "L", "l", "N", "n", "S", "s", "G", "g", "B", "b", "R", "r", "+P", "+p",
            "+B", "+b", "+R", "+r", "+S", "+n", "K", "k",
        ]),
    ];
    let strategy = (
        (proptest::collection::vec(piece, 81), 0..81usize, 0..81usize),
        proptest::collection::vec(prop_oneof![4 => Just(0u32), 1 => 1u32..4], 14),
        any::<bool>(),
        prop_oneof![
            1u64..300,
            Just(u64::from(MAX_PLY)),
            Just(65_535u64),
            any::<u64>()
        ],
    );
    let parsed = fuzz(
        cases(),
        strategy,
        |((mut cells, black_king, white_king), hand, black, ply)| {
            cells[black_king] = "K";
            cells[white_king] = "k";
            let mut board = String::new();
            for rank in 0..9 {
                let mut empty = 0;
                for file in 0..9 {
                    match cells[rank * 9 + file] {
                        "" => empty += 1,
                        p => {
                            if empty > 0 {
                                board.push_str(&empty.to_string());
                                empty = 0;
                            }
                            board.push_str(p);
                        }
                    }
                }
                if empty > 0 {
                    board.push_str(&empty.to_string());
                }
                if rank < 8 {
                    board.push('/');
                }
            }
            let mut hands = String::new();
            for (i, &n) in hand.iter().enumerate() {
                let letter = b"RBGSNLPrbgsnlp"[i] as char;
                match n {
                    0 => {}
                    1 => hands.push(letter),
                    n => hands.push_str(&format!("{n}{letter}")),
                }
            }
            if hands.is_empty() {
                hands.push('-');
            }
            let side = if black { 'b' } else { 'w' };
            target(&format!("{board} {side} {hands} {ply}"));
        },
    );
    eprintln!(
        "fuzz_sfen placements: {} cases, {parsed} parsed into positions",
        cases()
    );
    assert!(parsed > 1_000, "only {parsed} inputs parsed");
}

#[test]
fn generated_sfens_do_not_panic() {
    let strategy = (
        proptest::collection::vec(sfen_byte(), 0..120),
        proptest::sample::select(vec!["b", "w", "x", ""]),
        "[-0-9RBGSNLPrbgsnlp]{0,12}",
        proptest::option::of(any::<u32>()),
    );
    let parsed = fuzz(cases(), strategy, |(board, side, hand, ply)| {
        let board = String::from_utf8_lossy(&board).replace(' ', "");
        let ply = ply.map_or_else(String::new, |p| p.to_string());
        target(&format!("{board} {side} {hand} {ply}"));
        target(&format!("sfen {board} {side} {hand} {ply} moves 5i4h 5a4b"));
    });
    eprintln!(
        "fuzz_sfen generated: {} cases, {parsed} parsed into positions",
        cases()
    );
}
