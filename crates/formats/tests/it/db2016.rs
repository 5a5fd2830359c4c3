//! DB2016 reader and writer behaviour on real files.

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_formats::db2016::{
    BookEntry, BookMove, Db2016Reader, FormatError, MoveOrder, OrderedWriter, SortOptions,
    SortingWriter, WriteOptions, WriteSummary, sort_moves_best_first,
};
use stera_rules::{Move, Position, STARTPOS_SFEN};

fn mv(usi: &str) -> Move {
    Move::from_usi(usi).unwrap()
}

fn book_move(usi: &str, ponder: Option<&str>, value: i32, depth: i32, count: u64) -> BookMove {
    BookMove {
        mv: mv(usi),
        ponder: ponder.map(mv),
        value,
        depth,
        count,
    }
}

fn read_all(text: &[u8]) -> Vec<Result<BookEntry, FormatError>> {
    Db2016Reader::new(text).collect()
}

/// Entries for random positions from seeded random games, with random legal moves.
fn random_entries(seed: u64, games: usize, plies: usize) -> Vec<BookEntry> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for _ in 0..games {
        let mut pos = Position::startpos();
        for _ in 0..plies {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let mut entry = BookEntry::new(&pos);
            let n = rng.random_range(1..=legal.len().min(4));
            for _ in 0..n {
                let m = legal[rng.random_range(0..legal.len())];
                let mut child = pos.clone();
                child.do_move(m);
                let replies = child.legal_moves();
                let ponder = if replies.is_empty() || rng.random_bool(0.3) {
                    None
                } else {
                    Some(replies[rng.random_range(0..replies.len())])
                };
                entry.push_move(BookMove {
                    mv: m,
                    ponder,
                    value: rng.random_range(-32_000..=32_000),
                    depth: rng.random_range(0..40),
                    count: rng.random_range(0..4),
                });
            }
            out.push(entry);
            pos.do_move(legal[rng.random_range(0..legal.len())]);
        }
    }
    out
}

/// The book the writers must produce for `input`, built the obvious in-memory way.
fn expected_book(input: &[BookEntry]) -> Vec<BookEntry> {
    let mut by_sfen: BTreeMap<String, BookEntry> = BTreeMap::new();
    for e in input {
        by_sfen
            .entry(e.sfen().to_owned())
            .and_modify(|x| {
                x.merge(e.clone());
            })
            .or_insert_with(|| e.clone());
    }
    let mut best: BTreeMap<String, BookEntry> = BTreeMap::new();
    for e in by_sfen.into_values() {
        let key = e.sfen_without_ply().to_owned();
        match best.get(&key) {
            Some(b) if b.ply() <= e.ply() => {}
            _ => {
                best.insert(key, e);
            }
        }
    }
    let mut out: Vec<BookEntry> = best.into_values().collect();
    out.sort_by(|a, b| a.sfen().cmp(b.sfen()));
    for e in &mut out {
        sort_moves_best_first(&mut e.moves);
    }
    out
}

fn write_sorted(path: &Path, entries: &[BookEntry], run_memory_bytes: usize) -> WriteSummary {
    let options = SortOptions {
        run_memory_bytes,
        ..SortOptions::default()
    };
    let mut writer = SortingWriter::create(path, options).unwrap();
    for e in entries {
        writer.write_entry(e.clone()).unwrap();
    }
    writer.finish().unwrap()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn round_trip_of_random_book() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let input = random_entries(7, 30, 24);
    write_sorted(&path, &input, usize::MAX);
    let back: Vec<BookEntry> = Db2016Reader::open(&path)
        .unwrap()
        .with_legality_check(true)
        .collect::<Result<_, _>>()
        .unwrap();
    let expected = expected_book(&input);
    assert!(expected.len() > 100, "only {} entries", expected.len());
    assert_eq!(back, expected);
    // Reading and writing again changes no byte.
    let again = dir.path().join("again.db");
    let mut writer = OrderedWriter::create(&again, WriteOptions::default()).unwrap();
    for e in back {
        writer.write_entry(e).unwrap();
    }
    writer.finish().unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(&again).unwrap()
    );
}

