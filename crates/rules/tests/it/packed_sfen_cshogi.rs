//! PackedSfen against an independent implementation: cshogi's
//! `Board.to_psfen()` / `set_psfen()` (from PyPI), on thousands of positions
//! from random games (captures, hands, promotions, both sides to move) and on
//! positions with pieces taken away (the piece box).
//!
//! Needs `python3` with `cshogi` and `numpy`; without them this test fails
//! (it never passes silently).

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::{Position, packed_sfen};

/// Reads `<sfen>\t<hex>` lines; prints cshogi's PackedSfen of the SFEN and the
/// SFEN cshogi reads from the hex bytes (ours), tab-separated.
const ORACLE: &str = r#"
import sys
import numpy as np
import cshogi
board = cshogi.Board()
other = cshogi.Board()
out = []
for line in sys.stdin:
    sfen, ours = line.rstrip("\n").split("\t")
    board.set_sfen(sfen)
    packed = np.zeros(32, dtype=np.uint8)
    board.to_psfen(packed)
    other.set_psfen(np.frombuffer(bytes.fromhex(ours), dtype=np.uint8).copy())
    out.append(packed.tobytes().hex() + "\t" + other.sfen())
sys.stdout.write("\n".join(out) + "\n")
"#;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> [u8; 32] {
    assert_eq!(text.len(), 64, "not 32 bytes of hex: `{text}`");
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

/// The SFEN of `pos` with one random piece other than a king taken off the board
/// or out of a hand, if the result is a legal position (taking a piece away can
/// uncover a check of the side not to move).
fn without_a_piece(pos: &Position, rng: &mut StdRng) -> Option<Position> {
    let sfen = pos.to_sfen();
    let fields: Vec<&str> = sfen.split(' ').collect();
    // The board as 81 cells, rank by rank, each "" or a piece ("p", "+R", ...).
    let mut cells: Vec<String> = Vec::new();
    let mut promoted = false;
    for c in fields[0].chars() {
        match c {
            '/' => {}
            '+' => promoted = true,
            '1'..='9' => {
                cells.extend((0..c.to_digit(10).unwrap()).map(|_| String::new()));
            }
            _ => {
                cells.push(if promoted {
                    format!("+{c}")
                } else {
                    c.to_string()
                });
                promoted = false;
            }
        }
    }
    assert_eq!(cells.len(), 81);
    let mut hand: Vec<char> = Vec::new();
    let mut count = 0;
    for c in fields[2].chars().filter(|&c| c != '-') {
        if let Some(d) = c.to_digit(10) {
            count = count * 10 + d;
        } else {
            hand.extend(std::iter::repeat_n(c, count.max(1) as usize));
            count = 0;
        }
    }
    let board_pieces: Vec<usize> = (0..81)
        .filter(|&i| !cells[i].is_empty() && !cells[i].eq_ignore_ascii_case("k"))
        .collect();
    let total = board_pieces.len() + hand.len();
    if total == 0 {
        return None;
    }
    let pick = rng.random_range(0..total);
    if pick < board_pieces.len() {
        cells[board_pieces[pick]].clear();
    } else {
        hand.remove(pick - board_pieces.len());
    }
    let mut board = String::new();
    for rank in 0..9 {
        let mut empty = 0;
        for cell in &cells[rank * 9..rank * 9 + 9] {
            if cell.is_empty() {
                empty += 1;
                continue;
            }
            if empty > 0 {
                board.push_str(&empty.to_string());
                empty = 0;
            }
            board.push_str(cell);
        }
        if empty > 0 {
            board.push_str(&empty.to_string());
        }
        if rank < 8 {
            board.push('/');
        }
    }
    let hand: String = if hand.is_empty() {
        "-".into()
    } else {
        hand.into_iter().collect()
    };
    Position::from_sfen(&format!("{board} {} {hand} {}", fields[1], fields[3])).ok()
}

