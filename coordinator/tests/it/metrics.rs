//! Metrics, status JSON and logs of real coordinator and worker processes on
//! loopback: the numbers a person or Prometheus sees must be the numbers of what
//! happened.

use crate::common;
use crate::web;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Answer, Coord, LONG, fake_worker, free_port, start_worker};

fn rt() -> tokio::runtime::Runtime {
    common::runtime(2)
}

/// Every sample line `name{...} value` of a metric family, as (labels, value).
fn family(text: &str, name: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let labels = match series.split_once('{') {
                Some((n, rest)) if n == name => rest.trim_end_matches('}').to_owned(),
                None if series == name => String::new(),
                _ => return None,
            };
            Some((labels, value.parse().ok()?))
        })
        .collect()
}

fn value(text: &str, series: &str) -> f64 {
    web::sample(text, series).unwrap_or_else(|| panic!("no sample `{series}` in:\n{text}"))
}

/// Good and bad results: counters, gauges, histograms and the status JSON agree
/// with what the fake workers were told; no label names a worker.
#[test]
fn coordinator_metrics_count_what_happened() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let http = format!("127.0.0.1:{}", free_port());
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--metrics", &http, "--max-failures", "100"],
        &[],
    );
    let rt = rt();
    let good = rt
        .block_on(fake_worker(c.url(), None, 2, Answer::Good, 20, LONG))
        .unwrap();
    assert_eq!(good.acked.len(), 20);
    let bad = rt
        .block_on(fake_worker(c.url(), None, 1, Answer::MissingMove, 3, LONG))
        .unwrap();
    assert_eq!(bad.rejected.len(), 3);
    // Both fake workers have gone: wait until the coordinator has seen that.
    let status = web::wait_status(&http, LONG, "no workers", |s| {
        s["workers_connected"] == 0 && s["in_flight"] == 0
    });

    let m = web::get_ok(&http, "/metrics", LONG);
    assert!(
        m.header("content-type")
            .is_some_and(|t| t.starts_with("text/plain")),
        "{:?}",
        m.headers
    );
    let text = &m.body;
    let version = env!("CARGO_PKG_VERSION");
    let info = family(text, "stera_build_info");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].1, 1.0);
    assert!(info[0].0.contains("component=\"coordinator\""), "{info:?}");
    assert!(
        info[0].0.contains(&format!("version=\"{version}\"")),
        "{info:?}"
    );
    // The fake worker may have sent one more result before it hung up.
    let thought = value(text, "stera_coordinator_thought_positions_total");
    assert!((20.0..=22.0).contains(&thought), "{thought}");
    assert_eq!(value(text, "stera_book_nodes"), thought);
    assert_eq!(
        value(text, "stera_book_leaf_edges"),
        status["leaf_edges"].as_f64().unwrap()
    );
    assert!(value(text, "stera_book_leaf_edges") > 20.0);
    assert_eq!(
        value(
            text,
            "stera_coordinator_results_rejected_total{reason=\"invalid\"}"
        ),
        3.0
    );
    assert_eq!(
        value(
            text,
            "stera_coordinator_results_rejected_total{reason=\"unknown_lease\"}"
        ),
        0.0
    );
    assert_eq!(value(text, "stera_coordinator_leases_in_flight"), 0.0);
    assert_eq!(value(text, "stera_coordinator_workers_connected"), 0.0);
    // The scrape itself runs in a task of the runtime, so at least that one is alive.
    assert!(value(text, "stera_coordinator_tokio_tasks") >= 1.0);
    // Every selection is in the histogram, and its count equals the counter.
    let selections = value(text, "stera_coordinator_selections_total");
    assert!(selections >= 1.0);
    assert_eq!(
        value(text, "stera_coordinator_selection_duration_seconds_count"),
        selections
    );
    assert_eq!(
        value(
            text,
            "stera_coordinator_selection_duration_seconds_bucket{le=\"+Inf\"}"
        ),
        selections
    );
    assert!(value(text, "stera_coordinator_selected_leaves_total") >= thought + 3.0);
    assert!(text.contains("# TYPE stera_coordinator_selection_duration_seconds histogram"));
    assert!(text.contains("# HELP stera_book_nodes "));
    // Low cardinality: the workers' names never appear as label values.
    assert!(!text.contains("fake"), "{text}");

    // The status JSON tells the same story.
    assert_eq!(status["nodes"].as_f64(), Some(thought));
    assert_eq!(status["thought"].as_f64(), Some(thought));
    assert_eq!(status["rejected"], 3);
    let problems = status["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems.iter().all(|p| p["kind"] == "rejected"));
    // (The lines from the roots exist only once a search got past the roots; the
    // browser test waits for them.)
}

