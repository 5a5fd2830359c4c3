//! Perft against published values and special-rule positions.

use stera_rules::Position;

fn perft(sfen: &str, depth: u8) -> u64 {
    Position::from_position_command(sfen).unwrap().perft(depth)
}

#[test]
fn startpos_published_values() {
    let mut pos = Position::startpos();
    let got: Vec<u64> = (1..=5).map(|d| pos.perft(d)).collect();
    assert_eq!(got, [30, 900, 25_470, 719_731, 19_861_490]);
}

/// The "matsuri" position, the classic move-generator torture test.
#[test]
fn matsuri_published_values() {
    let sfen = "sfen l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1";
    assert_eq!(perft(sfen, 1), 207);
    assert_eq!(perft(sfen, 2), 28_684);
    assert_eq!(perft(sfen, 3), 4_809_015);
}

/// The position with the most legal moves in shogi.
#[test]
fn max_legal_moves_position() {
    let pos = Position::from_sfen("R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1").unwrap();
    assert_eq!(pos.legal_moves().len(), stera_rules::MAX_LEGAL_MOVES);
    assert_eq!(pos.legal_move_count(), 593);
}

fn usi_moves(sfen: &str) -> Vec<String> {
    Position::from_sfen(sfen)
        .unwrap()
        .legal_moves()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Dropping a pawn to give mate is illegal; dropping it elsewhere, or with check but
/// no mate, is legal.
#[test]
fn pawn_drop_mate_is_illegal() {
    // White king 1a with its own lance on 2a; the black gold on 2c guards 1b and 2b,
    // so a pawn dropped on 1b would mate.
    let mate = "7lk/9/7G1/9/9/9/9/9/K8 b P 1";
    let moves = usi_moves(mate);
    assert!(
        !moves.contains(&"P*1b".to_owned()),
        "pawn-drop mate generated: {moves:?}"
    );
    assert!(moves.contains(&"P*1c".to_owned()));
    // Remove the gold: the drop checks but the king can take the pawn.
    let not_mate = "7lk/9/9/9/9/9/9/9/K8 b P 1";
    assert!(usi_moves(not_mate).contains(&"P*1b".to_owned()));
}

/// A pawn may not be dropped on a file that already holds an unpromoted own pawn.
#[test]
fn nifu_is_illegal() {
    let moves = usi_moves("4k4/9/9/9/9/9/4P4/9/4K4 b P 1");
    assert!(!moves.iter().any(|m| m.starts_with("P*5")), "{moves:?}");
    assert!(moves.contains(&"P*4e".to_owned()));
    // A promoted pawn (tokin) on the file does not count.
    let moves = usi_moves("4k4/9/9/9/9/9/4+P4/9/4K4 b P 1");
    assert!(moves.contains(&"P*5e".to_owned()));
}

/// Pieces that could never move again must promote; elsewhere promotion is optional.
#[test]
fn forced_and_optional_promotion() {
    // Black pawn 1b -> 1a must promote; pawn 3d -> 3c may promote or not.
    let moves = usi_moves("k8/8P/9/6P2/9/9/9/9/4K4 b - 1");
    assert!(moves.contains(&"1b1a+".to_owned()));
    assert!(!moves.contains(&"1b1a".to_owned()));
    assert!(moves.contains(&"3d3c+".to_owned()) && moves.contains(&"3d3c".to_owned()));
    // Knight to the second rank must promote, lance to the first rank must promote.
    let moves = usi_moves("4k4/9/9/7N1/9/9/9/9/L3K4 b - 1");
    assert!(moves.contains(&"2d1b+".to_owned()) && !moves.contains(&"2d1b".to_owned()));
    assert!(moves.contains(&"9i9b+".to_owned()) && moves.contains(&"9i9b".to_owned()));
    assert!(moves.contains(&"9i9a+".to_owned()) && !moves.contains(&"9i9a".to_owned()));
}

/// Pawns and lances cannot be dropped on the last rank, knights on the last two.
#[test]
fn drop_rank_limits() {
    let moves = usi_moves("k8/9/9/9/9/9/9/9/4K4 b PLN 1");
    for (piece, banned) in [('P', "a"), ('L', "a"), ('N', "ab")] {
        for m in moves.iter().filter(|m| m.starts_with(&format!("{piece}*"))) {
            let rank = &m[3..4];
            assert!(!banned.contains(rank), "{m} drops on a forbidden rank");
        }
    }
    assert!(moves.contains(&"N*5c".to_owned()) && moves.contains(&"L*5b".to_owned()));
    // Same limits mirrored for white.
    let moves = usi_moves("k8/9/9/9/9/9/9/9/4K4 w pln 1");
    assert!(
        !moves.iter().any(|m| m.ends_with('i') && m.contains('*')),
        "{moves:?}"
    );
    assert!(!moves.contains(&"N*5h".to_owned()) && moves.contains(&"N*5g".to_owned()));
}

#[test]
fn divide_sums_to_perft() {
    let mut pos = Position::from_position_command("startpos moves 7g7f 3c3d 8h2b+").unwrap();
    let divide = pos.perft_divide(3);
    let total: u64 = divide.iter().map(|(_, n)| n).sum();
    assert_eq!(total, pos.perft(3));
    assert_eq!(divide.len(), pos.legal_moves().len());
}
