//! Kifu readers on fixture files.

use std::path::PathBuf;

use stera_formats::kifu::{
    Game, KifuError, KifuFormat, read_kifu_bytes, read_kifu_file, read_kifu_file_with,
};
use stera_rules::{Position, STARTPOS_SFEN};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn usi(game: &Game) -> Vec<String> {
    game.moves.iter().map(ToString::to_string).collect()
}

/// The 1-based number of the first line of `name` containing `needle`.
fn line_of(name: &str, needle: &str) -> u64 {
    let bytes = std::fs::read(fixture(name)).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let index = text.lines().position(|l| l.contains(needle)).unwrap();
    index as u64 + 1
}

#[test]
fn kif_utf8_with_same_promotion_non_promotion_and_drop() {
    let report = read_kifu_file(fixture("game_utf8.kif")).unwrap();
    assert_eq!(report.summary.format, KifuFormat::Kif);
    assert!(
        report.summary.errors.is_empty(),
        "{:?}",
        report.summary.errors
    );
    assert_eq!(report.games.len(), 1);
    let game = &report.games[0];
    assert_eq!(game.start_sfen, STARTPOS_SFEN);
    assert_eq!(
        usi(game),
        [
            "7g7f", "3c3d", "8h2b+", "3a2b", "B*4e", "7a6b", "4e6c", "6b6c"
        ]
    );
    assert_eq!(report.summary.positions, 9);
}

#[test]
fn kif_shift_jis_reads_like_utf8() {
    let sjis_bytes = std::fs::read(fixture("game_sjis.kif")).unwrap();
    assert!(
        std::str::from_utf8(&sjis_bytes).is_err(),
        "fixture must be Shift_JIS"
    );
    let sjis = read_kifu_file(fixture("game_sjis.kif")).unwrap();
    let utf8 = read_kifu_file(fixture("game_utf8.kif")).unwrap();
    assert_eq!(sjis.games, utf8.games);
    // Without an extension the content still says KIF.
    let sniffed = read_kifu_bytes(&sjis_bytes, "download", None).unwrap();
    assert_eq!(sniffed.summary.format, KifuFormat::Kif);
    assert_eq!(sniffed.games[0].moves, utf8.games[0].moves);
}

#[test]
fn kif_handicap_starts_from_the_handicap_position() {
    let report = read_kifu_file(fixture("handicap.kif")).unwrap();
    let game = &report.games[0];
    let start = game.start_position().unwrap();
    // Lance handicap: the upper player (white) lacks the 1a lance and moves first.
    assert_eq!(
        start.to_sfen(),
        "lnsgkgsn1/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"
    );
    assert_eq!(usi(game), ["3c3d", "7g7f"]);
}

#[test]
fn kif_bod_start_position() {
    let report = read_kifu_file(fixture("bod.kif")).unwrap();
    assert!(
        report.summary.errors.is_empty(),
        "{:?}",
        report.summary.errors
    );
    let game = &report.games[0];
    assert_eq!(game.start_sfen, "4k4/9/9/9/9/9/9/9/4K4 b G2S 1");
    assert_eq!(usi(game), ["G*5b", "5a5b", "S*4a"]);
    let mut last = None;
    game.for_each_position(|p| last = Some(p.to_sfen()))
        .unwrap();
    assert_eq!(last.unwrap(), "5S3/4k4/9/9/9/9/9/9/4K4 w Sg 4");
}

#[test]
fn kif_illegal_move_names_its_line() {
    let report = read_kifu_file(fixture("illegal_move.kif")).unwrap();
    assert!(report.games.is_empty());
    assert_eq!(report.summary.games_skipped, 1);
    let error = &report.summary.errors[0];
    assert_eq!(error.line, line_of("illegal_move.kif", "５五歩"));
    let shown = error.to_string();
    assert!(shown.contains("illegal_move.kif:5"), "{shown}");
}

#[test]
fn csa_three_games_with_an_illegal_move_in_the_second() {
    let report = read_kifu_file(fixture("three_games.csa")).unwrap();
    let summary = &report.summary;
    assert_eq!(summary.format, KifuFormat::Csa);
    assert_eq!((summary.games_read, summary.games_skipped), (2, 1));
    assert_eq!(summary.errors.len(), 1);
    let error = &summary.errors[0];
    assert_eq!(error.game, 2);
    assert_eq!(error.line, line_of("three_games.csa", "+5957OU"));
    assert!(error.reason.contains("+5957OU"), "{}", error.reason);

    let first = &report.games[0];
    assert_eq!(first.start_sfen, STARTPOS_SFEN);
    assert_eq!(usi(first), ["7g7f", "3c3d", "8h2b+", "3a2b"]);
    assert_eq!(first.line, line_of("three_games.csa", "V2.2"));

    // Game 3: two-piece handicap from `PI82HI22KA`, white to move, comma statements.
    let third = &report.games[1];
    assert_eq!(
        third.start_sfen,
        "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"
    );
    assert_eq!(usi(third), ["3c3d", "7g7f"]);
    assert_eq!(summary.positions, 5 + 3);
}

