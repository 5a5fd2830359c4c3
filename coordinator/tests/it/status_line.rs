//! Progress you can see: with stderr not a terminal, the coordinator logs a summary
//! line (target `stera_coordinator::status`) every `--status-every-secs`, and none
//! with `--status-every-secs 0`.

use crate::common::{Coord, LONG};

const TARGET: &str = "stera_coordinator::status";

/// Runs a coordinator with one local worker to a think limit of 40 and returns its
/// log lines.
fn run(status_every: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book");
    let mut coord = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--local-workers",
            "1",
            "--think-limit",
            "40",
            "--nodes",
            "300",
            "--status-every-secs",
            status_every,
        ],
        &[],
    );
    let status = coord.wait_exit(LONG);
    let log = coord.log.lock().unwrap().clone();
    assert!(status.success(), "coordinator failed: {log:?}");
    assert!(
        log.iter().any(|l| l.contains("coordinator stopped")),
        "{log:?}"
    );
    log
}

#[test]
fn summary_lines_when_not_on_a_terminal() {
    let log = run("1");
    let summaries: Vec<&String> = log.iter().filter(|l| l.contains(TARGET)).collect();
    assert!(
        summaries
            .iter()
            .any(|l| l.contains("thought ") && l.contains("/40") && l.contains("book ")),
        "no summary line with the think limit: {log:?}"
    );
    for l in &summaries {
        assert!(l.contains("INFO"), "{l}");
        // A log file gets plain lines: no terminal control codes.
        assert!(!l.contains('\r') && !l.contains("\x1b[2K"), "{l:?}");
    }
}

#[test]
fn no_summary_with_zero() {
    let log = run("0");
    assert!(
        !log.iter().any(|l| l.contains(TARGET)),
        "summary lines with --status-every-secs 0: {log:?}"
    );
}

#[test]
fn summaries_repeat_while_the_run_waits() {
    // No workers: nothing is thought and the run does not end by itself.
    let dir = tempfile::tempdir().unwrap();
    let mut coord = Coord::start(
        &dir.path().join("book"),
        "127.0.0.1:0",
        &[
            "--think-limit",
            "40",
            "--status-every-secs",
            "1",
            "--drain-secs",
            "1",
        ],
        &[],
    );
    let start = std::time::Instant::now();
    loop {
        let summaries: Vec<String> = coord
            .log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(TARGET))
            .cloned()
            .collect();
        if summaries.len() >= 2 {
            for l in &summaries {
                assert!(
                    l.contains("thought 0/40 (0.0%) | 0.0 pos/s | ETA -- | book 0 | workers 0 (0 slots) | in flight 0"),
                    "{l}"
                );
            }
            break;
        }
        assert!(
            start.elapsed() < LONG,
            "fewer than two summaries in {LONG:?}: {:?}",
            coord.log.lock().unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    coord.sigterm();
    assert!(coord.wait_exit(LONG).success());
}
