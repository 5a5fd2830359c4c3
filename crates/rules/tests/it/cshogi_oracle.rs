//! Move generation against an independent implementation (cshogi, from PyPI) on
//! positions from random games: the same legal move sets and the same perft(2).
//!
//! Needs `python3` with `cshogi`. Without them the test says so and passes, unless
//! `STERA_REQUIRE_ORACLE=1` (set by CI), where it fails.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn legal_moves_and_perft_match_cshogi() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracle/cshogi_moves.py");
    let required = std::env::var("STERA_REQUIRE_ORACLE").is_ok_and(|v| v == "1");
    let mut positions = common::random_positions(2024, 300, 160);
    // Positions rich in drops, promotions and checks.
    for sfen in [
        "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
        "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1",
        "7lk/9/7G1/9/9/9/9/9/K8 b P 1",
        "8k/9/9/9/7R1/9/9/9/K8 b - 1",
    ] {
        positions.push(stera_rules::Position::from_sfen(sfen).unwrap());
    }
    let child = Command::new(common::python3())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(!required, "python3 is required for the cshogi oracle");
        eprintln!("skipping: python3 not found");
        return;
    };
    let input: String = positions.iter().map(|p| p.to_sfen() + "\n").collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!required, "cshogi oracle failed: {err}");
        eprintln!("skipping: cshogi oracle unavailable: {err}");
        return;
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), positions.len());
    for (pos, line) in positions.iter().zip(lines) {
        let mut fields = line.split_whitespace();
        let expected_perft: u64 = fields.next().unwrap().parse().unwrap();
        let expected_moves: Vec<String> = fields.map(str::to_owned).collect();
        let mut ours: Vec<String> = pos.legal_moves().iter().map(ToString::to_string).collect();
        ours.sort();
        assert_eq!(
            ours,
            expected_moves,
            "legal moves differ in {}",
            pos.to_sfen()
        );
        assert_eq!(
            pos.clone().perft(2),
            expected_perft,
            "perft(2) differs in {}",
            pos.to_sfen()
        );
    }
}
