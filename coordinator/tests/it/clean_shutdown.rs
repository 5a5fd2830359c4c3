//! A normal end of the main job logs no stream errors (issue 14, item 5): the
//! coordinator and its local workers (whose log lines share its stderr) finish
//! without a warning or an error line.

use crate::common::{Coord, LONG};

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
