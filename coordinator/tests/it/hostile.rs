//! Careless and hostile peers against real processes on loopback: one message must
//! not kill, starve or fill the coordinator; a worker must never hold a lease
//! silently or hang on shutdown; an export must never write into a store.

use crate::common;
use crate::web;

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{
    Answer, Coord, LONG, Log, collect_stderr, fake_worker, free_port, hello, start_worker,
};
use stera_proto::v1::coordinator_server::{Coordinator, CoordinatorServer};
use stera_proto::v1::{
    CoordinatorMessage, Credit, ExportReply, ExportRequest, GiveBack, Job, Limits, ResultAck,
    StatusReply, StatusRequest, Welcome, WorkerMessage, coordinator_message, worker_message,
};
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

fn rt() -> tokio::runtime::Runtime {
    common::runtime(2)
}

/// Opens a Work stream, sends `messages` (Hello first), and returns every status or
/// message the coordinator answers until the stream ends or `wait` passes.
async fn converse(
    url: String,
    messages: Vec<WorkerMessage>,
    wait: Duration,
) -> (Vec<CoordinatorMessage>, Option<tonic::Status>) {
    let mut client = common::client(url, None).await.unwrap();
    let (tx, rx) = tmpsc::channel::<WorkerMessage>(16);
    let mut messages = messages.into_iter();
    if let Some(first) = messages.next() {
        tx.send(first).await.unwrap();
    }
    let mut inbound = match client.work(ReceiverStream::new(rx)).await {
        Ok(r) => r.into_inner(),
        Err(status) => return (Vec::new(), Some(status)),
    };
    for m in messages {
        if tx.send(m).await.is_err() {
            break;
        }
    }
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, inbound.message()).await {
            Err(_) | Ok(Ok(None)) => return (got, None),
            Ok(Err(status)) => return (got, Some(status)),
            Ok(Ok(Some(m))) => got.push(m),
        }
    }
}

fn jobs(messages: &[CoordinatorMessage]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m.msg, Some(coordinator_message::Msg::Job(_))))
        .count()
}

fn metric(http: &str, name: &str) -> f64 {
    let m = web::get_ok(http, "/metrics", LONG);
    web::sample(&m.body, name).unwrap_or(0.0)
}

/// Item 1: `Credit(4294967295)` after `Hello(slots=1)` aborted the coordinator with a
/// 3 TB allocation; `Credit(100000)` handed one stream 40,881 leases. A credit above
/// the announced slots now closes that stream with a status naming the field, is
/// counted, and the coordinator goes on serving others.
#[test]
fn a_credit_above_the_announced_slots_closes_only_that_stream() {
    let dir = tempfile::tempdir().unwrap();
    let http = format!("127.0.0.1:{}", free_port());
    let c = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &["--metrics", &http],
        &[],
    );
    let rt = rt();
    for slots in [u32::MAX, 100_000, 2] {
        let credit = WorkerMessage {
            msg: Some(worker_message::Msg::Credit(Credit { slots })),
        };
        let (got, status) = rt.block_on(converse(
            c.url(),
            vec![hello("greedy", "fake", 1), credit],
            LONG,
        ));
        let status = status.expect("the stream is closed with a status");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert!(
            status.message().contains("Credit.slots"),
            "{}",
            status.message()
        );
        // Never more jobs than the one slot of Hello.
        assert!(jobs(&got) <= 1, "{} jobs", jobs(&got));
    }
    // The coordinator is alive and serves an honest worker in full.
    let report = rt
        .block_on(fake_worker(c.url(), None, 2, Answer::Good, 10, LONG))
        .unwrap();
    assert_eq!(report.acked.len(), 10, "{report:?}");
    assert_eq!(
        metric(
            &http,
            "stera_coordinator_protocol_violations_total{field=\"Credit.slots\"}"
        ),
        3.0
    );
}