/// The Export RPC shows up as an export counter and duration. A refused path (a
/// caller's typo, issue 28), options no export can run with (issue 35) or a name
/// no file system takes (issue 45) are no export: answered as the caller's
/// mistake, logged and counted as refused or invalid, not as a failure (see
/// `exports_and_backups_that_fail_count_as_errors`).
#[test]
fn exports_are_counted_by_result() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let http = format!("127.0.0.1:{}", free_port());
    // Remote exports may write only inside --export-dir.
    let exports = dir.path().to_str().unwrap();
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--metrics", &http, "--export-dir", exports],
        &[],
    );
    let rt = rt();
    rt.block_on(fake_worker(c.url(), None, 1, Answer::Good, 5, LONG))
        .unwrap();
    let out = dir.path().join("book.db.txt");
    // A file name longer than the file system allows (255 bytes): refused
    // before anything runs (it ran and failed before issue 45).
    let bad = dir.path().join(format!("a-{}", "x".repeat(300)));
    let typo = dir.path().join("no-such-dir").join("book.db");
    rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        let request = |p: &std::path::Path| stera_proto::v1::ExportRequest {
            path: p.display().to_string(),
            shrink: false,
            raw: false,
            ..Default::default()
        };
        client.export(request(&out)).await.unwrap();
        let invalid = client.export(request(&bad)).await.unwrap_err();
        assert_eq!(invalid.code(), tonic::Code::InvalidArgument, "{invalid:?}");
        let refused = client.export(request(&typo)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
        // Options no export can run with (issue 35, point 10): the caller's
        // mistake, not a failed export (which fires the critical export alert).
        let options = dir.path().join("options.db2016");
        let nan = stera_proto::v1::ExportRequest {
            temperature: Some(f64::NAN),
            ..request(&options)
        };
        let unknown_format = stera_proto::v1::ExportRequest {
            format: 99,
            ..request(&options)
        };
        let unknown_backup = stera_proto::v1::ExportRequest {
            backup: 99,
            ..request(&options)
        };
        for (what, bad, needle) in [
            ("NaN temperature", nan, "temperature"),
            ("unknown format", unknown_format, "unknown export format"),
            ("unknown backup", unknown_backup, "unknown export backup"),
        ] {
            let status = client.export(bad).await.unwrap_err();
            assert_eq!(
                status.code(),
                tonic::Code::InvalidArgument,
                "{what}: {status:?}"
            );
            assert!(status.message().contains(needle), "{what}: {status:?}");
        }
    });
    c.wait_log("export request refused", LONG);
    // Each export is logged once, at INFO with its size and duration, or as
    // its failure.
    let log = c.log.lock().unwrap().clone();
    let written: Vec<&String> = log
        .iter()
        .filter(|l| l.contains(out.to_str().unwrap()))
        .collect();
    assert_eq!(written.len(), 1, "{written:#?}");
    assert!(
        written[0].contains(" INFO ")
            && written[0].contains("bytes=")
            && written[0].contains("ms="),
        "{}",
        written[0]
    );
    let size = std::fs::metadata(&out).unwrap().len();
    assert!(
        written[0].contains(&format!("bytes={size} ")),
        "{}",
        written[0]
    );
    let failed = log.iter().filter(|l| l.contains("a-xxx")).count();
    assert_eq!(failed, 1, "{log:#?}");
    let text = web::get_ok(&http, "/metrics", LONG).body;
    assert_eq!(
        value(
            text.as_str(),
            "stera_coordinator_exports_total{result=\"ok\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            text.as_str(),
            "stera_coordinator_exports_total{result=\"error\"}"
        ),
        0.0
    );
    assert_eq!(
        value(
            text.as_str(),
            "stera_coordinator_exports_total{result=\"invalid\"}"
        ),
        4.0
    );
    assert_eq!(
        value(
            text.as_str(),
            "stera_coordinator_exports_total{result=\"refused\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            text.as_str(),
            "stera_coordinator_export_duration_seconds_count"
        ),
        1.0
    );
    assert!(
        value(
            text.as_str(),
            "stera_coordinator_last_export_success_timestamp_seconds"
        ) > 1.0e9
    );
    let status = web::api_status(&http);
    assert_eq!(status["exports_ok"], 1);
    assert_eq!(status["exports_failed"], 0);
    let problems = status["problems"].as_array().unwrap();
    assert!(
        !problems.iter().any(|p| p["kind"] == "export"),
        "{problems:?}"
    );
}

