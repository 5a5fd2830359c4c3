//! Issue 26, point 6: blame the worker, not the position. A broken engine used to
//! get thousands of healthy positions quarantined within seconds (one failure
//! after another on a single worker); an engine that reported illegal moves had
//! its results stored. Real coordinator and worker processes on loopback.

use crate::common;
use crate::web;

use std::time::{Duration, Instant};

use crate::common::{Answer, Coord, LONG, collect_stderr, fake_worker, hello, start_worker};
use stera_book::NodeStore;
use stera_proto::v1::{GiveBack, WorkerMessage, coordinator_message, worker_message};
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

fn fake_engine(mode: &str) -> String {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/engine/tests/fixtures/fake_usi.sh");
    format!("sh {} {mode}", script.display())
}

fn metric(http: &str, name: &str) -> f64 {
    let m = web::get_ok(http, "/metrics", LONG);
    web::sample(&m.body, name).unwrap_or(0.0)
}

/// A real worker whose engine `mode` fails every evaluation: the worker is
/// refused (log, metric, its process stops with the reason) and no position is
/// quarantined or stored.
fn broken_worker_is_refused(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let metrics = format!("127.0.0.1:{}", common::free_port());
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--max-failures",
            "1",
            "--max-worker-failures",
            "3",
            "--depth",
            "2",
            "--metrics",
            &metrics,
        ],
        &[],
    );
    let engine = fake_engine(mode);
    let mut worker = start_worker(
        &c.url(),
        &[
            "--slots",
            "1",
            "--prefetch",
            "0",
            "--worker-id",
            "broken",
            "--engine",
            "usi",
            "--engine-cmd",
            &engine,
        ],
        &[],
    );
    let worker_log = collect_stderr(&mut worker);
    let line = c.wait_log("worker refused", LONG);
    assert!(line.contains("broken"), "{line}");
    let status = common::wait_child_exit(&mut worker, LONG, "refused worker", &worker_log);
    assert!(!status.success(), "{:?}", worker_log.lock().unwrap());
    assert!(
        worker_log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("refused")),
        "{:?}",
        worker_log.lock().unwrap()
    );
    let rt = common::runtime(1);
    let s = rt.block_on(common::status(&c.url(), None));
    assert_eq!(s.quarantined, 0, "{:?}", c.log.lock().unwrap());
    assert_eq!(s.nodes, 0, "nothing of a broken engine is stored");
    assert_eq!(
        metric(&metrics, "stera_coordinator_workers_refused_total"),
        1.0
    );
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
    let store = stera_book::SledStore::open(&db).unwrap();
    assert!(store.bans().unwrap().is_empty());
    assert!(store.quarantined().unwrap().is_empty());
}

#[test]
fn a_worker_whose_engine_dies_on_every_go_is_refused_before_any_quarantine() {
    broken_worker_is_refused("crash-always");
}

#[test]
fn a_worker_whose_engine_reports_illegal_moves_is_refused_and_nothing_stored() {
    broken_worker_is_refused("illegal");
}

/// Opens a Work stream as `worker_id` and gives back, as failed, each of the
/// first `jobs` jobs it gets; returns once the coordinator handled the last
/// give-back (it hands out the next job in the freed slot).
async fn failing_worker(url: String, worker_id: &str, jobs: usize) {
    let mut client = common::client(url, None).await.unwrap();
    let (tx, rx) = tmpsc::channel::<WorkerMessage>(64);
    tx.send(hello(worker_id, "fake", 1)).await.unwrap();
    let mut inbound = client
        .work(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let mut failed = 0;
    loop {
        let m = tokio::time::timeout(LONG, inbound.message())
            .await
            .expect("a job in time")
            .expect("stream open")
            .expect("a message");
        if let Some(coordinator_message::Msg::Job(job)) = m.msg {
            if failed == jobs {
                return;
            }
            tx.send(WorkerMessage {
                msg: Some(worker_message::Msg::GiveBack(GiveBack {
                    lease_id: job.lease_id,
                    reason: "engine died".into(),
                    failed: true,
                })),
            })
            .await
            .unwrap();
            failed += 1;
        }
    }
}

/// A new store whose run has the one root `startpos`.
fn store_with_startpos(db: &std::path::Path) {
    let store = stera_book::SledStore::open(db).unwrap();
    let config = stera_book::RunConfig {
        roots: vec!["startpos".to_owned()],
        ..stera_book::RunConfig::default()
    };
    let mut live = stera_book::LiveBook::open(store, Some(config)).unwrap();
    live.store_mut().flush().unwrap();
}

/// Failures of one worker never quarantine a position, however many; the same
/// position failing on a second worker does. The quarantine is in the store
/// with its position and reason.
#[test]
fn quarantine_needs_failures_on_more_than_one_worker() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    store_with_startpos(&db);
    let metrics = format!("127.0.0.1:{}", common::free_port());
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--max-failures",
            "2",
            "--max-worker-failures",
            "1000",
            "--metrics",
            &metrics,
        ],
        &[],
    );
    let rt = common::runtime(2);
    // The root is thought, so that the next leaves have an edge to ban.
    let report = rt
        .block_on(fake_worker(c.url(), None, 1, Answer::Good, 1, LONG))
        .unwrap();
    assert_eq!(report.acked.len(), 1, "{report:?}");
    // Each worker hangs up holding a lease (the good one its prefetched leaf,
    // `a` the position's ninth): only once the coordinator has seen it go is
    // that leaf free again. So `a` meets the selection's first leaf alone, and
    // `b` the leaf `a` failed on (a busy machine can otherwise hand either the
    // leaf the previous worker still held when it connected).
    let gone = |who: &str| {
        let start = Instant::now();
        loop {
            let s = rt.block_on(common::status(&c.url(), None));
            if s.workers.is_empty() && s.in_flight == 0 {
                assert_eq!(s.quarantined, 0, "{:?}", c.log.lock().unwrap());
                break;
            }
            assert!(start.elapsed() < LONG, "worker {who} never left");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    gone("fake");
    rt.block_on(failing_worker(c.url(), "a", 8));
    gone("a");
    rt.block_on(failing_worker(c.url(), "b", 1));
    let start = Instant::now();
    loop {
        let s = rt.block_on(common::status(&c.url(), None));
        if s.quarantined == 1 {
            break;
        }
        assert!(
            start.elapsed() < LONG,
            "nothing quarantined: {:?}",
            c.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(metric(&metrics, "stera_book_quarantined_positions"), 1.0);
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
    // A restarted coordinator shows the quarantine it finds in the store.
    let mut c = Coord::start(&db, "127.0.0.1:0", &["--metrics", &metrics], &[]);
    assert_eq!(metric(&metrics, "stera_book_quarantined_positions"), 1.0);
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
    let store = stera_book::SledStore::open(&db).unwrap();
    let quarantined = store.quarantined().unwrap();
    assert_eq!(quarantined.len(), 1);
    assert!(quarantined[0].2.contains("engine died"), "{quarantined:?}");
    assert!(quarantined[0].2.contains("2 workers"), "{quarantined:?}");
}
