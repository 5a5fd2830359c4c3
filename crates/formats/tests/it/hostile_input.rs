//! Issue 16: hostile and careless input. Long lines, endless input, king-capturable
//! positions, move lists past the ply limit, mixed encodings: each gets an error
//! naming its line, in bounded memory, never a panic.

use std::io::{self, BufRead, BufReader, Read};

use stera_formats::MAX_LINE_BYTES;
use stera_formats::db2016::{Db2016Reader, FormatError};
use stera_formats::kifu::{KifuError, KifuFormat, read_kifu_bytes, read_kifu_file_with};

/// Counts the bytes taken from the inner reader.
struct Counting<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

const GIB: u64 = 1 << 30;

/// A 2 GiB input without a newline: the header is refused after the first MiB,
/// and nothing more is read.
#[test]
fn db2016_header_of_an_endless_line_is_refused_without_reading_it() {
    for byte in [b'x', 0u8] {
        let mut input = Counting {
            inner: io::repeat(byte).take(2 * GIB),
            read: 0,
        };
        let items: Vec<_> = Db2016Reader::new(BufReader::new(&mut input)).collect();
        assert_eq!(items.len(), 1);
        match &items[0] {
            Err(e @ FormatError::BadHeader { at, found }) => {
                assert_eq!(at.line, 1);
                assert!(found.len() < 300, "{found}");
                assert!(e.to_string().len() < 400, "{e}");
            }
            other => panic!("{other:?}"),
        }
        let limit = MAX_LINE_BYTES as u64 + (64 << 10);
        assert!(input.read <= limit, "read {} bytes", input.read);
    }
}

