//! The coordinator as users run it: real processes and real gRPC on loopback.

use crate::common;

use std::time::Duration;

use crate::common::{Answer, Coord, LONG, fake_worker, start_worker};

fn rt() -> tokio::runtime::Runtime {
    common::runtime(2)
}

/// The main job in one command: two local worker processes with the built-in
/// engine generate a small book and the coordinator stops at the think limit.
#[test]
fn two_local_workers_build_a_small_book() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--local-workers",
            "2",
            "--think-limit",
            "12",
            "--nodes",
            "1500",
        ],
        &[],
    );
    let status = c.wait_exit(LONG);
    assert!(status.success(), "{:?}", c.log.lock().unwrap());
    c.wait_log("think limit reached", LONG);
    assert_eq!(common::book_len(&db), 12);
    // Two worker processes were started, and the book was thought by them. Which of
    // them took part is up to the machine's load: one may think all 12 positions
    // before the other connects, so only one is sure to be seen.
    assert!(
        c.wait_log("local workers started", LONG)
            .contains("count=2")
    );
    c.wait_log("worker=local-", LONG);
}

/// A worker killed with SIGKILL in the middle of a job: its lease comes back at once
/// and another worker finishes the run.
#[test]
fn killed_worker_leases_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    // A budget large enough that the real worker is surely mid-job when killed.
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--think-limit",
            "5",
            "--nodes",
            "50000000",
            // The fake worker below finishes the run beside a real one.
            "--allow-mixed-engines",
        ],
        &[],
    );
    let mut victim = start_worker(&c.url(), &["--slots", "1", "--worker-id", "victim"], &[]);
    c.wait_log("worker=victim", LONG);
    std::thread::sleep(Duration::from_millis(500));
    victim.kill().unwrap();
    victim.wait().unwrap();
    // One slot plus one prefetched job: both leases come back when the stream drops.
    let line = c.wait_log("worker disconnected", LONG);
    assert!(line.contains("requeued=2"), "{line}");
    let report = rt()
        .block_on(fake_worker(c.url(), None, 2, Answer::Good, 5, LONG))
        .unwrap();
    assert_eq!(report.acked.len(), 5, "{report:?}");
    assert!(report.rejected.is_empty());
    drop(c);
    assert_eq!(common::book_len(&db), 5);
}

/// A worker stopped by two signals gives its jobs back before its stream
/// closes: the coordinator's line for its leaving counts the jobs it put back,
/// those given back as well as those still leased (it said `requeued=0` while
/// two had gone back, issue 28).
#[test]
fn a_leaving_worker_is_logged_with_the_jobs_it_gave_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    // A budget large enough that the worker is surely mid-job when stopped.
    // A fake worker takes the leaver's jobs beside a real one.
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--nodes", "50000000", "--allow-mixed-engines"],
        &[],
    );
    let mut leaver = start_worker(&c.url(), &["--slots", "1", "--worker-id", "leaver"], &[]);
    let log = common::collect_stderr(&mut leaver);
    c.wait_log("worker=leaver", LONG);
    // One slot plus one prefetched job, both taken by the worker's session.
    let rt = rt();
    let start = std::time::Instant::now();
    while !log
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.contains("connected url="))
        || rt.block_on(common::status(&c.url(), None)).in_flight < 2
    {
        assert!(start.elapsed() < LONG, "the worker never held two jobs");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // The first signal: finish the jobs in hand; the second: give them back now.
    // The second is sent once the first has been read: two signals that arrive
    // before the worker reads either are one.
    common::signal(&leaver, "-TERM");
    common::wait_line(&log, "finishing the jobs in hand", LONG);
    common::signal(&leaver, "-TERM");
    common::wait_child_exit(&mut leaver, LONG, "worker", &log);
    let line = c.wait_log("worker disconnected", LONG);
    assert!(line.contains("requeued=2"), "{line}");
    assert!(line.contains("given_back=2"), "{line}");
    // Both positions are free again: a fresh worker gets them.
    let report = rt
        .block_on(fake_worker(c.url(), None, 2, Answer::Good, 2, LONG))
        .unwrap();
    assert_eq!(report.acked.len(), 2, "{report:?}");
}

