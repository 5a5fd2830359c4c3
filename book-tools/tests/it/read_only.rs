//! Issue 45, point 2: reading writes nothing. sled rewrites its `db` file and
//! adds `snap.*` files at every open, and on a store cut short that made the
//! damage permanent: the tail put back, a store `check` had opened read 13,132
//! positions of 15,000. Every command that only reads (`check`, `stats`,
//! `show`, `export`, `next`, `backup`, `roots list`) leaves every byte of every
//! file of the store as it was, whole or cut at several points; and the tail of
//! a cut store put back after all of them, the store reads whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{book_tools, ok, s, synth_store};

/// Every file under `dir` (relative path -> bytes), and every directory.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let rel = entry.path().strip_prefix(dir).unwrap().to_path_buf();
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
                found.insert(rel, None);
            } else {
                found.insert(rel, Some(std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    found
}

/// Runs each reading command on `db` and checks after each that the store's
/// files are byte for byte what they were; returns how many refused it.
fn read_everything(db: &Path, scratch: &Path) -> usize {
    let before = contents(db);
    let d = s(db);
    let export = scratch.join("out.db2016");
    let ybb = scratch.join("out.ybb");
    let backup = scratch.join("backup.db");
    let commands: [Vec<&str>; 8] = [
        vec!["check", "--db", d],
        vec!["stats", "--db", d],
        vec!["show", "--db", d, "startpos"],
        vec!["export", "--db", d, "--out", s(&export)],
        vec!["export", "--db", d, "--out", s(&ybb)],
        vec!["next", "--db", d, "5"],
        vec!["backup", "--db", d, "--out", s(&backup)],
        vec!["roots", "list", "--db", d],
    ];
    let mut refused = 0;
    for args in &commands {
        let out = book_tools(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if !out.status.success() {
            refused += 1;
        }
        let after = contents(db);
        let changed: Vec<&PathBuf> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .collect();
        assert!(
            changed.is_empty(),
            "`{}` changed {changed:?} of the store",
            args.join(" ")
        );
        let _ = std::fs::remove_dir_all(&backup);
    }
    refused
}

#[test]
fn reading_commands_leave_every_byte_of_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 15_000, 8);
    let files = contents(&db);
    assert_eq!(read_everything(&db, dir.path()), 0, "an intact store reads");
    let full = files[Path::new("db")].clone().unwrap();
    assert!(full.len() > 1 << 20, "{}", full.len());

    for percent in [95, 80, 50] {
        let cut = dir.path().join(format!("cut-{percent}.db"));
        std::fs::create_dir(&cut).unwrap();
        for (rel, bytes) in &files {
            match bytes {
                None => std::fs::create_dir_all(cut.join(rel)).unwrap(),
                Some(b) if rel == Path::new("db") => {
                    std::fs::write(cut.join(rel), &b[..b.len() * percent / 100]).unwrap();
                }
                Some(b) => std::fs::write(cut.join(rel), b).unwrap(),
            }
        }
        let refused = read_everything(&cut, dir.path());
        assert!(refused > 0, "the store cut to {percent}% read as whole");
        // The missing tail put back: the store is whole again.
        std::fs::write(cut.join("db"), &full).unwrap();
        let whole = ok(&["check", "--db", s(&cut)]);
        assert!(
            whole.contains("whole") && whole.contains("positions 15000"),
            "cut to {percent}%, then restored: {whole}"
        );
    }
}

/// A store a process holds open (sled's lock) is refused by readers as in use,
/// as before, rather than copied half-written.
#[test]
fn a_store_in_use_is_refused_by_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    ok(&["synth", "--db", s(&db), "--positions", "50"]);
    let held = stera_book::SledStore::open_existing(&db).unwrap();
    let out = book_tools(&["stats", "--db", s(&db)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("in use"), "{err}");
    drop(held);
}

/// A reader's copy lives in `TMPDIR` and is gone when it ends; one that a
/// killed reader left there (a process that no longer runs) is removed by the
/// next reader, and nothing else in `TMPDIR` is touched.
#[test]
fn the_copies_of_readers_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    ok(&["synth", "--db", s(&db), "--positions", "50"]);
    let temp = dir.path().join("tmp");
    std::fs::create_dir(&temp).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let left = temp.join(format!("stera-read-copy.stera-partial-{dead}.AbC123"));
    std::fs::create_dir(&left).unwrap();
    std::fs::write(left.join(stera_book::store_path::INCOMPLETE_MARKER), b"").unwrap();
    std::fs::write(left.join("db"), vec![0u8; 4096]).unwrap();
    let users = temp.join("notes.txt");
    std::fs::write(&users, b"mine").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(["stats", "--db", s(&db)])
        .env("TMPDIR", &temp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = std::fs::read_dir(&temp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["notes.txt".to_owned()]);
}
