//! Issue 26, points 4, 6 and 7 through the built binary: endless input ends with
//! an error, counts have documented maxima, a roots file may start with a byte
//! order mark, and quarantines are listed by `stats` and lifted by `unban`.

use crate::common::{book_tools, ok, s};

use stera_book::{NodeId, NodeStore, SledStore};
use stera_rules::Position;

/// Exit 1 with every needle in the error; returns it.
fn clean_failure(args: &[&str], needles: &[&str]) -> String {
    let out = book_tools(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: `{needle}` not in {stderr}"
        );
    }
    stderr
}

#[test]
fn roots_set_and_kifu_add_end_on_endless_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    clean_failure(
        &["roots", "set", "--create", "--db", s(&db), "/dev/zero"],
        &["/dev/zero", "larger than 67108864 bytes"],
    );
    // Named like a file of USI lines, so that it is read as one.
    let games = dir.path().join("games.usi");
    std::os::unix::fs::symlink("/dev/zero", &games).unwrap();
    clean_failure(
        &["kifu", "add", "--create", "--db", s(&db), s(&games)],
        &["games.usi", "MAX_SKIPPED_LINE_BYTES"],
    );
    assert!(!db.exists(), "nothing stored from endless input");
}

#[test]
fn roots_beyond_the_ply_limit_or_the_root_count_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let file = dir.path().join("roots.txt");
    std::fs::write(&file, "startpos\nsfen 4k4/9/9/9/9/9/9/9/4K4 b G 10000\n").unwrap();
    clean_failure(
        &["roots", "set", "--create", "--db", s(&db), s(&file)],
        &["ply 10000", "ply limit"],
    );
    // MAX_ROOTS + 1 different roots: two kings and one piece in hand, placed
    // in every way the rules allow.
    let mut text = String::new();
    let mut n = 0;
    'outer: for black in 0..81 {
        for white in 0..81 {
            for hand in ["G", "S", "N", "L", "P"] {
                if black == white {
                    continue;
                }
                let mut board = vec!['.'; 81];
                board[black] = 'K';
                board[white] = 'k';
                let ranks: Vec<String> = board
                    .chunks(9)
                    .map(|r| {
                        let mut out = String::new();
                        let mut empty = 0;
                        for c in r {
                            if *c == '.' {
                                empty += 1;
                            } else {
                                if empty > 0 {
                                    out.push_str(&empty.to_string());
                                    empty = 0;
                                }
                                out.push(*c);
                            }
                        }
                        if empty > 0 {
                            out.push_str(&empty.to_string());
                        }
                        out
                    })
                    .collect();
                let sfen = format!("{} b {hand} 1", ranks.join("/"));
                if Position::from_sfen(&sfen).is_ok() {
                    text.push_str(&format!("sfen {sfen}\n"));
                    n += 1;
                    if n > stera_book::MAX_ROOTS {
                        break 'outer;
                    }
                }
            }
        }
    }
    std::fs::write(&file, text).unwrap();
    clean_failure(
        &["roots", "set", "--create", "--db", s(&db), s(&file)],
        &["MAX_ROOTS", "nothing stored"],
    );
}

#[test]
fn a_roots_file_may_start_with_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let file = dir.path().join("roots.txt");
    std::fs::write(&file, "\u{feff}startpos moves 7g7f\nstartpos\n").unwrap();
    let out = ok(&["roots", "set", "--create", "--db", s(&db), s(&file)]);
    assert!(out.contains("stored 2 roots"), "{out}");
    let store = SledStore::open(&db).unwrap();
    assert_eq!(
        store.config().unwrap().unwrap().roots,
        ["startpos moves 7g7f", "startpos"]
    );
}

#[test]
fn next_has_a_documented_maximum_count() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let file = dir.path().join("roots.txt");
    std::fs::write(&file, "startpos\n").unwrap();
    ok(&["roots", "set", "--create", "--db", s(&db), s(&file)]);
    for count in ["18446744073709551615", "1000000000000", "10001"] {
        let out = book_tools(&["next", "--db", s(&db), count]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{count}: {stderr}");
        assert!(stderr.contains("1..=10000"), "{count}: {stderr}");
    }
    let out = ok(&["next", "--db", s(&db), "10000"]);
    assert_eq!(
        out.lines().count(),
        1,
        "only the root can be selected: {out}"
    );
}