/// SIGKILL of the coordinator loses no acknowledged result, and a worker process
/// reconnects by itself when the coordinator comes back on the same address.
#[test]
fn killed_coordinator_keeps_acknowledged_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let listen = format!("127.0.0.1:{}", common::free_port());
    let mut c = Coord::start(&db, &listen, &["--allow-mixed-engines"], &[]);
    let mut worker = start_worker(
        &c.url(),
        &[
            "--slots",
            "1",
            "--worker-id",
            "survivor",
            "--max-backoff-secs",
            "1",
        ],
        &[],
    );
    c.wait_log("worker=survivor", LONG);
    let runtime = rt();
    let url = c.url();
    // Acknowledged results from a fast fake worker; the coordinator dies under load.
    let handle = runtime.spawn(fake_worker(
        url,
        None,
        8,
        Answer::Good,
        usize::MAX,
        // It answers until the coordinator dies.
        LONG,
    ));
    // Killed under load, once enough results are in to make the test mean something.
    let start = std::time::Instant::now();
    while runtime.block_on(common::status(&c.url(), None)).nodes < 10 {
        assert!(
            start.elapsed() < LONG,
            "the fake worker's results never came in"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    c.kill9();
    let report = runtime.block_on(handle).unwrap().unwrap();
    assert!(
        report.acked.len() >= 10,
        "too few acknowledged results to test: {}",
        report.acked.len()
    );
    let acked: Vec<String> = report.acked.iter().map(|(_, s)| s.clone()).collect();
    let lost = common::book_contains_all(&db, &acked);
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // Restart on the same address: the worker process finds it again.
    let mut c2 = Coord::start(&db, &listen, &["--allow-mixed-engines"], &[]);
    c2.wait_log("worker=survivor", LONG);
    c2.sigterm();
    assert!(c2.wait_exit(LONG).success(), "{:?}", c2.log.lock().unwrap());
    let _ = worker.kill();
    let _ = worker.wait();
}

/// A wrong token is refused with a clear message: the worker exits non-zero and
/// says so; a raw client gets Unauthenticated.
#[test]
fn wrong_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let token_arg = token_file.to_str().unwrap();
    let c = Coord::start(&db, "127.0.0.1:0", &["--token-file", token_arg], &[]);
    let worker = start_worker(&c.url(), &["--slots", "1"], &[("STERA_TOKEN", "wrong")]);
    let out = worker.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refused") && err.contains("wrong token"),
        "{err}"
    );
    let runtime = rt();
    let status = runtime
        .block_on(fake_worker(c.url(), None, 1, Answer::Good, 1, LONG))
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    // The coordinator says whom it refused and why, once a minute per address
    // (the worker and the raw client came from the same address).
    let refused = c.wait_log("request refused", LONG);
    assert!(
        refused.contains("WARN")
            && refused.contains("peer=127.0.0.1:")
            && refused.contains("wrong token"),
        "{refused}"
    );
    let refusals = c
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("request refused"))
        .count();
    assert_eq!(refusals, 1, "{:?}", c.log.lock().unwrap());
    // The right token works.
    let ok = runtime
        .block_on(fake_worker(
            c.url(),
            Some("s3cret".into()),
            1,
            Answer::Good,
            2,
            LONG,
        ))
        .unwrap();
    assert_eq!(ok.acked.len(), 2);
}

/// Malformed and illegal results are rejected with a reason and change nothing; a
/// position that keeps failing on one worker only is not quarantined (issue 26:
/// that needs failures on more than one worker, see `blame.rs`).
#[test]
fn bad_results_are_rejected_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--max-failures", "3", "--max-worker-failures", "100"],
        &[],
    );
    let runtime = rt();
    for (answer, needle) in [
        (Answer::MissingMove, "missing"),
        (Answer::IllegalMove, "not legal"),
        (Answer::OutOfRange, "outside"),
        (Answer::WrongPosition, "the lease's position is"),
    ] {
        let report = runtime
            .block_on(fake_worker(c.url(), None, 1, answer, 3, LONG))
            .unwrap();
        assert_eq!(report.rejected.len(), 3, "{answer:?}: {report:?}");
        assert!(report.acked.is_empty());
        for (_, reason) in &report.rejected {
            assert!(
                reason.contains(needle),
                "{answer:?}: `{reason}` lacks `{needle}`"
            );
        }
    }
    let status = runtime.block_on(common::status(&c.url(), None));
    assert_eq!(status.nodes, 0, "a rejected result reached the book");
    assert_eq!(status.rejected, 12);
    assert_eq!(status.quarantined, 0, "{status:?}");
}