#[test]
fn exact_bytes_with_crlf_noe_and_best_first_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let mut start = BookEntry::new(&Position::startpos());
    start.moves = vec![
        book_move("7g7f", Some("3c3d"), 10, 32, 1),
        book_move("2g2f", Some("8c8d"), 50, 32, 1),
        book_move("5g5f", None, 90, 1, 0),
    ];
    let after = Position::from_position_command("startpos moves 7g7f").unwrap();
    let mut second = BookEntry::new(&after);
    second.moves = vec![
        book_move("3c3d", None, -60, 32, 1),
        book_move("8c8d", Some("2g2f"), -20, 32, 1),
    ];
    let mut writer = OrderedWriter::create(&path, WriteOptions::default()).unwrap();
    // "...L w - 2" sorts before "...L b - 1" by the board text.
    writer.write_entry(second).unwrap();
    writer.write_entry(start).unwrap();
    let summary = writer.finish().unwrap();
    assert_eq!(summary.entries_written, 2);
    assert_eq!(summary.moves_written, 5);
    let noe = format!("# NOE:2{}\r\n", " ".repeat(19));
    let body = "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\r\n\
        8c8d 2g2f -20 32 1\r\n\
        3c3d none -60 32 1\r\n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\r\n\
        2g2f 8c8d 50 32 1\r\n\
        7g7f 3c3d 10 32 1\r\n\
        5g5f none 90 1 0\r\n";
    let expected = format!("#YANEURAOU-DB2016 1.00\r\n{noe}{body}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    let mut reader = Db2016Reader::new(expected.as_bytes());
    assert_eq!(reader.by_ref().filter(Result::is_ok).count(), 2);
    assert_eq!(reader.noe_hint(), Some(2));
}

#[test]
fn as_given_order_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let mut e = BookEntry::new(&Position::startpos());
    e.moves = vec![
        book_move("7g7f", None, 10, 0, 1),
        book_move("2g2f", None, 50, 0, 9),
    ];
    let options = WriteOptions {
        move_order: MoveOrder::AsGiven,
    };
    let mut writer = OrderedWriter::create(&path, options).unwrap();
    writer.write_entry(e.clone()).unwrap();
    writer.finish().unwrap();
    let back: Vec<BookEntry> = Db2016Reader::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, vec![e]);
}

#[test]
fn reader_accepts_cr_comments_blanks_and_defaults() {
    let text = "#YANEURAOU-DB2016 1.00  \r# NOE:1,SORTED\r\r// a comment\r\n  \n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1 \t\r\
        # comment between moves\n\
        7g7f\r\n2g2f none 99999\r\n5g5f 5c5d -40000 7\r\n1g1f none 3 4 5   \r\n";
    let mut reader = Db2016Reader::new(text.as_bytes());
    let entry = reader.next().unwrap().unwrap();
    assert!(reader.next().is_none());
    assert_eq!(reader.noe_hint(), Some(1));
    assert_eq!(entry.sfen(), STARTPOS_SFEN);
    assert_eq!(
        entry.moves,
        vec![
            book_move("7g7f", None, 0, 0, 1),
            book_move("2g2f", None, 32_000, 0, 1),
            book_move("5g5f", Some("5c5d"), -32_000, 7, 1),
            book_move("1g1f", None, 3, 4, 5),
        ]
    );
}

#[test]
fn reader_canonicalises_hand_order() {
    let text = "#YANEURAOU-DB2016 1.00\nsfen 4k4/9/9/9/9/9/9/9/4K4 b pPR 3\nR*5b none\n";
    let entries: Vec<BookEntry> = read_all(text.as_bytes())
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(entries[0].sfen(), "4k4/9/9/9/9/9/9/9/4K4 b RPp 3");
}

