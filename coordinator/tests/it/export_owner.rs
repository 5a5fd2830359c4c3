//! Issue 45, point 1: a coordinator never makes a store it was not told to
//! create (`--create`, as in book-tools), and never replaces an `--export` file
//! its store did not write. Real coordinator processes with local workers.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common;

/// `coordinator --db DB ARGS...` on a free port, with one local worker thinking
/// two positions, to its end.
fn run(db: &Path, args: &[&str]) -> Output {
    Command::new(common::EXE)
        .arg("--db")
        .arg(db)
        .args(["--listen", "127.0.0.1:0", "--local-workers", "1"])
        .args(["--think-limit", "2", "--status-every-secs", "0"])
        .args(args)
        .env_remove("STERA_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A missing `--db` is refused without `--create`, naming the flag, and
/// nothing is made; with it the store is made, and the same command again
/// grows it (the README's first command, run twice).
#[test]
fn a_store_is_made_only_with_create() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo.db");
    let out = run(&db, &[]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("does not exist") && err.contains("--create"),
        "{err}"
    );
    assert!(!db.exists(), "a refused run made the store");

    // A directory that holds no store is refused the same way.
    let unrelated = dir.path().join("photos");
    std::fs::create_dir(&unrelated).unwrap();
    std::fs::write(unrelated.join("a.jpg"), b"jpeg").unwrap();
    let err = stderr(&run(&unrelated, &[]));
    assert!(err.contains("is not a book store"), "{err}");
    assert!(!unrelated.join("db").exists());
    // With --create too: a store is made only in a new or empty directory,
    // never among other files.
    let out = run(&unrelated, &["--create"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("holds other files and is not a book store"),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(&unrelated)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a.jpg"]);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&empty, &["--create"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(common::book_len(&empty) > 0);

    let book = dir.path().join("book.db2016");
    let mut nodes = 0;
    for round in 1..=2 {
        let out = run(&db, &["--create", "--export", s(&book)]);
        assert!(out.status.success(), "round {round}: {}", stderr(&out));
        let grown = common::book_len(&db);
        assert!(
            grown > nodes,
            "round {round}: {grown} positions after {nodes}"
        );
        nodes = grown;
    }
    assert!(book.is_file());
}

/// The defect of issue 45: a typo in `--db` started a new, empty store whose
/// export replaced the good book. Now a file at `--export` that this store did
/// not write is refused at start and left byte for byte: by a new store, by an
/// existing store that never wrote it, and by the store that wrote it once it
/// changed. The store's own last export is replaced run after run.
#[test]
fn an_export_this_store_did_not_write_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.db2016");
    let good_bytes = b"#YANEURAOU-DB2016 1.00\nsfen a book to keep\n7g7f none 100 20 1\n";
    std::fs::write(&good, good_bytes).unwrap();

    let typo = dir.path().join("typo.db");
    let out = run(&typo, &["--create", "--export", s(&good)]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("refusing to start") && err.contains("move it away"),
        "{err}"
    );
    assert_eq!(std::fs::read(&good).unwrap(), good_bytes);
    assert!(!typo.exists(), "the refused run made the store");

    // A store that exists and exported elsewhere: still not its file.
    let db = dir.path().join("book.db");
    let own = dir.path().join("own.db2016");
    let out = run(&db, &["--create", "--export", s(&own)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&run(&db, &["--export", s(&good)]));
    assert!(err.contains("wrote no book there"), "{err}");
    assert_eq!(std::fs::read(&good).unwrap(), good_bytes);
    let nodes = common::book_len(&db);

    // Its own export is replaced, the book grown, run after run; by a path
    // written another way too (the same file).
    let out = run(&db, &["--export", s(&own)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(common::book_len(&db) > nodes);
    let other_name = dir.path().join(".").join("own.db2016");
    let out = run(&db, &["--export", s(&other_name)]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Changed since (appended to, or replaced by a file of the same length):
    // refused, and left as it is.
    let mut changed = std::fs::read(&own).unwrap();
    let last = changed.len() - 2;
    changed[last] ^= 1;
    std::fs::write(&own, &changed).unwrap();
    let err = stderr(&run(&db, &["--export", s(&own)]));
    assert!(err.contains("changed since"), "{err}");
    assert_eq!(std::fs::read(&own).unwrap(), changed);
}