/// An export and a backup that run and fail (here: into a directory no file
/// can be made in, even by root) count as errors, and show on the page.
#[test]
fn exports_and_backups_that_fail_count_as_errors() {
    let dir = tempfile::tempdir().unwrap();
    let http = format!("127.0.0.1:{}", free_port());
    let c = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &["--metrics", &http, "--export-dir", "/proc/self"],
        &[],
    );
    let rt = rt();
    rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        let failed = client
            .export(stera_proto::v1::ExportRequest {
                path: "book.db".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(failed.code(), tonic::Code::Internal, "{failed:?}");
        let failed = client
            .backup(stera_proto::v1::BackupRequest {
                path: "backup.db".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(failed.code(), tonic::Code::Internal, "{failed:?}");
    });
    let text = web::get_ok(&http, "/metrics", LONG).body;
    for (name, want) in [
        ("stera_coordinator_exports_total{result=\"error\"}", 1.0),
        ("stera_coordinator_exports_total{result=\"invalid\"}", 0.0),
        ("stera_coordinator_backups_total{result=\"error\"}", 1.0),
        ("stera_coordinator_backups_total{result=\"invalid\"}", 0.0),
    ] {
        assert_eq!(value(&text, name), want, "{name}");
    }
    let status = web::api_status(&http);
    assert_eq!(status["exports_failed"], 1);
    assert_eq!(status["backups_failed"], 1);
    let problems = status["problems"].as_array().unwrap();
    for kind in ["export", "backup"] {
        assert!(
            problems.iter().any(|p| p["kind"] == kind),
            "{kind}: {problems:?}"
        );
    }
}

/// A real worker process with --metrics counts its evaluations and acknowledged
/// results, and says it is connected.
#[test]
fn worker_metrics_count_evaluations() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    // No think limit: the worker must still be there when it is scraped.
    let c = Coord::start(&db, "127.0.0.1:0", &["--nodes", "300"], &[]);
    let http = format!("127.0.0.1:{}", free_port());
    let mut w = start_worker(
        &c.url(),
        &[
            "--slots",
            "1",
            "--metrics",
            &http,
            "--worker-id",
            "w-metrics",
        ],
        &[],
    );
    // Scrape while it works: it is connected and has evaluated something.
    let start = std::time::Instant::now();
    let text = loop {
        let text = web::get_ok(&http, "/metrics", LONG).body;
        if web::sample(&text, "stera_worker_results_total{result=\"acked\"}").unwrap_or(0.0) >= 3.0
        {
            break text;
        }
        assert!(start.elapsed() < LONG, "no progress: {text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = w.kill();
    let _ = w.wait();
    assert_eq!(value(&text, "stera_worker_connected"), 1.0);
    assert_eq!(value(&text, "stera_worker_slots"), 1.0);
    let evaluated = value(&text, "stera_worker_evaluations_total");
    assert!(evaluated >= 3.0, "{text}");
    // One scrape copies the counter, then renders the histogram: an evaluation
    // that ends in between is in one and not yet in the other (one slot: at most one).
    let timed = value(&text, "stera_worker_evaluation_duration_seconds_count");
    assert!((timed - evaluated).abs() <= 1.0, "{timed} vs {evaluated}");
    assert_eq!(value(&text, "stera_worker_evaluation_errors_total"), 0.0);
    assert_eq!(value(&text, "stera_worker_engine_restarts_total"), 0.0);
    assert_eq!(
        value(&text, "stera_worker_results_total{result=\"rejected\"}"),
        0.0
    );
    let info = family(&text, "stera_build_info");
    assert_eq!(info.len(), 1, "{info:?}");
    assert!(info[0].0.contains("component=\"worker\""), "{info:?}");
    assert!(!text.contains("w-metrics"), "{text}");
}

/// The metrics server must not keep a stopping coordinator alive: SIGTERM ends it
/// after a page was served (the page's status request reaches the dispatcher).
#[test]
fn coordinator_with_metrics_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let http = format!("127.0.0.1:{}", free_port());
    let mut c = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &["--metrics", &http, "--drain-secs", "1"],
        &[],
    );
    web::api_status(&http);
    c.sigterm();
    let status = c.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "{:?}", c.log.lock().unwrap());
    c.wait_log("coordinator stopped", Duration::from_secs(5));
}

