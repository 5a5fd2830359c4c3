//! Compaction while running (issue 14, item 3): a real coordinator merges the small
//! chunks its result batches write, on its maintenance thread, while a worker
//! keeps sending results and a backup is taken; every acknowledged result is in
//! the store and in the backup, and the store holds far fewer chunks than batches.

use crate::common;
use crate::web;

use crate::common::{Answer, Coord, LONG, book_contains_all, fake_worker, free_port, runtime};
use stera_book::{NodeStore, SledStore};
use stera_proto::v1::BackupRequest;

#[test]
fn small_chunks_are_merged_while_results_and_a_backup_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let backups = dir.path().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    let http = format!("127.0.0.1:{}", free_port());
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--metrics",
            &http,
            "--export-dir",
            backups.to_str().unwrap(),
            "--compact-every",
            "10",
            "--compact-chunk",
            "16",
        ],
        &[],
    );
    let rt = runtime(2);
    let backup = backups.join("mid.db");
    let (acked, reply) = rt.block_on(async {
        // One slot: every result is its own commit, so its own chunk.
        let first = fake_worker(c.url(), None, 1, Answer::Good, 60, LONG)
            .await
            .unwrap();
        let mut client = common::client(c.url(), None).await.unwrap();
        let backup_request = BackupRequest {
            path: backup.display().to_string(),
        };
        let (reply, second) = tokio::join!(
            client.backup(backup_request),
            fake_worker(c.url(), None, 1, Answer::Good, 60, LONG)
        );
        let mut acked = first.acked;
        acked.extend(second.unwrap().acked);
        (acked, reply.expect("backup").into_inner())
    });
    assert!(acked.len() >= 120);
    // Every result is in; the passes they triggered may still be waiting for the
    // maintenance thread (busy with the backup) or running on it. Wait for the end
    // state itself: each result was its own chunk, so a store of chunks of 16 (plus
    // a tail) has had more than three quarters of them merged away. A pass is due
    // every 10 new positions, so under load the last results can come after the
    // last pass due: then ten more results make the next one due (and they are
    // counted too). However long the backup and the passes take, that is the event.
    let mut acked = acked;
    let deadline = std::time::Instant::now() + LONG;
    let mut last_change = (std::time::Instant::now(), -1.0);
    let merged = loop {
        let text = web::get_ok(&http, "/metrics", LONG).body;
        let passes = web::sample(&text, "stera_book_compactions_total").unwrap_or(0.0);
        let merged = web::sample(&text, "stera_book_chunks_merged_total").unwrap_or(0.0);
        if passes >= 3.0 && merged * 4.0 > acked.len() as f64 * 3.0 {
            break merged;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{passes} compactions merged {merged} chunks of {} results",
            acked.len()
        );
        if merged != last_change.1 {
            last_change = (std::time::Instant::now(), merged);
        } else if last_change.0.elapsed() > std::time::Duration::from_secs(5) {
            let more = rt
                .block_on(fake_worker(c.url(), None, 1, Answer::Good, 10, LONG))
                .unwrap();
            acked.extend(more.acked);
            last_change = (std::time::Instant::now(), merged);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    c.sigterm();
    assert!(c.wait_exit(LONG).success());

    let sfens: Vec<String> = acked.iter().map(|(_, s)| s.clone()).collect();
    let missing = book_contains_all(&db, &sfens);
    assert!(missing.is_empty(), "acknowledged, not stored: {missing:?}");
    let store = SledStore::open_existing(&db).unwrap();
    let (nodes, chunks) = (store.len() as usize, store.chunk_count());
    // About one chunk per result before merging; chunks of 16 after, plus a tail.
    assert!(
        chunks * 4 < nodes,
        "{chunks} chunks for {nodes} nodes ({merged} merged)"
    );
    drop(store);
    // The backup taken while results and compactions went on is a whole store.
    let copy = SledStore::open_existing(&backup).unwrap();
    assert_eq!(copy.len(), reply.nodes);
    let mut seen = 0u32;
    copy.for_each_node(&mut |_, _| {
        seen += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, reply.nodes);
}
