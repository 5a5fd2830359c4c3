//! A worker's log tells each outage truly (issue 36): one line when it loses its
//! coordinator, one `connected again` when a working session is back, with the
//! time since the loss; a coordinator that drains is not back, and the attempts
//! made while it drains or is down are DEBUG only. Real coordinator and worker
//! processes; the worker's JSON log, its DEBUG records included.

use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, Answer, Coord, LONG, Log, fake_worker};

/// Long enough for a worker with a backoff of at most 1 s to try several times.
const PAUSE: Duration = Duration::from_secs(3);

/// A worker process with JSON logs (its own DEBUG records included), killed when
/// the test ends, however it ends.
struct Worker {
    child: Child,
    log: Log,
}

impl Worker {
    fn start(url: &str) -> Self {
        let mut child = common::start_worker(
            url,
            &[
                "--slots",
                "1",
                "--worker-id",
                "phoenix",
                "--max-backoff-secs",
                "1",
                "--status-every-secs",
                "0",
                "--log-format",
                "json",
            ],
            &[("RUST_LOG", "info,stera_worker=debug")],
        );
        let log = common::collect_stderr(&mut child);
        Self { child, log }
    }

    fn records(&self) -> Vec<Value> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// Waits for the first record with this message.
    fn wait_for(&self, wanted: &str) -> Value {
        let start = Instant::now();
        loop {
            if let Some(r) = self.records().into_iter().find(|r| message(r) == wanted) {
                return r;
            }
            assert!(
                start.elapsed() < LONG,
                "no `{wanted}` record in {LONG:?}: {:#?}",
                self.records()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The records with this message.
    fn with_message(&self, wanted: &str) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter(|r| message(r) == wanted)
            .collect()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        common::signal(&self.child, "-9");
        let _ = self.child.wait();
    }
}

fn message(record: &Value) -> &str {
    record["fields"]["message"].as_str().unwrap_or("")
}

fn level(record: &Value) -> &str {
    record["level"].as_str().unwrap_or("")
}

/// The down time a `connected again` record gives, in seconds.
fn down_secs(record: &Value) -> f64 {
    record["fields"]["down_secs"]
        .as_f64()
        .unwrap_or_else(|| panic!("no down_secs: {record}"))
}

/// `d` in seconds, cut to the millisecond (the log's precision).
fn floor_ms(d: Duration) -> f64 {
    d.as_millis() as f64 / 1000.0
}

/// A coordinator killed with SIGKILL and started again after a pause: the worker
/// warns once when it loses it, says nothing above DEBUG while it retries, and
/// says once that it is connected again, with a down time that spans the pause
/// (it counts from the loss, not from the last attempt) and that fits in the run.
#[test]
fn a_killed_and_restarted_coordinator_is_one_warning_and_one_connected_again() {
    let run = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let listen = format!("127.0.0.1:{}", common::free_port());
    let mut c = Coord::start(&db, &listen, &["--nodes", "2000"], &[]);
    let worker = Worker::start(&c.url());
    worker.wait_for("connected");
    c.wait_log("worker=phoenix", LONG);
    c.kill9();

    let lost = worker.wait_for("coordinator unreachable");
    // The worker stamped the loss before it logged it, so at least this much
    // of its outage lies before the restart.
    let lost_seen = Instant::now();
    assert_eq!(level(&lost), "WARN", "{lost}");
    assert!(
        lost["fields"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "the loss gives no reason: {lost}"
    );
    std::thread::sleep(PAUSE);
    let before_restart = lost_seen.elapsed();
    let _c2 = Coord::start(&db, &listen, &["--nodes", "2000"], &[]);
    let back = worker.wait_for("connected again");
    let whole_run = run.elapsed();

    assert_eq!(level(&back), "INFO", "{back}");
    let down = down_secs(&back);
    assert!(
        down >= floor_ms(before_restart) && down >= PAUSE.as_secs_f64(),
        "down {down} s, but the coordinator was away {before_restart:?} after the loss: {back}"
    );
    assert!(
        down < whole_run.as_secs_f64(),
        "down {down} s in a run of {whole_run:?}: {back}"
    );
    assert!(
        back["fields"]["attempts"].as_u64().is_some_and(|n| n >= 2),
        "{back}"
    );
    let records = worker.records();
    // A result of the killed run that the next one turns down would warn for
    // itself; it says nothing about the connection.
    let warnings: Vec<&Value> = records
        .iter()
        .filter(|r| level(r) == "WARN" && message(r) != "result rejected")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(
        worker.with_message("connected again").len(),
        1,
        "{records:#?}"
    );
    // The attempts while it was down were made, and told at DEBUG only.
    let retries = worker.with_message("coordinator still unreachable");
    assert!(!retries.is_empty(), "no retry was logged: {records:#?}");
    assert!(retries.iter().all(|r| level(r) == "DEBUG"), "{retries:#?}");
    // The first connection is the only plain `connected`.
    assert_eq!(worker.with_message("connected").len(), 1, "{records:#?}");
}

/// A coordinator stopped with SIGTERM while a worker holds its jobs drains for
/// all of `--drain-secs`, welcoming reconnections but handing out nothing. The
/// worker tells the loss once (at INFO: a drain is an operator's stop), then
/// only DEBUG while it reconnects to the draining coordinator and after it has
/// gone: no `connected again`. When the next coordinator comes, the one
/// `connected again` counts the down time from the first loss, the drain
/// included.
#[test]
fn a_draining_coordinator_is_never_back_and_the_outage_counts_from_the_first_loss() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let listen = format!("127.0.0.1:{}", common::free_port());
    let rt = common::runtime(1);
    let mut c = Coord::start(
        &db,
        &listen,
        &[
            "--nodes",
            "2000",
            "--drain-secs",
            "6",
            "--allow-mixed-engines",
        ],
        &[],
    );
    let url = c.url();
    let worker = Worker::start(&url);
    worker.wait_for("connected");
    // Once some positions are thought there are leaves for a second worker.
    let start = Instant::now();
    while rt.block_on(common::status(&url, None)).nodes < 3 {
        assert!(
            start.elapsed() < LONG,
            "nothing thought: {:#?}",
            worker.records()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A worker that holds its jobs and never answers keeps the drain going.
    let silent = rt.spawn(fake_worker(
        url.clone(),
        None,
        4,
        Answer::Silent,
        usize::MAX,
        LONG,
    ));
    // The real worker holds at most 2 (one slot and one prefetched).
    let start = Instant::now();
    while rt.block_on(common::status(&url, None)).in_flight < 3 {
        assert!(start.elapsed() < LONG, "the silent worker got no jobs");
        std::thread::sleep(Duration::from_millis(50));
    }
    c.sigterm();

    let lost =
        worker.wait_for("waiting for the coordinator to come back; reconnecting with backoff");
    let lost_seen = Instant::now();
    assert_eq!(level(&lost), "INFO", "{lost}");
    assert!(
        lost["fields"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("the coordinator is shutting down")),
        "{lost}"
    );
    // It reconnects to the coordinator while it drains...
    let reconnected = worker.wait_for("connected, but the coordinator still drains");
    assert_eq!(level(&reconnected), "DEBUG", "{reconnected}");
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    // ...and goes on trying once it is gone.
    std::thread::sleep(PAUSE);
    let records = worker.records();
    let loss_at = records
        .iter()
        .position(|r| message(r) == message(&lost))
        .unwrap();
    let loud: Vec<&Value> = records[loss_at + 1..]
        .iter()
        .filter(|r| level(r) != "DEBUG")
        .collect();
    assert!(loud.is_empty(), "after the loss: {loud:#?}");
    assert!(
        records[loss_at + 1..]
            .iter()
            .any(|r| message(r) == "coordinator still unreachable"
                && r["fields"]["reason"]
                    .as_str()
                    .is_some_and(|why| why.starts_with("the coordinator drains"))),
        "no session with the draining coordinator ended: {records:#?}"
    );
    assert!(
        records
            .iter()
            .all(|r| message(r) != "connected again" && level(r) != "WARN"),
        "{records:#?}"
    );

    let before_restart = lost_seen.elapsed();
    let _c2 = Coord::start(&db, &listen, &["--nodes", "2000"], &[]);
    let back = worker.wait_for("connected again");
    assert_eq!(level(&back), "INFO", "{back}");
    let down = down_secs(&back);
    assert!(
        down >= floor_ms(before_restart),
        "down {down} s, but {before_restart:?} passed between the loss and the next coordinator: {back}"
    );
    assert_eq!(
        worker.with_message("connected again").len(),
        1,
        "{:#?}",
        worker.records()
    );
    silent.abort();
}
