//! Issue 45, point 5: a run that cannot make progress ends, non-zero, with the
//! reason, instead of idling: local workers that cannot start, and limits every
//! worker would refuse (outside the protocol's bounds) are refused at start.

use std::process::{Command, Stdio};

use crate::common::EXE;

/// Runs the coordinator to its end with a store made in `dir`; returns
/// (success, stderr).
fn run(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(EXE)
        .arg("--db")
        .arg(dir.join("book.db"))
        .arg("--create")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .args(args)
        .env_remove("STERA_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The last line of a log: the `error: ...` the process ends with.
fn last_line(stderr: &str) -> &str {
    stderr.lines().last().unwrap_or_default()
}

#[test]
fn local_workers_whose_engine_cannot_start_end_the_run_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = run(
        dir.path(),
        &[
            "--local-workers",
            "2",
            "--think-limit",
            "10",
            "--engine-cmd",
            "/nonexistent",
            "--nodes",
            "1000",
        ],
    );
    assert!(!ok, "{stderr}");
    let last = last_line(&stderr);
    assert!(
        last.starts_with("error: all 2 --local-workers ended"),
        "{stderr}"
    );
    assert!(
        last.contains("local-0") && last.contains("local-1"),
        "{last}"
    );
    assert!(last.contains("`/nonexistent`"), "{last}");
    assert!(last.contains("no other worker is connected"), "{last}");
}

#[test]
fn local_workers_whose_evaluation_file_cannot_be_read_end_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = run(
        dir.path(),
        &[
            "--local-workers",
            "1",
            "--think-limit",
            "10",
            "--eval-file",
            "/dev/zero",
        ],
    );
    assert!(!ok, "{stderr}");
    let last = last_line(&stderr);
    assert!(
        last.starts_with("error: all 1 --local-workers ended"),
        "{stderr}"
    );
    assert!(last.contains("/dev/zero"), "{last}");
}

#[test]
fn limits_outside_the_protocols_bounds_are_refused_at_start() {
    let nodes_over = (stera_proto::limits::MAX_NODES + 1).to_string();
    let depth_over = (stera_proto::limits::MAX_DEPTH + 1).to_string();
    let time_over = (stera_proto::limits::MAX_TIME_MS + 1).to_string();
    let cases: [(&str, &str); 7] = [
        ("--depth", "4294967295"),
        ("--depth", &depth_over),
        ("--time-ms", &time_over),
        ("--nodes", "18446744073709551615"),
        ("--nodes", &nodes_over),
        ("--play-nodes", &nodes_over),
        ("--learn-nodes", &nodes_over),
    ];
    for (flag, value) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (ok, stderr) = run(dir.path(), &[flag, value, "--think-limit", "1"]);
        assert!(!ok, "{flag} {value}: {stderr}");
        let last = last_line(&stderr);
        assert!(
            last.contains(&format!("{flag} is out of the protocol's bounds ({value}")),
            "{flag} {value}: {stderr}"
        );
        // Refused from the flags alone: no store is made.
        assert!(!dir.path().join("book.db").exists(), "{flag} {value}");
    }
    // The bounds themselves are accepted: the run thinks nothing and ends.
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = run(
        dir.path(),
        &[
            "--depth",
            &stera_proto::limits::MAX_DEPTH.to_string(),
            "--think-limit",
            "0",
        ],
    );
    assert!(ok, "{stderr}");
}

/// Issue 45, point 7: a 100 KB `--engine-cmd` or `--learn-opponent` is quoted
/// by a few hundred bytes in every line (they printed 67 KB and 100 KB).
#[test]
fn long_flag_values_are_quoted_by_an_excerpt() {
    let long = "p".repeat(100_000);
    let cmd = format!("/x{long}");
    let opponent = format!("--nodes {long}");
    for args in [
        vec![
            "--local-workers",
            "1",
            "--nodes",
            "10",
            "--engine-cmd",
            &cmd,
        ],
        vec!["--learn-games", "1", "--learn-opponent", &opponent],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (ok, stderr) = run(dir.path(), &args);
        assert!(!ok, "{args:?}");
        for line in stderr.lines() {
            assert!(
                line.len() < 2_100,
                "a line of {} bytes for {args:?}: {}…",
                line.len(),
                &line[..500]
            );
        }
        assert!(last_line(&stderr).contains("ppp…"), "{stderr}");
    }
}
