//! Issue 16 through the built binary: hostile and careless input gets a clear
//! error (non-zero exit, what and where), never a panic; bounded memory on
//! endless input; no data stored from bad entries; stores are not created by
//! readers, nor opened twice.

use crate::common::{book_tools, fails, ok, s};

use std::process::{Command, Stdio};

use stera_book::{NodeStore, SledStore};
use stera_rules::Position;

const KING_CAPTURABLE: &str = "sfen 4k4/4R4/9/9/9/9/9/9/4K4 b - 1";

/// Runs a command that must fail cleanly: exit 1 (not a panic's 101), an
/// `error:` message containing every needle; returns the message.
fn clean_failure(args: &[&str], needles: &[&str]) -> String {
    let out = book_tools(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: `{needle}` not in {stderr}"
        );
    }
    assert!(
        stderr.len() < 4_000,
        "{args:?}: {} bytes of error",
        stderr.len()
    );
    stderr
}

/// `startpos moves` with `count` king moves back and forth (all legal).
fn long_command(count: usize) -> String {
    let cycle = ["5i4h", "5a4b", "4h5i", "4b5a"];
    let mut text = String::from("startpos moves");
    for i in 0..count {
        text.push(' ');
        text.push_str(cycle[i % 4]);
    }
    text
}

/// A DB2016 entry of `pos` with every legal move valued and the given ponder.
fn complete_entry(pos: &Position, ponder: Option<&str>) -> String {
    let mut text = format!("sfen {}\n", pos.to_sfen());
    for mv in pos.legal_moves() {
        text.push_str(&format!("{mv} {} 10 0 1\n", ponder.unwrap_or("none")));
    }
    text
}

#[test]
fn import_refuses_the_king_capturable_position_and_ply_65535() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.db");
    for (sfen, rule) in [
        (
            "4k4/4R4/9/9/9/9/9/9/4K4 b - 1",
            "capture the opponent's king",
        ),
        (
            "4k4/9/9/9/9/9/9/9/4K4 b G 65535",
            "ply 65535 is above the limit",
        ),
    ] {
        std::fs::write(
            &book,
            format!("#YANEURAOU-DB2016 1.00\nsfen {sfen}\n5b5a+ none 0 0 1\n"),
        )
        .unwrap();
        let db = dir.path().join("store");
        clean_failure(
            &["import", "--create", "--db", s(&db), s(&book)],
            &["b.db:2", rule],
        );
    }
}

#[test]
fn kifu_add_refuses_the_king_capturable_position_and_huge_move_lists() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for (text, rule) in [
        (
            format!("{KING_CAPTURABLE} moves 5b5a+\n"),
            "capture the opponent's king",
        ),
        (format!("{}\n", long_command(65_535)), "MAX_PLY"),
        (format!("{}\n", long_command(70_000)), "MAX_PLY"),
    ] {
        let file = dir.path().join("games.usi");
        std::fs::write(&file, text).unwrap();
        clean_failure(
            &["kifu", "add", "--create", "--db", s(&db), s(&file)],
            &["games.usi:1", rule, "no game could be read"],
        );
    }
}

#[test]
fn roots_set_refuses_the_king_capturable_position_and_huge_move_lists() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for (text, rule) in [
        (
            format!("startpos\n{KING_CAPTURABLE}\n"),
            "capture the opponent's king",
        ),
        (format!("startpos\n{}\n", long_command(65_535)), "MAX_PLY"),
        (format!("startpos\n{}\n", long_command(70_000)), "MAX_PLY"),
    ] {
        let file = dir.path().join("roots.txt");
        std::fs::write(&file, text).unwrap();
        clean_failure(
            &["roots", "set", "--create", "--db", s(&db), s(&file)],
            &["roots.txt:2", rule],
        );
    }
}

/// The positions as one command-line argument: Linux caps an argument at
/// 128 KiB, so the longest move list is 26,000 moves (past MAX_PLY all the same),
/// and ply 65,535 comes as an SFEN.
fn argv_cases() -> [(String, &'static str); 3] {
    [
        (KING_CAPTURABLE.to_owned(), "capture the opponent's king"),
        (
            "sfen 4k4/9/9/9/9/9/9/9/4K4 b G 65535".to_owned(),
            "ply 65535 is above the limit",
        ),
        (long_command(26_000), "MAX_PLY"),
    ]
}

#[test]
fn show_refuses_the_king_capturable_position_and_huge_move_lists() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    SledStore::open(&db).unwrap();
    for (position, rule) in argv_cases() {
        clean_failure(
            &["show", "--db", s(&db), &position],
            &["cannot read position", rule],
        );
    }
}

