//! Issue 26, points 4 and 7 against real coordinator processes: roots that can
//! never be thought are refused at start, a run that cannot make progress says
//! so and stops, a worker id cannot forge log lines, an empty token is refused,
//! and listening on a public address without one is warned about.

use crate::common;

use std::process::{Command, Stdio};

use crate::common::{Answer, Coord, EXE, LONG, fake_worker, hello};
use stera_book::{LiveBook, RunConfig, SledStore};
use stera_proto::v1::WorkerMessage;
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

/// A store whose run has these roots.
fn store_with_roots(db: &std::path::Path, roots: &[&str]) {
    let store = SledStore::open(db).unwrap();
    let config = RunConfig {
        roots: roots.iter().map(|r| (*r).to_owned()).collect(),
        ..RunConfig::default()
    };
    let mut live = match LiveBook::open(store, Some(config.clone())) {
        Ok(s) => s,
        Err(_) => {
            // Roots the selector refuses are written as they are, as an older
            // version (or another tool) could have.
            let mut store = SledStore::open(db).unwrap();
            stera_book::NodeStore::save_config(&mut store, &config).unwrap();
            stera_book::NodeStore::flush(&mut store).unwrap();
            return;
        }
    };
    stera_book::NodeStore::flush(live.store_mut()).unwrap();
}

/// Runs the coordinator to its end; returns (success, stderr).
fn run_coordinator(db: &std::path::Path, args: &[&str], envs: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(EXE);
    cmd.arg("--db")
        .arg(db)
        .arg("--create")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .args(args)
        .env_remove("STERA_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_root_beyond_the_ply_limit_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    store_with_roots(&db, &["startpos", "sfen 4k4/9/9/9/9/9/9/9/4K4 b G 10000"]);
    let (ok, stderr) = run_coordinator(&db, &[], &[]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("ply 10000"), "{stderr}");
    assert!(stderr.contains("ply limit"), "{stderr}");
}

/// A store whose run has more than MAX_ROOTS roots (200,000 took 9.5 GB before
/// the coordinator listened) is refused at start.
#[test]
fn more_roots_than_the_limit_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let roots = vec!["startpos"; stera_book::MAX_ROOTS + 1];
    store_with_roots(&db, &roots);
    let (ok, stderr) = run_coordinator(&db, &[], &[]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("MAX_ROOTS"), "{stderr}");
}

/// The root is mated: once it is thought, nothing is left to select. The run
/// used to idle forever without a word; it now says so and stops.
#[test]
fn a_run_that_cannot_make_progress_says_so_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    // White to move, its king on 1a taken by a gold on 1b held by a pawn.
    store_with_roots(&db, &["sfen 8k/8G/8P/9/9/9/9/9/K8 w - 1"]);
    let mut c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    let rt = common::runtime(1);
    let worker = rt.spawn(fake_worker(
        c.url(),
        None,
        1,
        Answer::Good,
        usize::MAX,
        LONG,
    ));
    c.wait_log("nothing left to think", LONG);
    let status = c.wait_exit(LONG);
    assert!(status.success(), "{:?}", c.log.lock().unwrap());
    c.wait_log("no position can be thought any more", LONG);
    let _ = rt.block_on(worker);
}

#[test]
fn a_worker_id_with_control_characters_cannot_forge_log_lines() {
    let dir = tempfile::tempdir().unwrap();
    let c = Coord::start(&dir.path().join("book.db"), "127.0.0.1:0", &[], &[]);
    let rt = common::runtime(1);
    let forged = "w1\n2026-01-01T00:00:00Z  INFO FORGED: \u{1b}[2Jall workers gone";
    let status = rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        let (tx, rx) = tmpsc::channel::<WorkerMessage>(4);
        tx.send(hello(forged, "fake", 1)).await.unwrap();
        match client.work(ReceiverStream::new(rx)).await {
            Err(status) => status,
            Ok(r) => {
                let mut inbound = r.into_inner();
                loop {
                    match inbound.message().await {
                        Err(status) => break status,
                        Ok(Some(_)) => {}
                        Ok(None) => panic!("the stream ended without a refusal"),
                    }
                }
            }
        }
    });
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("control character"), "{status:?}");
    c.wait_log("Hello refused", LONG);
    let log = c.log.lock().unwrap();
    assert!(
        !log.iter()
            .any(|l| l.starts_with("2026-01-01") || l.contains('\u{1b}')),
        "{log:?}"
    );
}

#[test]
fn an_empty_stera_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = run_coordinator(&dir.path().join("book.db"), &[], &[("STERA_TOKEN", "")]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("STERA_TOKEN is set but empty"), "{stderr}");
}

#[test]
fn listening_on_a_public_address_without_a_token_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Coord::start(&dir.path().join("book.db"), "0.0.0.0:0", &[], &[]);
    c.wait_log("without a token", LONG);
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
}

/// Careless input: a new store is announced loudly (a typo in --db must not
/// start a new book without a word), an existing one is not; a worker given
/// `host:port` without a scheme connects; a temperature that is not a number of
/// centipawns is refused before anything is made.
#[test]
fn careless_command_lines_are_said_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo.db");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--think-limit", "1000000", "--nodes", "50"],
        &[],
    );
    c.wait_log("created a NEW, EMPTY book store", LONG);
    // The worker's URL without `http://`.
    let mut worker = common::start_worker(&c.addr, &["--slots", "1"], &[("RUST_LOG", "info")]);
    c.wait_log("worker connected", LONG);
    let _ = worker.kill();
    let _ = worker.wait();
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
    drop(c);
    let c = Coord::start(&db, "127.0.0.1:0", &["--think-limit", "0"], &[]);
    c.wait_log("listening", LONG);
    assert!(
        !c.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("created a NEW")),
        "an existing store is opened without the warning"
    );
    drop(c);

    for bad in ["NaN", "-5", "inf"] {
        let fresh = dir.path().join(format!("t{bad}.db"));
        let out = Command::new(EXE)
            .arg("--db")
            .arg(&fresh)
            .arg("--create")
            .arg(format!("--play-temperature={bad}"))
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is not a temperature"),
            "{bad}"
        );
        assert!(!fresh.exists(), "{bad}: nothing made");
    }
}