/// A move line of 3 MiB spoils its entry (error with its line number and a short
/// message); the next entry is read.
#[test]
fn db2016_long_line_spoils_its_entry_only() {
    let mut book = String::from(
        "#YANEURAOU-DB2016 1.00\n\
         sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n\
         7g7f ",
    );
    book.push_str(&"3".repeat(3 << 20));
    book.push_str(
        "\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 2\n3c3d none 0 0 1\n",
    );
    let items: Vec<_> = Db2016Reader::new(book.as_bytes())
        .with_source_name("b.db")
        .collect();
    assert_eq!(items.len(), 2, "{items:?}");
    match &items[0] {
        Err(e @ FormatError::LineTooLong { .. }) => {
            assert!(e.is_entry_error());
            assert_eq!(e.line(), Some(3));
            assert!(e.to_string().starts_with("b.db:3: line longer than"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let entry = items[1].as_ref().unwrap();
    assert_eq!(entry.moves.len(), 1);
}

/// A bad token of 500 KB becomes an error of a few hundred bytes.
#[test]
fn db2016_errors_quote_a_prefix_of_bad_text() {
    let junk = "x".repeat(500_000);
    let book = format!(
        "#YANEURAOU-DB2016 1.00\nsfen {junk}\nsfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\n{junk} none\n5i4h {junk}\n"
    );
    let errors: Vec<String> = Db2016Reader::new(book.as_bytes())
        .filter_map(Result::err)
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for e in &errors {
        assert!(e.len() < 600 && e.contains('…'), "{} bytes", e.len());
    }
}

/// The king-capturable position and plies past the limit are bad entries.
#[test]
fn db2016_illegal_positions_are_bad_entries() {
    for check in [false, true] {
        let book = "#YANEURAOU-DB2016 1.00\n\
            sfen 4k4/4R4/9/9/9/9/9/9/4K4 b - 1\n5b5a+ none 0 0 1\n\
            sfen 4k4/9/9/9/9/9/9/9/4K4 b G 65535\nG*5b none 0 0 1\n\
            sfen 4k4/9/9/9/9/9/9/9/4K4 b G 3\nG*5b none 0 0 1\n";
        let items: Vec<_> = Db2016Reader::new(book.as_bytes())
            .with_legality_check(check)
            .collect();
        assert_eq!(items.len(), 3);
        for (item, line) in items.iter().take(2).zip([2, 4]) {
            match item {
                Err(e @ FormatError::BadSfen { .. }) => assert_eq!(e.line(), Some(line)),
                other => panic!("{other:?}"),
            }
        }
        assert!(items[2].is_ok());
    }
}

/// USI and SFEN line files: an over-long line is skipped with its number, the
/// other games are kept; reading a file streams it.
#[test]
fn kifu_line_files_skip_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("games.usi");
    let mut text = String::from("startpos moves 7g7f\nstartpos moves ");
    text.push_str(&"7g7f 3c3d ".repeat(MAX_LINE_BYTES / 5));
    text.push_str("\nstartpos moves 2g2f\n");
    std::fs::write(&path, &text).unwrap();
    let mut games = 0;
    let summary = read_kifu_file_with(&path, None, |_| games += 1).unwrap();
    assert_eq!((games, summary.games_skipped), (2, 1));
    assert_eq!(summary.errors[0].line, 2);
    assert!(
        summary.errors[0].reason.contains("MAX_LINE_BYTES"),
        "{}",
        summary.errors[0]
    );
    let report = read_kifu_bytes(text.as_bytes(), "games.usi", None).unwrap();
    assert_eq!(report.summary.errors[0].line, 2);
}

/// A shuffle of kings in USI, `count` moves.
fn usi_shuffle(count: usize) -> String {
    let cycle = ["5i4h", "5a4b", "4h5i", "4b5a"];
    (0..count)
        .map(|i| cycle[i % 4])
        .collect::<Vec<_>>()
        .join(" ")
}

/// The error names the line of move MAX_PLY (the first past the limit) or the
/// one after it, and the limit.
fn check_limit_error(e: &stera_formats::kifu::GameError, line: u64) {
    assert!(e.line == line || e.line == line + 1, "{e}");
    assert!(e.reason.contains("MAX_PLY"), "{e}");
}

/// Games past the ply limit are skipped, in every format, without a panic.
#[test]
fn kifu_games_past_the_ply_limit_are_skipped() {
    let limit = stera_rules::MAX_PLY as usize;
    for count in [limit, 65_535, 70_000] {
        let usi = format!("startpos moves {}\n", usi_shuffle(count));
        let report = read_kifu_bytes(usi.as_bytes(), "g.usi", None).unwrap();
        assert_eq!(report.summary.games_skipped, 1, "{count}");
        assert!(
            report.summary.errors[0].reason.contains("MAX_PLY"),
            "{}",
            report.summary.errors[0]
        );

        let csa_cycle = ["+5948OU", "-5142OU", "+4859OU", "-4251OU"];
        let mut csa = String::from("V2.2\nPI\n+\n");
        for i in 0..count {
            csa.push_str(csa_cycle[i % 4]);
            csa.push('\n');
        }
        let report = read_kifu_bytes(csa.as_bytes(), "g.csa", None).unwrap();
        assert_eq!(report.summary.games_skipped, 1, "{count}");
        check_limit_error(&report.summary.errors[0], 3 + limit as u64);

        let kif_cycle = ["４八玉(59)", "４二玉(51)", "５九玉(48)", "５一玉(42)"];
        let mut kif = String::from("手合割：平手\n手数----指手---------消費時間--\n");
        for i in 0..count {
            kif.push_str(&format!("{:>4} {}\n", i + 1, kif_cycle[i % 4]));
        }
        let report = read_kifu_bytes(kif.as_bytes(), "g.kif", None).unwrap();
        assert_eq!(report.summary.games_skipped, 1, "{count}");
        check_limit_error(&report.summary.errors[0], 2 + limit as u64);
    }
    // Just under the limit is a game.
    let usi = format!("startpos moves {}\n", usi_shuffle(limit - 1));
    let report = read_kifu_bytes(usi.as_bytes(), "g.usi", None).unwrap();
    assert_eq!(report.games[0].moves.len(), limit - 1);
}

/// The king-capturable start is a skipped game in every format.
#[test]
fn kifu_king_capturable_starts_are_skipped() {
    let inputs: [(&str, KifuFormat); 3] = [
        (
            "sfen 4k4/4R4/9/9/9/9/9/9/4K4 b - 1 moves 5b5a+\n",
            KifuFormat::UsiPositions,
        ),
        ("4k4/4R4/9/9/9/9/9/9/4K4 b - 1\n", KifuFormat::SfenLines),
        (
            "V2.2\nP1 *  *  *  *  -OU *  *  *  * \nP2 *  *  *  *  +HI *  *  *  * \nP3 *  *  *  *  *  *  *  *  * \nP4 *  *  *  *  *  *  *  *  * \nP5 *  *  *  *  *  *  *  *  * \nP6 *  *  *  *  *  *  *  *  * \nP7 *  *  *  *  *  *  *  *  * \nP8 *  *  *  *  *  *  *  *  * \nP9 *  *  *  *  +OU *  *  *  * \n+\n+5251HI\n",
            KifuFormat::Csa,
        ),
    ];
    for (text, format) in inputs {
        let report = read_kifu_bytes(text.as_bytes(), "g", Some(format)).unwrap();
        assert_eq!(
            (report.games.len(), report.summary.games_skipped),
            (0, 1),
            "{format}: {:?}",
            report.summary
        );
    }
}

fn shift_jis(text: &str) -> Vec<u8> {
    encoding_rs::SHIFT_JIS.encode(text).0.into_owned()
}

/// A Shift_JIS header with UTF-8 moves (a file edited by hand) reads every move.
#[test]
fn kif_with_shift_jis_header_and_utf8_moves_reads_its_moves() {
    let mut bytes = shift_jis(
        "開始日時：2024/01/01\n手合割：平手\n先手：A\n後手：B\n手数----指手---------消費時間--\n",
    );
    bytes.extend_from_slice(
        "   1 ７六歩(77)   ( 0:01/00:00:01)\n   2 ３四歩(33)   ( 0:01/00:00:02)\n   3 投了\n"
            .as_bytes(),
    );
    let report = read_kifu_bytes(&bytes, "mixed.kif", None).unwrap();
    assert!(
        report.summary.errors.is_empty(),
        "{:?}",
        report.summary.errors
    );
    let moves: Vec<String> = report.games[0]
        .moves
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(moves, ["7g7f", "3c3d"]);
}

/// A move line the KIF parser cannot read is an error naming file and line, not a
/// game silently cut there.
#[test]
fn kif_unreadable_move_line_is_an_error_with_its_line() {
    let text = "手合割：平手\n手数----指手---------消費時間--\n   1 ７六歩(77)\n   2 ？？歩(33)\n   3 ２六歩(27)\n   4 投了\n";
    let report = read_kifu_bytes(text.as_bytes(), "bad.kif", None).unwrap();
    assert!(report.games.is_empty(), "{:?}", report.games);
    let e = &report.summary.errors[0];
    assert_eq!(e.line, 4, "{e}");
    assert!(e.to_string().starts_with("bad.kif:4:"), "{e}");
    assert!(e.reason.contains("？？歩(33)"), "{e}");
    // Lines after the game's end (`まで`) and known endings are fine.
    let good = "手合割：平手\n   1 ７六歩(77)\n   2 中断\nまで1手で中断\n";
    let report = read_kifu_bytes(good.as_bytes(), "good.kif", None).unwrap();
    assert_eq!(report.games.len(), 1, "{:?}", report.summary.errors);
}

/// CSA and KIF files are read whole, up to MAX_RECORD_FILE_BYTES.
#[test]
fn oversized_record_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.kif");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(stera_formats::MAX_RECORD_FILE_BYTES + 1)
        .unwrap();
    let err = read_kifu_file_with(&path, None, |_| {}).unwrap_err();
    assert!(matches!(err, KifuError::TooLarge { .. }), "{err}");
}

/// What the line splitter hands a reader over a BufRead that never ends: the
/// DB2016 reader stops at the first error, a kifu line reader at the end.
#[test]
fn endless_input_through_a_bufread_is_bounded() {
    let mut input = Counting {
        inner: io::repeat(b'\n').take(GIB),
        read: 0,
    };
    let mut reader = BufReader::new(&mut input);
    // Not a header: an empty first line is refused at once.
    let first = Db2016Reader::new(&mut reader).next();
    assert!(matches!(first, Some(Err(FormatError::BadHeader { .. }))));
    let _ = reader.fill_buf();
    assert!(input.read < 1 << 20);
}
