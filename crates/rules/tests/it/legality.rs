//! The one definition of a legal position (`stera_rules::legality`), at every
//! entry point: `Position::from_sfen`, `Position::from_position_command` and
//! `canonical_sfen`.

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::{MAX_PLY, Position, PositionRule, RulesError, canonical_sfen};

/// The rule every entry point names for `sfen`, or `None` if all accept it.
fn rule_of(sfen: &str) -> Option<PositionRule> {
    let rule = |e: RulesError| match e {
        RulesError::IllegalPosition { rule, .. } => rule,
        other => panic!("`{sfen}`: not a rule error: {other}"),
    };
    let from_sfen = Position::from_sfen(sfen).err().map(rule);
    let from_command = Position::from_position_command(&format!("sfen {sfen}"))
        .err()
        .map(rule);
    let canonical = canonical_sfen(sfen).err().map(rule);
    assert_eq!(from_sfen, from_command, "`{sfen}`");
    assert_eq!(from_sfen, canonical, "`{sfen}`");
    from_sfen
}

#[test]
fn king_capturable_position_is_refused_everywhere() {
    let sfen = "4k4/4R4/9/9/9/9/9/9/4K4 b - 1";
    assert_eq!(rule_of(sfen), Some(PositionRule::KingCapturable));
    let err = Position::from_position_command(&format!("sfen {sfen} moves 5b5a")).unwrap_err();
    assert!(
        err.to_string().contains("capture the opponent's king"),
        "{err}"
    );
    // White to move is in check, which is legal; so is the mate.
    assert_eq!(rule_of("4k4/4R4/9/9/9/9/9/9/4K4 w - 1"), None);
    let mated = Position::from_sfen("4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1").unwrap();
    assert!(mated.is_checkmate());
}

#[test]
fn each_rule_is_named() {
    let cases: [(&str, PositionRule); 11] = [
        (
            "4k4/9/9/9/9/9/9/9/4K4 b - 10001",
            PositionRule::Ply { ply: 10_001 },
        ),
        (
            "4k4/9/9/9/9/9/9/9/4K4 b - 65535",
            PositionRule::Ply { ply: 65_535 },
        ),
        (
            "4k4/9/9/9/9/9/9/9/4K4 b - 99999999999",
            PositionRule::Ply {
                ply: 99_999_999_999,
            },
        ),
        (
            "4k4/9/9/9/9/9/9/9/9 b - 1",
            PositionRule::KingCount { black: 0, white: 1 },
        ),
        (
            "4k4/9/9/9/9/9/9/9/3KK4 b - 1",
            PositionRule::KingCount { black: 2, white: 1 },
        ),
        (
            "4k4/9/9/9/9/9/9/9/4K4 b 3B 1",
            PositionRule::PieceCount {
                piece: "bishops",
                count: 3,
                limit: 2,
            },
        ),
        (
            "P3k4/9/9/9/9/9/9/9/4K4 b - 1",
            PositionRule::DeadPiece {
                piece: 'P',
                square: "9a".into(),
            },
        ),
        (
            "4k4/N8/9/9/9/9/9/9/4K4 b - 1",
            PositionRule::DeadPiece {
                piece: 'N',
                square: "9b".into(),
            },
        ),
        (
            "4k4/9/9/9/9/9/9/9/4K3l w - 1",
            PositionRule::DeadPiece {
                piece: 'l',
                square: "1i".into(),
            },
        ),
        (
            "4k4/9/4P4/9/9/9/4P4/9/4K4 b - 1",
            PositionRule::Nifu {
                color: stera_rules::Color::Black,
                file: 5,
            },
        ),
        (
            "4k4/9/9/9/9/9/9/9/4K4 w 19p 1",
            PositionRule::PieceCount {
                piece: "pawns",
                count: 19,
                limit: 18,
            },
        ),
    ];
    for (sfen, rule) in cases {
        assert_eq!(rule_of(sfen), Some(rule), "`{sfen}`");
    }
    // The limits themselves and their neighbours are legal.
    for sfen in [
        "4k4/9/9/9/9/9/9/9/4K4 b - 10000",
        "4k4/9/9/9/9/9/9/9/4K4 b 2B 1",
        "+P3k4/9/9/9/9/9/9/9/4K4 b - 1",
        "4k4/9/4P4/9/9/9/4+P4/9/4K4 b - 1",
        "4k4/9/4p4/9/9/9/4P4/9/4K4 b - 1",
        "4k4/n8/9/9/9/9/9/9/4K4 b - 1",
        "4k4/9/9/9/9/9/9/N8/4K4 w - 1",
    ] {
        assert_eq!(rule_of(sfen), None, "`{sfen}`");
    }
}

/// Flipping the side to move of a real position makes it illegal exactly when the
/// side that was to move is in check (the backend's check detection is the oracle).
#[test]
fn king_capture_rule_agrees_with_check_detection_on_real_games() {
    let (mut checks, mut total) = (0, 0);
    for pos in common::random_positions(21, 600, 250) {
        let sfen = pos.to_sfen();
        let mut parts: Vec<&str> = sfen.split(' ').collect();
        parts[1] = if parts[1] == "b" { "w" } else { "b" };
        let flipped = parts.join(" ");
        let expected = pos.in_check().then_some(PositionRule::KingCapturable);
        assert_eq!(rule_of(&flipped), expected, "`{flipped}` from `{sfen}`");
        checks += usize::from(pos.in_check());
        total += 1;
    }
    assert!(checks > 10 && total == 600, "{checks} checks of {total}");
}