/// A result for a lease nobody was given is refused; a duplicate result for a
/// finished lease is acknowledged again without a second node.
#[test]
fn unknown_and_duplicate_leases() {
    use stera_proto::v1::{Hello, WorkerMessage, coordinator_message, worker_message};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    let runtime = rt();
    runtime.block_on(async {
        let mut client = stera_proto::v1::coordinator_client::CoordinatorClient::connect(c.url())
            .await
            .unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let hello = Hello {
            worker_id: "dup".into(),
            version: "t".into(),
            engine: "fake".into(),
            slots: 1,
            protocol: stera_proto::PROTOCOL_VERSION,
            default_limits: None,
        };
        tx.send(WorkerMessage {
            msg: Some(worker_message::Msg::Hello(hello)),
        })
        .await
        .unwrap();
        let mut inbound = client
            .work(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        let mut job = None;
        while job.is_none() {
            if let Some(coordinator_message::Msg::Job(j)) =
                inbound.message().await.unwrap().unwrap().msg
            {
                job = Some(j);
            }
        }
        let job = job.unwrap();
        let bogus = common::result_for(999_999, job.think_sfen(), Answer::Good);
        let good = common::result_for(job.lease_id, job.think_sfen(), Answer::Good);
        for r in [bogus, good.clone(), good] {
            tx.send(WorkerMessage {
                msg: Some(worker_message::Msg::Result(r)),
            })
            .await
            .unwrap();
        }
        let mut answers = Vec::new();
        while answers.len() < 3 {
            match inbound.message().await.unwrap().unwrap().msg {
                Some(coordinator_message::Msg::Ack(a)) => {
                    answers.push(format!("ack {}", a.lease_id))
                }
                Some(coordinator_message::Msg::Rejected(r)) => {
                    answers.push(format!("rejected {} {}", r.lease_id, r.reason))
                }
                _ => {}
            }
        }
        assert!(
            answers[0].starts_with("rejected 999999") && answers[0].contains("unknown"),
            "{answers:?}"
        );
        assert_eq!(answers[1], format!("ack {}", job.lease_id));
        assert_eq!(answers[2], format!("ack {}", job.lease_id));
        let status = common::status(&c.url(), None).await;
        assert_eq!(status.nodes, 1);
    });
}

/// Two hundred lightweight workers at once all get jobs and all their results land.
#[test]
fn two_hundred_workers_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    let runtime = rt();
    let url = c.url();
    let reports = runtime.block_on(async move {
        let mut handles = Vec::new();
        for _ in 0..200 {
            handles.push(tokio::spawn(fake_worker(
                url.clone(),
                None,
                1,
                Answer::Good,
                5,
                LONG,
            )));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap().unwrap());
        }
        out
    });
    let acked: usize = reports.iter().map(|r| r.acked.len()).sum();
    let rejected: usize = reports.iter().map(|r| r.rejected.len()).sum();
    assert_eq!(rejected, 0);
    assert_eq!(acked, 1000, "every worker's five results acknowledged");
    assert!(reports.iter().all(|r| r.acked.len() == 5));
    // The status shows the grown book and a principal variation from the roots,
    // each line legal from its root.
    let status = runtime.block_on(common::status(&c.url(), None));
    assert_eq!(status.nodes, 1000);
    assert!(!status.roots.is_empty());
    for line in &status.roots {
        let command = if line.pv.is_empty() {
            line.root.clone()
        } else {
            let sep = if line.root.contains(" moves ") {
                " "
            } else {
                " moves "
            };
            format!("{}{sep}{}", line.root, line.pv.join(" "))
        };
        assert!(
            stera_rules::Position::from_position_command(&command).is_ok(),
            "illegal PV `{command}`"
        );
    }
    assert!(status.roots.iter().any(|l| !l.pv.is_empty()));
}

