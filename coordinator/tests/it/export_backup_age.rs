//! The gauges behind the alerts SteraExportTooOld and SteraBackupTooOld
//! (deploy/prometheus/alerts.yml), scraped from a real coordinator that exports
//! and backs up on its timers: the intervals say whether periodic exports and
//! backups are on, the last-success times are 0 until the first one and then the
//! time it was written.
//!
//! The alerts count the age from `stera_coordinator_start_time_seconds` while a
//! last-success time is not above it, so a success must read above the start time.

use crate::common;
use crate::web;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::{Answer, Coord, LONG, fake_worker, free_port};

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn value(text: &str, series: &str) -> f64 {
    web::sample(text, series).unwrap_or_else(|| panic!("no sample `{series}` in:\n{text}"))
}

/// Whole Unix seconds of a file's last write.
fn mtime_secs(path: &Path) -> f64 {
    std::fs::metadata(path)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as f64
}

/// Periodic exports and backups every minute: both intervals read 60 s from the
/// start, both times 0 until the first export and backup, then the time each was
/// written: after the coordinator's start, not before the file was, not after
/// the scrape.
#[test]
fn periodic_export_and_backup_times_show_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let export = dir.path().join("book.db2016");
    let backups = dir.path().join("backups");
    let http = format!("127.0.0.1:{}", free_port());
    let before_start = unix_now();
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--metrics",
            &http,
            "--export",
            export.to_str().unwrap(),
            "--export-every-mins",
            "1",
            "--backup-dir",
            backups.to_str().unwrap(),
            "--backup-every-mins",
            "1",
        ],
        &[],
    );
    let metrics = || web::get_ok(&http, "/metrics", LONG).body;

    // Scraped as soon as it listens, well within the first minute.
    let text = metrics();
    let start = value(&text, "stera_coordinator_start_time_seconds");
    assert!(
        start >= before_start.floor() && start <= unix_now(),
        "start {start}, test began {before_start}"
    );
    assert_eq!(
        value(&text, "stera_coordinator_export_interval_seconds"),
        60.0
    );
    assert_eq!(
        value(&text, "stera_coordinator_backup_interval_seconds"),
        60.0
    );
    assert_eq!(
        value(
            &text,
            "stera_coordinator_last_export_success_timestamp_seconds"
        ),
        0.0
    );
    assert_eq!(
        value(
            &text,
            "stera_coordinator_backup_last_success_timestamp_seconds"
        ),
        0.0
    );

    // Something to export and back up; the first of each comes a minute after
    // the start.
    common::runtime(1)
        .block_on(fake_worker(c.url(), None, 1, Answer::Good, 5, LONG))
        .unwrap();
    c.wait_log("book exported", Duration::from_secs(150));
    c.wait_log("store backed up", Duration::from_secs(150));
    let text = metrics();
    let scraped = unix_now();

    assert!(value(&text, "stera_coordinator_exports_total{result=\"ok\"}") >= 1.0);
    let exported = value(
        &text,
        "stera_coordinator_last_export_success_timestamp_seconds",
    );
    assert!(
        exported > start && exported <= scraped,
        "export at {exported}, start {start}, scraped {scraped}"
    );
    assert!(
        exported >= mtime_secs(&export),
        "export recorded at {exported}, file written at {}",
        mtime_secs(&export)
    );

    assert!(value(&text, "stera_coordinator_backups_total{result=\"ok\"}") >= 1.0);
    let backed_up = value(
        &text,
        "stera_coordinator_backup_last_success_timestamp_seconds",
    );
    assert!(
        backed_up > start && backed_up <= scraped,
        "backup at {backed_up}, start {start}, scraped {scraped}"
    );
    // Periodic backups are named by the second they began.
    let began = std::fs::read_dir(&backups)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_prefix("backup-")?
                .strip_suffix(".db")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .expect("a periodic backup");
    assert!(
        backed_up >= began as f64,
        "backup recorded at {backed_up}, began at {began}"
    );

    // The intervals stay what was configured.
    assert_eq!(
        value(&text, "stera_coordinator_export_interval_seconds"),
        60.0
    );
    assert_eq!(
        value(&text, "stera_coordinator_backup_interval_seconds"),
        60.0
    );
}

/// Without --export-every-mins and --backup-every-mins the intervals read 0, so
/// the age alerts stay silent, even after an export on demand (whose time is
/// recorded all the same).
#[test]
fn no_periodic_export_or_backup_reads_interval_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let http = format!("127.0.0.1:{}", free_port());
    let c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--metrics",
            &http,
            "--export",
            dir.path().join("book.db2016").to_str().unwrap(),
            "--export-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
    );
    let rt = common::runtime(1);
    rt.block_on(fake_worker(c.url(), None, 1, Answer::Good, 5, LONG))
        .unwrap();
    rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        client
            .export(stera_proto::v1::ExportRequest {
                path: dir.path().join("now.db2016").display().to_string(),
                ..Default::default()
            })
            .await
            .unwrap();
    });
    let text = web::get_ok(&http, "/metrics", LONG).body;
    assert_eq!(
        value(&text, "stera_coordinator_export_interval_seconds"),
        0.0
    );
    assert_eq!(
        value(&text, "stera_coordinator_backup_interval_seconds"),
        0.0
    );
    assert!(
        value(
            &text,
            "stera_coordinator_last_export_success_timestamp_seconds"
        ) >= value(&text, "stera_coordinator_start_time_seconds").floor()
    );
}