/// On random placements of every kind of piece (sliders blocked and not), the rule
/// agrees with the backend's check detection of the side not to move.
#[test]
fn king_capture_rule_agrees_with_backend_on_random_boards() {
    let mut rng = StdRng::seed_from_u64(5);
    let letters = ['G', 'S', 'B', 'R', '+', 'L', 'N', 'P'];
    let (mut capturable, mut legal) = (0, 0);
    for _ in 0..20_000 {
        let mut cells = [const { None::<String> }; 81];
        let mut free: Vec<usize> = (0..81).collect();
        let mut take = |rng: &mut StdRng| free.swap_remove(rng.random_range(0..free.len()));
        cells[take(&mut rng)] = Some("K".into());
        cells[take(&mut rng)] = Some("k".into());
        for _ in 0..rng.random_range(1..6) {
            let mut piece = letters[rng.random_range(0..letters.len())].to_string();
            if piece == "+" {
                piece.push(['B', 'R', 'S', 'P'][rng.random_range(0..4)]);
            }
            if rng.random_bool(0.5) {
                piece = piece.to_ascii_lowercase();
            }
            cells[take(&mut rng)] = Some(piece);
        }
        let side = if rng.random_bool(0.5) { "b" } else { "w" };
        let board = board_text(&cells);
        let sfen = format!("{board} {side} - 1");
        match canonical_sfen(&sfen) {
            Ok(_) => {
                legal += 1;
                assert!(!opponent_in_check(&board, side), "`{sfen}` accepted");
            }
            Err(RulesError::IllegalPosition {
                rule: PositionRule::KingCapturable,
                ..
            }) => {
                capturable += 1;
                assert!(opponent_in_check(&board, side), "`{sfen}` refused");
            }
            // Dead pieces and nifu: the backend's answer does not apply.
            Err(_) => {}
        }
    }
    assert!(capturable > 1000 && legal > 1000, "{capturable} {legal}");
}

/// The backend's answer: is the side not to move in check?
fn opponent_in_check(board: &str, side: &str) -> bool {
    let other = if side == "b" { "w" } else { "b" };
    let pos = stera_rules::backend::board::position_from_sfen(&format!("{board} {other} - 1"))
        .expect("backend parses the board");
    pos.is_in_check()
}

fn board_text(cells: &[Option<String>; 81]) -> String {
    let mut out = String::new();
    for rank in 0..9 {
        let mut empty = 0;
        for file in (0..9).rev() {
            match &cells[file * 9 + rank] {
                None => empty += 1,
                Some(p) => {
                    if empty > 0 {
                        out.push_str(&empty.to_string());
                        empty = 0;
                    }
                    out.push_str(p);
                }
            }
        }
        if empty > 0 {
            out.push_str(&empty.to_string());
        }
        if rank < 8 {
            out.push('/');
        }
    }
    out
}

/// A king shuffle repeated: `count` legal moves from the start position.
fn shuffle(count: usize) -> String {
    let cycle = ["5i4h", "5a4b", "4h5i", "4b5a"];
    let mut command = String::from("startpos moves");
    for i in 0..count {
        command.push(' ');
        command.push_str(cycle[i % 4]);
    }
    command
}

#[test]
fn move_lists_stop_at_the_ply_limit() {
    let limit = usize::try_from(MAX_PLY).unwrap();
    let at_limit = Position::from_position_command(&shuffle(limit - 1)).unwrap();
    assert_eq!(at_limit.ply(), MAX_PLY);
    for count in [limit, 65_535, 70_000] {
        let err = Position::from_position_command(&shuffle(count)).unwrap_err();
        assert_eq!(err, RulesError::PlyLimit { index: limit }, "{count} moves");
    }
    // From a later ply the room is smaller.
    let err =
        Position::from_position_command("sfen 4k4/9/9/9/9/9/9/9/4K4 b - 9999 moves 5i4h 5a4b")
            .unwrap_err();
    assert_eq!(err, RulesError::PlyLimit { index: 2 });
}

#[test]
fn huge_bad_text_is_quoted_by_a_prefix() {
    let junk = "x".repeat(1 << 20);
    for err in [
        Position::from_sfen(&junk).unwrap_err(),
        Position::from_sfen(&format!("4k4/9/9/9/9/9/9/9/4K4 b - 1 {junk}")).unwrap_err(),
        Position::from_position_command(&junk).unwrap_err(),
        Position::from_position_command(&format!("startpos moves {junk}")).unwrap_err(),
        stera_rules::Move::from_usi(&junk).unwrap_err(),
    ] {
        let text = err.to_string();
        assert!(text.len() < 1200, "{} bytes: {}", text.len(), &text[..100]);
        assert!(text.contains('…'), "{text}");
    }
}