/// The status shows the book's own line from each root: positions in flight
/// count at their stored values, so a line taken while a worker holds the PV's
/// leaves equals the line of the same book with nothing in flight (selection's
/// line, which goes around them, did not).
#[test]
fn status_lines_are_the_books_whatever_is_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let runtime = rt();
    {
        let c = Coord::start(&db, "127.0.0.1:0", &["--think-limit", "300"], &[]);
        let report = runtime
            .block_on(fake_worker(c.url(), None, 4, Answer::Good, 300, LONG))
            .unwrap();
        assert_eq!(report.acked.len(), 300);
    }
    let held = {
        let c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
        let url = c.url();
        let silent = runtime.spawn(fake_worker(
            url.clone(),
            None,
            8,
            Answer::Silent,
            usize::MAX,
            Duration::from_secs(30),
        ));
        let start = std::time::Instant::now();
        while runtime.block_on(common::status(&url, None)).in_flight < 8 {
            assert!(start.elapsed() < LONG, "the silent worker got no jobs");
            std::thread::sleep(Duration::from_millis(100));
        }
        // The lines of a status answer may be a few seconds old: these must be
        // searched with the leases out.
        std::thread::sleep(Duration::from_secs(6));
        let status = runtime.block_on(common::status(&url, None));
        assert_eq!(status.in_flight, 8);
        silent.abort();
        status
    };
    let c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    let idle = runtime.block_on(common::status(&c.url(), None));
    assert_eq!(idle.in_flight, 0);
    assert_eq!(idle.nodes, 300);
    assert!(!idle.roots.is_empty() && idle.roots.iter().all(|l| !l.pv.is_empty()));
    let lines = |s: &stera_proto::v1::StatusReply| {
        s.roots
            .iter()
            .map(|l| (l.root.clone(), l.pv.clone(), l.value))
            .collect::<Vec<_>>()
    };
    assert_eq!(lines(&held), lines(&idle));
}

/// TLS with a self-signed certificate: the main job's local workers connect over
/// `https://localhost` trusting that certificate, and the run completes.
#[test]
fn tls_with_a_self_signed_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--local-workers",
            "1",
            "--think-limit",
            "3",
            "--nodes",
            "1000",
        ],
        &[],
    );
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    assert_eq!(common::book_len(&db), 3);
}

/// An upgrade or a move stops the coordinator with SIGTERM (a drain). The worker
/// process does not leave with it: it waits, logging one line for the outage and
/// none per attempt, works for the next coordinator on the same store and
/// address, and leaves only on its own signal, with status 0.
#[test]
fn worker_outlives_a_drained_coordinator_and_works_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let listen = format!("127.0.0.1:{}", common::free_port());
    let mut c = Coord::start(&db, &listen, &["--nodes", "2000"], &[]);
    let mut worker = start_worker(
        &c.url(),
        &[
            "--slots",
            "1",
            "--worker-id",
            "phoenix",
            "--max-backoff-secs",
            "1",
        ],
        &[],
    );
    let worker_log = common::collect_stderr(&mut worker);
    let waiting = |log: &common::Log| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("waiting for the coordinator to come back"))
            .count()
    };
    c.wait_log("worker=phoenix", LONG);
    c.sigterm();
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    let start = std::time::Instant::now();
    while waiting(&worker_log) == 0 {
        assert!(
            start.elapsed() < LONG,
            "the worker did not wait: {:?}",
            worker_log.lock().unwrap()
        );
        assert!(
            worker.try_wait().unwrap().is_none(),
            "the worker left with the coordinator: {:?}",
            worker_log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Several attempts at a backoff of at most 1 s find nothing; one line says so.
    std::thread::sleep(Duration::from_secs(4));
    assert!(worker.try_wait().unwrap().is_none(), "the worker left");
    assert_eq!(waiting(&worker_log), 1, "{:?}", worker_log.lock().unwrap());
    let warnings: Vec<String> = worker_log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("unreachable") || l.contains(" WARN "))
        .cloned()
        .collect();
    assert!(
        warnings.is_empty(),
        "a drain is not a failure: {warnings:?}"
    );

    // The next coordinator gets its positions thought by the same process.
    let mut c2 = Coord::start(
        &db,
        &listen,
        &["--nodes", "2000", "--think-limit", "3"],
        &[],
    );
    let status = c2.wait_exit(LONG);
    let log = c2.log.lock().unwrap().clone();
    assert!(status.success(), "{log:?}");
    assert!(log.iter().any(|l| l.contains("worker=phoenix")), "{log:?}");
    assert!(
        log.iter()
            .any(|l| l.contains("coordinator stopped") && l.contains("thought=3")),
        "{log:?}"
    );
    assert!(
        worker_log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("connected again")),
        "{:?}",
        worker_log.lock().unwrap()
    );

    // Its own SIGTERM ends it, cleanly, while it waits for a third coordinator.
    std::thread::sleep(Duration::from_millis(500));
    assert!(worker.try_wait().unwrap().is_none(), "the worker left");
    common::signal(&worker, "-TERM");
    let status = common::wait_child_exit(&mut worker, LONG, "worker", &worker_log);
    assert!(status.success(), "{:?}", worker_log.lock().unwrap());
}
