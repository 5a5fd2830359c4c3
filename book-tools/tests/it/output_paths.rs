//! Issue 26, point 1: `next --think-file` and `match --out-games` wrote into a
//! store's files (`S/db`, `S/conf`, through a symbolic link to S), and the store
//! then failed to open ("Read corrupted data"). Every output path now goes
//! through the one check of `stera_book::store_path`: these runs are refused,
//! nothing is written, and the store still opens and reads as before.

use std::path::{Path, PathBuf};

use crate::common::{book_tools, ok, s};

/// The bytes of every file at the top of the store (sled's `conf`, `db`, ...).
fn store_files(db: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// The output paths that reach into `db` (a store in `dir`), however spelled.
fn paths_into(dir: &Path, db: &Path) -> Vec<PathBuf> {
    let link = dir.join("link-to-store");
    std::os::unix::fs::symlink(db, &link).unwrap();
    let file_link = dir.join("link-to-conf");
    std::os::unix::fs::symlink(db.join("conf"), &file_link).unwrap();
    let hard = dir.join("hard-link-to-conf");
    std::fs::hard_link(db.join("conf"), &hard).unwrap();
    let dangling = dir.join("link-to-new-file-in-store");
    std::os::unix::fs::symlink(db.join("new.txt"), &dangling).unwrap();
    vec![
        db.join("db"),
        db.join("conf"),
        db.join("new.txt"),
        db.join("blobs").join("x"),
        link.join("db"),
        link.join("conf"),
        file_link,
        hard,
        dangling,
        dir.join("sub").join("..").join("book.db").join("db"),
    ]
}

fn store_opens(db: &Path) {
    let stats = ok(&["stats", "--db", s(db)]);
    assert!(!stats.is_empty());
}

#[test]
fn next_think_file_never_writes_into_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    ok(&[
        "synth",
        "--db",
        s(&db),
        "--positions",
        "200",
        "--batch",
        "16",
    ]);
    let stats_before = ok(&["stats", "--db", s(&db)]);
    let before = store_files(&db);
    for out in paths_into(dir.path(), &db) {
        let run = book_tools(&["next", "--db", s(&db), "4", "--think-file", s(&out)]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(
            !run.status.success(),
            "next --think-file {} was allowed: {err}",
            out.display()
        );
        assert!(
            err.contains("refusing to write"),
            "{}: {err}",
            out.display()
        );
        assert!(err.contains("--think-file"), "{err}");
    }
    assert_eq!(store_files(&db), before);
    assert!(!db.join("new.txt").exists());
    assert_eq!(ok(&["stats", "--db", s(&db)]), stats_before);
    // A path outside every store still works.
    let fine = dir.path().join("think.sfen");
    ok(&["next", "--db", s(&db), "4", "--think-file", s(&fine)]);
    assert_eq!(std::fs::read_to_string(&fine).unwrap().lines().count(), 4);
}

#[test]
fn match_out_games_never_writes_into_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let other = dir.path().join("other.db");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    for store in [&db, &other] {
        ok(&[
            "synth",
            "--db",
            s(store),
            "--positions",
            "100",
            "--batch",
            "16",
        ]);
    }
    let before = store_files(&db);
    let other_before = store_files(&other);
    let mut outs = paths_into(dir.path(), &db);
    outs.push(other.join("conf"));
    for out in outs {
        let run = book_tools(&[
            "match",
            "--db",
            s(&db),
            "--games",
            "2",
            "--nodes",
            "50",
            "--ply-limit",
            "16",
            "--out-games",
            s(&out),
        ]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(
            !run.status.success(),
            "match --out-games {} was allowed: {err}",
            out.display()
        );
        assert!(
            err.contains("refusing to write"),
            "{}: {err}",
            out.display()
        );
        // Refused before a game was played.
        assert!(!err.contains("wrote "), "{err}");
    }
    assert_eq!(store_files(&db), before);
    assert_eq!(store_files(&other), other_before);
    store_opens(&db);
    store_opens(&other);
}

/// A new store is not made inside another store's directory either (`--db`
/// of the commands that create one).
#[test]
fn no_store_is_made_inside_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    ok(&["synth", "--db", s(&db), "--positions", "50"]);
    let before = store_files(&db);
    let roots = dir.path().join("roots.txt");
    std::fs::write(&roots, "startpos\n").unwrap();
    for inner in [db.join("inner.db"), db.join("blobs").join("x.db")] {
        let run = book_tools(&["roots", "set", "--create", "--db", s(&inner), s(&roots)]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{}: {err}", inner.display());
        assert!(err.contains("inside the book store"), "{err}");
        assert!(!inner.join("conf").exists());
    }
    assert_eq!(store_files(&db), before);
    store_opens(&db);
}

/// Issue 35, point 3: an export writes minutes after its start. The directory
/// of `--out`, swapped for a symbolic link into another store once the book is
/// loaded (and the path long checked), does not redirect the write: the book
/// lands in the directory that was checked, and the store's files stay as they
/// were.
#[test]
fn an_export_directory_swapped_for_a_link_into_a_store_after_start_changes_no_store() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let other = dir.path().join("other.db");
    ok(&[
        "synth",
        "--db",
        s(&db),
        "--positions",
        "40000",
        "--batch",
        "64",
    ]);
    ok(&[
        "synth",
        "--db",
        s(&other),
        "--positions",
        "50",
        "--batch",
        "8",
    ]);
    let before = store_files(&other);
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    // Named like the store's data file: written through the link, it would
    // replace it.
    let out = exports.join("db");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(["export", "--db", s(&db), "--out", s(&out)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 && !line.starts_with("loaded") {
        line.clear();
    }
    assert!(line.starts_with("loaded"), "no `loaded` line: {line}");
    let moved = dir.path().join("moved");
    std::fs::rename(&exports, &moved).unwrap();
    std::os::unix::fs::symlink(&other, &exports).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "export failed: {rest}");
    assert_eq!(store_files(&other), before, "the other store was written");
    store_opens(&other);
    let book = std::fs::read_to_string(moved.join("db")).unwrap();
    assert!(
        book.starts_with("#YANEURAOU-DB2016"),
        "{}",
        &book[..50.min(book.len())]
    );
}

/// Issue 36, point 6: a backup onto an existing path says that it exists (a
/// backup goes into a new directory), not that it "is a directory".
#[test]
fn a_backup_onto_an_existing_path_says_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    ok(&["synth", "--db", s(&db), "--positions", "50", "--batch", "8"]);
    let existing = dir.path().join("old-backup");
    std::fs::create_dir(&existing).unwrap();
    let out = crate::common::book_tools(&["backup", "--db", s(&db), "--out", s(&existing)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exists already"), "{err}");
    assert!(!err.contains("is a directory"), "{err}");
    assert_eq!(std::fs::read_dir(&existing).unwrap().count(), 0);
}
