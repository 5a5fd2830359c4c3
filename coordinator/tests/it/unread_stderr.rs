//! Issue 45, point 9: a coordinator whose stderr nobody reads (a full pipe) froze
//! whole: the threads that logged blocked, `/metrics` stopped answering and
//! SIGTERM was ignored. Logging never blocks now: records beyond a bounded
//! queue are dropped and counted, and said once stderr moves again.

use std::io::Read;
use std::process::{Command, Stdio};

use crate::common::{self, EXE, LONG, free_port};
use crate::web;

#[test]
fn a_coordinator_whose_stderr_is_not_read_serves_metrics_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let http = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(EXE)
        .arg("--db")
        .arg(dir.path().join("book.db"))
        .args(["--create", "--listen", &listen, "--metrics", &http])
        .args(["--status-every-secs", "0"])
        // Every request logs many records at trace level: the pipe fills fast.
        .env("RUST_LOG", "trace")
        .env_remove("STERA_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Held, never read until the end: the pipe fills and stays full.
    let mut stderr = child.stderr.take().unwrap();
    let url = format!("http://{listen}");
    let rt = common::runtime(1);
    let dropped = || {
        let m = web::get_ok(&http, "/metrics", LONG).body;
        web::sample(&m, "stera_coordinator_log_records_dropped_total").unwrap_or(0.0)
    };
    // Requests keep coming (each answered) until records are being dropped:
    // the pipe and the queue behind it are full.
    let start = std::time::Instant::now();
    let mut requests = 0;
    while dropped() == 0.0 {
        for _ in 0..50 {
            rt.block_on(common::status(&url, None));
            requests += 1;
        }
        assert!(
            start.elapsed() < LONG,
            "no record dropped after {requests} requests"
        );
    }
    // Still serving with the pipe full, and a SIGTERM stops it.
    rt.block_on(common::status(&url, None));
    common::signal(&child, "-TERM");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let status = common::wait_child_exit(&mut child, LONG, "coordinator", &log);
    assert!(status.success(), "{status:?}");
    // What the pipe held: records, whole lines (the first 64 KiB or so).
    let mut text = Vec::new();
    stderr.read_to_end(&mut text).unwrap();
    let text = String::from_utf8_lossy(&text);
    assert!(
        text.contains("listening"),
        "{}",
        &text[..text.len().min(500)]
    );
}

/// Once the reader comes back, the records queued meanwhile come out and a line
/// says how many were dropped.
#[test]
fn dropped_records_are_said_once_stderr_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let http = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(EXE)
        .arg("--db")
        .arg(dir.path().join("book.db"))
        .args(["--create", "--listen", &listen, "--metrics", &http])
        .args(["--status-every-secs", "0"])
        .env("RUST_LOG", "trace")
        .env_remove("STERA_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let url = format!("http://{listen}");
    let rt = common::runtime(1);
    let start = std::time::Instant::now();
    loop {
        let m = web::get_ok(&http, "/metrics", LONG).body;
        if web::sample(&m, "stera_coordinator_log_records_dropped_total").unwrap_or(0.0) > 0.0 {
            break;
        }
        for _ in 0..50 {
            rt.block_on(common::status(&url, None));
        }
        assert!(start.elapsed() < LONG, "no record dropped");
    }
    // Reading again: the line about the dropped records comes.
    let log: common::Log = std::sync::Arc::default();
    let sink = log.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            sink.lock().unwrap().push(line);
        }
    });
    common::wait_line(&log, "log records dropped: stderr was not read", LONG);
    common::signal(&child, "-TERM");
    let status = common::wait_child_exit(&mut child, LONG, "coordinator", &log);
    assert!(status.success(), "{status:?}");
}
