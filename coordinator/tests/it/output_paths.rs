//! Issue 26, point 1: `coordinator --games-out S/conf` (now `--out-games`) appended its games to its
//! own store's files while it ran, and the store then failed to open. The
//! games file goes through the same output-path check as exports: a path into
//! any store (its own, another, through a symbolic link, `..` or a hard link) is
//! refused before the coordinator listens, and the store is left as it was.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stera_book::{NodeStore, SledStore};

/// Makes a real (empty) store at `db`.
fn make_store(db: &Path) {
    let mut store = SledStore::open(db).unwrap();
    store.flush().unwrap();
}

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

/// Runs the coordinator with `--out-games OUT`; returns its stderr once it exits.
/// Fails the test if it gets as far as listening (it accepted the path).
fn refused(db: &Path, out: &Path) -> String {
    let games_out = [
        "--play-share".as_ref(),
        "0.5".as_ref(),
        "--out-games".as_ref(),
        out.as_os_str(),
    ];
    refused_with(db, &games_out)
}

/// How a coordinator run on a store began: it listened (then it was stopped), or
/// it exited first; with its log lines up to then.
enum Start {
    Listened(Vec<String>),
    Exited(std::process::ExitStatus, Vec<String>),
}

/// Runs the coordinator on `db` with `args` until it listens (then kills it) or
/// exits.
fn start(db: &Path, args: &[&std::ffi::OsStr]) -> Start {
    let mut child = Command::new(common::EXE)
        .arg("--db")
        .arg(db)
        .args(["--create", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "info")
        .env_remove("STERA_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("listening") {
            let _ = child.kill();
            let _ = child.wait();
            return Start::Listened(lines);
        }
        lines.push(line);
    }
    Start::Exited(child.wait().unwrap(), lines)
}

/// Runs the coordinator on `db` with `args`; returns its stderr once it exits,
/// failing the test if it listens.
fn refused_with(db: &Path, args: &[&std::ffi::OsStr]) -> String {
    match start(db, args) {
        Start::Listened(lines) => {
            panic!("the coordinator accepted {args:?} and listens: {lines:?}")
        }
        Start::Exited(status, lines) => {
            assert!(!status.success(), "{lines:?}");
            lines.join("\n")
        }
    }
}

#[test]
fn games_out_into_a_store_is_refused_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let other = dir.path().join("other.db");
    make_store(&db);
    make_store(&other);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    let hard = dir.path().join("games.txt");
    std::fs::hard_link(db.join("conf"), &hard).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let before = store_files(&db);
    for out in [
        db.join("conf"),
        db.join("db"),
        db.join("games.txt"),
        link.join("conf"),
        dir.path().join("sub/../book.db/conf"),
        other.join("conf"),
        hard.clone(),
    ] {
        let log = refused(&db, &out);
        assert!(log.contains("--out-games"), "{}: {log}", out.display());
        assert!(
            log.contains("refusing to write"),
            "{}: {log}",
            out.display()
        );
    }
    assert_eq!(store_files(&db), before);
    SledStore::open_existing(&db).unwrap();
    SledStore::open_existing(&other).unwrap();
}

/// `--games-out`, the former spelling of `--out-games`, is still accepted (a
/// deployment's command line keeps working): it names the same file, which is
/// checked like the new spelling's.
#[test]
fn the_former_games_out_spelling_names_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    make_store(&db);
    let conf = db.join("conf");
    let log = refused_with(
        &db,
        &[
            "--play-share".as_ref(),
            "0.5".as_ref(),
            "--games-out".as_ref(),
            conf.as_os_str(),
        ],
    );
    assert!(log.contains("bad --out-games"), "{log}");
    assert!(log.contains("refusing to write"), "{log}");
}

/// An `--export-format` that the `--export` path's extension contradicts is
/// refused before the coordinator listens (issue 28: `--export x.ybb` with a
/// text format would write a text book under a binary book's name).
#[test]
fn an_export_format_that_the_export_path_contradicts_is_refused_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for (name, format) in [
        ("book.db", "ybb"),
        ("book.ybb", "text"),
        ("book.ybb", "db2016"),
    ] {
        let out = dir.path().join(name);
        let log = refused_with(
            &db,
            &[
                "--export".as_ref(),
                out.as_os_str(),
                "--export-format".as_ref(),
                format.as_ref(),
            ],
        );
        assert!(log.contains("bad --export-format"), "{log}");
        assert!(log.contains(&out.display().to_string()), "{log}");
        assert!(!out.exists(), "{name}");
        assert!(!db.exists(), "a refused run made the store directory");
    }
}