/// `--metrics` on an address already in use is a clear start-up error.
#[test]
fn metrics_address_in_use_fails_at_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::EXE)
        .arg("--db")
        .arg(dir.path().join("book.db"))
        .args(["--create", "--listen", "127.0.0.1:0", "--metrics", &addr])
        .env_remove("STERA_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot listen for metrics") && err.contains(&addr),
        "{err}"
    );
}

/// Starts `args` and returns its first stderr lines once one says `needle`.
fn first_lines_until(mut cmd: Command, needle: &str) -> Vec<String> {
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        let done = line.contains(needle);
        lines.push(line);
        if done || lines.len() > 200 {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    lines
}

/// `--log-format json` gives one JSON object per line from both binaries, and
/// RUST_LOG filters by level.
#[test]
fn json_logs_from_coordinator_and_worker() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(common::EXE);
    cmd.arg("--db")
        .arg(dir.path().join("book.db"))
        .args([
            "--create",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ])
        .env("RUST_LOG", "info")
        .env_remove("STERA_TOKEN");
    let lines = first_lines_until(cmd, "listening");
    assert!(lines.len() >= 2, "{lines:?}");
    for line in &lines {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["level"].is_string() && v["fields"].is_object(), "{v}");
    }
    let listening: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(listening["fields"]["message"], "listening");
    assert!(
        listening["fields"]["addr"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:")
    );

    // A worker with nothing to connect to logs its retries as JSON warnings; with
    // RUST_LOG=warn its info lines are filtered out.
    let port = free_port();
    let mut cmd = Command::new(common::EXE);
    cmd.args(["__worker", "--coordinator"])
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["--slots", "1", "--log-format", "json"])
        .env("RUST_LOG", "warn")
        .env_remove("STERA_TOKEN");
    let lines = first_lines_until(cmd, "unreachable");
    let last: serde_json::Value = serde_json::from_str(lines.last().unwrap())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {lines:?}"));
    assert_eq!(last["fields"]["message"], "coordinator unreachable");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_ne!(
            v["level"], "INFO",
            "RUST_LOG=warn let an info line through: {line}"
        );
    }
}