#[test]
fn malformed_lines_are_reported_with_line_numbers_and_skipped() {
    let text = "#YANEURAOU-DB2016 1.00\n\
        7g7f none 1 1 1\n\
        2g2f none 1 1 1\n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n\
        7g7f none 10 2 3\n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1 b - 1\n\
        7g7f none 10 2 3\n\
        sfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\n\
        G*5b none\n\
        7g7x none\n\
        G*4b none\n\
        sfen 4k4/9/9/9/9/9/9/9/4K4 b S 1\n\
        S*5b 5a5\n\
        sfen 4k4/9/9/9/9/9/9/9/4K4 b N 1\n\
        N*5e none ten\n\
        sfen 4k4/9/9/9/9/9/9/9/4K4 b L 1\n\
        L*5e none 1 2 -3\n\
        sfen 4k4/9/9/9/9/9/9/9/4K4 b B 1\n\
        B*5e none 1 2 3 extra\n\
        sfen 4k4/9/9/9/9/9/9/9/4K4 b R 1\n\
        R*5e none 1 2 3\n";
    let results = read_all(text.as_bytes());
    let summary: Vec<String> = results
        .iter()
        .map(|r| match r {
            Ok(e) => format!("ok {}", e.sfen()),
            Err(e) => format!("err {} {}", e.line().unwrap(), e),
        })
        .collect();
    let lines: Vec<(bool, u64)> = results
        .iter()
        .map(|r| match r {
            Ok(_) => (true, 0),
            Err(e) => (false, e.line().unwrap()),
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            (false, 2),
            (true, 0),
            (false, 6),
            (false, 10),
            (false, 13),
            (false, 15),
            (false, 17),
            (false, 19),
            (true, 0),
        ],
        "{summary:#?}"
    );
    assert!(matches!(
        results[0],
        Err(FormatError::MoveBeforeSfen { .. })
    ));
    assert!(matches!(results[2], Err(FormatError::BadSfen { .. })));
    assert!(matches!(
        results[3],
        Err(FormatError::BadMove { field: "move", .. })
    ));
    assert!(matches!(
        results[4],
        Err(FormatError::BadMove {
            field: "ponder",
            ..
        })
    ));
    assert!(matches!(
        results[5],
        Err(FormatError::BadNumber { field: "value", .. })
    ));
    assert!(matches!(
        results[6],
        Err(FormatError::BadNumber { field: "count", .. })
    ));
    assert!(matches!(results[7], Err(FormatError::TrailingText { .. })));
    assert!(
        summary[3].contains("line 10") && summary[3].contains("7g7x"),
        "{}",
        summary[3]
    );
    let good: Vec<&BookEntry> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(good[0].moves, vec![book_move("7g7f", None, 10, 2, 3)]);
    assert_eq!(good[1].sfen(), "4k4/9/9/9/9/9/9/9/4K4 b R 1");
}

#[test]
fn errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.db");
    std::fs::write(
        &path,
        "#YANEURAOU-DB2016 1.00\nsfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\nG*5b none x\n",
    )
    .unwrap();
    let errors: Vec<String> = Db2016Reader::open(&path)
        .unwrap()
        .filter_map(Result::err)
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains(&format!("{}:3", path.display())),
        "{}",
        errors[0]
    );
}

#[test]
fn bad_header_ends_the_stream() {
    let results = read_all(b"#YANEURAOU-DB2015 1.00\nsfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\n");
    assert_eq!(results.len(), 1);
    assert!(matches!(&results[0], Err(FormatError::BadHeader { at, .. }) if at.line == 1));
    let results = read_all(b"");
    assert!(matches!(&results[..], [Err(FormatError::BadHeader { .. })]));
    // A UTF-8 byte order mark before the header is tolerated.
    let results = read_all("\u{feff}#YANEURAOU-DB2016 1.00\r\n".as_bytes());
    assert!(results.is_empty());
}

#[test]
fn non_utf8_lines_spoil_only_their_entry() {
    let mut text = b"#YANEURAOU-DB2016 1.00\nsfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\nG*5b none\nsfen \xff\n1a1b none\n".to_vec();
    text.extend_from_slice(b"sfen 4k4/9/9/9/9/9/9/9/4K4 b S 1\nS*5b none\n\xfe\n");
    let results = read_all(&text);
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].as_ref().unwrap().moves.len(), 1);
    assert!(matches!(&results[1], Err(FormatError::NotUtf8 { at }) if at.line == 4));
    assert!(matches!(&results[2], Err(FormatError::NotUtf8 { at }) if at.line == 8));
}

#[test]
fn legality_check_reports_illegal_moves_and_ponders() {
    let text = "#YANEURAOU-DB2016 1.00\n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n\
        7g7f 3c3d\n\
        7g7e none\n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 3\n\
        2g2f 2c2e\n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 5\n\
        2g2f 8c8d\n";
    // Without the check the syntax is all that matters.
    assert!(read_all(text.as_bytes()).iter().all(Result::is_ok));
    let results: Vec<_> = Db2016Reader::new(text.as_bytes())
        .with_legality_check(true)
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        matches!(&results[0], Err(FormatError::IllegalMove { at, field: "move", .. }) if at.line == 4)
    );
    assert!(
        matches!(&results[1], Err(FormatError::IllegalMove { at, field: "ponder", .. }) if at.line == 6)
    );
    assert!(results[2].is_ok());
    let entry = read_all(text.as_bytes()).remove(0).unwrap();
    assert_eq!(
        stera_formats::db2016::illegal_moves(&entry).unwrap(),
        vec!["7g7e".to_owned()]
    );
}