#[test]
fn perft_refuses_the_king_capturable_position_and_huge_move_lists() {
    for (position, rule) in argv_cases() {
        clean_failure(&["perft", &position, "1"], &["cannot read position", rule]);
    }
}

/// An endless input (no newline) is refused at its header, after at most one
/// line's worth of reading; no store is created.
#[test]
fn import_of_dev_zero_fails_at_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    // A stream is copied before it is read twice; endless input without a line
    // end is refused while copying, naming the input.
    clean_failure(
        &["import", "--create", "--db", s(&db), "/dev/zero"],
        &["/dev/zero", "no line end"],
    );
    assert!(!db.exists());
}

/// An entry with an illegal ponder is reported as bad and, with --skip-bad,
/// neither stored nor counted.
#[test]
fn import_skip_bad_does_not_store_bad_entries() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let start = Position::startpos();
    let mut after = start.clone();
    after.do_move(after.parse_move("7g7f").unwrap());
    let book = dir.path().join("b.db");
    std::fs::write(
        &book,
        format!(
            "#YANEURAOU-DB2016 1.00\n{}{}",
            complete_entry(&start, None),
            // After 7g7f the pawn has left 7g: 7g7f is no reply to any move.
            complete_entry(&after, Some("7g7f"))
        ),
    )
    .unwrap();
    let out = book_tools(&["import", "--create", "--db", s(&db), "--skip-bad", s(&book)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("illegal ponder"), "{stderr}");
    assert!(
        stdout.contains("imported 1 ") && stdout.contains("bad 1"),
        "{stdout}"
    );
    let store = SledStore::open(&db).unwrap();
    assert_eq!(store.len(), 1);
}

#[test]
fn roots_set_drops_duplicate_roots() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let file = dir.path().join("roots.txt");
    let mut text = "startpos\n".repeat(200_000);
    // The same position reached by moves is a duplicate too.
    text.push_str("startpos moves 5i4h 5a4b 4h5i 4b5a\nstartpos moves 7g7f\n");
    std::fs::write(&file, text).unwrap();
    let out = ok(&["roots", "set", "--create", "--db", s(&db), s(&file)]);
    assert!(out.contains("dropped 200000 duplicate root(s)"), "{out}");
    assert!(out.contains("stored 2 roots"), "{out}");
    let store = SledStore::open(&db).unwrap();
    assert_eq!(
        store.config().unwrap().unwrap().roots,
        ["startpos", "startpos moves 7g7f"]
    );
}

/// A store held by another process (here: this test) gets one clear message.
#[test]
fn a_store_in_use_gets_one_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let _held = SledStore::open(&db).unwrap();
    let roots = dir.path().join("roots.txt");
    std::fs::write(&roots, "startpos\n").unwrap();
    for args in [
        vec!["stats", "--db", s(&db)],
        vec!["roots", "set", "--create", "--db", s(&db), s(&roots)],
    ] {
        let stderr = clean_failure(
            &args,
            &["in use by another process (a running coordinator?)"],
        );
        assert_eq!(stderr.matches("in use").count(), 1, "{stderr}");
        assert!(!stderr.contains("WouldBlock"), "{stderr}");
    }
}

/// Readers refuse what is not a store and create nothing in it or at it.
#[test]
fn reading_subcommands_do_not_create_stores() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("photos");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("cat.jpg"), b"meow").unwrap();
    let missing = dir.path().join("missing");
    let out = dir.path().join("out.db");
    for db in [&other, &missing] {
        for args in [
            vec!["stats", "--db", s(db)],
            vec!["show", "--db", s(db), "startpos"],
            vec!["export", "--db", s(db), "--out", s(&out)],
        ] {
            clean_failure(&args, &["is not a book store"]);
        }
    }
    let names: Vec<_> = std::fs::read_dir(&other)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["cat.jpg"]);
    assert!(!missing.exists());
}

/// Issue 45: `--create` makes a store only where nothing else is. A directory
/// of other files (or a file) is refused, named, and left as it was; an empty
/// directory becomes the store.
#[test]
fn create_refuses_a_directory_of_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("photos");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("cat.jpg"), b"meow").unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"notes").unwrap();
    let roots = dir.path().join("roots.txt");
    std::fs::write(&roots, "startpos\n").unwrap();
    let book = dir.path().join("book.db2016");
    std::fs::write(&book, "#YANEURAOU-DB2016 1.00\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n7g7f 3c3d 50 10 0\n").unwrap();
    for (db, what) in [
        (&other, "holds other files and is not a book store"),
        (&file, "is not a directory"),
    ] {
        for args in [
            vec!["roots", "set", "--create", "--db", s(db), s(&roots)],
            vec!["import", "--create", "--db", s(db), s(&book)],
        ] {
            clean_failure(&args, &[what, s(db)]);
        }
    }
    let names: Vec<_> = std::fs::read_dir(&other)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["cat.jpg"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"notes");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    ok(&["roots", "set", "--create", "--db", s(&empty), s(&roots)]);
    let stats = ok(&["stats", "--db", s(&empty)]);
    assert!(stats.contains("positions"), "{stats}");
}