/// Backups show to monitoring (issue 28): a periodic backup is logged once, at
/// INFO with its path, size and duration, and counted with its time, size and
/// duration; an on-demand one likewise; a refused path (a caller's typo) counts
/// as refused only, a backup that runs and fails as an error.
#[test]
fn backups_are_logged_once_and_counted_by_result() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let http = format!("127.0.0.1:{}", free_port());
    let backups = dir.path().join("backups");
    let exports = dir.path().join("exports");
    // --backup-dir is made at start when missing; --export-dir must exist.
    std::fs::create_dir_all(&exports).unwrap();
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--metrics",
            &http,
            "--export-dir",
            exports.to_str().unwrap(),
            "--backup-dir",
            backups.to_str().unwrap(),
            "--backup-every-mins",
            "1",
        ],
        &[],
    );
    let rt = rt();
    rt.block_on(fake_worker(c.url(), None, 1, Answer::Good, 5, LONG))
        .unwrap();
    let metrics = || web::get_ok(&http, "/metrics", LONG).body;
    let text = metrics();
    assert_eq!(
        value(&text, "stera_coordinator_backup_interval_seconds"),
        60.0
    );
    assert_eq!(
        value(
            &text,
            "stera_coordinator_backup_last_success_timestamp_seconds"
        ),
        0.0
    );
    assert!(value(&text, "stera_coordinator_store_disk_size_bytes") >= 0.0);

    // The first periodic backup comes a minute after the start.
    let line = c.wait_log("store backed up", Duration::from_secs(150));
    let periodic = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "db"))
        .expect("a periodic backup");
    let size = stera_book::store_path::directory_size(&periodic).unwrap();
    assert!(size > 0);
    assert!(line.contains(" INFO "), "{line}");
    assert!(
        line.contains(&format!("bytes={size} ")),
        "{line} ({size} bytes)"
    );
    assert!(line.contains("ms="), "{line}");
    let text = metrics();
    assert_eq!(
        value(&text, "stera_coordinator_backups_total{result=\"ok\"}"),
        1.0
    );
    assert!(
        value(
            &text,
            "stera_coordinator_backup_last_success_timestamp_seconds"
        ) > 1.0e9
    );
    assert_eq!(
        value(&text, "stera_coordinator_backup_last_size_bytes"),
        size as f64
    );
    assert!(value(&text, "stera_coordinator_backup_last_duration_seconds") >= 0.0);

    // On demand: one written, one refused (outside --export-dir), one invalid
    // (a name longer than the file system allows: it ran and failed before
    // issue 45).
    let now = exports.join("now.db");
    let outside = dir.path().join("elsewhere.db");
    let too_long = exports.join(format!("b-{}", "x".repeat(300)));
    rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        let request = |p: &std::path::Path| stera_proto::v1::BackupRequest {
            path: p.display().to_string(),
        };
        client.backup(request(&now)).await.unwrap();
        let refused = client.backup(request(&outside)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
        let invalid = client.backup(request(&too_long)).await.unwrap_err();
        assert_eq!(invalid.code(), tonic::Code::InvalidArgument, "{invalid:?}");
    });
    // Log records reach stderr through a queue: the three requests' lines are
    // waited for, not assumed there once the calls returned.
    c.wait_log("backup request refused", LONG);
    c.wait_log("b-xxx", LONG);
    let text = metrics();
    let count = |result: &str| {
        value(
            &text,
            &format!("stera_coordinator_backups_total{{result=\"{result}\"}}"),
        )
    };
    assert_eq!(
        (
            count("ok"),
            count("error"),
            count("refused"),
            count("invalid")
        ),
        (2.0, 0.0, 1.0, 1.0)
    );
    let now_size = stera_book::store_path::directory_size(&now).unwrap();
    assert_eq!(
        value(&text, "stera_coordinator_backup_last_size_bytes"),
        now_size as f64
    );

    // Each backup once in the log: the periodic one (before this fix it was
    // told twice, by the queue and by its timer), the on-demand ones.
    let log = c.log.lock().unwrap().clone();
    let mentions = |needle: &str| log.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(mentions(periodic.to_str().unwrap()), 1, "{log:#?}");
    assert_eq!(mentions(now.to_str().unwrap()), 1, "{log:#?}");
    assert_eq!(mentions("b-xxx"), 1, "{log:#?}");

    let status = web::api_status(&http);
    assert_eq!(status["backups_ok"], 2);
    assert_eq!(status["backups_failed"], 0);
    assert_eq!(status["backups_refused"], 1);
    assert_eq!(status["last_backup_bytes"], now_size);
    assert!(status["last_backup_unix"].as_u64().unwrap() > 1_000_000_000);
    let problems = status["problems"].as_array().unwrap();
    assert!(
        !problems.iter().any(|p| p["kind"] == "backup"),
        "{problems:?}"
    );
}