/// Item 7: a 3 MB `engine` was stored as a 3 MB blob per result and a 3 MB
/// `worker_id` logged whole and served by `/api/status`. Both are refused where they
/// arrive, with the field named, and nothing is stored.
#[test]
fn oversized_strings_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let http = format!("127.0.0.1:{}", free_port());
    let c = Coord::start(&db, "127.0.0.1:0", &["--metrics", &http], &[]);
    let rt = rt();
    let huge = "x".repeat(3 << 20);
    let (_, status) = rt.block_on(converse(c.url(), vec![hello(&huge, "fake", 1)], LONG));
    let status = status.expect("refused");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().contains("Hello.worker_id"), "{status:?}");
    assert!(status.message().len() < 200, "the refusal quotes the text");

    // A result with a 3 MB engine string for a real lease.
    let outcome = rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        let (tx, rx) = tmpsc::channel::<WorkerMessage>(16);
        tx.send(hello("honest-looking", "fake", 1)).await.unwrap();
        let mut inbound = client
            .work(ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        loop {
            match inbound.message().await {
                Ok(Some(CoordinatorMessage {
                    msg: Some(coordinator_message::Msg::Job(job)),
                })) => {
                    let mut r = common::result_for(job.lease_id, job.think_sfen(), Answer::Good);
                    r.engine = "y".repeat(3 << 20);
                    tx.send(WorkerMessage {
                        msg: Some(worker_message::Msg::Result(r)),
                    })
                    .await
                    .unwrap();
                }
                Ok(Some(m)) => {
                    if let Some(coordinator_message::Msg::Ack(_)) = m.msg {
                        return Err("a result with a 3 MB engine string was acknowledged");
                    }
                }
                Ok(None) => return Err("stream closed without a reason"),
                Err(status) => return Ok(status),
            }
        }
    });
    let status = outcome.unwrap();
    assert!(status.message().contains("JobResult.engine"), "{status:?}");
    let api = web::api_status(&http);
    assert!(api.to_string().len() < 100_000, "status JSON grew");
    drop(c);
    assert_eq!(common::book_len(&db), 0);
}

/// Item 8: a message over the 4 MiB gRPC limit ended the client's stream with no
/// reason; the worker now learns why.
#[test]
fn a_message_over_the_size_limit_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let c = Coord::start(&dir.path().join("book.db"), "127.0.0.1:0", &[], &[]);
    let big = WorkerMessage {
        msg: Some(worker_message::Msg::GiveBack(GiveBack {
            lease_id: 1,
            reason: "z".repeat(5 << 20),
            failed: false,
        })),
    };
    let (_, status) = rt().block_on(converse(c.url(), vec![hello("w", "fake", 1), big], LONG));
    let status = status.expect("the stream ends with a status");
    assert!(
        status.message().contains("message") && status.message().contains("refused"),
        "{status:?}"
    );
    c.wait_log("stream refused", LONG);
}

/// Item 2 (coordinator side): a worker that holds its lease forever (it only keeps
/// the stream open) made the coordinator ignore `--drain-secs` on SIGTERM: the
/// server waited for the stream to close. It now exits after the drain.
#[test]
fn sigterm_exits_after_the_drain_even_with_a_lease_held_forever() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &["--drain-secs", "1"],
        &[],
    );
    let rt = rt();
    let silent = rt.spawn(fake_worker(
        c.url(),
        None,
        1,
        Answer::Silent,
        usize::MAX,
        LONG * 3,
    ));
    c.wait_log("worker connected", LONG);
    let start = Instant::now();
    while rt.block_on(common::status(&c.url(), None)).in_flight < 1 {
        assert!(start.elapsed() < LONG, "the silent worker got no job");
        std::thread::sleep(Duration::from_millis(50));
    }
    c.sigterm();
    let status = c.wait_exit(LONG);
    assert!(status.success(), "{:?}", c.log.lock().unwrap());
    // The silent worker's stream ended with the coordinator.
    let report = rt.block_on(silent).unwrap().unwrap();
    assert_eq!(report.jobs.len(), 1, "{report:?}");
}

