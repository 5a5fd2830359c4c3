//! Progress you can see: with stderr not a terminal, the coordinator logs a summary
//! line (target `stera_coordinator::status`) every `--status-every-secs`, and none
//! with `--status-every-secs 0`.

use crate::common::{Coord, LONG};
use stera_testkit::pty::{drawn_lines, run_on_terminal, screen};

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
                    l.contains("thought 0/40 (0.0%) | 0.0 pos/s | ETA -- | book 0 | workers 0 (0 job slots) | in flight 0"),
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

/// On a terminal with local workers (issue 28: the workers and the coordinator
/// redrew one line in turn, and log records were glued onto the status line): the
/// coordinator draws the only status line, and every log record, its own and its
/// workers', stands on a line of its own. Run on a pseudo-terminal by `script`
/// (util-linux, in every Debian).
#[test]
fn on_a_terminal_records_and_the_status_line_never_share_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book");
    let command = format!(
        "{} --db {} --create --listen 127.0.0.1:0 --local-workers 2 --think-limit 1500 --nodes 3000",
        crate::common::EXE,
        db.display()
    );
    let out = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env_remove("RUST_LOG")
        .output()
        .expect("run `script` (util-linux)");
    let shown = screen(&out.stdout);
    assert!(out.status.success(), "{shown:#?}");
    assert!(
        shown.iter().any(|l| l.contains("coordinator stopped")),
        "{shown:#?}"
    );
    // The worker's own status line ("connected | jobs | evaluated ...") is never
    // drawn: the coordinator's terminal has one status line, the coordinator's.
    // (A worker's last record, `worker stopped status=... | evaluated ...`, holds
    // the same words, so only drawn lines count.)
    let drawn = drawn_lines(&out.stdout);
    assert!(
        !drawn.iter().any(|l| l.contains("| evaluated ")),
        "a local worker drew its status line: {drawn:#?}"
    );
    for line in &shown {
        // A record starts its line with its timestamp, and a line holds one record.
        let records = line.matches("Z  INFO").count()
            + line.matches("Z  WARN").count()
            + line.matches("Z ERROR").count();
        assert!(records <= 1, "records share a line: {line:?}");
        if records == 1 {
            assert!(
                line.starts_with("20") && line.as_bytes().get(4) == Some(&b'-'),
                "a record after other output on its line: {line:?}"
            );
        }
    }
    // The status line was drawn during the run (erase the line, then `thought`;
    // a summary record would start with its timestamp).
    let drawn = b"\r\x1b[2Kthought ";
    assert!(
        out.stdout.windows(drawn.len()).any(|w| w == drawn),
        "no status line was drawn: {shown:#?}"
    );
    // The workers' own records are on the screen, each on a line of its own
    // (checked above): they come through the coordinator's writer.
    assert!(
        shown
            .iter()
            .any(|l| l.contains("Z  INFO") && l.contains("connected url=")),
        "no record of a local worker: {shown:#?}"
    );
}

/// Runs the coordinator with two local workers on a pseudo-terminal `columns` wide
/// and returns what it wrote there.
fn on_a_terminal_of(columns: u16) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book");
    let out = run_on_terminal(
        columns,
        &format!(
            "{} --db {} --create --listen 127.0.0.1:0 --local-workers 2 --think-limit 1500 --nodes 3000",
            crate::common::EXE,
            db.display()
        ),
    );
    assert!(out.status.success(), "{:#?}", screen(&out.stdout));
    out.stdout
}

/// Issue 36: a status line wider than the terminal wraps, and the erase before
/// each redraw clears only its last row, so the screen filled with copies. Every
/// line drawn fits the terminal, narrow or wide, and the wide one shows more.
#[test]
fn the_status_line_fits_the_terminal() {
    let mut longest = Vec::new();
    for columns in [80, 200] {
        let drawn = drawn_lines(&on_a_terminal_of(columns));
        assert!(
            drawn.iter().any(|l| l.starts_with("thought ")),
            "no status line at {columns} columns: {drawn:#?}"
        );
        for line in &drawn {
            assert!(
                line.chars().count() <= usize::from(columns),
                "wider than {columns} columns: {line:?}"
            );
        }
        if columns == 80 {
            // The whole line is wider than 80: it was cut, after a whole field.
            assert!(
                drawn.iter().any(|l| l.ends_with(" …")),
                "nothing was cut at 80 columns: {drawn:#?}"
            );
        }
        longest.push(drawn.iter().map(|l| l.chars().count()).max().unwrap_or(0));
    }
    assert!(
        longest[1] > longest[0],
        "the wide terminal showed no more: {longest:?}"
    );
}
