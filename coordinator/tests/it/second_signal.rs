//! Issue 26, point 8: the coordinator stopped in one stage. A second SIGTERM now
//! cuts a drain short or abandons a long final export; the store stays
//! whole. Real processes.

use crate::common;

use crate::common::{Answer, Coord, LONG, fake_worker};

#[test]
fn a_second_sigterm_cuts_a_long_drain_short_and_the_store_stays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    // A drain far longer than the test may wait.
    let mut c = Coord::start(&db, "127.0.0.1:0", &["--drain-secs", "100000"], &[]);
    let rt = common::runtime(1);
    // One worker stores the root; a silent one then holds a lease forever.
    let report = rt
        .block_on(fake_worker(c.url(), None, 1, Answer::Good, 1, LONG))
        .unwrap();
    assert_eq!(report.acked.len(), 1, "{report:?}");
    let _silent = rt.spawn(fake_worker(
        c.url(),
        None,
        1,
        Answer::Silent,
        usize::MAX,
        LONG * 3,
    ));
    let start = std::time::Instant::now();
    while rt.block_on(common::status(&c.url(), None)).in_flight == 0 {
        assert!(start.elapsed() < LONG, "no lease held");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    c.sigterm();
    c.wait_log("stopping: no new jobs", LONG);
    c.sigterm();
    let status = c.wait_exit(LONG);
    assert!(status.success(), "{:?}", c.log.lock().unwrap());
    c.wait_log("drain cut short", LONG);
    assert_eq!(common::book_len(&db), 1, "the stored root survives");
}

/// A store whose export takes long enough to be interrupted (about a second or
/// more in the test profile).
const EXPORT_NODES: usize = 100_000;

#[test]
fn a_signal_during_the_final_export_abandons_it_and_the_store_stays_whole() {
    use stera_book::synthetic::{GrowOptions, PseudoEvaluator, grow};
    use stera_book::{LiveBook, RunConfig, Selector, SledStore};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    {
        let store = SledStore::open(&db).unwrap();
        let mut live = LiveBook::open(store, Some(RunConfig::default())).unwrap();
        let mut selector = Selector::new();
        grow(
            &mut live,
            &mut selector,
            &PseudoEvaluator::new(3),
            EXPORT_NODES,
            GrowOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    }
    let out = dir.path().join("book.db2016");
    // Nothing to think: the run ends at once and the final export starts.
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--think-limit", "0", "--export", out.to_str().unwrap()],
        &[],
    );
    c.wait_log("think limit reached", LONG);
    c.sigterm();
    let status = c.wait_exit(LONG);
    let log = c.log.lock().unwrap().join("\n");
    assert!(!status.success(), "an abandoned export is a failure: {log}");
    assert!(log.contains("export abandoned"), "{log}");
    assert!(
        !out.exists(),
        "no book file appears from an abandoned export"
    );
    assert_eq!(common::book_len(&db), EXPORT_NODES, "the store is whole");
}