/// Item 2 (worker side): evaluations that fail on the worker are given back as
/// failures, counted toward quarantine like rejected results; before, a position
/// whose evaluation always failed was handed out forever, unnoticed. Since issue
/// 26 the failures must come from more than one worker (one broken engine is
/// refused instead, see `blame.rs`): two workers fail here.
#[test]
fn positions_whose_evaluation_always_fails_are_quarantined() {
    let dir = tempfile::tempdir().unwrap();
    let c = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &[
            "--max-failures",
            "2",
            "--max-worker-failures",
            "1000",
            "--depth",
            "2",
        ],
        &[],
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/engine/tests/fixtures/fake_usi.sh");
    let cmd = format!("sh {} crash-always", script.display());
    let mut workers: Vec<_> = ["crashing-a", "crashing-b"]
        .iter()
        .map(|id| {
            start_worker(
                &c.url(),
                &[
                    "--slots",
                    "1",
                    "--prefetch",
                    "0",
                    "--worker-id",
                    id,
                    "--engine",
                    "usi",
                    "--engine-cmd",
                    &cmd,
                ],
                &[],
            )
        })
        .collect();
    let start = Instant::now();
    let rt = rt();
    loop {
        let s: StatusReply = rt.block_on(common::status(&c.url(), None));
        if s.quarantined >= 1 {
            break;
        }
        assert!(
            start.elapsed() < LONG,
            "nothing quarantined: {:?}",
            c.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    c.wait_log("evaluation failed on the worker", LONG);
    for worker in &mut workers {
        let _ = worker.kill();
        let _ = worker.wait();
    }
}

/// A fake coordinator for the worker's side: hands out `jobs`, then acknowledges
/// nothing (or acknowledges a lease it never handed out).
#[derive(Clone)]
struct FakeCoordinator {
    jobs: Vec<Job>,
    unsolicited_ack: bool,
    received: Arc<Mutex<Vec<WorkerMessage>>>,
}

type Outbound =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<CoordinatorMessage, tonic::Status>> + Send>>;

#[tonic::async_trait]
impl Coordinator for FakeCoordinator {
    type WorkStream = Outbound;

    async fn work(
        &self,
        request: tonic::Request<tonic::Streaming<WorkerMessage>>,
    ) -> Result<tonic::Response<Self::WorkStream>, tonic::Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = tmpsc::channel(64);
        let send = |m| CoordinatorMessage { msg: Some(m) };
        let _ = tx
            .send(Ok(send(coordinator_message::Msg::Welcome(Welcome {
                version: "fake".into(),
                lease_ms: 600_000,
                heartbeat_ms: 1000,
                draining: false,
            }))))
            .await;
        if self.unsolicited_ack {
            let _ = tx
                .send(Ok(send(coordinator_message::Msg::Ack(ResultAck {
                    lease_id: 999,
                }))))
                .await;
        }
        for job in &self.jobs {
            let _ = tx
                .send(Ok(send(coordinator_message::Msg::Job(job.clone()))))
                .await;
        }
        let received = self.received.clone();
        tokio::spawn(async move {
            // Keep the outbound side open while the worker talks.
            let _keep = tx;
            while let Ok(Some(m)) = inbound.message().await {
                received.lock().unwrap().push(m);
            }
        });
        Ok(tonic::Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn status(
        &self,
        _: tonic::Request<StatusRequest>,
    ) -> Result<tonic::Response<StatusReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("fake"))
    }

    async fn export(
        &self,
        _: tonic::Request<ExportRequest>,
    ) -> Result<tonic::Response<ExportReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("fake"))
    }

    async fn backup(
        &self,
        _: tonic::Request<stera_proto::v1::BackupRequest>,
    ) -> Result<tonic::Response<stera_proto::v1::BackupReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("fake"))
    }

    async fn search(
        &self,
        _: tonic::Request<stera_proto::v1::SearchRequest>,
    ) -> Result<tonic::Response<stera_proto::v1::SearchReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("fake"))
    }
}

fn job(lease_id: u64, nodes: u64) -> Job {
    Job::think(
        lease_id,
        0,
        stera_rules::STARTPOS_SFEN.into(),
        Limits {
            nodes,
            depth: 0,
            time_ms: 0,
        },
    )
}