#[test]
fn duplicate_moves_and_entries_merge() {
    let text = "#YANEURAOU-DB2016 1.00\n\
        sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n\
        7g7f 3c3d 10 5 2\n\
        2g2f none 30 5 1\n\
        7g7f 8c8d 20 6 3\n";
    let entries: Vec<BookEntry> = read_all(text.as_bytes())
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        entries[0].moves,
        vec![
            book_move("7g7f", Some("8c8d"), 20, 6, 5),
            book_move("2g2f", None, 30, 5, 1),
        ]
    );
    // Across entries: the writers merge same-SFEN entries in input order.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let mut a = BookEntry::new(&Position::startpos());
    a.moves = vec![book_move("7g7f", None, 10, 1, 1)];
    let mut b = a.clone();
    b.moves = vec![
        book_move("5g5f", None, 5, 1, 1),
        book_move("7g7f", Some("3c3d"), 40, 2, 4),
    ];
    let other = BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b G 1").unwrap();
    let mut writer = SortingWriter::create(&path, SortOptions::default()).unwrap();
    writer.write_entry(a).unwrap();
    writer.write_entry(other).unwrap();
    writer.write_entry(b).unwrap();
    let summary = writer.finish().unwrap();
    assert_eq!(summary.duplicates_merged, 1);
    let back: Vec<BookEntry> = Db2016Reader::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(
        back[1].moves,
        vec![
            book_move("7g7f", Some("3c3d"), 40, 2, 5),
            book_move("5g5f", None, 5, 1, 1),
        ]
    );
}