/// Quarantines (bans the coordinator made after failures on several workers)
/// are listed by `stats` and lifted by `unban`.
#[test]
fn stats_lists_quarantines_and_unban_lifts_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let start = Position::startpos();
    let mv = start.legal_moves()[0];
    let mut child = start.clone();
    child.do_move(mv);
    {
        let mut store = SledStore::open(&db).unwrap();
        store.ban(NodeId(0), mv).unwrap();
        store
            .record_quarantine(
                NodeId(0),
                mv,
                &format!("{}\t3 failed evaluations on 2 workers", child.to_sfen()),
            )
            .unwrap();
        store.flush().unwrap();
    }
    let stats = ok(&["stats", "--db", s(&db)]);
    assert!(stats.contains("quarantined      1"), "{stats}");
    assert!(stats.contains(&child.to_sfen()), "{stats}");
    let shown = ok(&["show", "--db", s(&db), &child.to_sfen()]);
    assert!(shown.contains("this position is quarantined"), "{shown}");
    clean_failure(&["unban", "--db", s(&db)], &["--all or --sfen"]);
    let out = ok(&["unban", "--db", s(&db), "--sfen", &child.to_sfen()]);
    assert!(out.contains("1 quarantine(s) lifted"), "{out}");
    let stats = ok(&["stats", "--db", s(&db)]);
    assert!(stats.contains("quarantined      0"), "{stats}");
    assert!(stats.contains("banned moves     0"), "{stats}");
    let store = SledStore::open(&db).unwrap();
    assert!(store.bans().unwrap().is_empty());
}

/// Issue 45, point 4: a TLS file is read with a bound, here `remote`'s CA file.
#[test]
fn a_tls_ca_file_from_dev_zero_is_refused() {
    clean_failure(
        &[
            "remote",
            "status",
            "--coordinator",
            "https://127.0.0.1:9",
            "--tls-ca",
            "/dev/zero",
        ],
        &["TLS CA file /dev/zero", "larger than 1048576 bytes"],
    );
}

/// Issue 45, point 7: an error quotes a few hundred bytes of any argument or
/// path, and still says what went wrong (a 100,000-character SFEN printed 100
/// KB, a 400 KB --out path 143 KB).
#[test]
fn errors_quote_a_few_hundred_bytes_of_long_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let sfen = format!("sfen {}", "Q".repeat(100_000));
    // Many short names: no single one is long, the path is.
    let long_dir = format!("{}/x.db", "/d".repeat(40_000));
    let missing = "p".repeat(100_000);
    let db = crate::common::single_root_book(dir.path());
    let cases: [(Vec<&str>, &str); 3] = [
        (vec!["evaluate", &sfen], "cannot read position"),
        (vec!["export", "--db", &db, "--out", &long_dir], "error:"),
        (vec!["export", "--db", &missing, "--out", "x.db"], "error:"),
    ];
    for (args, needle) in cases {
        let out = book_tools(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            &stderr[..stderr.len().min(500)]
        );
        assert!(
            stderr.contains(needle),
            "{}",
            &stderr[..stderr.len().min(500)]
        );
        assert!(
            stderr.len() < 1_000,
            "{} bytes: {}…",
            stderr.len(),
            &stderr[..500]
        );
        assert!(stderr.contains('…'), "no cut marked: {stderr}");
    }
}

/// Issue 45, point 9: a DB2016 value beyond ±32000 (99999) was clamped to a
/// mate score silently; now each is named with its line. An import that can
/// store nothing (every entry incomplete, or bad and skipped) exited 0 and
/// made the store; now it is an error and nothing is made.
#[test]
fn import_warns_of_clamped_values_and_refuses_a_file_with_nothing_to_import() {
    let dir = tempfile::tempdir().unwrap();
    let book = crate::common::raw_book(&[&["7g7f"]], |_, i| if i == 0 { 99_999 } else { 10 });
    let file = dir.path().join("in.db");
    std::fs::write(&file, &book).unwrap();
    let line = book
        .lines()
        .position(|l| l.contains(" 99999 "))
        .map(|i| i + 1)
        .unwrap();
    let out = book_tools(&[
        "import",
        "--create",
        "--db",
        s(&dir.path().join("db")),
        s(&file),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: {}:{line}: value 99999 is beyond ±32000 and is read as the mate score 32000",
            file.display()
        )),
        "{stderr}"
    );
    assert_eq!(stderr.matches("value 99999").count(), 2, "{stderr}");

    let incomplete = dir.path().join("incomplete.db");
    std::fs::write(
        &incomplete,
        "#YANEURAOU-DB2016 1.00\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n7g7f none 5 10 1\n",
    )
    .unwrap();
    let bad = dir.path().join("bad.db");
    std::fs::write(
        &bad,
        "#YANEURAOU-DB2016 1.00\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n9z9z none 5 10 1\n",
    )
    .unwrap();
    for (file, extra) in [(&incomplete, None), (&bad, Some("--skip-bad"))] {
        let db = dir.path().join("nothing.db");
        let mut args = vec!["import", "--create", "--db", s(&db), s(file)];
        args.extend(extra);
        let stderr = clean_failure(
            &args,
            &["has no complete entry to import", "nothing was imported"],
        );
        assert!(!db.exists(), "a store was made: {stderr}");
    }
}

/// Issue 45, point 9: `migrate --out` an existing directory said only "is a
/// directory; give a file name"; it now says what to give.
#[test]
fn migrate_onto_a_directory_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::common::single_root_book(dir.path());
    let existing = dir.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    let stderr = clean_failure(
        &["migrate", "--db", &db, "--out", s(&existing)],
        &[
            "exists (a directory)",
            "the path of the NEW merged store",
            "merged.db",
        ],
    );
    assert_eq!(std::fs::read_dir(&existing).unwrap().count(), 0, "{stderr}");
}