/// Serves `fake` on a free loopback port; returns its URL.
fn serve(rt: &tokio::runtime::Runtime, fake: FakeCoordinator) -> String {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(
        tonic::transport::Server::builder()
            .add_service(CoordinatorServer::new(fake))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    format!("http://{addr}")
}

fn wait_exit(child: &mut std::process::Child, log: &Log) {
    common::wait_child_exit(child, LONG, "worker", log);
}

fn sigterm(child: &std::process::Child) {
    common::signal(child, "-TERM");
}

fn wait_until(what: &str, log: &Log, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < LONG,
            "{what} never happened: {:?}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Item 6: results that are never acknowledged made the first SIGTERM wait forever.
/// The worker now leaves when its stop grace ends. Item 8: an acknowledgement of a
/// lease the worker never had is not counted in its "acked" total.
#[test]
fn a_worker_whose_results_are_never_acknowledged_stops_within_its_grace() {
    let rt = rt();
    let received = Arc::new(Mutex::new(Vec::new()));
    let url = serve(
        &rt,
        FakeCoordinator {
            jobs: vec![job(1, 300)],
            unsolicited_ack: true,
            received: received.clone(),
        },
    );
    let mut worker = start_worker(
        &url,
        &["--slots", "1", "--stop-timeout-secs", "2"],
        &[("RUST_LOG", "info")],
    );
    let log = collect_stderr(&mut worker);
    let has_result = || {
        received
            .lock()
            .unwrap()
            .iter()
            .any(|m| matches!(m.msg, Some(worker_message::Msg::Result(_))))
    };
    wait_until("a result", &log, has_result);
    sigterm(&worker);
    wait_exit(&mut worker, &log);
    let lines = log.lock().unwrap();
    let last = lines
        .iter()
        .rev()
        .find(|l| l.contains("worker stopped"))
        .expect("final status line");
    assert!(last.contains("acked 0"), "{last}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("acknowledgement of no result")),
        "{lines:?}"
    );
}

/// Item 6: after the second SIGTERM during a long built-in search the worker logged
/// "worker stopped" and kept running at 100 % CPU. It now gives the job back and
/// exits.
#[test]
fn a_second_sigterm_stops_a_long_search_and_exits() {
    let rt = rt();
    let received = Arc::new(Mutex::new(Vec::new()));
    let url = serve(
        &rt,
        FakeCoordinator {
            jobs: vec![job(7, 1_000_000_000_000)],
            unsolicited_ack: false,
            received: received.clone(),
        },
    );
    let mut worker = start_worker(&url, &["--slots", "1"], &[("RUST_LOG", "info")]);
    let log = collect_stderr(&mut worker);
    wait_until("the first heartbeat", &log, || {
        received
            .lock()
            .unwrap()
            .iter()
            .any(|m| matches!(m.msg, Some(worker_message::Msg::Heartbeat(_))))
    });
    sigterm(&worker);
    // Two signals that arrive before the worker reads the first are one.
    wait_until("the first signal read", &log, || {
        log.lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("finishing the jobs in hand"))
    });
    sigterm(&worker);
    wait_exit(&mut worker, &log);
    let gave_back = received.lock().unwrap().iter().any(|m| {
        matches!(&m.msg, Some(worker_message::Msg::GiveBack(g)) if g.lease_id == 7 && !g.failed)
    });
    assert!(gave_back, "{:?}", log.lock().unwrap());
}

/// Item 3: an export pointed into the live store (`--out <store>/conf`) overwrote
/// its files; afterwards the store could not be opened. The RPC now refuses paths
/// inside any store and outside `--export-dir`, and the store stays whole.
#[test]
fn remote_exports_never_write_into_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--export-dir", exports.to_str().unwrap()],
        &[],
    );
    let rt = rt();
    let report = rt
        .block_on(fake_worker(c.url(), None, 2, Answer::Good, 5, LONG))
        .unwrap();
    assert_eq!(report.acked.len(), 5);
    let export = |path: String| {
        rt.block_on(async {
            let mut client = common::client(c.url(), None).await.unwrap();
            client
                .export(ExportRequest {
                    path,
                    shrink: false,
                    raw: false,
                    ..Default::default()
                })
                .await
        })
    };
    for bad in [
        db.join("conf").display().to_string(),
        db.join("db").display().to_string(),
        "../book.db/conf".to_owned(),
        dir.path().join("elsewhere.db2016").display().to_string(),
    ] {
        let status = export(bad.clone()).expect_err(&bad);
        assert_eq!(
            status.code(),
            tonic::Code::PermissionDenied,
            "{bad}: {status:?}"
        );
        assert!(status.message().contains("refusing"), "{status:?}");
    }
    let ok = export("now.db2016".into()).unwrap().into_inner();
    assert!(exports.join("now.db2016").is_file(), "{ok:?}");
    drop(c);
    // The store opens and holds what was acknowledged.
    let acked: Vec<String> = report.acked.iter().map(|(_, s)| s.clone()).collect();
    assert!(common::book_contains_all(&db, &acked).is_empty());
}

/// Item 3: the coordinator refuses to start with `--export` inside its store, and a
/// coordinator without `--export-dir` refuses every remote export path.
#[test]
fn export_paths_inside_the_store_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let out = std::process::Command::new(common::EXE)
        .args([
            "--db",
            db.to_str().unwrap(),
            "--create",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--export")
        .arg(db.join("db"))
        .env_remove("STERA_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("inside the book store"), "{err}");

    let c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    let status = rt()
        .block_on(async {
            let mut client = common::client(c.url(), None).await.unwrap();
            client
                .export(ExportRequest {
                    path: dir.path().join("x.db2016").display().to_string(),
                    shrink: false,
                    raw: false,
                    ..Default::default()
                })
                .await
        })
        .unwrap_err();
    assert!(status.message().contains("--export-dir"), "{status:?}");
}

/// Issue 45, point 4: TLS files are read with a bound: `/dev/zero` as the
/// certificate is refused at start, the store left as it was.
#[test]
fn tls_files_from_dev_zero_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let out = std::process::Command::new(common::EXE)
        .arg("--db")
        .arg(&db)
        .args([
            "--create",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            "/dev/zero",
            "--tls-key",
            "/dev/zero",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("TLS certificate /dev/zero is larger than 1048576 bytes"),
        "{stderr}"
    );
}
