//! A normal end of the main job logs no stream errors (issue 14, item 5): the
//! coordinator and its local workers (whose log lines share its stderr) finish
//! without a warning or an error line; nor does a normal stop by SIGTERM
//! (issue 28): warnings are for stops that go wrong.

use crate::common::{Answer, Coord, LONG, fake_worker};

#[test]
fn a_clean_main_job_logs_no_stream_errors_and_no_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--local-workers",
            "2",
            "--think-limit",
            "60",
            "--nodes",
            "300",
        ],
        &[],
    );
    let status = c.wait_exit(LONG);
    let log = c.log.lock().unwrap().clone();
    assert!(status.success(), "{log:?}");
    // The workers' lines are in the log too, so their shutdown is checked.
    assert!(
        log.iter().any(|l| l.contains("stera_worker")),
        "no worker lines captured: {log:?}"
    );
    assert!(
        log.iter().any(|l| l.contains("coordinator stopped")),
        "{log:?}"
    );
    let bad: Vec<&String> = log
        .iter()
        .filter(|l| {
            l.contains("stream error")
                || l.contains("h2 protocol")
                || l.contains(" WARN ")
                || l.contains(" ERROR ")
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// An operator's SIGTERM that drains and stops cleanly (workers connected,
/// jobs in flight, a final export) logs no WARN or ERROR record: a normal
/// stop is told at INFO, so an alert on warnings in the log stays quiet on
/// every upgrade.
#[test]
fn a_clean_stop_by_sigterm_logs_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let export = dir.path().join("book.db2016");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--log-format",
            "json",
            "--local-workers",
            "1",
            "--nodes",
            "300",
            "--export",
            export.to_str().unwrap(),
            // The local worker and a fake one think side by side.
            "--allow-mixed-engines",
        ],
        &[],
    );
    let rt = crate::common::runtime(1);
    rt.block_on(fake_worker(c.url(), None, 1, Answer::Good, 3, LONG))
        .unwrap();
    c.wait_log("worker connected", LONG);
    c.sigterm();
    let status = c.wait_exit(LONG);
    let log = c.log.lock().unwrap().clone();
    assert!(status.success(), "{log:?}");
    let records: Vec<serde_json::Value> = log
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let message = |r: &serde_json::Value| r["fields"]["message"].as_str().unwrap_or("").to_owned();
    assert!(
        records.iter().any(|r| message(r).starts_with("stopping")),
        "no stop record: {log:#?}"
    );
    assert!(
        records.iter().any(|r| message(r) == "coordinator stopped"),
        "{log:#?}"
    );
    assert!(export.is_file(), "no final export");
    let loud: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["level"] != "INFO" && r["level"] != "DEBUG")
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
}

/// The processes whose parent is `pid` and whose command line holds `word`.
fn children_with(pid: u32, word: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, ppid, ...
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        if ppid == Some(pid) && String::from_utf8_lossy(&cmdline).contains(word) {
            found.push(child);
        }
    }
    found
}

/// True while `pid` runs (a zombie nobody has reaped yet has ended).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// A coordinator killed with SIGKILL (or by the OOM killer) cannot drain its
/// local workers; they used to stay behind, retrying a coordinator that was
/// gone. Now they notice their parent ended and leave.
#[test]
fn local_workers_leave_when_their_coordinator_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--local-workers", "2", "--nodes", "300"],
        &[],
    );
    // Both workers connected.
    let start = std::time::Instant::now();
    while c
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("worker connected"))
        .count()
        < 2
    {
        assert!(start.elapsed() < LONG, "{:?}", c.log.lock().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let workers = children_with(c.child.id(), "__worker");
    assert_eq!(workers.len(), 2, "{:?}", c.log.lock().unwrap());
    assert!(workers.iter().all(|&w| running(w)));
    c.kill9();
    let start = std::time::Instant::now();
    while workers.iter().any(|&w| running(w)) {
        assert!(
            start.elapsed() < LONG,
            "local workers {workers:?} still run {:?} after their coordinator was killed",
            start.elapsed()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
