//! Issue 28, item 1: the format of an export follows its path's extension
//! (`.ybb` YaneuraOu's binary book, anything else its text book) in every front
//! end, and an explicit `--format` that the extension contradicts is refused
//! before any work. `book-tools export --out x.ybb` used to write a text book.

use crate::common::{Dir, book_tools, ok, raw_book, s};

use std::process::Command;
use stera_formats::ybb::{MAGIC, YbbReader};

const TEXT_MAGIC: &[u8] = b"#YANEURAOU-DB2016";

/// A small store at `dir/db`.
fn store(dir: &Dir) -> std::path::PathBuf {
    let db = dir.path("db");
    let lines: Vec<&[&str]> = vec![&["7g7f", "3c3d"], &["2g2f"]];
    std::fs::write(dir.path("in.db"), raw_book(&lines, |_, i| i as i32 - 20)).unwrap();
    ok(&["import", "--create", "--db", s(&db), s(&dir.path("in.db"))]);
    db
}

#[test]
fn the_format_follows_the_extension() {
    let dir = Dir::new();
    let db = store(&dir);
    let (ybb, text) = (dir.path("x.ybb"), dir.path("x.db"));
    ok(&["export", "--db", s(&db), "--out", s(&ybb)]);
    ok(&["export", "--db", s(&db), "--out", s(&text)]);
    let binary = std::fs::read(&ybb).unwrap();
    assert!(
        binary.starts_with(MAGIC),
        "{:?}",
        &binary[..16.min(binary.len())]
    );
    let entries = YbbReader::open(&ybb).unwrap().count();
    assert!(entries >= 4, "{entries} entries");
    assert!(std::fs::read(&text).unwrap().starts_with(TEXT_MAGIC));
    // Explicit formats that agree give the same files; `db2016` is the former
    // name of `text`; an extension that names no format takes an explicit one.
    for (name, format, like) in [
        ("y.ybb", "ybb", &ybb),
        ("y.db", "text", &text),
        ("z.db", "db2016", &text),
        ("y.bin", "ybb", &ybb),
    ] {
        let out = dir.path(name);
        ok(&[
            "export",
            "--db",
            s(&db),
            "--out",
            s(&out),
            "--export-format",
            format,
        ]);
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(like).unwrap(),
            "{name} --format {format}"
        );
    }
}