#[test]
fn output_is_sorted_and_keeps_the_smallest_ply() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let base = "4k4/9/9/9/9/9/9/9/4K4 b G";
    let mut input = Vec::new();
    for ply in [12, 2, 10, 3, 2] {
        let mut e = BookEntry::from_sfen(&format!("{base} {ply}")).unwrap();
        e.moves = vec![book_move("G*5b", None, ply, 0, 1)];
        input.push(e);
    }
    // A position whose text extends the base's hand, and one sorting before it.
    input.push(BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b Gp 1").unwrap());
    input.push(BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b - 1").unwrap());
    let mut writer = SortingWriter::create(&path, SortOptions::default()).unwrap();
    for e in &input {
        writer.write_entry(e.clone()).unwrap();
    }
    let summary = writer.finish().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let sfens: Vec<&str> = text
        .split("\r\n")
        .filter_map(|l| l.strip_prefix("sfen "))
        .collect();
    assert_eq!(
        sfens,
        vec![
            "4k4/9/9/9/9/9/9/9/4K4 b - 1",
            "4k4/9/9/9/9/9/9/9/4K4 b G 2",
            "4k4/9/9/9/9/9/9/9/4K4 b Gp 1",
        ]
    );
    assert!(text.contains("G*5b none 2 0 2\r\n"), "{text}");
    assert_eq!(summary.ply_duplicates_dropped, 3);
    assert_eq!(summary.duplicates_merged, 1);
}

#[test]
fn ordered_writer_rejects_out_of_order_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let mut writer = OrderedWriter::create(&path, WriteOptions::default()).unwrap();
    writer
        .write_entry(BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b S 1").unwrap())
        .unwrap();
    let err = writer
        .write_entry(BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b G 1").unwrap())
        .unwrap_err();
    assert!(matches!(err, FormatError::OutOfOrder { .. }), "{err}");
    // The writer is still usable after a rejected entry.
    writer
        .write_entry(BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b SP 1").unwrap())
        .unwrap();
    assert_eq!(writer.finish().unwrap().entries_written, 2);
}

#[test]
fn external_sort_gives_the_same_bytes_as_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = random_entries(11, 40, 20);
    // Duplicates spread over different runs, including same-move replacements.
    let again = random_entries(11, 15, 20);
    input.extend(again);
    let mut rng = StdRng::seed_from_u64(3);
    for i in (1..input.len()).rev() {
        let j = rng.random_range(0..=i);
        input.swap(i, j);
    }
    let memory = dir.path().join("memory.db");
    let external = dir.path().join("external.db");
    let cascaded = dir.path().join("cascaded.db");
    let in_memory = write_sorted(&memory, &input, usize::MAX);
    assert_eq!(in_memory.runs_spilled, 0);
    assert!(in_memory.duplicates_merged > 100, "{in_memory:?}");
    let spilled = write_sorted(&external, &input, 8 << 10);
    assert!(spilled.runs_spilled > 3, "{spilled:?}");
    // Runs of about one entry: more than the merge fan-in, so runs merge in stages.
    let many = write_sorted(&cascaded, &input, 1);
    assert!(many.runs_spilled > 64, "{many:?}");
    for summary in [spilled, many] {
        assert_eq!(
            WriteSummary {
                runs_spilled: 0,
                ..summary
            },
            in_memory
        );
    }
    let memory_bytes = std::fs::read(&memory).unwrap();
    assert_eq!(memory_bytes, std::fs::read(&external).unwrap());
    assert_eq!(memory_bytes, std::fs::read(&cascaded).unwrap());
    let back: Vec<BookEntry> = Db2016Reader::open(&memory)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, expected_book(&input));
    // Sort runs are cleaned up.
    assert_eq!(
        files_in(dir.path()),
        ["cascaded.db", "external.db", "memory.db"]
    );
}

#[test]
fn unfinished_write_leaves_no_file_and_keeps_an_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    {
        let mut writer = OrderedWriter::create(&path, WriteOptions::default()).unwrap();
        for e in expected_book(&random_entries(5, 5, 10)) {
            writer.write_entry(e).unwrap();
        }
        // Fails midway: the caller gives up on the error and drops the writer.
        let err = writer.write_entry(BookEntry::new(&Position::startpos()));
        let err2 = writer.write_entry(BookEntry::from_sfen("1k7/9/9/9/9/9/9/9/4K4 b - 1").unwrap());
        assert!(err.is_err() || err2.is_err());
    }
    assert!(
        files_in(dir.path()).is_empty(),
        "{:?}",
        files_in(dir.path())
    );
    // A previous book survives a failed rewrite untouched.
    std::fs::write(&path, "old book").unwrap();
    {
        let mut writer = SortingWriter::create(
            &path,
            SortOptions {
                run_memory_bytes: 1,
                ..SortOptions::default()
            },
        )
        .unwrap();
        for e in random_entries(5, 5, 10) {
            writer.write_entry(e).unwrap();
        }
        assert!(writer.runs_spilled() > 0);
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old book");
    assert_eq!(files_in(dir.path()), ["book.db"]);
    // Writing into a missing directory fails up front.
    let missing = dir.path().join("no/such/dir/book.db");
    assert!(matches!(
        OrderedWriter::create(&missing, WriteOptions::default()),
        Err(FormatError::Io { .. })
    ));
}

/// Written books are as readable as any file the user creates (the umask
/// decides), not private to the writer as temporary files are: an engine may
/// run as another user.
#[cfg(unix)]
#[test]
fn written_books_get_the_permissions_of_a_created_file() {
    use std::os::unix::fs::PermissionsExt;
    use stera_formats::ybb::{YbbOptions, YbbWriter};
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let reference = dir.path().join("reference");
    std::fs::File::create(&reference).unwrap();
    let expected = mode(&reference);

    let text = dir.path().join("book.db");
    let mut writer = OrderedWriter::create(&text, WriteOptions::default()).unwrap();
    let mut entry = BookEntry::from_sfen(STARTPOS_SFEN).unwrap();
    entry.push_move(book_move("7g7f", None, 10, 1, 1));
    writer.write_entry(entry.clone()).unwrap();
    writer.finish().unwrap();
    assert_eq!(mode(&text), expected, "{:o}", mode(&text));

    let binary = dir.path().join("book.ybb");
    let mut writer = YbbWriter::create(&binary, YbbOptions::default()).unwrap();
    writer.write_entry(&entry).unwrap();
    writer.finish().unwrap();
    assert_eq!(mode(&binary), expected, "{:o}", mode(&binary));
}
