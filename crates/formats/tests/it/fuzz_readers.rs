//! Fuzzing the readers with proptest: the DB2016 reader and the kifu readers (CSA,
//! KIF, USI lines, SFEN lines) must not panic on any input, and what they accept
//! must be usable (entries parse, games replay).
//!
//! Seeds: `tests/corpus/` (the cases of issue 16: king-capturable positions in
//! every format, ply 65535, lines without newline, bad UTF-8, Shift_JIS mixes),
//! mutated by byte edits and crossovers; plus generated inputs too large to check in.
//! Case counts are explicit (see BENCHMARKS.md, "Fuzzing (issue 16)").

use std::cell::Cell;
use std::path::PathBuf;

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
use stera_formats::db2016::{Db2016Reader, illegal_moves};
use stera_formats::kifu::{KifuFormat, read_kifu_bytes};

thread_local! {
    /// Entries or games accepted in this thread (the fuzzer must get past the parsers).
    static ACCEPTED: Cell<usize> = const { Cell::new(0) };
}

fn corpus(kind: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(kind);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    out.sort();
    assert!(out.len() >= 7, "{kind}: {} seeds", out.len());
    out
}

/// The DB2016 target.
fn db2016(bytes: &[u8]) {
    for check in [false, true] {
        for item in Db2016Reader::new(bytes).with_legality_check(check) {
            match item {
                Ok(entry) => {
                    ACCEPTED.set(ACCEPTED.get() + 1);
                    entry.position().expect("an accepted entry parses");
                    let bad = illegal_moves(&entry).expect("an accepted entry parses");
                    assert!(!check || bad.is_empty(), "{bad:?}");
                }
                Err(e) => assert!(e.to_string().len() < 2_000, "{e}"),
            }
        }
    }
}

/// The kifu target: every format, and detection.
fn kifu(bytes: &[u8], name: &str) {
    let formats = [
        None,
        Some(KifuFormat::UsiPositions),
        Some(KifuFormat::SfenLines),
        Some(KifuFormat::Csa),
        Some(KifuFormat::Kif),
    ];
    for format in formats {
        let Ok(report) = read_kifu_bytes(bytes, name, format) else {
            continue;
        };
        for game in &report.games {
            ACCEPTED.set(ACCEPTED.get() + 1);
            game.for_each_position(|p| {
                let _ = p.legal_move_count();
            })
            .expect("an accepted game replays");
        }
        for e in &report.summary.errors {
            assert!(e.to_string().len() < 2_000, "{e}");
        }
    }
}

/// Byte edits and a crossover with another seed.
fn mutate(seed: &[u8], other: &[u8], edits: &[(u8, usize, u8)]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for &(op, at, byte) in edits {
        let at = at % (bytes.len() + 1);
        match op % 5 {
            0 => bytes.insert(at, byte),
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 if at < bytes.len() => bytes[at] = byte,
            3 => {
                let end = (at + usize::from(byte % 32)).min(bytes.len());
                let run = bytes[at..end].to_vec();
                bytes.splice(at..at, run);
            }
            _ => {
                let from = usize::from(byte) * 7 % (other.len() + 1);
                let end = (from + 40).min(other.len());
                bytes.splice(at..at, other[from..end].iter().copied());
            }
        }
    }
    bytes
}

fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        6 => proptest::sample::select(b"\n\r +-*/0123456789 sfennonebwPLNSBRGKplnsbrgk%T,".to_vec()),
        1 => any::<u8>(),
    ]
}

/// Cases per fuzz target (`STERA_FUZZ_CASES` overrides it for longer runs).
fn cases() -> u32 {
    std::env::var("STERA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6_000)
}

/// Runs `cases` mutations of the seeds through `target`; returns how many entries
/// or games were accepted.
fn fuzz(seeds: Vec<(String, Vec<u8>)>, target: impl Fn(&[u8], &str)) -> usize {
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let n = seeds.len();
    let strategy = (
        0..n,
        0..n,
        proptest::collection::vec((any::<u8>(), any::<usize>(), interesting_byte()), 1..5),
    );
    ACCEPTED.set(0);
    // Deterministic, so that a run is reproducible and its figures are stable.
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner
        .run(&strategy, |(seed, other, edits)| {
            let (name, bytes) = &seeds[seed];
            target(&mutate(bytes, &seeds[other].1, &edits), name);
            Ok(())
        })
        .unwrap();
    ACCEPTED.get()
}

#[test]
fn db2016_corpus_does_not_panic() {
    for (_, bytes) in corpus("db2016") {
        db2016(&bytes);
    }
}

#[test]
fn kifu_corpus_does_not_panic() {
    for (name, bytes) in corpus("kifu") {
        kifu(&bytes, &name);
    }
}

#[test]
fn db2016_mutations_do_not_panic() {
    let accepted = fuzz(corpus("db2016"), |bytes, _| db2016(bytes));
    eprintln!(
        "fuzz db2016: {} cases, {accepted} entries accepted",
        cases()
    );
    assert!(accepted > 1_000, "{accepted}");
}

#[test]
fn kifu_mutations_do_not_panic() {
    let accepted = fuzz(corpus("kifu"), kifu);
    eprintln!("fuzz kifu: {} cases, {accepted} games accepted", cases());
    assert!(accepted > 1_000, "{accepted}");
}

/// The cases too large to check in: lines without newline, huge move lists.
#[test]
fn huge_generated_inputs_do_not_panic() {
    let mut endless = b"#YANEURAOU-DB2016 1.00\nsfen ".to_vec();
    endless.extend(std::iter::repeat_n(b'9', 3 << 20));
    db2016(&endless);
    let mut moves = String::from("startpos moves");
    for i in 0..70_000 {
        moves.push_str([" 5i4h", " 5a4b", " 4h5i", " 4b5a"][i % 4]);
    }
    kifu(moves.as_bytes(), "g.usi");
    kifu(&vec![b'+'; 2 << 20], "g.csa");
    kifu(&vec![0xff; 2 << 20], "g.kif");
}
