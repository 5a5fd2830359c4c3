//! Issue 26, point 8: the coordinator stopped in one stage. A second SIGTERM now
//! cuts a drain short (and would abandon a long final export); the store stays
//! whole. Real processes.

mod common;

use common::{Answer, Coord, LONG, fake_worker};

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
