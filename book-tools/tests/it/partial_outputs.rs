//! Issue 26, points 2 and 7: `backup --out X` deleted a user's `X.partial`
//! directory; leftovers of interrupted exports and backups were never cleaned;
//! an unfinished backup opened as a valid (empty or partial) store. Now
//! temporary names carry `stera-partial-<pid>` and a marker, only those of
//! processes that no longer run are removed, and no open takes a marked
//! directory for a store.

use crate::common;

use std::path::Path;

use crate::common::{fails, ok, s, synth_store};

/// A process id that no longer runs (a reaped child).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A copy of the store `from` as an interrupted backup leaves it: sled's files
/// and the marker, under a temporary name of process `pid`.
fn leftover_backup(from: &Path, dir: &Path, name: &str, pid: u32) -> std::path::PathBuf {
    let partial = dir.join(format!("{name}.stera-partial-{pid}.0"));
    std::fs::create_dir(&partial).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), partial.join(entry.file_name())).unwrap();
        }
    }
    std::fs::write(partial.join("STERA-INCOMPLETE"), b"").unwrap();
    partial
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
fn backup_keeps_a_users_partial_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 100, 16);
    let out = dir.path().join("copy.db");
    let mine = dir.path().join("copy.db.partial");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), b"kept by a user").unwrap();
    ok(&["backup", "--db", s(&db), "--out", s(&out)]);
    assert_eq!(
        std::fs::read(mine.join("notes.txt")).unwrap(),
        b"kept by a user"
    );
    assert_eq!(
        names_in(dir.path()),
        ["book.db", "copy.db", "copy.db.partial"]
    );
    ok(&["stats", "--db", s(&out)]);
}

#[test]
fn an_unfinished_backup_is_no_store_and_is_cleaned_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 100, 16);
    let backups = dir.path().join("backups");
    std::fs::create_dir(&backups).unwrap();
    let pid = dead_pid();
    let partial = leftover_backup(&db, &backups, "old.db", pid);
    // Neither the read-only tools nor the writing ones take it for a store.
    let err = fails(&["stats", "--db", s(&partial)]);
    assert!(err.contains("unfinished backup"), "{err}");
    let roots = dir.path().join("roots.txt");
    std::fs::write(&roots, "startpos\n").unwrap();
    let err = fails(&["roots", "set", "--create", "--db", s(&partial), s(&roots)]);
    assert!(err.contains("unfinished backup"), "{err}");
    // An export's temporary file of a dead process, and a user's look-alikes.
    let stale_tmp = backups.join(format!(".b.db2016.stera-partial-{pid}.x1y2.tmp"));
    std::fs::write(&stale_tmp, b"half a book").unwrap();
    let user_tmp = backups.join(".b.db2016.tmp");
    std::fs::write(&user_tmp, b"mine").unwrap();

    let out = backups.join("new.db");
    let run = common::book_tools(&["backup", "--db", s(&db), "--out", s(&out)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("removed 2 leftover"), "{err}");
    assert_eq!(names_in(&backups), [".b.db2016.tmp", "new.db"]);
    ok(&["stats", "--db", s(&out)]);
}

#[test]
fn an_export_removes_leftovers_of_interrupted_exports() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 100, 16);
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    let pid = dead_pid();
    let stale = exports.join(format!(".book.db2016.stera-partial-{pid}.abc.tmp"));
    std::fs::write(&stale, b"half").unwrap();
    let stale_sort = exports.join(format!(".book-sort.stera-partial-{pid}.q"));
    std::fs::create_dir(&stale_sort).unwrap();
    std::fs::write(stale_sort.join("run-0"), b"x").unwrap();
    let live = exports.join(format!(
        ".other.db2016.stera-partial-{}.abc.tmp",
        std::process::id()
    ));
    std::fs::write(&live, b"being written").unwrap();
    let out = exports.join("book.db2016");
    ok(&["export", "--db", s(&db), "--out", s(&out)]);
    assert!(!stale.exists() && !stale_sort.exists());
    assert!(live.exists(), "a running writer's file was removed");
    let mut names = names_in(&exports);
    names.retain(|n| !n.starts_with(".other"));
    assert_eq!(names, ["book.db2016"]);
}
