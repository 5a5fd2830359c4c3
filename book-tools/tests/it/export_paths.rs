//! `book-tools export --out` inside a store destroyed it ("Read corrupted data" on
//! the next open). Every path into a store is now refused and the store stays whole.

use crate::common::{book_tools, s};

#[test]
fn exports_into_a_store_are_refused_and_the_store_survives() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let other = dir.path().join("other.db");
    // Two small real stores.
    for store in [&db, &other] {
        let out = book_tools(&["synth", "--db", s(store), "--positions", "50"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let before = std::fs::read(db.join("conf")).unwrap();
    for out in [
        db.join("db"),
        db.join("conf"),
        db.join("fresh.db2016"),
        dir.path().join("book.db/../book.db/db"),
        other.join("db"),
    ] {
        let run = book_tools(&["export", "--db", s(&db), "--out", s(&out)]);
        assert!(
            !run.status.success(),
            "export to {} was allowed",
            out.display()
        );
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains("refusing to write"), "{err}");
    }
    assert_eq!(std::fs::read(db.join("conf")).unwrap(), before);
    // Both stores still open and export where they may.
    for store in [&db, &other] {
        let out = dir.path().join("ok.db2016");
        let run = book_tools(&["export", "--db", s(store), "--out", s(&out)]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(
            std::fs::read_to_string(&out)
                .unwrap()
                .starts_with("#YANEURAOU-DB2016")
        );
    }
}

/// `--out -` used to write a file named `-` in the working directory; the
/// user who typed it wanted standard output, which an export (written beside
/// its name, then renamed) does not do. It is refused and nothing is written.
#[test]
fn an_export_to_a_dash_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let synth = book_tools(&["synth", "--db", s(&db), "--positions", "20"]);
    assert!(synth.status.success());
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(["export", "--db", s(&db), "--export", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("--export -") && err.contains("standard output"),
        "{err}"
    );
    assert!(run.stdout.is_empty());
    assert!(!dir.path().join("-").exists());
}