/// A store being made by this very run (no sled file yet) is protected too.
#[test]
fn games_out_into_a_new_store_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fresh.db");
    std::fs::create_dir(&db).unwrap();
    let log = refused(&db, &db.join("games.txt"));
    assert!(log.contains("inside the book store"), "{log}");
    assert!(!db.join("games.txt").exists());
}

/// Issue 26, point 5: the coordinator on a truncated store panicked in sled
/// (exit 101); it now exits with an error naming the store and the restore
/// procedure, and no panic text.
#[test]
fn a_truncated_store_is_reported_not_panicked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    // Big enough for several sled segments: a small store's cut file is read
    // back as a shorter store (sled's recovery of a torn write).
    common::synthetic_store(&db, 40_000, 64);
    // sled's threads outlive the drop and hold the lock on its `db` file until
    // they have written it (sled issues #1234, #1289): wait for that lock, or the
    // file may be read half written and then written over after the cut.
    let file = std::fs::File::open(db.join("db")).unwrap();
    file.lock().unwrap();
    drop(file);
    let full = std::fs::read(db.join("db")).unwrap();
    std::fs::write(db.join("db"), &full[..full.len() / 2]).unwrap();
    // sled either fails to recover the cut file (it panicked inside sled before)
    // or recovers an earlier consistent state, a smaller book; the store's
    // record of what it holds (issue 35, point 1) makes both damage: the
    // coordinator never starts on fewer positions than were stored.
    let lines = match start(&db, &[]) {
        Start::Listened(lines) => panic!("the coordinator started on a cut store: {lines:?}"),
        Start::Exited(status, lines) => {
            assert!(!status.success(), "{lines:?}");
            lines
        }
    };
    let err = lines.join("\n");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("damaged") && err.contains("deploy/README.md"),
        "{err}"
    );
}

/// Issue 26, point 7: leftovers of exports and backups killed in an earlier run
/// were never cleaned. At start the coordinator removes those of processes that
/// no longer run from the directories it writes into, names them in its log,
/// and leaves everything else (a user's `X.partial`, a file without the tag).
#[test]
fn leftovers_of_a_killed_run_are_removed_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale_tmp = exports.join(format!(".b.db2016.stera-partial-{dead}.x.tmp"));
    std::fs::write(&stale_tmp, b"half a book").unwrap();
    let stale_copy = exports.join(format!("copy.db.stera-partial-{dead}.0"));
    std::fs::create_dir(&stale_copy).unwrap();
    std::fs::write(stale_copy.join("STERA-INCOMPLETE"), b"").unwrap();
    let mine = exports.join("copy.db.partial");
    std::fs::create_dir(&mine).unwrap();
    let mut c = common::Coord::start(
        &db,
        "127.0.0.1:0",
        &["--export-dir", exports.to_str().unwrap()],
        &[],
    );
    c.wait_log("removed a leftover", common::LONG);
    assert!(!stale_tmp.exists() && !stale_copy.exists());
    assert!(mine.exists());
    c.sigterm();
    assert!(c.wait_exit(common::LONG).success());
}

/// A missing `--backup-dir` is made at start (the shipped configurations name
/// a new directory on the store's volume), but never inside a store: there it
/// is refused before listening and nothing is created in the store (issue 28).
#[test]
fn a_missing_backup_dir_inside_the_store_is_refused_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    make_store(&db);
    let before = store_files(&db);
    let inside = db.join("backups");
    let err = refused_with(
        &db,
        &[
            "--backup-dir".as_ref(),
            inside.as_os_str(),
            "--backup-every-mins".as_ref(),
            "360".as_ref(),
        ],
    );
    assert!(err.contains("--backup-dir"), "{err}");
    assert!(!inside.exists(), "made inside the store");
    assert_eq!(store_files(&db), before);
}

/// Issue 36, point 6: a bad `--export` path names its OS error once, not twice.
#[test]
fn a_bad_export_path_says_its_error_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let out = dir.path().join("missing").join("book.db2016");
    let said = refused_with(&db, &["--export".as_ref(), out.as_os_str()]);
    assert!(said.contains("bad --export"), "{said}");
    assert_eq!(
        said.matches("No such file or directory").count(),
        1,
        "{said}"
    );
}