/// Pieces on the board and in hands (40 for the full set).
fn piece_count(pos: &Position) -> u32 {
    let sfen = pos.to_sfen();
    let fields: Vec<&str> = sfen.split(' ').collect();
    let on_board = fields[0].chars().filter(char::is_ascii_alphabetic).count() as u32;
    let mut in_hand = 0;
    let mut count = 0;
    for c in fields[2].chars().filter(|&c| c != '-') {
        match c.to_digit(10) {
            Some(d) => count = count * 10 + d,
            None => {
                in_hand += count.max(1);
                count = 0;
            }
        }
    }
    on_board + in_hand
}

fn test_positions() -> Vec<Position> {
    // Short and long games: long ones are full of captures, hands and promotions.
    let mut positions = common::random_positions(15, 2000, 80);
    positions.extend(common::random_positions(16, 2000, 400));
    let mut rng = StdRng::seed_from_u64(17);
    // Pieces in the box: one to many pieces taken away.
    for i in 0..1500 {
        let mut pos = positions[i].clone();
        for _ in 0..rng.random_range(1..=30) {
            if let Some(fewer) = without_a_piece(&pos, &mut rng) {
                pos = fewer;
            }
        }
        positions.push(pos);
    }
    for sfen in [
        "4k4/9/9/9/9/9/9/9/4K4 b - 1",
        "4k4/9/9/9/9/9/9/9/4K4 w 2R2B4G4S4N4L18P 2",
        "4k4/9/9/9/9/9/9/9/4K4 b 2r2b4g4s4n4l18p 3",
        "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
        "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1",
        "+R+B+S+N+L4/9/4k4/9/9/9/9/9/4K4 b - 1",
    ] {
        positions.push(Position::from_sfen(sfen).unwrap());
    }
    positions
}

#[test]
fn packed_sfen_matches_cshogi_both_ways() {
    let positions = test_positions();
    let with_hands = positions
        .iter()
        .filter(|p| !p.to_sfen().contains(" - "))
        .count();
    let white = positions
        .iter()
        .filter(|p| p.to_sfen().contains(" w "))
        .count();
    let promoted = positions
        .iter()
        .filter(|p| p.to_sfen().contains('+'))
        .count();
    let boxed = positions.iter().filter(|p| piece_count(p) < 40).count();
    assert!(
        with_hands > 1000 && white > 1000 && promoted > 500 && boxed > 1000,
        "the positions should cover hands ({with_hands}), white to move ({white}), promoted pieces ({promoted}) and the piece box ({boxed})"
    );

    let ours: Vec<[u8; 32]> = positions.iter().map(Position::to_packed_sfen).collect();
    let input: String = positions
        .iter()
        .zip(&ours)
        .map(|(p, bytes)| format!("{}\t{}\n", p.to_sfen(), hex(bytes)))
        .collect();
    let mut child = Command::new(common::python3())
        .args(["-c", ORACLE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 with cshogi is required for this test (scripts/install-deps.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the cshogi oracle failed (python3 with cshogi and numpy is required): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), positions.len());

    for ((pos, bytes), line) in positions.iter().zip(&ours).zip(lines) {
        let sfen = pos.to_sfen();
        let (theirs, their_sfen) = line.split_once('\t').unwrap();
        // The same bytes.
        assert_eq!(
            hex(bytes),
            theirs,
            "PackedSfen differs from cshogi's for {sfen}"
        );
        // Our unpacking of cshogi's bytes is the position.
        let back = packed_sfen::unpack(&unhex(theirs), pos.ply()).unwrap();
        assert_eq!(back.to_sfen(), sfen);
        assert_eq!(back.key(), pos.key());
        // cshogi's unpacking of our bytes is the position (cshogi sets no ply).
        let (their_board, _) = their_sfen.rsplit_once(' ').unwrap();
        let canonical =
            stera_rules::canonical_sfen(&format!("{their_board} {}", pos.ply())).unwrap();
        assert_eq!(
            canonical, sfen,
            "cshogi reads our bytes of {sfen} as {their_sfen}"
        );
        // Packing the text gives the same bytes as packing the position.
        assert_eq!(packed_sfen::pack_sfen(&sfen).unwrap(), (*bytes, pos.ply()));
    }
}
