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
