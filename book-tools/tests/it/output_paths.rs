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
    ok(&["synth", "--db", s(&db), "--nodes", "200", "--batch", "16"]);
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
        ok(&["synth", "--db", s(store), "--nodes", "100", "--batch", "16"]);
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
    ok(&["synth", "--db", s(&db), "--nodes", "50"]);
    let before = store_files(&db);
    let roots = dir.path().join("roots.txt");
    std::fs::write(&roots, "startpos\n").unwrap();
    for inner in [db.join("inner.db"), db.join("blobs").join("x.db")] {
        let run = book_tools(&["roots", "set", "--db", s(&inner), s(&roots)]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{}: {err}", inner.display());
        assert!(err.contains("inside the book store"), "{err}");
        assert!(!inner.join("conf").exists());
    }
    assert_eq!(store_files(&db), before);
    store_opens(&db);
}
