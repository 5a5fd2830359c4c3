//! `.ybb` books through the built binary: `export --format ybb` holds exactly
//! what the text export holds, and `import` reads `.ybb` files as it reads text.

use crate::common;

use crate::common::{Dir, fails, ok, s};

use std::path::Path;

use stera_formats::db2016::{BookEntry, Db2016Reader};
use stera_formats::ybb::YbbReader;
use stera_rules::packed_sfen;

/// A complete raw DB2016 book along `lines`, every legal move valued by a hash
/// of position and move.
fn raw_book(lines: &[&[&str]]) -> String {
    common::raw_book(lines, |pos, i| {
        let k = pos.key().0 ^ (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        i32::try_from((k ^ (k >> 41)) % 801).unwrap() - 400
    })
}

/// Lines with captures (hands on both sides), a promotion, drops, and positions
/// with either side to move.
const LINES: [&[&str]; 4] = [
    &["7g7f", "3c3d", "8h2b+", "3a2b", "B*4e", "B*6e"],
    &["7g7f", "3c3d", "2g2f", "4c4d", "2f2e", "2b3c"],
    &[
        "2g2f", "8c8d", "2f2e", "8d8e", "2e2d", "2c2d", "2h2d", "P*2c",
    ],
    &["5g5f", "5c5d", "2h5h"],
];

fn text_entries(path: &Path) -> Vec<BookEntry> {
    Db2016Reader::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn ybb_entries(path: &Path) -> Vec<BookEntry> {
    YbbReader::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn ybb_export_equals_the_text_export_and_imports_alike() {
    let dir = Dir::new();
    let db = dir.path("db");
    let raw = raw_book(&LINES);
    let positions = raw.lines().filter(|l| l.starts_with("sfen ")).count();
    std::fs::write(dir.path("in.db"), raw).unwrap();
    ok(&["import", "--create", "--db", s(&db), s(&dir.path("in.db"))]);

    let (text, binary) = (dir.path("book.db"), dir.path("book.ybb"));
    ok(&["export", "--db", s(&db), "--out", s(&text)]);
    let report = ok(&[
        "export",
        "--db",
        s(&db),
        "--out",
        s(&binary),
        "--export-format",
        "ybb",
    ]);
    // The scratch text export beside the output is gone.
    assert_eq!(dir.names(), ["book.db", "book.ybb", "db", "in.db"]);

    let from_text = text_entries(&text);
    let from_ybb = ybb_entries(&binary);
    assert!(
        report.contains(&format!("wrote {} entries", from_text.len())),
        "{report}"
    );
    assert_eq!(from_ybb.len(), from_text.len());
    assert_eq!(from_text.len(), positions);
    let drops = from_text
        .iter()
        .flat_map(|e| &e.moves)
        .filter(|m| m.mv.is_drop())
        .count();
    let promotions = from_text
        .iter()
        .flat_map(|e| &e.moves)
        .filter(|m| m.mv.is_promotion())
        .count();
    let white = from_text
        .iter()
        .filter(|e| e.sfen().contains(" w "))
        .count();
    assert!(drops > 0 && promotions > 0 && white > 0);
    // The .ybb book is in PackedSfen order; the text export in SFEN order.
    let mut sorted = from_text.clone();
    sorted.sort_by_key(|e| packed_sfen::pack_sfen(e.sfen()).unwrap().0);
    let mut depths = 0;
    for (t, b) in sorted.iter().zip(&from_ybb) {
        assert_eq!(b.sfen(), t.sfen());
        assert_eq!(b.moves.len(), t.moves.len(), "moves of {}", t.sfen());
        for (tm, bm) in t.moves.iter().zip(&b.moves) {
            assert_eq!(
                (bm.mv, bm.value, bm.depth),
                (tm.mv, tm.value, tm.depth),
                "in {}",
                t.sfen()
            );
            // What the format does not carry.
            assert_eq!((bm.ponder, bm.count), (None, 0));
            depths += usize::from(tm.depth > 0);
        }
    }
    assert!(depths > 0, "the export has propagated depths");

    // Importing the .ybb book stores what importing the text book stores.
    let (from_b, from_t) = (dir.path("db-ybb"), dir.path("db-text"));
    let report = ok(&["import", "--create", "--db", s(&from_b), s(&binary)]);
    assert!(
        report.contains(&format!(
            "entries {}: imported {}",
            from_text.len(),
            from_text.len()
        )),
        "{report}"
    );
    assert!(report.contains("incomplete 0, bad 0"), "{report}");
    ok(&["import", "--create", "--db", s(&from_t), s(&text)]);
    let (raw_b, raw_t) = (dir.path("raw-b.db"), dir.path("raw-t.db"));
    ok(&[
        "export",
        "--db",
        s(&from_b),
        "--out",
        s(&raw_b),
        "--export-raw",
    ]);
    ok(&[
        "export",
        "--db",
        s(&from_t),
        "--out",
        s(&raw_t),
        "--export-raw",
    ]);
    assert_eq!(
        std::fs::read(&raw_b).unwrap(),
        std::fs::read(&raw_t).unwrap()
    );
    // The raw export of the imported book holds the exported values and depths.
    let raw = text_entries(&raw_b);
    for t in &from_text {
        let r = raw.iter().find(|r| r.sfen() == t.sfen()).unwrap();
        for tm in &t.moves {
            let rm = r.moves.iter().find(|m| m.mv == tm.mv).unwrap();
            assert_eq!((rm.value, rm.depth), (tm.value, tm.depth), "{}", t.sfen());
        }
    }
}

#[test]
fn a_corrupt_ybb_import_names_the_record_and_stores_nothing() {
    let dir = Dir::new();
    let db = dir.path("db");
    std::fs::write(dir.path("in.db"), raw_book(&LINES[3..])).unwrap();
    ok(&["import", "--create", "--db", s(&db), s(&dir.path("in.db"))]);
    let binary = dir.path("book.ybb");
    ok(&[
        "export",
        "--db",
        s(&db),
        "--out",
        s(&binary),
        "--export-format",
        "ybb",
    ]);

    // The first move of the first record becomes a rook drop nobody can make.
    let mut bytes = std::fs::read(&binary).unwrap();
    let records = usize::try_from(u64::from_le_bytes(bytes[16..24].try_into().unwrap())).unwrap();
    let moves = 32 + 44 * records;
    let drop = stera_rules::move16::to_move16("R*5e".parse().unwrap());
    bytes[moves..moves + 2].copy_from_slice(&drop.to_le_bytes());
    let corrupt = dir.path("corrupt.ybb");
    std::fs::write(&corrupt, &bytes).unwrap();
    let fresh = dir.path("fresh");
    let err = fails(&["import", "--create", "--db", s(&fresh), s(&corrupt)]);
    assert!(err.contains("record #0"), "{err}");
    assert!(err.contains("`R*5e`"), "{err}");
    assert!(err.contains("nothing was imported"), "{err}");
    // With --skip-bad the other records are imported.
    let report = ok(&[
        "import",
        "--create",
        "--db",
        s(&fresh),
        s(&corrupt),
        "--skip-bad",
    ]);
    assert!(
        report.contains(&format!("imported {}", records - 1)),
        "{report}"
    );

    // A file that is not a .ybb book.
    let fake = dir.path("fake.ybb");
    std::fs::write(&fake, "#YANEURAOU-DB2016 1.00\n".repeat(3)).unwrap();
    let err = fails(&["import", "--create", "--db", s(&fresh), s(&fake)]);
    assert!(err.contains("not a .ybb book"), "{err}");
}

/// Issue 26, point 7: a `.ybb` whose record count says 0 imported as an empty
/// book with exit 0. An empty book file is an error, and nothing is created.
#[test]
fn a_ybb_with_no_records_is_refused() {
    let dir = Dir::new();
    let db = dir.path("db");
    std::fs::write(dir.path("in.db"), raw_book(&LINES[3..])).unwrap();
    ok(&["import", "--create", "--db", s(&db), s(&dir.path("in.db"))]);
    let binary = dir.path("book.ybb");
    ok(&[
        "export",
        "--db",
        s(&db),
        "--out",
        s(&binary),
        "--export-format",
        "ybb",
    ]);
    let mut bytes = std::fs::read(&binary).unwrap();
    bytes.truncate(32);
    bytes[16..24].copy_from_slice(&0u64.to_le_bytes());
    let empty = dir.path("empty.ybb");
    std::fs::write(&empty, &bytes).unwrap();
    let fresh = dir.path("fresh");
    let err = fails(&["import", "--create", "--db", s(&fresh), s(&empty)]);
    assert!(err.contains("holds no book entries"), "{err}");
    assert!(!fresh.exists(), "no store is created for an empty book");
}
