//! Online backups (issue 14, item 2): a real coordinator copies its store while
//! workers keep sending results; the copy opens and holds every result
//! acknowledged before it; a coordinator killed during a backup leaves the older
//! backup valid and the new one either complete or only a `.partial` directory.

use crate::common;

use std::path::Path;

use crate::common::{Answer, Coord, LONG, book_contains_all, fake_worker, runtime};
use stera_book::{NodeStore, SledStore};
use stera_proto::v1::BackupRequest;

fn nodes_in(db: &Path) -> u32 {
    SledStore::open_existing(db).expect("a store").len()
}

#[test]
fn a_backup_while_running_holds_every_acknowledged_result_and_survives_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let exports = dir.path().join("exports");
    std::fs::create_dir_all(&exports).unwrap();
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--export-dir", exports.to_str().unwrap()],
        &[],
    );
    let rt = runtime(2);
    let first = exports.join("first.db");
    let second = exports.join("second.db");
    let (acked_before, reply) = rt.block_on(async {
        let report = fake_worker(c.url(), None, 4, Answer::Good, 20, LONG)
            .await
            .unwrap();
        let mut client = common::client(c.url(), None).await.unwrap();
        let reply = client
            .backup(BackupRequest {
                path: first.display().to_string(),
            })
            .await
            .expect("backup")
            .into_inner();
        // Outside --export-dir: refused, nothing written.
        let outside = dir.path().join("elsewhere.db");
        let err = client
            .backup(BackupRequest {
                path: outside.display().to_string(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::PermissionDenied);
        assert!(!outside.exists());
        // The same name again: refused, the first backup untouched.
        let err = client
            .backup(BackupRequest {
                path: first.display().to_string(),
            })
            .await
            .unwrap_err();
        // (The path rule of exports already refuses an existing directory.)
        assert!(
            err.message().contains("exists already") || err.message().contains("is a directory"),
            "{}",
            err.message()
        );
        (report.acked, reply)
    });
    assert!(acked_before.len() >= 20);
    assert!(reply.nodes as usize >= acked_before.len());

    // More results, then a backup that the kill interrupts (or not).
    rt.block_on(async {
        fake_worker(c.url(), None, 4, Answer::Good, 10, LONG)
            .await
            .unwrap();
        let mut client = common::client(c.url(), None).await.unwrap();
        let request = BackupRequest {
            path: second.display().to_string(),
        };
        let pending = tokio::spawn(async move { client.backup(request).await });
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        c.kill9();
        let _ = pending.await;
    });

    let sfens: Vec<String> = acked_before.iter().map(|(_, s)| s.clone()).collect();
    let missing = book_contains_all(&first, &sfens);
    assert!(
        missing.is_empty(),
        "acknowledged but not in the backup: {missing:?}"
    );
    assert_eq!(nodes_in(&first), reply.nodes);
    // The second backup is complete or absent; an interrupted one is only its
    // temporary directory (`second.db.stera-partial-<pid>.<n>`).
    if second.exists() {
        assert!(nodes_in(&second) >= reply.nodes + 10);
    }
    for entry in std::fs::read_dir(&exports).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            ["first.db", "second.db"].contains(&name.as_str())
                || name.starts_with("second.db.stera-partial-"),
            "{name}"
        );
    }
    // The live store is intact after the kill and holds more than the backup.
    assert!(nodes_in(&db) >= reply.nodes + 10);
}