#[test]
fn csa_board_and_hand_lines() {
    let text = "P1 *  *  *  * -OU *  *  *  * \nP2 *  *  *  *  *  *  *  *  * \n\
        P3 *  *  *  *  *  *  *  *  * \nP4 *  *  *  *  *  *  *  *  * \n\
        P5 *  *  *  *  *  *  *  *  * \nP6 *  *  *  *  *  *  *  *  * \n\
        P7 *  *  *  *  *  *  *  *  * \nP8 *  *  *  *  *  *  *  *  * \n\
        P9 *  *  *  * +OU *  *  *  * \nP+00KI00FU\nP-00HI\n-\n-0015HI\n+0052KI\n";
    let report = read_kifu_bytes(text.as_bytes(), "board.csa", None).unwrap();
    assert!(
        report.summary.errors.is_empty(),
        "{:?}",
        report.summary.errors
    );
    let game = &report.games[0];
    assert_eq!(game.start_sfen, "4k4/9/9/9/9/9/9/9/4K4 w GPr 1");
    assert_eq!(usi(game), ["R*1e", "G*5b"]);
}

#[test]
fn usi_lines_keep_good_games_and_name_the_bad_line() {
    let report = read_kifu_file(fixture("positions.txt")).unwrap();
    let summary = &report.summary;
    assert_eq!(summary.format, KifuFormat::UsiPositions);
    assert_eq!((summary.games_read, summary.games_skipped), (3, 1));
    let error = &summary.errors[0];
    assert_eq!(error.line, 3);
    assert!(error.reason.contains("2f2f"), "{}", error.reason);
    assert_eq!(usi(&report.games[0]), ["7g7f", "3c3d"]);
    let second = &report.games[1];
    let after = Position::from_position_command("startpos moves 7g7f").unwrap();
    assert_eq!(second.start_sfen, after.to_sfen());
    assert_eq!(usi(second), ["3c3d"]);
    assert_eq!(report.games[2].start_sfen, "4k4/9/9/9/9/9/9/9/4K4 b G 1");
    assert!(report.games[2].moves.is_empty());
    assert_eq!(summary.positions, 3 + 2 + 1);
}

#[test]
fn sfen_lines_and_bad_sfens() {
    let text = "sfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\n4k4/9/9/9/9/9/9/9/4K4 w 2P 9\nnot a position\n";
    let report = read_kifu_bytes(text.as_bytes(), "x.sfen", None).unwrap();
    assert_eq!(report.summary.format, KifuFormat::SfenLines);
    assert_eq!(report.games.len(), 2);
    assert_eq!(report.games[1].start_sfen, "4k4/9/9/9/9/9/9/9/4K4 w 2P 9");
    assert_eq!(report.summary.errors[0].line, 3);
}

#[test]
fn streaming_reader_sees_every_game() {
    let mut plies = Vec::new();
    let summary = read_kifu_file_with(fixture("three_games.csa"), None, |g| {
        plies.push(g.moves.len());
    })
    .unwrap();
    assert_eq!(plies, [4, 2]);
    assert_eq!(summary.games_read, 2);
    // A forced format overrides the extension.
    let forced =
        read_kifu_file_with(fixture("positions.txt"), Some(KifuFormat::Csa), |_| {}).unwrap();
    assert_eq!(forced.format, KifuFormat::Csa);
    assert_eq!((forced.games_read, forced.games_skipped), (0, 1));
    assert_eq!(forced.errors[0].line, 1);
    assert!(forced.errors[0].reason.contains("not a CSA line"));
}

#[test]
fn unknown_and_missing_files_are_file_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "just some notes\n").unwrap();
    assert!(matches!(
        read_kifu_file(&path),
        Err(KifuError::UnknownFormat { .. })
    ));
    assert!(matches!(
        read_kifu_file(dir.path().join("missing.kif")),
        Err(KifuError::Io { .. })
    ));
}