/// The contradiction is found from the flags alone: the store is not even
/// opened (here it does not exist), no file is written, and the message names
/// the path and the format.
#[test]
fn a_format_the_extension_contradicts_is_refused_before_any_work() {
    let dir = Dir::new();
    let missing = dir.path("no-such-store");
    for (name, format) in [("x.ybb", "text"), ("x.db", "ybb"), ("x.DB2016", "ybb")] {
        let out = dir.path(name);
        let run = book_tools(&[
            "export",
            "--db",
            s(&missing),
            "--out",
            s(&out),
            "--export-format",
            format,
        ]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{name} {format}: {err}");
        assert!(err.contains(&format!("`{}`", s(&out))), "{err}");
        assert!(
            err.contains(&format!("format `{format}`"))
                || (format == "db2016" && err.contains("format `text`")),
            "{err}"
        );
        assert!(err.contains("leave the format to `auto`"), "{err}");
        assert!(!out.exists());
        assert!(!missing.exists(), "the store was touched");
    }
    // `remote export` refuses it before connecting (nothing listens there).
    let run = book_tools(&[
        "remote",
        "export",
        "--coordinator",
        "http://127.0.0.1:9",
        "--out",
        "book.ybb",
        "--export-format",
        "text",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`book.ybb`") && err.contains("format `text`"),
        "{err}"
    );
    assert!(!err.contains("cannot connect"), "{err}");
}

/// A move of a text book: its USI, depth and count.
type BookMove = (String, u32, u32);

/// Issue 36, point 6: what the README says of the text export holds on a real
/// one: `count` 1 on every move of the default export; `depth` 0 for a move
/// whose position is not in the book and, for a move into the book, one more
/// than the depth of that position's best line; each entry carries the ply at
/// which the book first reached its position.
#[test]
fn the_readme_claims_about_the_export_hold() {
    use std::collections::HashMap;
    use stera_rules::Position;
    let dir = Dir::new();
    let db = store(&dir);
    let out = dir.path("claims.db");
    ok(&["export", "--db", s(&db), "--out", s(&out)]);
    let text = std::fs::read_to_string(&out).unwrap();
    // Entries by the board part of their SFEN: (ply, moves as (usi, depth, count)).
    let mut entries: HashMap<String, (u32, Vec<BookMove>)> = HashMap::new();
    let mut current = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields[0] == "sfen" {
            let board = fields[1..4].join(" ");
            let ply = fields[4].parse().unwrap();
            entries.insert(board.clone(), (ply, Vec::new()));
            current = Some(board);
        } else {
            let (depth, count) = (fields[3].parse().unwrap(), fields[4].parse().unwrap());
            let board = current.as_ref().unwrap();
            entries
                .get_mut(board)
                .unwrap()
                .1
                .push((fields[0].to_owned(), depth, count));
        }
    }
    let board_of = |p: &Position| {
        p.to_sfen()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let start = Position::startpos();
    let (ply, moves) = &entries[&board_of(&start)];
    assert_eq!(*ply, 1);
    assert!(moves.iter().all(|(_, _, count)| *count == 1), "{moves:?}");
    let mut into_book = 0;
    for (usi, depth, _) in moves {
        let mut child = start.clone();
        child.do_move(child.parse_move(usi).unwrap());
        match entries.get(&board_of(&child)) {
            Some((child_ply, child_moves)) => {
                into_book += 1;
                assert_eq!(*child_ply, 2, "{usi}");
                assert_eq!(
                    *depth,
                    child_moves[0].1 + 1,
                    "{usi}: {moves:?} / {child_moves:?}"
                );
            }
            None => assert_eq!(*depth, 0, "{usi} leads out of the book"),
        }
    }
    assert_eq!(into_book, 2, "7g7f and 2g2f lead into the book: {moves:?}");
    assert!(
        entries
            .values()
            .all(|(_, m)| m.iter().all(|(_, _, c)| *c == 1)),
        "a count other than 1"
    );
}

/// Issue 36, point 4: weights asked for a `.ybb` book, which has no count field,
/// are refused before any work (they were dropped with a note), by `export`,
/// `remote export` and the coordinator's flags alike.
#[test]
fn weights_a_binary_book_cannot_carry_are_refused() {
    let dir = Dir::new();
    let missing = dir.path("no-such-store");
    let out = dir.path("x.ybb");
    for args in [
        vec![
            "export",
            "--db",
            s(&missing),
            "--out",
            s(&out),
            "--export-weights",
            "ndf",
        ],
        vec![
            "remote",
            "export",
            "--coordinator",
            "http://127.0.0.1:9",
            "--out",
            "x.ybb",
            "--export-weights",
            "policy",
        ],
    ] {
        let run = book_tools(&args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("no count field") && err.contains("x.ybb"),
            "{err}"
        );
        assert!(
            !err.contains("Ndf") && !err.contains("Policy"),
            "debug formatting: {err}"
        );
        assert!(!out.exists() && !missing.exists());
    }
    let run = Command::new(crate::common::sibling_exe("coordinator"))
        .args([
            "--db",
            s(&missing),
            "--create",
            "--export",
            s(&out),
            "--export-weights",
            "ndf",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && err.contains("no count field"),
        "{err}"
    );
    assert!(!missing.exists(), "the store was made");
    // Without weights the binary book is written as before.
    let db = store(&dir);
    ok(&["export", "--db", s(&db), "--out", s(&out)]);
    assert!(std::fs::read(&out).unwrap().starts_with(MAGIC));
}
