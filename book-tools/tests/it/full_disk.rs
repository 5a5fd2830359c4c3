//! Issue 26, point 3: `book-tools backup` and `import` onto a full disk hung
//! forever at 0 % CPU (sled's flush waits for a write that cannot happen). On a
//! real small file system (a tmpfs this test mounts; skipped with a message
//! where it cannot) they now fail at once with ENOSPC, and the source store,
//! an earlier backup and a store already on the full disk stay whole.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{SmallDisk, ok, s, synth_store};

/// Runs `book-tools ARGS`; a run that has not ended after `LONG` (a hang, the
/// bug) is killed and fails the test.
fn book_tools_bounded(args: &[&str]) -> Output {
    const LONG: Duration = Duration::from_secs(120);
    let mut child = Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run book-tools");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > LONG {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "book-tools {args:?} hung on a full disk: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn fails_for_space(args: &[&str]) -> String {
    let out = book_tools_bounded(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "book-tools {args:?} succeeded: {err}"
    );
    assert!(err.to_lowercase().contains("no space left"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn backup_and_import_onto_a_full_disk_fail_at_once_and_harm_nothing() {
    let Some(disk) = SmallDisk::mount("24m") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 3_000, 256);
    let stats = ok(&["stats", "--db", s(&db)]);
    let book = dir.path().join("book.db2016");
    ok(&["export", "--db", s(&db), "--out", s(&book)]);

    // While there is room: a first backup and a store on the small disk.
    let first = disk.path.join("first.db");
    ok(&["backup", "--db", s(&db), "--out", s(&first)]);
    // A smaller book there, so that the big one is new to it later.
    let small = dir.path().join("small.db");
    synth_store(&small, 300, 64);
    let small_book = dir.path().join("small.db2016");
    ok(&["export", "--db", s(&small), "--out", s(&small_book)]);
    let resident = disk.path.join("resident.db");
    ok(&["import", "--create", "--db", s(&resident), s(&small_book)]);
    let resident_stats = ok(&["stats", "--db", s(&resident)]);

    let filler = disk.fill_leaving(1 << 20);
    let second = disk.path.join("second.db");
    let err = fails_for_space(&["backup", "--db", s(&db), "--out", s(&second)]);
    assert!(
        err.contains("second.db") && !err.contains("stera-partial"),
        "{err}"
    );
    fails_for_space(&[
        "import",
        "--create",
        "--db",
        s(&disk.path.join("new.db")),
        s(&book),
    ]);
    fails_for_space(&["import", "--create", "--db", s(&resident), s(&book)]);

    // Nothing half-written is left, and every store is whole.
    assert_eq!(
        names_in(&disk.path),
        ["filler", "first.db", "resident.db"],
        "leftovers on the full disk"
    );
    assert_eq!(ok(&["stats", "--db", s(&db)]), stats);
    assert_eq!(
        ok(&["stats", "--db", s(&first)]),
        stats.replace(s(&db), s(&first))
    );
    assert_eq!(ok(&["stats", "--db", s(&resident)]), resident_stats);

    // With space back, the same backup works.
    std::fs::remove_file(filler).unwrap();
    ok(&["backup", "--db", s(&db), "--out", s(&second)]);
    ok(&["stats", "--db", s(&second)]);
}

/// Issue 45: `match --out-games` and `--json` on a full disk exited 1 but left
/// a 0-byte (or partial) file under the name asked for. Each is now written
/// under a temporary name and renamed only when the match is done: a failed
/// match leaves no file, and an earlier one as it was; with space back, the
/// same match writes both.
#[test]
fn a_match_on_a_full_disk_leaves_no_partial_outputs() {
    let Some(disk) = SmallDisk::mount("4m") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book");
    ok(&["synth", "--db", s(&db), "--positions", "300"]);
    let games = disk.path.join("games.csa");
    std::fs::write(&games, "earlier games\n").unwrap();
    let json = disk.path.join("result.json");
    let match_args = |out: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "match",
            "--db",
            s(&db),
            "--games",
            "4",
            "--nodes",
            "200",
            "--ply-limit",
            "60",
        ]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
        args.extend(out.iter().map(|a| (*a).to_owned()));
        args
    };
    let filler = disk.fill_leaving(0);
    // The first game's write fails; the JSON is never written.
    let args = match_args(&["--out-games", s(&games), "--json", s(&json)]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = fails_for_space(&args);
    assert!(err.contains("games.csa"), "{err}");
    assert_eq!(names_in(&disk.path), ["filler", "games.csa"], "{err}");
    assert_eq!(
        std::fs::read_to_string(&games).unwrap(),
        "earlier games\n",
        "the earlier games file was changed"
    );
    // Every game is played and counted; the JSON written at the end fails.
    let args = match_args(&["--json", s(&json)]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = fails_for_space(&args);
    assert!(err.contains("result.json"), "{err}");
    assert_eq!(names_in(&disk.path), ["filler", "games.csa"], "{err}");

    std::fs::remove_file(filler).unwrap();
    let args = match_args(&["--out-games", s(&games), "--json", s(&json)]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&args);
    assert_eq!(names_in(&disk.path), ["games.csa", "result.json"]);
    let text = std::fs::read_to_string(&games).unwrap();
    assert_eq!(text.matches("'game ").count(), 4, "{text}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(result.is_object(), "{result}");
}

/// Issue 46: the `.ybb` writer's `finish` now assembles the book on threads of
/// its own from a memory map of its move spool. A disk with room for the spool
/// but not for the book assembled beside it makes the export fail there, after
/// every entry was spooled: with ENOSPC named, no temporary file left and the
/// earlier book as it was; with space back the same export writes it again.
#[test]
fn a_binary_export_out_of_space_while_assembling_keeps_the_earlier_book() {
    let Some(disk) = SmallDisk::mount("16m") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book");
    ok(&["synth", "--db", s(&db), "--positions", "3000"]);
    let book = disk.path.join("book.ybb");
    ok(&["export", "--db", s(&db), "--export", s(&book)]);
    let earlier = std::fs::read(&book).unwrap();
    // Header 32 bytes (magic, count, flags), 44 bytes a record, then the moves:
    // what the spool holds.
    let entries = u64::from_le_bytes(earlier[16..24].try_into().unwrap());
    let spool = earlier.len() as u64 - 32 - 44 * entries;
    assert!(entries > 1_000 && spool > 44 * entries, "{entries} {spool}");

    let filler = disk.fill_leaving(spool + 22 * entries);
    let err = fails_for_space(&["export", "--db", s(&db), "--export", s(&book)]);
    assert!(
        err.contains("cannot write the temporary file for") && err.contains("book.ybb"),
        "not in the assembly of the book: {err}"
    );
    assert_eq!(names_in(&disk.path), ["book.ybb", "filler"], "{err}");
    assert!(
        std::fs::read(&book).unwrap() == earlier,
        "the earlier book was changed"
    );

    std::fs::remove_file(filler).unwrap();
    ok(&["export", "--db", s(&db), "--export", s(&book)]);
    assert!(std::fs::read(&book).unwrap() == earlier, "another book");
    assert_eq!(names_in(&disk.path), ["book.ybb"]);
}