/// `book-tools stats | head`: the reader is gone before stats writes; stats ends
/// quietly (progress lines on stderr aside).
#[test]
fn stats_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let roots = dir.path().join("roots.txt");
    std::fs::write(&roots, "startpos\n").unwrap();
    ok(&["roots", "set", "--create", "--db", s(&db), s(&roots)]);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(["stats", "--db", s(&db)])
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("error"),
        "{stderr}"
    );
}

/// A KIF move line that cannot be read names file and line.
#[test]
fn kifu_add_names_an_unreadable_kif_move_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let file = dir.path().join("game.kif");
    std::fs::write(
        &file,
        "手合割：平手\n手数----指手---------消費時間--\n   1 ７六歩(77)\n   2 ？？歩(33)\n   3 投了\n",
    )
    .unwrap();
    clean_failure(
        &["kifu", "add", "--create", "--db", s(&db), s(&file)],
        &["game.kif:4", "cannot read the move line"],
    );
}

/// Issue 35, point 12: a typo in `--db` of a command that writes does not start a
/// new, empty book: without `--create` a missing store is an error that names
/// the flag, and nothing is made; with it the new store is made and said.
#[test]
fn writing_commands_make_a_store_only_with_create() {
    let dir = tempfile::tempdir().unwrap();
    let roots = dir.path().join("roots.txt");
    std::fs::write(&roots, "startpos\n").unwrap();
    let games = dir.path().join("games.usi");
    std::fs::write(&games, "startpos moves 7g7f 3c3d\n").unwrap();
    let book = dir.path().join("in.db2016");
    // One complete entry: every legal move of the start position valued.
    let moves: String = stera_rules::Position::startpos()
        .legal_moves()
        .iter()
        .map(|m| format!("{m} none 30 10 1\n"))
        .collect();
    std::fs::write(
        &book,
        format!(
            "#YANEURAOU-DB2016 1.00\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n{moves}"
        ),
    )
    .unwrap();
    let typo = dir.path().join("bok.db");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (args, db) in [
        (vec!["roots", "set", "--db", s(&typo), s(&roots)], &typo),
        (vec!["kifu", "add", "--db", s(&typo), s(&games)], &typo),
        (vec!["import", "--db", s(&typo), s(&book)], &typo),
        (vec!["roots", "set", "--db", s(&empty), s(&roots)], &empty),
    ] {
        let err = fails(&args);
        assert!(err.contains("--create"), "{args:?}: {err}");
        assert!(err.contains(&db.display().to_string()), "{args:?}: {err}");
        if db == &typo {
            assert!(!typo.exists(), "{args:?} made {}", typo.display());
        } else {
            assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "{args:?}");
        }
    }
    let made = book_tools(&["roots", "set", "--create", "--db", s(&typo), s(&roots)]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(said.contains("created a new book store"), "{said}");
    // An existing store needs no --create, and --create on it changes nothing.
    let again = book_tools(&["kifu", "add", "--db", s(&typo), s(&games)]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(!String::from_utf8_lossy(&again.stderr).contains("created"));
    ok(&["import", "--create", "--db", s(&typo), s(&book)]);
    assert!(ok(&["roots", "list", "--db", s(&typo)]).contains("startpos"));
}

/// Counts that size threads, engines or processes are bounded before anything
/// starts (found by the hostile pass: `match --concurrency 1000` and `worker
/// --slots 100000` aborted on memory).
#[test]
fn engine_and_thread_counts_are_bounded() {
    use crate::common::sibling_exe;
    let cases: [(std::path::PathBuf, Vec<&str>, &str); 4] = [
        (
            std::path::PathBuf::from(env!("CARGO_BIN_EXE_book-tools")),
            vec!["match", "--concurrency", "1000", "--games", "2"],
            "--concurrency",
        ),
        (sibling_exe("worker"), vec!["--slots", "100000"], "--slots"),
        (
            sibling_exe("coordinator"),
            vec!["--db", "unused.db", "--local-slots", "5000"],
            "--local-slots",
        ),
        (
            sibling_exe("coordinator"),
            vec!["--db", "unused.db", "--local-workers", "100000"],
            "--local-workers",
        ),
    ];
    for (exe, args, flag) in cases {
        let out = Command::new(&exe).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    assert!(!std::path::Path::new("unused.db").exists());
}
