//! Issue 35, point 2: restores cannot destroy. The runbook's restore (deploy/
//! README.md, "Restore from a backup") run as written: stop, keep the damaged
//! store aside, `cp -a` the newest backup out of the backups directory, check
//! it, start on the copy with the same `--backup-dir`, grow it, and let the next
//! rotation run: the copied backup is rotated away, the store is not, and
//! nothing acknowledged is lost. Before, the runbook said to start on the backup
//! itself, and the next rotation deleted the open store.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{Answer, Coord, EXE, LONG, book_contains_all, fake_worker, runtime};
use stera_book::{NodeStore, SledStore};

fn nodes_in(db: &Path) -> u32 {
    SledStore::open_existing(db).expect("a store").len()
}

#[test]
fn the_runbook_restore_keeps_everything_through_the_next_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let backups = dir.path().join("backups");
    let backup_args = [
        "--backup-dir",
        backups.to_str().unwrap(),
        "--backup-every-mins",
        "1",
        "--backup-keep",
        "1",
    ];
    let rt = runtime(2);
    // A run that grows the store and leaves a periodic backup (taken as the
    // coordinator takes them: a snapshot copied into `backups/backup-<N>.db`).
    let mut first = Coord::start(&db, "127.0.0.1:0", &backup_args, &[]);
    let before = rt
        .block_on(fake_worker(first.url(), None, 4, Answer::Good, 20, LONG))
        .unwrap();
    first.sigterm();
    assert!(first.wait_exit(LONG).success());
    let backup = backups.join("backup-1000.db");
    SledStore::open_existing(&db)
        .unwrap()
        .backup_to(&backup)
        .unwrap();
    let backed_up = nodes_in(&backup);
    assert!(backed_up as usize >= before.acked.len());

    // What the runbook warns against is refused: a --db inside --backup-dir,
    // or named like a periodic backup; nothing is started, nothing deleted.
    for bad in [backup.clone(), dir.path().join("backup-2000.db")] {
        let out = Command::new(EXE)
            .arg("--db")
            .arg(&bad)
            .args(["--create", "--listen", "127.0.0.1:0"])
            .args(backup_args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", bad.display());
        assert!(
            err.contains("refusing --db") && err.contains("copy the backup out"),
            "{err}"
        );
    }
    assert!(!dir.path().join("backup-2000.db").exists());
    assert_eq!(nodes_in(&backup), backed_up);

    // 1. stopped above. 2. Keep the damaged store aside.
    std::fs::rename(&db, dir.path().join("book.db.damaged")).unwrap();
    // 3. Copy the newest backup out of the backups directory.
    let status = Command::new("cp")
        .arg("-a")
        .arg(&backup)
        .arg(&db)
        .status()
        .unwrap();
    assert!(status.success());
    // 4. Check the copy.
    let report = SledStore::check(&db).unwrap();
    assert!(report.is_whole(), "{:?}", report.problems);
    assert_eq!(report.found.nodes, backed_up);
    // 5. Start as before, grow, and let the next periodic backup and its
    // rotation run.
    let mut second = Coord::start(&db, "127.0.0.1:0", &backup_args, &[]);
    let after = rt
        .block_on(fake_worker(second.url(), None, 4, Answer::Good, 20, LONG))
        .unwrap();
    assert!(after.acked.len() >= 20);
    second.wait_log("store backed up", Duration::from_secs(150));
    second.wait_log("old backup deleted", LONG);
    // Grows on after the rotation.
    let later = rt
        .block_on(fake_worker(second.url(), None, 4, Answer::Good, 5, LONG))
        .unwrap();
    second.sigterm();
    assert!(second.wait_exit(LONG).success());

    // The copied backup was rotated away; the store was not.
    assert!(!backup.exists());
    assert!(db.join("db").is_file());
    let report = SledStore::check(&db).unwrap();
    assert!(report.is_whole(), "{:?}", report.problems);
    let sfens: Vec<String> = before
        .acked
        .iter()
        .chain(&after.acked)
        .chain(&later.acked)
        .map(|(_, s)| s.clone())
        .collect();
    let missing = book_contains_all(&db, &sfens);
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    assert!(
        report.found.nodes as usize >= backed_up as usize + after.acked.len() + later.acked.len()
    );
    // The new periodic backup is a complete store of the grown book.
    let kept: Vec<_> = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(nodes_in(&kept[0]) >= backed_up + u32::try_from(after.acked.len()).unwrap());
}

/// Issue 35, point 1, the coordinator's open: a store cut short is refused as
/// damaged, naming the restore section, instead of being grown as a smaller
/// book.
#[test]
fn the_coordinator_refuses_a_store_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    crate::common::synthetic_store(&db, 3000, 4);
    // sled's threads outlive the drop and write the file until they let its
    // lock go (sled issues #1234, #1289): cut it only then.
    std::fs::File::open(db.join("db")).unwrap().lock().unwrap();
    let full = std::fs::read(db.join("db")).unwrap();
    for percent in [95, 80, 50] {
        let cut = dir.path().join(format!("cut-{percent}.db"));
        std::fs::create_dir(&cut).unwrap();
        for entry in std::fs::read_dir(&db).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), cut.join(entry.file_name())).unwrap();
            }
        }
        std::fs::write(cut.join("db"), &full[..full.len() * percent / 100]).unwrap();
        let out = Command::new(EXE)
            .arg("--db")
            .arg(&cut)
            .args(["--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "cut at {percent} %: {err}");
        assert!(
            err.contains("damaged") && err.contains("Back up and restore the store"),
            "cut at {percent} %: {err}"
        );
    }
}
