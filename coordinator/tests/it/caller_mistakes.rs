//! Issue 45, point 6: export and backup requests that are the caller's mistake
//! (an opponent the store does not know, a path with a NUL byte, a name longer
//! than a file system takes) are answered INVALID_ARGUMENT and counted as
//! `result="invalid"`, never as failed exports or backups (which the alerts
//! watch); a remote export never replaces a file in `--export-dir` that the
//! store did not write. A real coordinator and a real gRPC client.

use stera_proto::v1::{BackupRequest, ExportRequest};

use crate::common::{self, Coord, free_port};
use crate::web;

fn metric(http: &str, name: &str) -> f64 {
    let m = web::get_ok(http, "/metrics", common::LONG);
    web::sample(&m.body, name).unwrap_or(0.0)
}

struct Setup {
    _dir: tempfile::TempDir,
    exports: std::path::PathBuf,
    coord: Coord,
    http: String,
    rt: tokio::runtime::Runtime,
}

fn start() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    let http = format!("127.0.0.1:{}", free_port());
    let coord = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &[
            "--export-dir",
            exports.to_str().unwrap(),
            "--metrics",
            &http,
        ],
        &[],
    );
    Setup {
        _dir: dir,
        exports,
        coord,
        http,
        rt: common::runtime(1),
    }
}

impl Setup {
    fn export(&self, request: ExportRequest) -> Result<(), tonic::Status> {
        self.rt.block_on(async {
            let mut client = common::client(self.coord.url(), None).await.unwrap();
            client.export(request).await.map(drop)
        })
    }

    fn backup(&self, path: String) -> Result<(), tonic::Status> {
        self.rt.block_on(async {
            let mut client = common::client(self.coord.url(), None).await.unwrap();
            client.backup(BackupRequest { path }).await.map(drop)
        })
    }
}

fn invalid(result: Result<(), tonic::Status>, what: &str) -> tonic::Status {
    let status = result.expect_err(what);
    assert_eq!(
        status.code(),
        tonic::Code::InvalidArgument,
        "{what}: {status:?}"
    );
    status
}

#[test]
fn caller_mistakes_are_invalid_argument_and_counted_apart_from_failures() {
    let s = start();
    for opponents in ["999", "0"] {
        let status = invalid(
            s.export(ExportRequest {
                path: "by-results.db".into(),
                by_results: true,
                opponents: opponents.into(),
                ..Default::default()
            }),
            opponents,
        );
        assert!(
            status.message().contains(&format!("`{opponents}`")),
            "{status:?}"
        );
    }
    let status = invalid(
        s.export(ExportRequest {
            path: "a\0b.db".into(),
            ..Default::default()
        }),
        "NUL",
    );
    assert!(status.message().contains("NUL byte"), "{status:?}");
    let long = "b".repeat(5000);
    let status = invalid(
        s.export(ExportRequest {
            path: long.clone(),
            ..Default::default()
        }),
        "long export name",
    );
    assert!(status.message().contains("at most"), "{status:?}");
    let status = invalid(s.backup(long.clone()), "long backup name");
    assert!(status.message().contains("at most"), "{status:?}");
    assert!(status.message().len() < 1000, "{}", status.message().len());
    invalid(s.backup("x\0y".into()), "NUL backup");
    // Nothing was written, and nothing counts as a failure.
    assert_eq!(std::fs::read_dir(&s.exports).unwrap().count(), 0);
    let exports = |result: &str| {
        metric(
            &s.http,
            &format!("stera_coordinator_exports_total{{result=\"{result}\"}}"),
        )
    };
    let backups = |result: &str| {
        metric(
            &s.http,
            &format!("stera_coordinator_backups_total{{result=\"{result}\"}}"),
        )
    };
    assert_eq!(exports("invalid"), 4.0);
    assert_eq!(exports("error"), 0.0);
    assert_eq!(backups("invalid"), 2.0);
    assert_eq!(backups("error"), 0.0);
    // A good request still works.
    s.export(ExportRequest {
        path: "good.db".into(),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(exports("ok"), 1.0);
}

/// As the local export ledger at start: a file in --export-dir that the store
/// did not write (or that changed since) is never replaced by a remote export;
/// the store's own export is replaced request after request.
#[test]
fn remote_exports_replace_only_files_the_store_wrote() {
    let s = start();
    let other = s.exports.join("other.db");
    std::fs::write(&other, b"a book of another store\n").unwrap();
    let status = s
        .export(ExportRequest {
            path: "other.db".into(),
            ..Default::default()
        })
        .expect_err("replaced a file the store did not write");
    assert_eq!(status.code(), tonic::Code::AlreadyExists, "{status:?}");
    assert!(
        status.message().contains("not a book this store wrote"),
        "{status:?}"
    );
    assert_eq!(std::fs::read(&other).unwrap(), b"a book of another store\n");

    let mine = s.exports.join("mine.db");
    for round in 0..2 {
        s.export(ExportRequest {
            path: "mine.db".into(),
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
    }
    std::fs::write(&mine, b"edited by hand\n").unwrap();
    let status = s
        .export(ExportRequest {
            path: "mine.db".into(),
            ..Default::default()
        })
        .expect_err("replaced a changed export");
    assert!(status.message().contains("changed since"), "{status:?}");
    assert_eq!(std::fs::read(&mine).unwrap(), b"edited by hand\n");
    let m = web::get_ok(&s.http, "/metrics", common::LONG).body;
    assert_eq!(
        web::sample(&m, "stera_coordinator_exports_total{result=\"refused\"}"),
        Some(2.0)
    );
    assert_eq!(
        web::sample(&m, "stera_coordinator_exports_total{result=\"error\"}"),
        Some(0.0)
    );
}

/// Issue 45, point 7: an RPC path of thousands of characters is quoted by a few
/// hundred bytes in the status and in the log (a 5,000-character path made a
/// 17.7 KB grpc-message and a 25 KB log line).
#[test]
fn long_rpc_paths_are_quoted_by_an_excerpt() {
    let s = start();
    let over = "a/".repeat(2_500);
    let under = format!("{}x.db", "d/".repeat(2_000));
    let statuses = [
        s.export(ExportRequest {
            path: over.clone(),
            ..Default::default()
        }),
        s.export(ExportRequest {
            path: under.clone(),
            ..Default::default()
        }),
        s.backup(under.clone()),
    ];
    for status in statuses {
        let status = status.expect_err("a path that cannot be written");
        assert!(
            status.message().len() < 2_100,
            "{} bytes: {}…",
            status.message().len(),
            &status.message()[..300]
        );
        assert!(status.message().contains('…'), "{status:?}");
    }
    s.coord.wait_log("backup request refused", common::LONG);
    let log = s.coord.log.lock().unwrap().clone();
    for line in &log {
        assert!(
            line.len() < 2_100,
            "{} bytes: {}…",
            line.len(),
            &line[..300]
        );
    }
    assert!(log.iter().any(|l| l.contains("a/a/a/") && l.contains('…')));
}
