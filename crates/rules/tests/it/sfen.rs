//! SFEN and position-command parsing, printing and error reporting.

use crate::common;

use stera_rules::{Position, RulesError};

#[test]
fn round_trip_over_random_games() {
    for pos in common::random_positions(3, 500, 200) {
        let sfen = pos.to_sfen();
        let back = Position::from_sfen(&sfen).unwrap();
        assert_eq!(back.to_sfen(), sfen);
        assert_eq!(back.key(), pos.key());
        assert_eq!(back.legal_moves(), pos.legal_moves());
        let with_prefix = Position::from_sfen(&format!("sfen {sfen}")).unwrap();
        assert_eq!(with_prefix.to_sfen(), sfen);
    }
}

#[test]
fn any_hand_order_prints_canonically() {
    let scrambled = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b 2PpSRgN3LbB 1").unwrap();
    assert_eq!(scrambled.to_sfen(), "4k4/9/9/9/9/9/9/9/4K4 b RBSN3L2Pbgp 1");
}

#[test]
fn missing_ply_defaults_to_one() {
    let pos = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b -").unwrap();
    assert_eq!(pos.ply(), 1);
}

#[test]
fn position_commands() {
    let a = Position::from_position_command("position startpos moves 7g7f 3c3d").unwrap();
    let b = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
    let c = Position::from_position_command(
        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2 moves 3c3d",
    )
    .unwrap();
    assert_eq!(a.to_sfen(), b.to_sfen());
    assert_eq!(a.to_sfen(), c.to_sfen());
    assert_eq!(a.ply(), 3);
    assert_eq!(
        Position::from_position_command("startpos")
            .unwrap()
            .to_sfen(),
        stera_rules::STARTPOS_SFEN
    );
    assert_eq!(
        Position::from_position_command("startpos moves")
            .unwrap()
            .ply(),
        1
    );
}

#[test]
fn malformed_sfens_say_what_is_wrong() {
    let cases = [
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1 b - 1",
            "ranks",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSN b - 1",
            "files",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL x - 1",
            "side",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b Q 1",
            "invalid character",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 0",
            "ply",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - x",
            "ply",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b P 1",
            "pawns",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSG1GSNL b - 1",
            "king",
        ),
        (
            "lnsgkgsnl/1r5b1/ppppp+kppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
            "invalid character",
        ),
        ("lnsgkgsnl b", "fields"),
        ("", "fields"),
    ];
    for (sfen, needle) in cases {
        match Position::from_sfen(sfen) {
            Err(RulesError::Sfen { reason, .. }) => {
                assert!(
                    reason.contains(needle),
                    "`{sfen}`: reason `{reason}` lacks `{needle}`"
                );
            }
            // Piece counts and kings are rules of a legal position.
            Err(RulesError::IllegalPosition { rule, .. }) => {
                let reason = rule.to_string();
                assert!(
                    reason.contains(needle),
                    "`{sfen}`: reason `{reason}` lacks `{needle}`"
                );
            }
            other => panic!("`{sfen}` gave {other:?}"),
        }
    }
}

#[test]
fn illegal_moves_in_commands_are_located() {
    let err = Position::from_position_command("startpos moves 7g7f 3c3d 7g7f").unwrap_err();
    assert!(
        matches!(err, RulesError::IllegalMoveInSequence { index: 3, .. }),
        "{err:?}"
    );
    let err = Position::from_position_command("startpos moves 7g7x").unwrap_err();
    assert!(
        matches!(err, RulesError::IllegalMoveInSequence { index: 1, .. }),
        "{err:?}"
    );
    assert!(Position::from_position_command("nonsense").is_err());
}

#[test]
fn usi_moves_parse_and_print() {
    let pos = Position::startpos();
    for mv in pos.legal_moves() {
        let text = mv.to_string();
        assert_eq!(pos.parse_move(&text).unwrap(), mv);
        assert_eq!(stera_rules::Move::from_raw(mv.raw()), Some(mv));
    }
    for bad in ["", "7g", "7g7f++", "0a1b", "P*", "K*5e", "7g7f "] {
        assert!(
            stera_rules::Move::from_usi(bad).is_err(),
            "`{bad}` accepted"
        );
    }
    assert!(matches!(
        pos.parse_move("7g7e"),
        Err(RulesError::IllegalMove { .. })
    ));
}

/// The text canonicaliser agrees with parsing and printing, including scrambled hands
/// and split runs of empty squares, and rejects what the parser rejects.
#[test]
fn canonical_sfen_agrees_with_position() {
    for pos in common::random_positions(5, 400, 200) {
        let sfen = pos.to_sfen();
        assert_eq!(stera_rules::canonical_sfen(&sfen).unwrap(), sfen);
        // Reverse the hand field's piece groups and split the first run of 9 empties.
        let mut parts: Vec<String> = sfen.split(' ').map(str::to_owned).collect();
        if parts[2] != "-" {
            let mut groups = Vec::new();
            let mut cur = String::new();
            for c in parts[2].chars() {
                cur.push(c);
                if !c.is_ascii_digit() {
                    groups.push(std::mem::take(&mut cur));
                }
            }
            groups.reverse();
            parts[2] = groups.concat();
        }
        parts[0] = parts[0].replacen('9', "45", 1);
        let scrambled = parts.join(" ");
        assert_eq!(
            stera_rules::canonical_sfen(&scrambled).unwrap(),
            sfen,
            "from `{scrambled}`"
        );
        assert_eq!(Position::from_sfen(&scrambled).unwrap().to_sfen(), sfen);
    }
    for bad in [
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b P 1",
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSG1GSNL b - 1",
        "lnsgkgsnl/1r5b1/ppppp+kppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b 0P 1",
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 0",
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1 b - 1",
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b -",
    ] {
        let canon = stera_rules::canonical_sfen(bad);
        let parsed = Position::from_sfen(bad);
        assert_eq!(
            canon.is_ok(),
            parsed.is_ok(),
            "`{bad}`: {canon:?} vs {parsed:?}"
        );
    }
}

/// Our allocation-free USI printer agrees with the backend's on every legal move
/// of many positions (drops, promotions, every square).
#[test]
fn fast_usi_printing_matches_backend() {
    for pos in common::random_positions(9, 300, 200) {
        for mv in pos.legal_moves() {
            assert_eq!(mv.to_string(), mv.backend().to_usi());
        }
    }
    let drops = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b RBGSNLP 1").unwrap();
    for mv in drops.legal_moves() {
        assert_eq!(mv.to_string(), mv.backend().to_usi());
    }
}

/// Our allocation-free SFEN printer agrees byte for byte with the backend's on
/// positions of random games (promoted pieces of both colours, hands of every
/// kind and size, plies of several digits) and on big hands.
#[test]
fn fast_sfen_printing_matches_backend() {
    let mut checked = 0;
    for pos in common::random_positions(11, 400, 300) {
        assert_eq!(pos.to_sfen(), pos.backend().to_sfen(None));
        checked += 1;
    }
    for sfen in [
        "4k4/9/9/9/9/9/9/9/4K4 b 2R2B4G4S4N4L18P 1",
        "4k4/9/9/9/9/9/9/9/4K4 w 2r2b4g4s4n4l18p 1234",
        "+R+B+P+L+N+S3/9/9/9/4k4/9/9/9/+r+b+p+l+n+s2K w - 7",
    ] {
        let pos = Position::from_sfen(sfen).unwrap();
        assert_eq!(pos.to_sfen(), pos.backend().to_sfen(None));
        assert_eq!(pos.to_sfen(), sfen);
        checked += 1;
    }
    assert!(checked > 400);
}
