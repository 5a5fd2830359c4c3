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

/// What a terminal shows after `bytes`: `\r` returns to the line's start, `ESC[2K`
/// erases the line, other escape sequences (colours) draw nothing, `\n` ends a line,
/// and text overwrites what is under the cursor.
fn screen(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = Vec::new();
    let mut line: Vec<char> = Vec::new();
    let mut cursor = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => cursor = 0,
            '\n' => {
                lines.push(line.iter().collect::<String>());
                line.clear();
                cursor = 0;
            }
            '\x1b' => {
                let mut sequence = String::new();
                if chars.peek() == Some(&'[') {
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        sequence.push(n);
                        if n.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
                if sequence == "2K" {
                    line.clear();
                }
            }
            c => {
                if cursor < line.len() {
                    line[cursor] = c;
                } else {
                    line.resize(cursor, ' ');
                    line.push(c);
                }
                cursor += 1;
            }
        }
    }
    lines.push(line.iter().collect());
    lines
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
        "{} --db {} --listen 127.0.0.1:0 --local-workers 2 --think-limit 1500 --nodes 3000",
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
    // The worker's own status line ("connected | jobs ...") never shows: the
    // coordinator's terminal has one status line, the coordinator's.
    assert!(
        !shown.iter().any(|l| l.contains("| evaluated ")),
        "a local worker drew its status line: {shown:#?}"
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
